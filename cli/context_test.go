package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// TestRunRefusesWorkloadOverContext: the simulator's tiny profile serves a 1,024-token
// context (max_model_len in /v1/models, as vLLM). A workload whose prompt can reach 1,000
// tokens and output 120 does not fit: run and sweep stop with exit 2 and the numbers before
// a single request is sent, and write no record.
func TestRunRefusesWorkloadOverContext(t *testing.T) {
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, strings.NewReplacer(
		"prompt_tokens: {dist: uniform, min: 20, max: 60}", "prompt_tokens: {dist: uniform, min: 20, max: 1000}",
		"output_tokens: {dist: fixed, value: 12}", "output_tokens: {dist: uniform, min: 10, max: 120}",
	).Replace(tinyConfig))
	for _, cmd := range [][]string{
		{"run", "-c", cfg, "--target", url},
		{"sweep", "-c", cfg, "-w", "small", "--target", url},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			dir := t.TempDir()
			a, out, errb := testApp(t)
			code := a.run(context.Background(), append(cmd, "-o", dir))
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitBadInput, out, errb)
			}
			for _, s := range []string{`workload "small"`, "context of 1024 tokens", "max_model_len", "prompt_tokens max 1000 + output_tokens max 120 = 1120 > 1024", "Nothing was sent"} {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr %q lacks %q", errb.String(), s)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files written: %v", ents)
			}
		})
	}
	// The engine saw no generation request at all.
	if n := pageCounter(t, url, "vllm:prompt_tokens_total"); n != 0 {
		t.Errorf("the simulator processed %v prompt tokens, want 0: requests were sent", n)
	}

	// The same workload within the context runs.
	fits := strings.Replace(tinyConfig, "output_tokens: {dist: fixed, value: 12}", "output_tokens: {dist: fixed, value: 24}", 1)
	fits = strings.Replace(fits, "prompt_tokens: {dist: uniform, min: 20, max: 60}", "prompt_tokens: {dist: uniform, min: 20, max: 1000}", 1)
	a, _, errb := testApp(t)
	if code := a.run(context.Background(), []string{"run", "-c", writeConfig(t, fits), "--target", url, "-o", t.TempDir()}); code == ExitBadInput {
		t.Errorf("1000 + 24 tokens in a 1024-token context refused: %s", errb)
	}
}

// pageCounter reads one counter from an engine's metrics page.
func pageCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s on the metrics page", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
