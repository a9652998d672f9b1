package gate

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// startRuns is one run per start, each start ready after the given seconds (first token
// 0.5 s later).
func startRuns(t0 time.Time, secs ...float64) []*run {
	var rs []*run
	for i, s := range secs {
		rs = append(rs, &run{start: &result.Startup{StartedAt: t0.Add(time.Duration(i) * time.Hour), ReadyMS: s * 1e3, FirstTokenMS: s*1e3 + 500}})
	}
	return rs
}

func TestEvalStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := workload.GateConfig{Resamples: 2000, Confidence: 0.95, Seed: 1}
	tol := workload.Rule{Metric: "engine_start", Tolerance: 0.10}
	maxRule := func(ms float64) workload.Rule { return workload.Rule{Metric: "engine_start", Max: &ms} }
	shared := startRuns(t0, 60)
	shared = append(shared, &run{start: shared[0].start}) // a second trial of the same start
	noFirst := startRuns(t0, 60, 61)
	noFirst[0].start.FirstTokenMS, noFirst[1].start.FirstTokenMS = 0, 0
	for _, c := range []struct {
		name       string
		rule       workload.Rule
		base, cand []*run
		want       Verdict
		method     string
		warn       string // a warning that must be said
		judged     bool
	}{
		// An upgrade that adds half a minute to every start fails beyond its interval.
		{"slower starts fail", tol, startRuns(t0, 60, 62, 61, 59), startRuns(t0, 90, 93, 91, 88), Fail, MethodBootstrap, "starts: a bootstrap", true},
		// The same start times within noise pass.
		{"same starts pass", tol, startRuns(t0, 60, 62, 61, 59), startRuns(t0, 61, 60, 62, 60), Pass, MethodBootstrap, "", true},
		// One start each side: the ratio alone, and the verdict says it has no interval.
		{"one start each", tol, startRuns(t0, 60), startRuns(t0, 90), Fail, MethodExact, "has no interval", true},
		// Two trials measured on one start are one start, not two.
		{"trials of one start count once", tol, startRuns(t0, 60, 61), shared, Pass, MethodExact, "2 baseline and 1 candidate starts", true},
		// No start on the candidate (the engine was already running): a warning, never a pass.
		{"no start measured", tol, startRuns(t0, 60), []*run{{}}, Warn, MethodNone, "did not start", true},
		// No start in the baseline: nothing to compare, said so.
		{"baseline without a start", tol, []*run{{}}, startRuns(t0, 60), Warn, MethodNone, "baseline has no start", true},
		// An absolute limit applies without a baseline.
		{"absolute limit", maxRule(75000), nil, startRuns(t0, 90, 80), Fail, MethodAbsolute, "above the maximum", true},
		{"absolute limit met", maxRule(75000), nil, startRuns(t0, 60, 70), Pass, MethodAbsolute, "", true},
		// A relative rule without a baseline judges nothing.
		{"no baseline", tol, nil, startRuns(t0, 60), "", MethodNone, "", false},
		// The first request after the start failed on every start: a warning.
		{"first token missing", workload.Rule{Metric: "first_token_after_start", Tolerance: 0.1}, startRuns(t0, 60, 61), noFirst, Warn, MethodNone, "first request after the start failed", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			def, err := lookupMetric(c.rule.Metric)
			if err != nil {
				t.Fatal(err)
			}
			m, judged := evalRule(c.rule, def, c.base, c.cand, nil, g)
			if judged != c.judged {
				t.Fatalf("judged %v, want %v: %+v", judged, c.judged, m)
			}
			if !judged {
				return
			}
			if m.Verdict != c.want || m.Method != c.method {
				t.Errorf("verdict %s (%s), want %s (%s); %+v", m.Verdict, m.Method, c.want, c.method, m)
			}
			if c.warn != "" && !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, c.warn) }) {
				t.Errorf("no warning with %q: %q", c.warn, m.Warnings)
			}
			if c.method == MethodBootstrap && (m.Lo == nil || m.Hi == nil || *m.Lo >= *m.Hi) {
				t.Errorf("no interval: %+v", m)
			}
		})
	}
}
