package measure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
)

// threshold is a fake engine for the search: every rate up to capacity passes.
func threshold(capacity float64, verdictAbove string) func(int, string, float64) result.SweepStep {
	return func(k int, phase string, rate float64) result.SweepStep {
		v := result.StepPass
		if rate > capacity {
			v = verdictAbove
		}
		return result.SweepStep{Step: k, Phase: phase, RateRPS: rate, Verdict: v, Reason: "fake"}
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		plan      SweepPlan
		probe     func(int, string, float64) result.SweepStep
		bound     string
		max       float64 // 0: none
		rates     []float64
		failure   string
		noteMatch string
	}{
		// Ramp 1, 2, 4, 8 (fails at 7.3), then bisect [4, 8] to 5%: 6 ✓, 7 ✓, 7.5 ✗,
		// 7.25 ✓ → [7.25, 7.5] is 3.4%.
		{"ramp-then-bisect", SweepPlan{Min: 1, Max: 1000, Factor: 2, Precision: 0.05, MaxSteps: 40}, threshold(7.3, result.StepFail),
			result.BoundSLO, 7.25, []float64{1, 2, 4, 8, 6, 7, 7.5, 7.25}, "", ""},
		// A saturated step is a failure like any other: [4, 8] → 6 ✗ → 5 ✓ → [5, 6] is
		// within 30%.
		{"saturated", SweepPlan{Min: 1, Max: 1000, Factor: 2, Precision: 0.3, MaxSteps: 40}, threshold(5, result.StepSaturated),
			result.BoundSLO, 5, []float64{1, 2, 4, 8, 6, 5}, "", ""},
		// Every step up to --max-rate passes: the rate is a lower bound, said as such; the
		// last ramp step is clamped to the max.
		{"max-rate", SweepPlan{Min: 1, Max: 5, Factor: 2, Precision: 0.05, MaxSteps: 40}, threshold(100, result.StepFail),
			result.BoundMaxRate, 5, []float64{1, 2, 4, 5}, "", ""},
		// The client limits the third step: stop, no capacity.
		{"client", SweepPlan{Min: 1, Max: 1000, Factor: 2, Precision: 0.05, MaxSteps: 40}, func(k int, ph string, r float64) result.SweepStep {
			st := threshold(100, result.StepFail)(k, ph, r)
			if r >= 4 {
				st.Verdict = result.StepClient
			}
			return st
		}, result.BoundClient, 0, []float64{1, 2, 4}, "", ""},
		// The engine fails mid-bisection: stop with the reason, no capacity.
		{"engine-failure", SweepPlan{Min: 1, Max: 1000, Factor: 2, Precision: 0.05, MaxSteps: 40}, func(k int, ph string, r float64) result.SweepStep {
			st := threshold(3, result.StepFail)(k, ph, r)
			if ph == "bisect" {
				st.Verdict, st.Reason = result.StepFailed, "engine unreachable"
			}
			return st
		}, "", 0, []float64{1, 2, 4, 3}, "step 4 at 3 req/s: engine unreachable", ""},
		// The very first step fails: no rate within the SLO was found above --min-rate.
		{"min-rate-fails", SweepPlan{Min: 10, Max: 1000, Factor: 2, Precision: 0.05, MaxSteps: 40}, threshold(5, result.StepFail),
			result.BoundSLO, 0, []float64{10}, "", "lower --min-rate"},
		// A step budget stops a search whose precision needs more steps, and says so.
		{"step-budget", SweepPlan{Min: 1, Max: 1000, Factor: 2, Precision: 0.001, MaxSteps: 6}, threshold(7.3, result.StepFail),
			result.BoundSLO, 7, []float64{1, 2, 4, 8, 6, 7}, "", "wider than the precision"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sw := &result.Sweep{}
			Search(sw, tc.plan, tc.probe)
			var rates []float64
			for i, st := range sw.Steps {
				rates = append(rates, st.RateRPS)
				if st.Step != i+1 {
					t.Errorf("step %d numbered %d", i+1, st.Step)
				}
			}
			if fmt.Sprint(rates) != fmt.Sprint(tc.rates) {
				t.Errorf("rates %v, want %v", rates, tc.rates)
			}
			if sw.Bound != tc.bound || sw.Failure != tc.failure {
				t.Errorf("bound %q failure %q, want %q %q", sw.Bound, sw.Failure, tc.bound, tc.failure)
			}
			switch {
			case tc.max == 0 && sw.MaxSustainableRPS != nil:
				t.Errorf("max %g, want none", *sw.MaxSustainableRPS)
			case tc.max != 0 && (sw.MaxSustainableRPS == nil || *sw.MaxSustainableRPS != tc.max):
				t.Errorf("max %v, want %g", sw.MaxSustainableRPS, tc.max)
			}
			if tc.noteMatch != "" && !strings.Contains(strings.Join(sw.Notes, "\n"), tc.noteMatch) {
				t.Errorf("notes %q lack %q", sw.Notes, tc.noteMatch)
			}
		})
	}
}
