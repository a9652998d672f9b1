package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/sim"
)

// slowConfig is a workload far below the H100 profile's capacity whose requests take long
// against the span of their arrivals (about 1 s of decode each, over 4 s of arrivals), so
// that a window which includes the drain grows by several percent when the engine is 1.4×
// slower, while every request still meets its SLO.
const slowConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: meta-llama/Llama-3.1-8B-Instruct}
workloads:
  - name: drain
    seed: 5
    requests: 40
    warmup: {requests: 2}
    arrival: {process: constant, rate: 10}
    prompt_tokens: {dist: fixed, value: 64}
    output_tokens: {dist: fixed, value: 150}
    timeout: 30s
    max_dispatch_lag: 30s
    slo: {ttft: {p95: 2s}, tpot: {p95: 40ms}}
gate:
  baselines: baselines
  drift: {tool.version: ignore, engine.version: ignore}
  rules:
    goodput: {direction: higher, tolerance: 5%}
    error_rate: {max: 1%}
`

// A simulator 1.4× slower, below capacity, meets every SLO and serves every request it
// was offered: its goodput is the same, and the gate must pass it. With goodput over the
// measured window (drain included) it read about 7% lower and failed.
func TestSlowerEngineBelowCapacityKeepsGoodput(t *testing.T) {
	t.Parallel()
	long(t)
	p, err := sim.LookupProfile("llama-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	fast := startSim(t, sim.Options{Profile: p, Seed: 1})
	slow := startSim(t, sim.Options{Profile: p, Seed: 1, Faults: sim.Faults{Slowdown: 1.4}})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "slogate.yaml")
	if err := os.WriteFile(cfg, []byte(slowConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) int {
		t.Helper()
		a, out, errb := testApp(t)
		code := a.run(cmdCtx(t), args)
		t.Logf("slogate %v: exit %d\n%s%s", args, code, out, errb)
		return code
	}
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	if code := run("run", "-c", cfg, "--target", fast, "-o", base); code != ExitOK {
		t.Fatalf("baseline run: exit %d", code)
	}
	if code := run("baseline", "update", "-c", cfg, "-r", base); code != ExitOK {
		t.Fatalf("baseline update: exit %d", code)
	}
	if code := run("run", "-c", cfg, "--target", slow, "-o", cand); code != ExitOK {
		t.Fatalf("candidate run: exit %d", code)
	}
	jsonPath := filepath.Join(dir, "gate.json")
	code := run("gate", "-c", cfg, "-r", cand, "--json", jsonPath)
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	var goodput *gate.MetricResult
	for i := range res.Workloads[0].Metrics {
		if m := &res.Workloads[0].Metrics[i]; m.Metric == "goodput" {
			goodput = m
		}
	}
	if goodput == nil {
		t.Fatalf("no goodput in %s", data)
	}
	recs := map[string]map[string]any{}
	for name, d := range map[string]string{"baseline": base, "candidate": cand} {
		raw, err := os.ReadFile(filepath.Join(d, "drain.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Summary map[string]any `json:"summary"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		recs[name] = rec.Summary
	}
	t.Logf("goodput %v: baseline %v, candidate %v; window goodput %v → %v; attainment %v → %v; e2e p50 %v → %v ms",
		goodput.Verdict, recs["baseline"]["goodput_rps"], recs["candidate"]["goodput_rps"],
		recs["baseline"]["goodput_window_rps"], recs["candidate"]["goodput_window_rps"],
		recs["baseline"]["slo_attainment"], recs["candidate"]["slo_attainment"],
		recs["baseline"]["e2e_ms"].(map[string]any)["p50"], recs["candidate"]["e2e_ms"].(map[string]any)["p50"])
	if goodput.Verdict != gate.Pass || code != ExitOK {
		t.Errorf("goodput verdict %s (exit %d), want pass: a slower engine below capacity serves what it is offered", goodput.Verdict, code)
	}
	// The window figure, kept beside it, does see the drain.
	if !(recs["candidate"]["goodput_window_rps"].(float64) < recs["baseline"]["goodput_window_rps"].(float64)) {
		t.Errorf("window goodput %v → %v: a longer drain must lower it", recs["baseline"]["goodput_window_rps"], recs["candidate"]["goodput_window_rps"])
	}
}
