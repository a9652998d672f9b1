package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/gate/stats/statstest"
	"github.com/slogate/slogate/internal/waittest"
)

// The A/B rules at their edge, at the level of their decisions (statstest.RunEdge): each
// block's log value is drawn, and a job is looked at and judged by the functions an A/B
// job calls (lookRule at every look, ABStop.judgePolicy, stats.CompareBlocksCore and
// sequentialVerdict), so the stopping rule simulated is the one that runs.

// abWorld is the A/B jobs' spread of a block's log value: of an engine start, of a
// block of one start, and of a block's sampling error. The noise model shapes the
// blocks' offsets and sampling errors; an engine start's offset is normal.
type abWorld struct{ start, run, within float64 }

// abEdgePolicy is every A/B rule's: a tolerance of 10%, lower is better, 95% confidence.
var abEdgePolicy = stats.Policy{Direction: stats.LowerIsBetter, Tolerance: 0.10, Confidence: 0.95, Resamples: 100, AllowFewResamples: true}

// abJob draws the blocks of an A/B job laid out ABBA, n blocks, the candidate's log
// level delta above the baseline's. With restarts every block has its own engine start
// (its offset drawn per block); swapped, each side's engine keeps the one start's offset
// drawn before the first block. The noise model shapes each block's own offset and
// sampling error; the start offsets are normal (abWorld).
func (w abWorld) abJob(r *rand.Rand, m statstest.NoiseModel, delta float64, n int, swapped bool) []stats.Block {
	startB, startC := w.start*r.NormFloat64(), w.start*r.NormFloat64()
	blocks := make([]stats.Block, n)
	for i := range blocks {
		cand := i%4 == 1 || i%4 == 2
		x := w.run*m.Draw(r) + w.within*m.Draw(r)
		switch {
		case !swapped:
			x += w.start * r.NormFloat64()
		case cand:
			x += startC
		default:
			x += startB
		}
		if cand {
			x += delta
		}
		blocks[i] = stats.Block{Candidate: cand, At: float64(i), Metric: flat(math.Exp(x))}
	}
	return blocks
}

// flat is a statistic of value v that resampling never moves: a block's value, its
// sampling error drawn into it already.
func flat(v float64) stats.Metric {
	return stats.Func{N: 1, F: func([]int32) float64 { return v }}
}

// abJobFails runs one rule's A/B job under stop on blocks drawn for its maximum, as
// an A/B job runs it: a look (lookRule) after every pair from the minimum, stopping when
// the rule is decided or futile, then the verdict on the blocks run at the policy that
// judges them (ABStop.judgePolicy): the blocks' fixed interval (stats.CompareBlocksCore;
// the blocks carry their sampling error, so the pooled sides add no floor), in a job
// judged by its sequence replaced by the sequence's verdict (sequentialVerdict). It says
// whether the job failed.
func abJobFails(blocks []stats.Block, pol stats.Policy, sh stats.Shared, stop ABStop) bool {
	n := stop.MaxBlocks
	if stop.Sequential() {
		for k := stop.MinBlocks; k < stop.MaxBlocks; k += 2 {
			if l := lookRule(blocks[:k], pol, sh, stop); l.dec != stats.Undecided || l.futile {
				n = k
				break
			}
		}
	}
	jp, seq := stop.judgePolicy(pol, n)
	res, _ := stats.CompareBlocksCore(blocks[:n], 0, jp, sh)
	v := res.Verdict
	if seq && v != Incomparable {
		v = sequentialVerdict(&MetricResult{}, blocks[:n], jp, v, sh)
	}
	return v == Fail
}

// abRules: the A/B rules, each block's spread as the committed rules' world; swapped
// engines add their starts' part from a known spread between starts.
func abRules() []statstest.EdgeRule {
	w := abWorld{start: 0.04, run: 0.02, within: 0.03}
	pol := abEdgePolicy
	sh := stats.Shared{Var: 2 * w.start * w.start}
	job := func(swapped bool, stop ABStop) func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
		var s stats.Shared
		if swapped {
			s = sh
		}
		return func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			return abJobFails(w.abJob(r, m, delta, stop.MaxBlocks, swapped), pol, s, stop)
		}
	}
	fixed := func(n int) ABStop { return ABStop{MinBlocks: n, MaxBlocks: n} }
	seq := func(lo, hi int) ABStop { return ABStop{MinBlocks: lo, MaxBlocks: hi} }
	with := func(s ABStop, final float64, futility int) ABStop {
		s.FinalShare, s.FutilityFrom = final, futility
		return s
	}
	return []statstest.EdgeRule{
		{Name: "A/B fixed, 8 blocks, restarts", AA: 0.004, Power: 0.45, Fails: job(false, fixed(8))},
		{Name: "A/B fixed, 8 blocks, swapped", AA: 0.004, Power: 0.28, Fails: job(true, fixed(8))},
		{Name: "A/B sequential 4-16, restarts", AA: 0.004, Power: 0.38, Fails: job(false, seq(4, 16))},
		{Name: "A/B sequential 4-16, swapped", AA: 0.004, Power: 0.03, Fails: job(true, seq(4, 16))},
		{Name: "A/B sequential 4-16, final share 0.5", AA: 0.004, Power: 0.75, Fails: job(false, with(seq(4, 16), 0.5, 0))},
		{Name: "A/B sequential 4-32, restarts", AA: 0.004, Power: 0.85, Fails: job(false, seq(4, 32))},
		{Name: "A/B sequential 4-32, futility from 8", AA: 0.004, Power: 0.72, Fails: job(false, with(seq(4, 32), 0, 8))},
		{Name: "A/B sequential 4-32, final share 0.5, futility from 16", AA: 0.004, Power: 0.93, Fails: job(false, with(seq(4, 32), 0.5, 16))},
		{Name: "A/B sequential 4-32, swapped, futility from 8", AA: 0.004, Power: 0.06, Fails: job(true, with(seq(4, 32), 0, 8))},
		{Name: "negative control: a fixed A/B interval at every pair, 4-32", Control: true, Fails: func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			b := w.abJob(r, m, delta, 32, false)
			for n := 4; n <= 32; n += 2 {
				if abJobFails(b[:n], pol, stats.Shared{}, fixed(n)) {
					return true
				}
			}
			return false
		}},
		{Name: "negative control: swapped A/B without the starts' part", Control: true, Fails: func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			return abJobFails(w.abJob(r, m, delta, 8, true), pol, stats.Shared{}, fixed(8))
		}},
	}
}

// TestNoiseEdgeAB proves every A/B rule at its tolerance's edge (statstest.RunEdge; the
// committed rules are gate/stats' TestNoiseEdge, whose streams these follow on).
func TestNoiseEdgeAB(t *testing.T) {
	waittest.ManyTrials(t)
	statstest.RunEdge(t, 45, 5, abEdgePolicy.Tolerance, abRules())
}
