package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

func f64(v float64) *float64 { return &v }

// sweepAt is a sweep whose highest passing step is at rate, with the given mean E2E, KV
// concurrency and attempts/completed there; a failing step above it.
func sweepAt(rate, e2eMS float64, kv, attempts, completed int) *result.Sweep {
	s := &result.Sweep{Workload: "chat", SLOAttainmentTarget: 0.99, Bound: result.BoundSLO, MaxSustainableRPS: f64(rate), FirstFailingRPS: f64(rate * 1.05)}
	s.Steps = []result.SweepStep{
		{Step: 1, RateRPS: rate / 2, Verdict: result.StepPass, E2EMeanms: e2eMS / 2, Requests: 10, Completed: 10},
		{Step: 2, RateRPS: rate * 1.05, Verdict: result.StepFail, E2EMeanms: 10 * e2eMS, Requests: 10, Completed: 10},
		{Step: 3, RateRPS: rate, Verdict: result.StepPass, E2EMeanms: e2eMS, Requests: attempts, Completed: completed, SLOAttainment: 0.995},
	}
	if kv > 0 {
		s.Steps[2].KVConcurrency = &result.KVConcurrency{Value: kv, CapacityTokens: int64(kv) * 512, PerRequestTokens: 512}
	}
	return s
}

func TestFromSweepUsesTheOperatingStep(t *testing.T) {
	m, err := FromSweep(sweepAt(5, 2000, 64, 120, 100))
	if err != nil {
		t.Fatal(err)
	}
	op := m.Operating
	// The step at max_sustainable_rps, not the faster-E2E step below it nor the failing
	// one above.
	if op.SustainableRPS != 5 || !op.FromSweep || op.MeanE2ES != 2 || op.KVConcurrency != 64 || op.Attempts != 120 || op.Completed != 100 || m.Source != "sweep" {
		t.Errorf("operating %+v source %q", op, m.Source)
	}
	if m.KV == nil || m.KV.PerRequestTokens != 512 || len(m.Warnings) != 0 {
		t.Errorf("kv %+v warnings %q", m.KV, m.Warnings)
	}
}

func TestFromSweepRefusesNoCapacity(t *testing.T) {
	cases := []struct {
		name string
		edit func(*result.Sweep)
		want string
	}{
		// The client limited the sweep: there is no engine capacity to size with.
		{"client", func(s *result.Sweep) { s.MaxSustainableRPS, s.Bound = nil, result.BoundClient }, "the load generator, not the engine"},
		// The engine failed mid-sweep.
		{"failed", func(s *result.Sweep) { s.MaxSustainableRPS, s.Bound, s.Failure = nil, "", "step 2: engine unreachable" }, "engine unreachable"},
		// Even the first step missed the SLO.
		{"no-pass", func(s *result.Sweep) { s.MaxSustainableRPS = nil }, "no step met the SLO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sweepAt(5, 1000, 0, 10, 10)
			tc.edit(s)
			if _, err := FromSweep(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFromSweepAtMaxRateWarns(t *testing.T) {
	s := sweepAt(5, 1000, 0, 10, 10)
	s.Bound, s.FirstFailingRPS = result.BoundMaxRate, nil
	m, err := FromSweep(s)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Worksheet(Traffic{PeakRPS: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(ws.Warnings, "\n"), "upper bound") {
		t.Errorf("warnings %q: want the max-rate upper-bound warning", ws.Warnings)
	}
}

func TestFromRunWarns(t *testing.T) {
	rec := &result.Record{Workload: "chat", SLOAttainmentTarget: 0.99}
	rec.Summary = result.Summary{Requests: 110, Completed: 100, ThroughputRPS: 5, SLOAttainment: 0.9, E2Ems: result.Percentiles{Mean: 1500},
		KVConcurrency: &result.KVConcurrency{Value: 40}}
	m, err := FromRun(rec)
	if err != nil {
		t.Fatal(err)
	}
	if op := m.Operating; op.SustainableRPS != 5 || op.FromSweep || op.MeanE2ES != 1.5 || op.KVConcurrency != 40 || op.Attempts != 110 || op.Completed != 100 {
		t.Errorf("operating %+v", op)
	}
	ws, err := m.Worksheet(Traffic{PeakRPS: 50, TargetUtilization: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(ws.Warnings, "\n")
	// Both: a single run is not SLO-bound, and this one missed its SLO besides.
	if !strings.Contains(all, "not an SLO-bound sweep") || !strings.Contains(all, "missed its SLO (attainment 90.00% < 99.00%)") {
		t.Errorf("warnings %q", ws.Warnings)
	}
	// A client-saturated run measured the client.
	rec.Summary.ClientSaturated = true
	if _, err := FromRun(rec); err == nil || !strings.Contains(err.Error(), "client-saturated") {
		t.Errorf("error %v for a client-saturated run", err)
	}
}

func TestFleetDelta(t *testing.T) {
	// 50 req/s at 60%: the baseline sustains 5 req/s per GPU (17 GPUs), the candidate
	// regressed to 4 (50 × 0.25 / 0.6 = 20.8 → 21 GPUs): 4 more GPUs, 4 × 730 h × $2.
	tr := Traffic{PeakRPS: 50, TargetUtilization: 0.6, GPUHourUSD: 2}
	base, err := FromSweep(sweepAt(5, 1000, 0, 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := FromSweep(sweepAt(4, 1000, 0, 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	d, err := FleetDelta(base, cand, tr)
	if err != nil {
		t.Fatal(err)
	}
	if d.BaselineGPUs != 17 || d.CandidateGPUs != 21 || d.GPUs != 4 || math.Abs(d.MonthlyUSD-4*HoursPerMonth*2) > 1e-9 {
		t.Errorf("delta %+v, want 17 → 21 GPUs, +$%g", d, 4*HoursPerMonth*2)
	}
	// A traffic profile without a peak is an error named for its side.
	if _, err := FleetDelta(base, cand, Traffic{}); err == nil || !strings.HasPrefix(err.Error(), "baseline: ") {
		t.Errorf("error %v", err)
	}
}

func TestTrafficFrom(t *testing.T) {
	c := &workload.CapacityConfig{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5}
	if got, want := TrafficFrom(c), (Traffic{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := TrafficFrom(nil); got != (Traffic{}) {
		t.Errorf("nil section: %+v", got)
	}
}
