package plan

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/internal/waittest"
)

// flat is a statistic of value v that resampling never moves: a run's or block's value
// with its noise drawn into it.
func flat(v float64) stats.Metric {
	return stats.Func{N: 1, F: func([]int32) float64 { return v }}
}

var forecastPolicy = stats.Policy{Direction: stats.LowerIsBetter, Tolerance: 0.10, Confidence: 0.95, Resamples: 100, AllowFewResamples: true}

// abBlocks draws n blocks laid out ABBA, each with its own engine start (restarts): log
// noise of sd per block, the candidate delta above the baseline.
func abBlocks(r *rand.Rand, n int, sd, delta float64) []stats.Block {
	out := make([]stats.Block, n)
	for i := range out {
		cand := i%4 == 1 || i%4 == 2
		x := sd * r.NormFloat64()
		if cand {
			x += delta
		}
		out[i] = stats.Block{Candidate: cand, At: float64(i), Metric: flat(math.Exp(x))}
	}
	return out
}

// detected95 is the smallest change (a fraction) that fails at least 95% of 400 jobs
// drawn by fails, by bisection on its log.
func detected95(t *testing.T, seed uint64, fails func(r *rand.Rand, delta float64) bool) float64 {
	t.Helper()
	rate := func(delta float64) float64 {
		r := rand.New(rand.NewPCG(seed, 1))
		k := 0
		for range 400 {
			if fails(r, delta) {
				k++
			}
		}
		return float64(k) / 400
	}
	lo, hi := math.Log1p(forecastPolicy.Tolerance), math.Log(4)
	if rate(hi) < 0.95 {
		t.Fatalf("a 4x change fails fewer than 95%% of jobs")
	}
	for range 20 {
		mid := (lo + hi) / 2
		if rate(mid) >= 0.95 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Expm1(hi)
}

// TestPlanForecastsMatchSimulation: what slogate plan forecasts (the smallest change each
// recipe fails 95% of the time, the blocks an unchanged candidate's sequential job runs
// and so its GPU minutes) is within 15% of the same settings simulated and judged by
// the gate's own functions.
func TestPlanForecastsMatchSimulation(t *testing.T) {
	waittest.ManyTrials(t)
	within := func(what string, plan, sim float64) {
		t.Helper()
		t.Logf("%s: plan %.4g, simulated %.4g", what, plan, sim)
		if math.Abs(plan-sim) > 0.15*sim {
			t.Errorf("%s: plan forecasts %.4g, the simulation gives %.4g: more than 15%% apart", what, plan, sim)
		}
	}
	// The committed baseline: 3 repeats on one start against 10 calibration runs each on
	// its own start, the spread known.
	const start, run, samp = 0.05, 0.02, 0.03
	sp := stats.Spread{RunSD: math.Sqrt(start*start + run*run + samp*samp), WithinSD: samp, DF: 9, SharedSD: start}
	rule := Rule{Metric: "itl_p99", Tolerance: forecastPolicy.Tolerance, RunSD: sp.RunSD, SharedSD: start, CalRuns: 10, CalStarts: 10, DF: 9}
	j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Repeats: 3, MinBlocks: 16, MaxBlocks: 16}
	rs := Costs(j, []Rule{rule})
	side := func(r *rand.Rand, n, starts int, mu float64) stats.Side {
		var m, off float64
		for i := range n {
			if i%(n/starts) == 0 {
				off = start * r.NormFloat64()
			}
			m += mu + off + run*r.NormFloat64() + samp*r.NormFloat64()
		}
		return stats.Side{Runs: n, Starts: starts, LogMean: m / float64(n), Within: samp * samp / float64(n)}
	}
	for _, c := range []struct {
		recipe Recipe
		starts int
	}{{rs[0], 1}, {rs[3], 3}} {
		sim := detected95(t, 1, func(r *rand.Rand, delta float64) bool {
			res, _ := stats.CompareSides(side(r, 10, 10, 0), side(r, 3, c.starts, delta), sp, "calibration", forecastPolicy, "")
			return res.Verdict == stats.Fail
		})
		within(c.recipe.Mode+": detectable change", c.recipe.Detectable[0], sim)
	}
	// A/B with restarts, the fixed job of 16 blocks.
	const blockSD = 0.05
	rule = Rule{Metric: "itl_p99", Tolerance: forecastPolicy.Tolerance, RunSD: blockSD, CalRuns: 10}
	rs = Costs(j, []Rule{rule})
	sim := detected95(t, 2, func(r *rand.Rand, delta float64) bool {
		b := abBlocks(r, 16, blockSD, delta)
		res, _ := stats.CompareBlocks(b, flat(1), flat(math.Exp(delta)), forecastPolicy)
		return res.Verdict == stats.Fail
	})
	within("A/B fixed, 16 blocks: detectable change", rs[1].Detectable[0], sim)
	// A/B with restarts, sequential from 4 to 32 blocks: an unchanged candidate's blocks
	// and GPU minutes (the median job's).
	j.MinBlocks, j.MaxBlocks = 4, 32
	const quietSD = 0.015
	rs = Costs(j, []Rule{{Metric: "itl_p99", Tolerance: forecastPolicy.Tolerance, RunSD: quietSD, CalRuns: 10}})
	r := rand.New(rand.NewPCG(3, 1))
	var ran []int
	for range 400 {
		b := abBlocks(r, 32, quietSD, 0)
		n := 32
		for k := 4; k < 32; k += 2 {
			if _, _, _, dec, ok := stats.SequentialBlocks(b[:k], forecastPolicy); ok && dec != stats.Undecided {
				n = k
				break
			}
		}
		ran = append(ran, n)
	}
	slices.Sort(ran)
	median := ran[len(ran)/2]
	within("A/B sequential 4-32, unchanged: blocks", float64(rs[1].Blocks), float64(median))
	perBlock := (j.Start + j.Warmup + j.Run).Minutes()
	within("A/B sequential 4-32, unchanged: GPU minutes", rs[1].GPUMinutes, float64(median)*perBlock)
}
