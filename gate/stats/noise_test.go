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
	res, nz := CompareSpread([]Metric{base}, []Metric{cand}, Spread{RunSD: 0.02, DF: 9}, "calibration", pol)
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
		res, _ := CompareSpread(base, []Metric{constant(c.cand)}, sp, "trials", pol)
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
