package stats

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// These tests check the gate's statistics as a whole on synthetic runs: how often it
// fails when nothing changed, how often it catches a real regression, and why requests,
// not gaps, are resampled. All are seeded, so each gives the same counts on every run;
// the margins below are there so that an honest change to the code (another random
// stream, another generator) does not turn them red by luck.

var itlRule = Policy{Direction: LowerIsBetter, Tolerance: 0.10}      // DESIGN §2: itl_p99
var goodputRule = Policy{Direction: HigherIsBetter, Tolerance: 0.05} // DESIGN §2: goodput

type verdictCounts struct{ pass, warn, inconclusive, fail, improved, other atomic.Int64 }

func (c *verdictCounts) add(v Verdict) {
	switch v {
	case Pass:
		c.pass.Add(1)
	case Warn:
		c.warn.Add(1)
	case Inconclusive:
		c.inconclusive.Add(1)
	case Fail:
		c.fail.Add(1)
	case Improved:
		c.improved.Add(1)
	default:
		c.other.Add(1)
	}
}

func (c *verdictCounts) String() string {
	return fmt.Sprintf("pass=%d warn=%d inconclusive=%d fail=%d improved=%d other=%d",
		c.pass.Load(), c.warn.Load(), c.inconclusive.Load(), c.fail.Load(), c.improved.Load(), c.other.Load())
}

// TestAAFalseFail draws baseline and candidate from the same distribution: the gate must
// fail at most 1% of the time, at the default 2000 resamples.
func TestAAFalseFail(t *testing.T) {
	waittest.ManyTrials(t)
	// 200 trials, as DESIGN's acceptance asks: ≤ 1% is then ≤ 2 fails.
	const trials = 200
	var itl, goodput verdictCounts
	parallel(trials, func(i int) {
		base := synth(uint64(2*i), synthSpec{requests: 500})
		cand := synth(uint64(2*i+1), synthSpec{requests: 500})
		pol := itlRule
		pol.Seed = uint64(i)
		itl.add(Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), pol).Verdict)
		pol = goodputRule
		pol.Seed = uint64(i)
		goodput.add(Compare(NewPerSecond(base.good, base.window), NewPerSecond(cand.good, cand.window), pol).Verdict)
	})
	t.Logf("A/A, %d trials of 500 requests per side: itl_p99 %v; goodput %v", trials, &itl, &goodput)
	if n := itl.fail.Load(); n > trials/100 {
		t.Errorf("itl_p99 failed %d of %d A/A trials, want ≤ 1%%", n, trials)
	}
	if n := goodput.fail.Load(); n > trials/100 {
		t.Errorf("goodput failed %d of %d A/A trials, want ≤ 1%%", n, trials)
	}
	if n := itl.other.Load() + goodput.other.Load(); n > 0 {
		t.Errorf("%d A/A comparisons were incomparable", n)
	}
}

// TestPowerITLRegression injects a 20% p99-ITL regression, twice the tolerance: with
// 2000 requests per side the gate must fail at least 95% of the time.
func TestPowerITLRegression(t *testing.T) {
	waittest.ManyTrials(t)
	// 40 trials: enough to tell a power of 95% from one of 80% (40 trials at 80% give
	// 38 or more fails 0.8% of the time), few enough for -race on 2 cores (each trial
	// bootstraps 2 × 2000 requests × ~170 gaps, 2000 times).
	const trials = 40
	var c verdictCounts
	parallel(trials, func(i int) {
		base := synth(uint64(1000+2*i), synthSpec{requests: 2000})
		cand := synth(uint64(1000+2*i+1), synthSpec{requests: 2000, gapScale: 1.2})
		pol := itlRule
		pol.Seed = uint64(i)
		c.add(Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), pol).Verdict)
	})
	t.Logf("20%% ITL regression, %d trials of 2000 requests per side: %v", trials, &c)
	if n := c.fail.Load(); n*100 < 95*trials {
		t.Errorf("a 20%% regression failed %d of %d trials, want ≥ 95%%", n, trials)
	}
}
