package stats

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJudge(t *testing.T) {
	const tol = 0.1
	for _, c := range []struct {
		dir           Direction
		point, lo, hi float64
		want          Verdict
		why           string
	}{
		{LowerIsBetter, 1.3, 1 + tol + 0.01, 1.5, Fail, "the whole interval is beyond the tolerance"},
		{LowerIsBetter, 1.3, 1 + tol, 1.5, Inconclusive, "Lo on the tolerance is not beyond it"},
		{LowerIsBetter, 1.15, 1.05, 1.25, Inconclusive, "only the point estimate is beyond the tolerance: the interval straddles the edge"},
		{LowerIsBetter, 1 + tol, 1.0, 1.2, Inconclusive, "a point on the tolerance, the interval across it"},
		{LowerIsBetter, 1.05, 0.98, 1.12, Inconclusive, "a 5% rise inside a 10% tolerance, but the interval reaches beyond it: not shown within"},
		{LowerIsBetter, 1.05, 0.98, 1 + tol, Pass, "Hi on the tolerance is within it"},
		{LowerIsBetter, 1.03, 0.97, 1.09, Pass, "the whole interval within a 10% tolerance"},
		{LowerIsBetter, 0.85, 0.8, 0.95, Pass, "better, the interval within the tolerance on the worse side"},
		{LowerIsBetter, 0.7, 0.6, 1 - tol - 0.01, Improved, "the whole interval is better than the tolerance"},
		{LowerIsBetter, 0.7, 0.6, 1 - tol, Pass, "Hi on the improvement's edge is not beyond it"},
		{LowerIsBetter, 1.0, 0, math.Inf(1), Inconclusive, "a sequence that excludes nothing decides nothing"},
		{LowerIsBetter, 4.0, 2.0, math.Inf(1), Fail, "an unbounded interval wholly beyond the tolerance still fails"},
		{LowerIsBetter, 1.0, math.NaN(), math.NaN(), Inconclusive, "an undefined interval decides nothing"},
		{HigherIsBetter, 0.7, 0.6, 1 - tol - 0.01, Fail, "higher is better: the whole interval fell beyond the tolerance"},
		{HigherIsBetter, 0.85, 0.8, 0.95, Inconclusive, "higher is better: only the point fell beyond"},
		{HigherIsBetter, 0.95, 0.88, 1.02, Inconclusive, "higher is better: a 5% drop whose interval reaches beyond 10%"},
		{HigherIsBetter, 0.97, 0.92, 1.02, Pass, "higher is better: the interval within 10%"},
		{HigherIsBetter, 1.3, 1 + tol + 0.01, 1.5, Improved, "higher is better: the whole interval rose beyond"},
		{HigherIsBetter, 1.3, 1.05, 1.5, Pass, "higher is better: a rise the interval does not confirm, within the tolerance"},
		{HigherIsBetter, 1.0, 0, math.Inf(1), Inconclusive, "higher is better: an interval of [0, ∞]"},
	} {
		if got := judge(c.dir, tol, c.point, c.lo, c.hi); got != c.want {
			t.Errorf("%s %v [%v, %v]: %s, want %s (%s)", c.dir, c.point, c.lo, c.hi, got, c.want, c.why)
		}
	}
}

func TestCompareExact(t *testing.T) {
	higher := Policy{Direction: HigherIsBetter, Tolerance: 0.01} // DESIGN §2: kv_concurrency
	lower := Policy{Direction: LowerIsBetter, Tolerance: 0.10}
	for _, c := range []struct {
		name       string
		base, cand float64
		pol        Policy
		want       Verdict
	}{
		// KV-limited concurrency fell from 100 to 98: 2% worse than a 1% tolerance.
		{"kv drop", 100, 98, higher, Fail},
		// 0.5% drop, inside the tolerance: no noise to allow for, so a plain pass.
		{"kv small drop", 100, 99.5, higher, Pass},
		// Unchanged.
		{"kv same", 100, 100, higher, Pass},
		// A larger KV cache: better beyond the tolerance.
		{"kv rise", 100, 103, higher, Improved},
		// Lower-is-better mirror: 20% worse than a 10% tolerance.
		{"lower worse", 10, 12, lower, Fail},
		{"lower better", 10, 8, lower, Improved},
		// No baseline capacity: nothing to divide by.
		{"zero base", 0, 5, higher, Incomparable},
		// A rule without a direction is refused, not guessed.
		{"no direction", 100, 98, Policy{Tolerance: 0.01}, Incomparable},
	} {
		res := CompareExact(c.base, c.cand, c.pol)
		if res.Verdict != c.want {
			t.Errorf("%s: %s, want %s (%+v)", c.name, res.Verdict, c.want, res)
		}
		if res.Verdict != Incomparable && (res.Lo != res.Point || res.Hi != res.Point) {
			t.Errorf("%s: exact interval [%v, %v] around %v, want a point", c.name, res.Lo, res.Hi, res.Point)
		}
	}
}

func ptr(x float64) *float64 { return &x }

func TestCheckAbsolute(t *testing.T) {
	for _, c := range []struct {
		name     string
		value    float64
		min, max *float64
		want     Verdict
	}{
		// error_rate: {max: 0.5%}.
		{"error rate under max", 0.004, nil, ptr(0.005), Pass},
		{"error rate on max", 0.005, nil, ptr(0.005), Pass}, // "≤ 0.5%" admits 0.5%
		{"error rate over max", 0.006, nil, ptr(0.005), Fail},
		// SLO attainment ≥ 99%.
		{"attainment under min", 0.985, ptr(0.99), nil, Fail},
		{"attainment on min", 0.99, ptr(0.99), nil, Pass},
		{"attainment over min", 0.995, ptr(0.99), nil, Pass},
		{"inside both", 5, ptr(1), ptr(10), Pass},
		{"above both", 11, ptr(1), ptr(10), Fail},
		// A check with no bound checks nothing: say so rather than pass.
		{"no bounds", 1, nil, nil, Incomparable},
		// Bounds that admit nothing are a configuration error.
		{"min above max", 5, ptr(10), ptr(1), Incomparable},
		// No value (no requests measured) is not a pass.
		{"no value", math.NaN(), nil, ptr(0.005), Incomparable},
	} {
		got := CheckAbsolute(c.value, c.min, c.max)
		if got.Verdict != c.want {
			t.Errorf("%s: %s, want %s (%q)", c.name, got.Verdict, c.want, got.Warnings)
		}
		if got.Verdict == Incomparable && len(got.Warnings) == 0 {
			t.Errorf("%s: incomparable without a warning saying why", c.name)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestCompareIncomparable(t *testing.T) {
	ok := NewFraction(slices.Repeat([]bool{true, false}, 50))
	for _, c := range []struct {
		name       string
		base, cand Metric
		pol        Policy
		want       string
	}{
		// No errors in the baseline: an error-rate ratio is undefined (it is an absolute
		// check's job).
		{"zero baseline", NewFraction(make([]bool, 100)), ok, itlRule, "baseline value is 0: ratio undefined"},
		{"empty baseline", NewFraction(nil), ok, itlRule, "baseline has no requests"},
		{"empty candidate", ok, NewMean(nil), itlRule, "candidate has no requests"},
		// Every request failed: no TTFT at all.
		{"no values", NewPercentile([]float64{math.NaN(), math.NaN()}, 0.95), ok, itlRule, "baseline has no value: ratio undefined"},
		{"no direction", ok, ok, Policy{Tolerance: 0.1}, "policy: direction is unset, want lower or higher"},
		{"bad confidence", ok, ok, Policy{Direction: LowerIsBetter, Confidence: 1.5}, "policy: confidence 1.5 outside (0, 1)"},
	} {
		res := Compare(c.base, c.cand, c.pol)
		if res.Verdict != Incomparable {
			t.Errorf("%s: %s, want incomparable", c.name, res.Verdict)
		}
		if !slices.Contains(res.Warnings, c.want) {
			t.Errorf("%s: warnings %q lack %q", c.name, res.Warnings, c.want)
		}
		// The gate writes Results into JSON: an undefined ratio must not be a NaN.
		if _, err := json.Marshal(res); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestCompareCandidateZero: a candidate with no errors at all against a baseline with
// some is a clear improvement, and its Result must still be finite.
func TestCompareCandidateZero(t *testing.T) {
	base := NewFraction(slices.Concat(make([]bool, 950), slices.Repeat([]bool{true}, 50)))
	cand := NewFraction(make([]bool, 1000))
	res := Compare(base, cand, Policy{Direction: LowerIsBetter, Tolerance: 0.5})
	if res.Verdict != Improved || res.Point != 0 {
		t.Errorf("error rate 5%% → 0: %s at ratio %v, want improved at 0", res.Verdict, res.Point)
	}
	if math.IsNaN(res.Resolution) || res.Resolution <= 0 {
		t.Errorf("resolution %v, want the baseline's spread", res.Resolution)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Error(err)
	}
}

// TestComparePolicyDefaults checks that the gate cannot ask for a coarse interval by
// accident, and that every policy error is reported at once.
func TestComparePolicyDefaults(t *testing.T) {
	m := NewFraction(slices.Repeat([]bool{true, false}, 50))
	res := Compare(m, m, Policy{Direction: HigherIsBetter, Tolerance: 0.05, Resamples: 500})
	if res.Policy.Resamples != MinResamples || res.Policy.Confidence != DefaultConfidence {
		t.Errorf("effective policy %+v, want %d resamples at %v", res.Policy, MinResamples, DefaultConfidence)
	}
	if !slices.Contains(res.Warnings, "resamples raised from 500 to the minimum 2000") {
		t.Errorf("warnings %q lack the raised resample count", res.Warnings)
	}
	res = Compare(m, m, Policy{Direction: HigherIsBetter, Resamples: 500, AllowFewResamples: true})
	if res.Policy.Resamples != 500 {
		t.Errorf("AllowFewResamples: %d resamples, want 500", res.Policy.Resamples)
	}
	res = Compare(m, m, Policy{Tolerance: -1, Resamples: -3})
	if len(res.Warnings) != 3 {
		t.Errorf("three policy errors, got warnings %q", res.Warnings)
	}
}

func TestCompareTooFewRequestsWarns(t *testing.T) {
	base := synth(11, synthSpec{requests: 80})
	cand := synth(12, synthSpec{requests: 80})
	res := Compare(NewPercentile(base.ttft, 0.99), NewPercentile(cand.ttft, 0.99),
		Policy{Direction: LowerIsBetter, Tolerance: 0.10})
	want := "baseline: too few requests for a p99 interval: 80 < 1000 (10 values beyond it)"
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("warnings %q lack %q", res.Warnings, want)
	}
	// A warning is data: the comparison still gives a verdict.
	if res.Verdict == Incomparable {
		t.Errorf("verdict incomparable; too few requests warns, it does not refuse")
	}
}

func TestCompareDeterministic(t *testing.T) {
	base := synth(21, synthSpec{requests: 300})
	cand := synth(22, synthSpec{requests: 300, gapScale: 1.05})
	run := func(seed uint64) Result {
		pol := itlRule
		pol.Seed = seed
		return Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), pol)
	}
	a, b := run(7), run(7)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("same seed, different results (-first +second):\n%s", d)
	}
	c := run(8)
	if c.Lo == a.Lo && c.Hi == a.Hi {
		t.Errorf("seeds 7 and 8 gave the same interval [%v, %v]: the seed is not used", a.Lo, a.Hi)
	}
	if c.Point != a.Point {
		t.Errorf("the point estimate %v depends on the seed (%v)", c.Point, a.Point)
	}
	m := NewPooledPercentile(base.gaps, 0.99)
	if r1, r2 := Resolution(m, 0, 0, 3), Resolution(m, 0, 0, 3); r1 != r2 {
		t.Errorf("Resolution with one seed: %v then %v", r1, r2)
	}
}

// TestCompareLargeSample: with 4000 requests per side the interval is narrow, so a 5%
// change inside a 10% tolerance passes outright and a 30% improvement is shown as one.
func TestCompareLargeSample(t *testing.T) {
	base := synth(31, synthSpec{requests: 4000})
	for _, c := range []struct {
		scale float64
		want  Verdict
		why   string
	}{
		{1.05, Pass, "5% slower, inside the 10% tolerance: neither warn nor fail"},
		{0.70, Improved, "30% faster: the whole interval is beyond the tolerance"},
		{1.00, Pass, "unchanged"},
	} {
		cand := synth(32, synthSpec{requests: 4000, gapScale: c.scale})
		res := Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), itlRule)
		if res.Verdict != c.want {
			t.Errorf("gaps ×%v: %s, want %s (%s); ratio %.3f [%.3f, %.3f]",
				c.scale, res.Verdict, c.want, c.why, res.Point, res.Lo, res.Hi)
		}
	}
}

// TestRequestBootstrapIsWider shows why whole requests are resampled: with gaps correlated
// within a request, resampling single gaps (as if each were independent) gives an
// interval far narrower than the spread between runs.
func TestRequestBootstrapIsWider(t *testing.T) {
	base := synth(41, synthSpec{requests: 500})
	cand := synth(42, synthSpec{requests: 500})
	// The naive bootstrap, in this test only: every gap its own resampling unit.
	singles := func(groups [][]float64) [][]float64 {
		var s [][]float64
		for _, g := range groups {
			for _, v := range g {
				s = append(s, []float64{v})
			}
		}
		return s
	}
	byRequest := Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), itlRule)
	byGap := Compare(NewPooledPercentile(singles(base.gaps), 0.99), NewPooledPercentile(singles(cand.gaps), 0.99), itlRule)
	if byRequest.Point != byGap.Point {
		t.Fatalf("the point estimate changed with the resampling unit: %v vs %v", byRequest.Point, byGap.Point)
	}
	wr, wg := byRequest.Hi-byRequest.Lo, byGap.Hi-byGap.Lo
	t.Logf("p99 ITL interval width: %.3f resampling requests, %.3f resampling gaps (%.1f×)", wr, wg, wr/wg)
	if wr < 2*wg {
		t.Errorf("resampling requests gave an interval %.3f wide, single gaps %.3f: want at least twice as wide", wr, wg)
	}
}

// TestResolution checks the advisor against what a comparison of two such runs shows,
// and the warning for a tolerance narrower than the resolution.
func TestResolution(t *testing.T) {
	base := synth(51, synthSpec{requests: 500})
	cand := synth(52, synthSpec{requests: 500})
	bm, cm := NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99)
	advised := Resolution(bm, 0, 0, 1)
	res := Compare(bm, cm, itlRule)
	halfWidth := (res.Hi - res.Lo) / 2 / res.Point
	t.Logf("500 requests, p99 ITL: advised ±%.1f%%, comparison's resolution ±%.1f%%, interval half-width ±%.1f%%",
		100*advised, 100*res.Resolution, 100*halfWidth)
	// The advisor assumes the other run is like this one; allow a factor 1.5 either way.
	for name, got := range map[string]float64{"comparison's resolution": res.Resolution, "interval half-width": halfWidth} {
		if got < advised/1.5 || got > advised*1.5 {
			t.Errorf("advised resolution ±%.3f, %s ±%.3f: more than 1.5× apart", advised, name, got)
		}
	}

	for _, c := range []struct {
		tol  float64
		warn bool
		why  string
	}{
		{0.01, true, "1% is far inside the ±7–9% that 500 requests resolve"},
		{0.30, false, "30% is well outside the resolution"},
	} {
		pol := itlRule
		pol.Tolerance = c.tol
		res := Compare(bm, cm, pol)
		found := false
		for _, w := range res.Warnings {
			if strings.HasPrefix(w, "tolerance "+fmtPct(c.tol)+" is narrower than this comparison's resolution ±") {
				found = true
			}
		}
		if found != c.warn {
			t.Errorf("tolerance %v: resolution warning %v, want %v (%s); warnings %q", c.tol, found, c.warn, c.why, res.Warnings)
		}
	}
	if r := Resolution(NewFraction(make([]bool, 10)), 0, 0, 1); !math.IsNaN(r) {
		t.Errorf("Resolution of a metric whose value is 0 = %v, want NaN", r)
	}
}
