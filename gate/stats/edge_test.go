package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/slogate/slogate/gate/stats/statstest"
	"github.com/slogate/slogate/internal/waittest"
)

// The edge tests simulate each metric at the level the decision functions see it: a
// run's log value is the system's level, plus the change, plus the offset of the engine
// start that served it, plus the run's own offset, plus its sampling error. They call the
// functions production calls on those values, at the tolerance's edge, and hold them to
// statstest's edge check (RunEdge).

// noiseModel draws values of mean 0 and variance 1 (statstest.NoiseModels).
type noiseModel = statstest.NoiseModel

// edgeWorld is the spread of a metric's log value: of an engine start (on the
// candidate's day, beside the baseline's), of a run of one start, and of a run's sampling
// error. The noise model shapes the runs' offsets and sampling errors (what the requests
// of a run and the run itself do); an engine start's offset is normal in every model:
// a rule judged on one start cannot know the shape of the starts' distribution, only
// its spread.
type edgeWorld struct{ start, run, within float64 }

// spread is the world's spread as a calibration of many runs, each on its own start,
// measures it: known (many degrees of freedom), with the starts' part shared.
func (w edgeWorld) spread() Spread {
	return Spread{RunSD: math.Sqrt(w.start*w.start + w.run*w.run + w.within*w.within), WithinSD: w.within, DF: 10000, SharedSD: w.start}
}

// side draws n runs served by starts engine starts (runs 1..n/starts on the first, and
// so on) at log level mu, under model m.
func (w edgeWorld) side(r *rand.Rand, m noiseModel, mu float64, n, starts int) (Side, []float64) {
	per := (n + starts - 1) / starts
	logs := make([]float64, n)
	var offset float64
	for i := range logs {
		if i%per == 0 {
			offset = w.start * r.NormFloat64()
		}
		logs[i] = mu + offset + w.run*m.Draw(r) + w.within*m.Draw(r)
	}
	var mean float64
	for _, x := range logs {
		mean += x
	}
	mean /= float64(n)
	return Side{Runs: n, Starts: starts, LogMean: mean, Within: w.within * w.within / float64(n)}, logs
}

// edgeRule is one decision rule as the edge matrix drives it (statstest.RunEdge).
type edgeRule = statstest.EdgeRule

// edgePolicy is every rule's: a tolerance of 10%, lower is better, 95% confidence.
var edgePolicy = Policy{Direction: LowerIsBetter, Tolerance: 0.10, Confidence: 0.95, Resamples: 100, AllowFewResamples: true}

// committedRules: a candidate's repeats against a committed baseline of 10 runs, each
// on its own start (a calibration with --restart-every 1), its spread known.
func committedRules() []edgeRule {
	w := edgeWorld{start: 0.05, run: 0.02, within: 0.03}
	fixed := func(starts int, countStarts bool) func(r *rand.Rand, m noiseModel, delta float64) bool {
		return func(r *rand.Rand, m noiseModel, delta float64) bool {
			b, _ := w.side(r, m, 0, 10, 10)
			cand, _ := w.side(r, m, delta, 3, starts)
			if !countStarts {
				cand.Starts = 0
			}
			res, _ := CompareSides(b, cand, w.spread(), "calibration", edgePolicy, "")
			return res.Verdict == Fail
		}
	}
	// Sequential repeats (run --min-repeats 1, at most 5), on one start, looked at after
	// every run.
	sw := edgeWorld{start: 0.08, run: 0.01, within: 0.02}
	seq := func(countStarts bool) func(r *rand.Rand, m noiseModel, delta float64) bool {
		return func(r *rand.Rand, m noiseModel, delta float64) bool {
			b, _ := sw.side(r, m, 0, 10, 10)
			_, logs := sw.side(r, m, delta, 5, 1)
			for n := 1; n <= len(logs); n++ {
				starts := 1
				if !countStarts {
					starts = n
				}
				_, _, _, dec, ok := RepeatsSequence(b, logs[:n], starts, sw.spread(), edgePolicy)
				if !ok {
					panic("no sequence")
				}
				if dec != Undecided {
					return dec == DecidedFail
				}
			}
			return false
		}
	}
	return []edgeRule{
		{Name: "committed, 3 repeats on 1 start", Fails: fixed(1, true), AA: 0.004, Power: 0.30},
		{Name: "committed, 3 repeats on 3 starts", Fails: fixed(3, true), AA: 0.004, Power: 0.55},
		{Name: "committed, sequential repeats on 1 start", Fails: seq(true), AA: 0.004, Power: 0.005},
		{Name: "negative control: 3 repeats on 1 start counted as 3 starts", Control: true, Fails: fixed(1, false)},
		{Name: "negative control: sequential repeats counted as a start each", Control: true, Fails: seq(false)},
	}
}

// TestNoiseEdge proves every decision rule at its tolerance's edge: for each rule and
// noise model, 2,000 trials at a true ratio of 1 + tolerance fail at most 73; 500 at
// no change fail at most the rule's stated rate, and 500 at twice the tolerance fail
// at least its stated power (docs/noise.md's table: go test -run TestNoiseEdge -v
// ./gate/stats prints it). Each negative control fails the edge check.
func TestNoiseEdge(t *testing.T) {
	waittest.ManyTrials(t)
	statstest.RunEdge(t, 45, 0, edgePolicy.Tolerance, committedRules())
}
