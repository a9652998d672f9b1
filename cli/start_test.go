package cli

import (
	"context"
	"flag"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// TestMain lets the test binary play an engine that target.start launches: with
// SLOGATE_TEST_SIM_ADDR set it serves the simulator there until terminated, with the
// `slogate sim` flags in SLOGATE_TEST_SIM_ARGS (space-separated).
func TestMain(m *testing.M) {
	if addr := os.Getenv("SLOGATE_TEST_SIM_ADDR"); addr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		o := sim.Options{Seed: 1}
		fs := flag.NewFlagSet("sim", flag.ExitOnError)
		o.Bind(fs)
		_ = fs.Parse(strings.Fields(os.Getenv("SLOGATE_TEST_SIM_ARGS")))
		if err := sim.Serve(ctx, addr, o, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestRunStartsAndStopsTheEngine(t *testing.T) {
	addr := freeAddr(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://"+addr+"\n  api: completions\n  start:\n    command: ["+self+"]\n    env: {SLOGATE_TEST_SIM_ADDR: \""+addr+"\"}\n    ready_timeout: 60s", 1)
	cfg = strings.Replace(cfg, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1)
	path := writeConfig(t, cfg)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(context.Background(), []string{"run", "-c", path, "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	rec, err := result.Read(filepath.Join(dir, "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Warmup == nil || rec.Warmup.EngineStartS <= 0 || rec.Summary.Completed != 40 {
		t.Errorf("warm-up %+v, completed %d", rec.Warmup, rec.Summary.Completed)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "engine.log"))
	if !strings.Contains(string(log), "slogate sim: serving on") {
		t.Errorf("engine.log: %q", log)
	}
	// The engine was stopped: nothing answers any more.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the started engine still listens after the run")
	}
}

func TestRunEngineThatNeverGetsReady(t *testing.T) {
	// A command that exits at once: exit 3 with its output quoted.
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://"+freeAddr(t)+"\n  start:\n    command: [sh, -c, \"echo CUDA out of memory; exit 1\"]\n    ready_timeout: 30s", 1)
	a, _, errb := testApp(t)
	code := a.run(context.Background(), []string{"run", "-c", writeConfig(t, cfg), "-o", t.TempDir()})
	if code != ExitFailure || !strings.Contains(errb.String(), "exited before it was ready") || !strings.Contains(errb.String(), "CUDA out of memory") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}
