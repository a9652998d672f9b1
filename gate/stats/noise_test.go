package stats

import (
	"math"
	"testing"
)

func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 5, 2.5706}, {0.975, 9, 2.2622},
		{0.975, 30, 2.0423}, {0.95, 4, 2.1318}, {0.975, 1e9, 1.95996},
	} {
		if got := tQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("t(%v, %v) = %.4f, want %.4f", c.p, c.df, got, c.want)
		}
	}
}

// constant is a run whose every resample has value v (no sampling noise).
func constant(v float64) Metric {
	return Func{N: 50, F: func([]int32) float64 { return v }}
}

// TestGoodputIntervalHasWidth: every request met, so resampling requests never moves
// goodput; a known between-run spread still gives the interval its width.
func TestGoodputIntervalHasWidth(t *testing.T) {
	flags := make([]bool, 500)
	for i := range flags {
		flags[i] = true
	}
	pol := Policy{Direction: HigherIsBetter, Tolerance: 0.10, Seed: 1}
	base, cand := NewPerSecond(flags, 50), NewPerSecond(flags[:490], 50)
	within := Compare(base, cand, pol)
	if within.Lo != within.Hi {
		t.Fatalf("within-run interval [%v, %v]: expected no width from requests alone", within.Lo, within.Hi)
	}
	res, nz := CompareSpread([]Metric{base}, []Metric{cand}, 0, 0, Spread{RunSD: 0.02, DF: 9}, "calibration", pol)
	if !(res.Lo < res.Point && res.Point < res.Hi) || nz.Between <= 0 || nz.DF <= 0 {
		t.Fatalf("with a known spread: [%v, %v, %v], noise %+v", res.Lo, res.Point, res.Hi, nz)
	}
	if math.Abs(res.Point-0.98) > 1e-9 || res.Verdict != Pass {
		t.Fatalf("point %v [%v, %v] verdict %s; want 0.98, pass (a 2%% drop, its interval inside a 10%% tolerance)", res.Point, res.Lo, res.Hi, res.Verdict)
	}
}

// TestCompareSpreadSeparates: three baseline trials against one candidate run, the case
// CompareTrials cannot decide (chance 1 in 4): with the trials' spread, a regression well
// beyond it fails; a 4% or a 15% change, inside that spread (three trials support no
// better than ±20%), is not decided either way.
func TestCompareSpreadSeparates(t *testing.T) {
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.10, Seed: 1}
	base := []Metric{constant(100), constant(103), constant(97)}
	logs := []float64{math.Log(100), math.Log(103), math.Log(97)}
	sp := Spread{RunSD: sampleSD(logs), DF: 2}
	if tr := CompareTrials(base, []Metric{constant(160)}, pol); tr.Verdict == Fail {
		t.Fatalf("CompareTrials failed 3 against 1: %s", tr.Verdict)
	}
	for _, c := range []struct {
		cand float64
		want Verdict
	}{{160, Fail}, {104, Inconclusive}, {115, Inconclusive}} {
		res, _ := CompareSpread(base, []Metric{constant(c.cand)}, 0, 0, sp, "trials", pol)
		if res.Verdict != c.want {
			t.Errorf("candidate %v: %s [%.3f, %.3f], want %s", c.cand, res.Verdict, res.Lo, res.Hi, c.want)
		}
	}
}

// TestCompareBlocksRemovesDrift: identical engines under a 10% linear drift over the job
// (ABBA blocks, no other noise but a little jitter) give a ratio near 1 and pass; a
// candidate 20% slower under the same drift fails.
func TestCompareBlocksRemovesDrift(t *testing.T) {
	layout := "ABBAABBAABBA"
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05, Seed: 1}
	for _, c := range []struct {
		effect float64
		want   Verdict
	}{{1, Pass}, {1.2, Fail}} {
		var blocks []Block
		jitter := []float64{1.004, 0.997, 1.002, 0.999, 1.001, 0.996, 1.003, 1.0, 0.998, 1.002, 0.999, 1.001}
		for i, side := range layout {
			v := 50 * (1 + 0.10*float64(i)/float64(len(layout))) * jitter[i]
			if side == 'B' {
				v *= c.effect
			}
			blocks = append(blocks, Block{Candidate: side == 'B', At: float64(i), Metric: constant(v)})
		}
		res, nz := CompareBlocks(blocks, constant(55), constant(55*c.effect), pol)
		if res.Verdict != c.want || math.Abs(res.Point/c.effect-1) > 0.01 {
			t.Errorf("effect ×%v: %s, point %.4f [%.4f, %.4f], noise %+v; want %s", c.effect, res.Verdict, res.Point, res.Lo, res.Hi, nz, c.want)
		}
	}
}

// TestCompareSidesDFFollowsTheRunsVariance: a calibration whose runs moved about as much
// as their own sampling noise (llama.cpp, 10 runs: sd of the log 0.147 between runs,
// 0.142 within) leaves a small between-run estimate, but one known only to the 9 degrees
// of freedom of the runs' variance; the interval's degrees of freedom must say so, not
// grow as the estimate shrinks.
func TestCompareSidesDFFollowsTheRunsVariance(t *testing.T) {
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05}
	b := Side{Runs: 10, LogMean: math.Log(6.3), Within: 0.142 * 0.142 / 10}
	c := Side{Runs: 3, LogMean: math.Log(6.3 * 1.3), Within: 0.142 * 0.142 / 3}
	for _, sp := range []Spread{
		{RunSD: 0.147, WithinSD: 0.142, DF: 9},
		{RunSD: 0.130, WithinSD: 0.142, DF: 9}, // s² < w: the between-run estimate is 0
	} {
		_, nz := CompareSides(b, c, sp, "calibration", pol, "")
		if nz.DF <= 0 || nz.DF > 30 {
			t.Errorf("%+v: %.1f degrees of freedom, want about the runs' 9 (at most 30)", sp, nz.DF)
		}
	}
}

// TestKeepResamplesOnce: a kept metric gives the comparison exactly what the metric
// itself gives, and resamples once per policy however often it is compared.
func TestKeepResamplesOnce(t *testing.T) {
	vals := make([]float64, 300)
	for i := range vals {
		vals[i] = 10 + math.Mod(float64(i)*7.3, 5)
	}
	evals := 0
	counted := Func{N: len(vals), F: func(w []int32) float64 {
		evals++
		return NewPercentile(vals, 0.9).Eval(w)
	}}
	pol := Policy{Resamples: 200, Confidence: 0.95, Seed: 3}
	v, sd, why := logWithin(NewPercentile(vals, 0.9), pol, streamBase)
	k := Keep(counted)
	for i := range 3 {
		kv, ksd, kwhy := logWithin(k, pol, streamBase)
		if kv != v || ksd != sd || kwhy != why {
			t.Fatalf("look %d: kept (%v, %v, %q), the metric itself (%v, %v, %q)", i, kv, ksd, kwhy, v, sd, why)
		}
	}
	if want := 1 + pol.Resamples; evals != want { // Value, then the resamples
		t.Errorf("three comparisons of a kept metric evaluated it %d times, want %d (once)", evals, want)
	}
	other := pol
	other.Seed = 4
	if logWithin(k, other, streamBase); evals != 2*(1+pol.Resamples) {
		t.Errorf("another seed: %d evaluations in all, want %d (a new resampling)", evals, 2*(1+pol.Resamples))
	}
	if Keep(k) != k {
		t.Error("Keep of a kept metric wraps it again")
	}
}

// A calibration of few runs whose spread is mostly their own sampling noise, against a
// candidate whose sampling noise is smaller than theirs (a slower engine's smoother
// p99): the interval's degrees of freedom are never fewer than the calibration's, the
// interval is finite, no narrower than the runs' own spread gives, and a 4× regression
// fails. (Welch–Satterthwaite on the raw parts gave 0.24 degrees of freedom, [0, ∞],
// and an inconclusive 7.5× regression.)
func TestCompareSidesDegreesOfFreedomNeverCollapse(t *testing.T) {
	sp := Spread{RunSD: 0.11675, WithinSD: 0.124642, DF: 3} // 4 runs of 60 requests
	base := Side{Runs: 4, LogMean: math.Log(24), Within: sp.WithinSD * sp.WithinSD / 4}
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.5}
	q := tQuantile(0.975, 3)
	floor := math.Expm1(q * sp.RunSD * math.Sqrt(1.0/4+1))
	for _, c := range []struct {
		ratio, candSD float64
		want          Verdict
	}{
		{4, 0.03, Fail}, {7.5, 0.03, Fail}, {4, 0.2, Fail}, {1, 0.03, Inconclusive}, {1, 0.2, Inconclusive},
	} {
		cand := Side{Runs: 1, LogMean: math.Log(24 * c.ratio), Within: c.candSD * c.candSD}
		res, nz := CompareSides(base, cand, sp, "calibration", pol, "")
		if res.Verdict != c.want {
			t.Errorf("ratio %v, candidate sd %v: %s [%.3f, %.3f] on %.2f degrees of freedom, want %s", c.ratio, c.candSD, res.Verdict, res.Lo, res.Hi, nz.DF, c.want)
		}
		if nz.DF < float64(sp.DF) || math.IsInf(res.Hi, 1) || !(res.Lo > 0) {
			t.Errorf("ratio %v, candidate sd %v: [%v, %v] on %v degrees of freedom, want a finite interval on at least %d", c.ratio, c.candSD, res.Lo, res.Hi, nz.DF, sp.DF)
		}
		if res.Resolution < floor*(1-1e-9) {
			t.Errorf("ratio %v, candidate sd %v: resolution ±%.1f%%, narrower than the calibration runs' own ±%.1f%%", c.ratio, c.candSD, 100*res.Resolution, 100*floor)
		}
	}
}
