package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const sweepGateConfig = `version: 1
target: {url: "http://127.0.0.1:8000", api: chat}
model: {name: meta-llama/Llama-3.1-8B-Instruct}
workloads:
  - name: chat
    seed: 7
    requests: 500
    arrival: {process: poisson, rate: 10}
    prompt_tokens: {dist: fixed, value: 800}
    output_tokens: {dist: lognormal, p50: 200, p95: 700, max: 1500}
    slo:
      ttft: {p95: 500ms}
      tpot: {p95: 50ms}
gate:
  rules:
    goodput: {direction: higher, tolerance: 5%}
    max_sustainable_rps: {direction: higher, tolerance: 5%}
`

const sweepGateHW = "h100-80gb-hbm3-x1"

// sweepGateEnv is a repository with a config whose gate has a max_sustainable_rps rule,
// a results directory and the baselines directory beside the config.
type sweepGateEnv struct {
	t                               *testing.T
	dir, config, results, baselines string
	f                               *workload.File
}

func newSweepGateEnv(t *testing.T) *sweepGateEnv {
	t.Helper()
	dir := t.TempDir()
	e := &sweepGateEnv{t: t, dir: dir, config: filepath.Join(dir, "slogate.yaml"), results: filepath.Join(dir, "out"), baselines: filepath.Join(dir, "baselines")}
	if err := os.WriteFile(e.config, []byte(sweepGateConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := workload.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	e.f = f
	return e
}

// sweepRecord is a sweep of chat as `slogate sweep --step-duration 2.5s --precision P`
// records it: its hash computed as cli/sweep.go computes it, from the flags after check.
func (e *sweepGateEnv) sweepRecord(rps, precision float64) *result.Sweep {
	e.t.Helper()
	p := sweepParams{name: "chat", SweepParams: measure.SweepParams{MinRate: 1, MaxRate: 1000, Precision: precision, StepDuration: 2500 * time.Millisecond}}
	if msg := p.check(); msg != "" {
		e.t.Fatal(msg)
	}
	w := &e.f.Workloads[0]
	top := rps * (1 + precision)
	return &result.Sweep{
		Schema: result.SweepSchema, Workload: "chat", WorkloadHash: workload.Hash(e.f, measure.StepWorkload(w, 0, p.SweepParams, false)),
		Config: e.config, Hardware: sweepGateHW, Environment: gatetest.Env(), SLOAttainmentTarget: 0.99,
		Params: result.SweepParams{MinRPS: p.MinRate, MaxRPS: p.MaxRate, Factor: measure.SweepFactor, Process: measure.StepProcess(w),
			Precision: p.Precision, StepDurationS: p.StepDuration.Seconds()},
		Steps:             []result.SweepStep{{Step: 1, Phase: "ramp", RateRPS: rps, Verdict: result.StepPass}},
		Bound:             result.BoundSLO,
		MaxSustainableRPS: &rps, FirstFailingRPS: &top,
	}
}

// writeSweep writes sw as slogate sweep -o dir would (the results dir when "").
func (e *sweepGateEnv) writeSweep(dir string, sw *result.Sweep) {
	e.t.Helper()
	if dir == "" {
		dir = e.results
	}
	if err := result.WriteSweep(filepath.Join(dir, "chat.sweep.json"), sw); err != nil {
		e.t.Fatal(err)
	}
}

// writeRun writes a run record of chat into dir (the results dir when "").
func (e *sweepGateEnv) writeRun(dir string, seed uint64) *result.Record {
	e.t.Helper()
	if dir == "" {
		dir = e.results
	}
	r := gatetest.Record(seed, gatetest.Spec{Requests: 200, Hash: workload.Hash(e.f, &e.f.Workloads[0]), KVConcurrency: 80})
	if err := result.Write(filepath.Join(dir, "chat.json"), r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// run runs a command through the command table, with a fixed clock.
func (e *sweepGateEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	a, out, errb := testApp(e.t)
	a.now = func() time.Time { return time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC) }
	code := a.run(cmdCtx(e.t), args)
	return code, out.String(), errb.String()
}

func (e *sweepGateEnv) sweepBaseline() string {
	return filepath.Join(e.baselines, "chat", sweepGateHW+".sweep.json")
}

func TestBaselineUpdateWritesSweep(t *testing.T) {
	t.Parallel()
	e := newSweepGateEnv(t)
	e.writeRun("", 1)
	sw := e.sweepRecord(20, 0.05)
	e.writeSweep("", sw)
	code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results)
	if code != ExitOK || !strings.Contains(out, "wrote "+e.sweepBaseline()+" (chat on "+sweepGateHW+": sweep, max sustainable 20 req/s, bound slo, precision 5%, engine vllm 0.6.3)") ||
		!strings.Contains(out, "wrote "+filepath.Join(e.baselines, "chat", sweepGateHW+".json")) {
		t.Fatalf("baseline update: exit %d\n%s%s", code, out, errs)
	}
	// The sweep record as it was, byte for byte.
	want, _ := result.MarshalSweep(sw)
	got, err := os.ReadFile(e.sweepBaseline())
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("sweep baseline differs from the sweep record (%v):\n%s", err, got)
	}
	// The gate of the same results: every ratio exactly 1, the sweep's included.
	jsonPath := filepath.Join(e.dir, "gate.json")
	code, out, errs = e.run("gate", "-c", e.config, "-r", e.results, "--json", jsonPath)
	if code != ExitOK || !strings.Contains(out, "slogate gate: pass") {
		t.Fatalf("gate against itself: exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range res.Workloads[0].Metrics {
		if m.Metric == "max_sustainable_rps" {
			found = true
			if m.Verdict != gate.Pass || m.Ratio == nil || *m.Ratio != 1 || *m.Baseline != 20 || m.Method != gate.MethodExact {
				t.Errorf("max_sustainable_rps: %+v; want pass at exactly 1, exact", m)
			}
		}
	}
	if !found {
		t.Errorf("no max_sustainable_rps row:\n%s", out)
	}

	// A sweep alone is a baseline too: no run record needed beside it.
	e = newSweepGateEnv(t)
	e.writeSweep("", e.sweepRecord(20, 0.05))
	code, out, errs = e.run("baseline", "update", "-c", e.config, "-r", e.results)
	if code != ExitOK || strings.Count(out, "wrote ") != 1 || !strings.Contains(out, e.sweepBaseline()) {
		t.Errorf("sweep alone: exit %d\n%s%s", code, out, errs)
	}
}

func TestBaselineUpdateRefusesSweeps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		mod  func(*result.Sweep)
		code int
		want string
	}{
		// The load generator bounded it: there is no capacity to keep (exit 3, and why).
		{"client-limited", func(s *result.Sweep) {
			s.Bound, s.MaxSustainableRPS, s.FirstFailingRPS = result.BoundClient, nil, nil
			s.Steps = []result.SweepStep{{Step: 1, RateRPS: 50, Verdict: result.StepClient, Reason: "dispatch lag p99 9.000 ms > 1 ms"}}
		}, ExitFailure, "refusing to make a baseline of the sweep of chat on h100-80gb-hbm3-x1: the load generator, not the engine, limited the sweep at 50 req/s (dispatch lag p99 9.000 ms > 1 ms)"},
		// Every step missed the SLO: no number to compare with either.
		{"no step passed", func(s *result.Sweep) { s.MaxSustainableRPS = nil }, ExitFailure, "no step met the SLO"},
		// Swept from another definition (here another step size): bad input, as a stale
		// run record is.
		{"stale", func(s *result.Sweep) { s.Params.StepDurationS = 30 }, ExitBadInput, "the sweep of \"chat\" on h100-80gb-hbm3-x1 was made from another definition"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSweepGateEnv(t)
			e.writeRun("", 1) // a fit run record: refused with the sweep all the same
			sw := e.sweepRecord(20, 0.05)
			c.mod(sw)
			e.writeSweep("", sw)
			code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results)
			if code != c.code || !strings.Contains(errs, c.want) || strings.Contains(out, "wrote") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, nothing written", code, out, errs, c.code, c.want)
			}
			if _, err := os.Stat(e.baselines); !os.IsNotExist(err) {
				t.Errorf("baselines directory created for a refused sweep: %v", err)
			}
		})
	}
}

func TestGateSweeps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		base      float64 // baseline sweep's capacity; 0: no baseline sweep
		cand      float64 // candidate sweep's capacity; 0: no candidate sweep
		precision float64
		client    bool // the candidate sweep was client-limited
		code      int
		row       string // suffix of the max_sustainable_rps row
		want      string
	}{
		// 30% less capacity, 5% tolerance, 5% brackets: a regression.
		{"30% lower", 20, 14, 0.05, false, ExitGateFailed, "FAIL", ""},
		// 6% less with 5% brackets on both sides: within their precision, warns.
		{"6% lower", 20, 18.8, 0.05, false, ExitOK, "WARN", "the difference (-6.0%) is within the sweeps' bisection precision"},
		// The gate refuses a client-limited sweep: exit 3, the reason in the table.
		{"client-limited", 20, 0, 0.05, true, ExitFailure, "", "max_sustainable_rps: the gate refuses to judge this sweep: the load generator, not the engine, limited the sweep at 2 req/s (dispatch lag p99 3.000 ms > 1 ms)"},
		// Run records and no sweep: a warning row that says how to make one.
		{"no candidate sweep", 20, 0, 0.05, false, ExitOK, "WARN", "run `slogate sweep -c"},
		// A sweep and no baseline sweep: a warning row that says how to make one.
		{"no baseline sweep", 0, 20, 0.05, false, ExitOK, "WARN", "create it with `slogate baseline update"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSweepGateEnv(t)
			r := e.writeRun(t.TempDir(), 1)
			b, err := gate.FromRecords([]*result.Record{r}, time.Date(2025, 3, 2, 9, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gate.Write(e.baselines, b); err != nil {
				t.Fatal(err)
			}
			if c.base > 0 {
				if _, err := gate.WriteSweep(e.baselines, e.sweepRecord(c.base, c.precision)); err != nil {
					t.Fatal(err)
				}
			}
			e.writeRun("", 1)
			switch {
			case c.client:
				sw := e.sweepRecord(1, c.precision)
				sw.Bound, sw.MaxSustainableRPS, sw.FirstFailingRPS = result.BoundClient, nil, nil
				sw.Steps = append(sw.Steps, result.SweepStep{Step: 2, RateRPS: 2, Verdict: result.StepClient, Reason: "dispatch lag p99 3.000 ms > 1 ms"})
				e.writeSweep("", sw)
			case c.cand > 0:
				e.writeSweep("", e.sweepRecord(c.cand, c.precision))
			}
			code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
			var row string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "max_sustainable_rps ") {
					row = l
				}
			}
			if code != c.code || !strings.HasSuffix(row, c.row) || (c.row == "") != (row == "") || !strings.Contains(out, c.want) {
				t.Errorf("exit %d (want %d), row %q (want …%q), want %q in:\n%s%s", code, c.code, row, c.row, c.want, out, errs)
			}
		})
	}
}

// TestGateSweepOnly: a results directory that holds only a sweep (slogate sweep -o DIR)
// is judged on the sweep alone.
func TestGateSweepOnly(t *testing.T) {
	t.Parallel()
	e := newSweepGateEnv(t)
	if _, err := gate.WriteSweep(e.baselines, e.sweepRecord(20, 0.05)); err != nil {
		t.Fatal(err)
	}
	e.writeSweep("", e.sweepRecord(20, 0.05))
	// A step record in the sweep's own subdirectory is not read as a trial.
	if err := result.Write(filepath.Join(e.results, "chat.sweep", "step1.json"), gatetest.Record(1, gatetest.Spec{Requests: 10, Hash: "sha256:step"})); err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
	if code != ExitOK || !strings.Contains(out, "only its sweep was judged") || !strings.Contains(out, "max_sustainable_rps  higher, -5%  20.00/s") {
		t.Errorf("sweep only: exit %d\n%s%s", code, out, errs)
	}
	// An empty results directory is still bad input.
	empty := t.TempDir()
	if code, _, errs := e.run("gate", "-c", e.config, "-r", empty); code != ExitBadInput || !strings.Contains(errs, "no run or sweep records") {
		t.Errorf("empty results: exit %d, %s", code, errs)
	}
}
