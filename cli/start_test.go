package cli

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// TestMain lets the test binary play an engine that target.start launches: with
// SLOGATE_TEST_SIM_ADDR set it serves the simulator there until terminated, with the
// `slogate sim` flags in SLOGATE_TEST_SIM_ARGS (space-separated). With
// SLOGATE_TEST_SIM_SEEDS ("3,1,5,14") and SLOGATE_TEST_SIM_COUNTER (a file) the k-th
// start takes the k-th seed of its noise (cycling), so that a test of engines that vary
// by start knows how far they vary instead of drawing it from the clock.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SLOGATE_TEST_SIM_ADDR"); addr != "" {
		// A test binary that panics or is killed takes its engines with it.
		waittest.DieWithParent()
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		o := sim.Options{Seed: 1, Listen: waittest.Listen}
		fs := flag.NewFlagSet("sim", flag.ExitOnError)
		o.Bind(fs)
		_ = fs.Parse(strings.Fields(os.Getenv("SLOGATE_TEST_SIM_ARGS")))
		if seeds := os.Getenv("SLOGATE_TEST_SIM_SEEDS"); seeds != "" {
			o.Noise.Seed = nthStartSeed(os.Getenv("SLOGATE_TEST_SIM_COUNTER"), strings.Split(seeds, ","))
		}
		if err := sim.Serve(ctx, addr, o, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("SLOGATE_TEST_MAIN") != "" {
		// The test binary as slogate itself (signal_test.go, hostile_test.go).
		waittest.DieWithParent()
		if fifo := os.Getenv("SLOGATE_TEST_BLOCK_ON"); fifo != "" {
			blockForTest = func() { f, _ := os.Open(fifo); f.Close() }
		}
		os.Exit(Main(strings.Split(os.Getenv("SLOGATE_TEST_MAIN"), "\x1f"), os.Stdout, os.Stderr))
	}
	// The package takes about 2 minutes, 3 under -race.
	waittest.Main(m, testParallel(), 8*time.Minute)
}

// nthStartSeed counts this start in the file counter (one byte appended per start) and
// returns the seed for it, cycling through seeds.
func nthStartSeed(counter string, seeds []string) int64 {
	f, err := os.OpenFile(counter, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte{'.'}); err != nil {
		panic(err)
	}
	st, err := f.Stat()
	if err != nil {
		panic(err)
	}
	seed, err := strconv.ParseInt(strings.TrimSpace(seeds[(st.Size()-1)%int64(len(seeds))]), 10, 64)
	if err != nil {
		panic(err)
	}
	return seed
}

func TestRunStartsAndStopsTheEngine(t *testing.T) {
	t.Parallel()
	addr := waittest.HoldPort(t)
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
	if code := a.run(cmdCtx(t), []string{"run", "-c", path, "-o", dir}); code != ExitOK {
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
	t.Parallel()
	// A command that exits at once: exit 3 with its output quoted.
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://"+waittest.HoldPort(t)+"\n  start:\n    command: [sh, -c, \"echo CUDA out of memory; exit 1\"]\n    ready_timeout: 30s", 1)
	a, _, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", t.TempDir()})
	if code != ExitFailure || !strings.Contains(errb.String(), "exited before it was ready") || !strings.Contains(errb.String(), "CUDA out of memory") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}

// TestRunRecordsEngineStartup: a started engine that takes 300 ms to start (the
// simulator, printing vLLM's startup lines) leaves its start in the record: the port, the
// readiness and the first token in the order they happen, none before the start time,
// and the phases of its log.
func TestRunRecordsEngineStartup(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, startedSimConfig(t, "--start-time 300ms"))
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", path, "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	rec, err := result.Read(filepath.Join(dir, "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := rec.Startup
	if st == nil {
		t.Fatal("no startup in the record")
	}
	// The simulator binds its port only after its phases, as vLLM does: nothing can be
	// seen before 300 ms, and each step comes after the one before.
	if !(st.PortMS >= 300 && st.HealthMS >= st.PortMS && st.ModelMS >= st.HealthMS && st.ReadyMS == st.HealthMS && st.FirstTokenMS >= st.ReadyMS) {
		t.Errorf("startup %+v", st)
	}
	if st.StartedAt.IsZero() || st.FirstTokenError != "" || math.Abs(rec.Warmup.EngineStartS-st.ReadyMS/1e3) > 1e-3 {
		t.Errorf("started at %v, first-token error %q, warm-up engine start %v", st.StartedAt, st.FirstTokenError, rec.Warmup.EngineStartS)
	}
	want := []string{"weights_load", "model_load", "torch_compile", "graph_capture", "engine_init"}
	var got []string
	var sum float64
	for _, p := range st.Phases {
		got = append(got, p.Name)
		if p.Source != "log" || p.Line == "" || p.AtMS > st.ReadyMS {
			t.Errorf("phase %+v", p)
		}
		if p.Name == "model_load" || p.Name == "engine_init" {
			sum += p.Seconds
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("phases %v, want %v", got, want)
	}
	// The model load and the engine's initialization split the start (the other phases
	// are parts of them): together they are most of it, never more than it.
	if !(sum >= 0.25 && sum*1e3 <= st.ReadyMS) {
		t.Errorf("phases add to %.3f s of a %.0f ms start", sum, st.ReadyMS)
	}
	if !strings.Contains(errb.String(), "its log: weights_load") {
		t.Errorf("stderr does not list the phases:\n%s", errb)
	}

	// The capacity worksheet sizes the warm pool from this measured start; --cold-start
	// overrides it; the ramp of a 2-second run cannot be read, so --ramp gives it.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ramp", "6"}, ExitOK, "(measured: first token after the start of small's engine), ramp 6 req/s per minute (--ramp)"},
		{[]string{"--ramp", "6", "--cold-start", "2m"}, ExitOK, "cold start 120 s (--cold-start)"},
		// No ramp: the worksheet says what the warm pool needs instead of a figure.
		{nil, ExitOK, "warm pool: not sized"},
		{[]string{"--cold-start", "soon"}, ExitBadInput, `"soon": expected seconds above 0`},
	} {
		a, out, errb := testApp(t)
		args := append([]string{"capacity", "-r", filepath.Join(dir, "small.json"), "--peak-rps", "10", "--gpu-hour-usd", "2"}, c.args...)
		if code := a.run(cmdCtx(t), args); code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", c.args, code, c.code, c.want, out, errb)
		}
	}
}

// TestRunEngineReadyTimeout: a start longer than target.start.ready_timeout is the
// engine's failure (exit 3), and the error quotes the end of the engine's output.
func TestRunEngineReadyTimeout(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(startedSimConfig(t, "--start-time 60s"), "ready_timeout: 60s", "ready_timeout: 1s", 1)
	a, _, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", t.TempDir()})
	if code != ExitFailure || !strings.Contains(errb.String(), "not ready") || !strings.Contains(errb.String(), "ready_timeout") ||
		!strings.Contains(errb.String(), "vLLM API server version") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}

// TestGateEngineStart: a rule on engine_start fails a candidate whose engine takes ten
// times longer to start than the baseline's (the simulator's --start-time: 300 ms, then
// 3 s), with one start a side judged by the ratio alone, and says so.
func TestGateEngineStart(t *testing.T) {
	t.Parallel()
	long(t)
	dir := t.TempDir()
	rules := "gate:\n  rules:\n    engine_start: {direction: lower, tolerance: 30%}\n    first_token_after_start: {max: 10m}\n"
	write := func(name, simArgs string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(startedSimConfig(t, simArgs)+rules), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	baseCfg, candCfg := write("base.yaml", "--start-time 300ms"), write("cand.yaml", "--start-time 3s")
	run := func(args ...string) (int, string) {
		t.Helper()
		a, out, errb := testApp(t)
		code := a.run(cmdCtx(t), args)
		return code, out.String() + errb.String()
	}
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	if code, log := run("run", "-c", baseCfg, "-o", base); code != ExitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, log)
	}
	if code, log := run("baseline", "update", "-c", baseCfg, "-r", base); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s", code, log)
	}
	if code, log := run("run", "-c", candCfg, "-o", cand); code != ExitOK {
		t.Fatalf("candidate run: exit %d\n%s", code, log)
	}
	gateJSON := filepath.Join(cand, "gate.json")
	code, log := run("gate", "-c", candCfg, "-r", cand, "--json", gateJSON)
	if code != ExitGateFailed {
		t.Fatalf("gate: exit %d, want %d\n%s", code, ExitGateFailed, log)
	}
	raw, err := os.ReadFile(gateJSON)
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]gate.MetricResult{}
	for _, m := range res.Workloads[0].Metrics {
		got[m.Metric] = m
	}
	es, ft := got["engine_start"], got["first_token_after_start"]
	if es.Verdict != gate.Fail || es.Method != gate.MethodExact || es.Ratio == nil || *es.Ratio < 1.3 ||
		!slices.ContainsFunc(es.Warnings, func(w string) bool { return strings.Contains(w, "no interval") }) {
		t.Errorf("engine_start %+v", es)
	}
	if ft.Verdict != gate.Pass || ft.Candidate == nil || *ft.Candidate < 3000 {
		t.Errorf("first_token_after_start %+v", ft)
	}
}
