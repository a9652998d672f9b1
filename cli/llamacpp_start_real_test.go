package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
)

// TestLlamaCppRealStartup starts a llama-server of its own through target.start (the
// binary and model of scripts/llamacpp-test.sh, in SLOGATE_LLAMACPP_BIN and
// SLOGATE_LLAMACPP_MODEL) and checks that its start is in the record: llama.cpp binds its
// port before it loads the model and answers /health 503 meanwhile, so the port comes
// first, then /health, then the model listed and the first token; its load is timed
// between its "main: loading model" and "main: model loaded" lines.
func TestLlamaCppRealStartup(t *testing.T) {
	quiet(t)
	bin, model := os.Getenv("SLOGATE_LLAMACPP_BIN"), os.Getenv("SLOGATE_LLAMACPP_MODEL")
	if bin == "" || model == "" {
		t.Skip("SLOGATE_LLAMACPP_BIN and SLOGATE_LLAMACPP_MODEL are not set: no llama-server to start (scripts/llamacpp-test.sh sets them)")
	}
	data, err := os.ReadFile(llamaPinned)
	if err != nil {
		t.Fatal(err)
	}
	addr := waittest.GivenBackPort(t) // llama-server binds it itself, without sharing
	_, port, _ := strings.Cut(addr, ":")
	start := "  start:\n    command: [" + strings.Join([]string{bin, "-m", model, "--host", "127.0.0.1", "--port", port, "-t", "1", "-c", "2048", "-np", "4", "--alias", "stories260k"}, ", ") +
		"]\n    ready_timeout: 120s\n"
	c := strings.Replace(string(data), "target:\n", "target:\n  url: http://"+addr+"\n"+start, 1)
	cfg := filepath.Join(t.TempDir(), "slogate.yaml")
	if err := os.WriteFile(cfg, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "-w", "llamacpp-back-to-back", "-o", dir})
	rec, err := result.Read(filepath.Join(dir, "llamacpp-back-to-back.json"))
	if err != nil {
		t.Fatalf("exit %d, no record: %v\n%s\n%s", code, err, out, errb)
	}
	st := rec.Startup
	if st == nil {
		t.Fatalf("exit %d, no startup in the record\n%s", code, errb)
	}
	t.Logf("MEASURED llama-server start: port %.0f ms, /health %.0f ms, model listed %.0f ms, first token %.0f ms, phases %+v",
		st.PortMS, st.HealthMS, st.ModelMS, st.FirstTokenMS, st.Phases)
	if !(st.PortMS > 0 && st.HealthMS >= st.PortMS && st.ModelMS >= st.PortMS && st.ReadyMS == st.HealthMS && st.FirstTokenMS >= st.ReadyMS) {
		t.Errorf("startup %+v", st)
	}
	i := slices.IndexFunc(st.Phases, func(p result.StartPhase) bool { return p.Name == "model_load" })
	if i < 0 || st.Phases[i].Source != "seen" || st.Phases[i].AtMS > st.ReadyMS || st.Phases[i].Seconds*1e3 > st.ReadyMS {
		t.Errorf("no model_load timed between llama.cpp's lines: %+v", st.Phases)
	}
}
