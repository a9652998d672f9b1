package stats

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// constants turns per-trial values into metrics, as if each trial's run had that value.
func constants(vs ...float64) []Metric {
	ms := make([]Metric, len(vs))
	for i, v := range vs {
		ms[i] = Func{N: 1, F: func([]int32) float64 { return v }}
	}
	return ms
}

func TestCompareTrials(t *testing.T) {
	lower := Policy{Direction: LowerIsBetter, Tolerance: 0.10}
	higher := Policy{Direction: HigherIsBetter, Tolerance: 0.05}
	for _, c := range []struct {
		name       string
		base, cand []float64
		pol        Policy
		want       Verdict
		warn       string // a warning that must be present
	}{
		// Every candidate trial is more than 10% above every baseline trial, and 3 against
		// 3 separate by chance only 1 time in 20: fail.
		{"separated 3v3", []float64{100, 102, 104}, []float64{115, 118, 120}, lower, Fail, ""},
		// Medians 20% apart but one candidate trial overlaps the baseline's spread: the
		// trials do not show it beyond doubt, only the point does: undecided.
		{"overlap 3v3", []float64{100, 102, 104}, []float64{105, 122, 125}, lower, Inconclusive, ""},
		// Separated, but by less than the tolerance: pass.
		{"inside tolerance", []float64{100, 102, 104}, []float64{106, 107, 108}, lower, Pass, ""},
		// Two trials a side separate by chance 1 time in 6: too few to fail, undecided.
		{"separated 2v2", []float64{100, 101}, []float64{130, 131}, lower, Inconclusive,
			"with 2 baseline and 2 candidate trials, every candidate trial lands beyond every baseline trial by chance 1 time in 6: too few trials to fail or improve at 95% confidence (3 per side needed)"},
		// Every candidate trial is better by more than the tolerance: improved.
		{"improved 5v5", []float64{100, 101, 99, 103, 102}, []float64{80, 82, 79, 81, 83}, lower, Improved, ""},
		// Improved with 2 a side is lowered to pass, not to warn: nothing is worse.
		{"improved 2v2", []float64{100, 101}, []float64{80, 81}, lower, Pass, "too few trials"},
		// Goodput (higher is better): every candidate trial more than 5% down.
		{"goodput down", []float64{10, 10.2, 9.9}, []float64{9.1, 9.2, 9.0}, higher, Fail, ""},
		{"goodput same", []float64{10, 10.2, 9.9}, []float64{10.1, 9.8, 10.0}, higher, Pass, ""},
		// A baseline trial with no goodput makes every ratio against it undefined.
		{"zero baseline trial", []float64{10, 0, 9.9}, []float64{10.1, 9.8, 10.0}, higher, Incomparable,
			"baseline trial 2: baseline value is 0: ratio undefined"},
		{"no candidate trials", []float64{10}, nil, higher, Incomparable,
			"1 baseline and 0 candidate trials: nothing to compare"},
	} {
		res := CompareTrials(constants(c.base...), constants(c.cand...), c.pol)
		if res.Verdict != c.want {
			t.Errorf("%s: %s, want %s; ratio %.3f [%.3f, %.3f] %q", c.name, res.Verdict, c.want, res.Point, res.Lo, res.Hi, res.Warnings)
		}
		if c.warn != "" && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, c.warn) }) {
			t.Errorf("%s: warnings %q lack %q", c.name, res.Warnings, c.warn)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestCompareTrialsFields(t *testing.T) {
	res := CompareTrials(constants(100, 104, 102), constants(120, 115, 118), Policy{Direction: LowerIsBetter, Tolerance: 0.1})
	if !slices.Equal(res.Candidate, []float64{120, 115, 118}) {
		t.Errorf("candidate trials %v, want them in the order given", res.Candidate)
	}
	if res.BaselineMedian != 102 || res.CandidateMedian != 118 {
		t.Errorf("medians %v and %v, want 102 and 118", res.BaselineMedian, res.CandidateMedian)
	}
	if math.Abs(res.Lo-115.0/104) > 1e-12 || math.Abs(res.Hi-120.0/100) > 1e-12 {
		t.Errorf("spread [%v, %v], want [115/104, 120/100]", res.Lo, res.Hi)
	}
	if res.Chance != 1.0/20 {
		t.Errorf("chance of separation %v, want 1/20 for 3 against 3", res.Chance)
	}
	if n := trialsNeeded(0.01); n != 5 {
		t.Errorf("trials per side for 99%%: %d, want 5 (1/C(10,5) = 1/252)", n)
	}
}
