package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/gate/stats/statstest"
	"github.com/slogate/slogate/internal/waittest"
)

// calWorld is the spread of a metric's log value by source, as a calibration meets it:
// between days, between engine starts of a day, between runs of one start, and each
// run's sampling error. Day and start offsets are normal; the noise model shapes the
// runs' offsets and sampling errors.
type calWorld struct{ day, start, run, within float64 }

// calibration draws a calibration of days×starts×runs runs (each start serving runs
// runs) as slogate calibrate --restart-every runs makes it over days jobs, and measures
// its spread as CalibrateStarts does: componentsOf the values, the runs' sampling spread
// known.
func (w calWorld) calibration(r *rand.Rand, m statstest.NoiseModel, days, starts, runs int) (*Calibration, []float64) {
	var vals, logs []float64
	var info []CalRun
	for d := range days {
		day := w.day * r.NormFloat64()
		for s := range starts {
			start := w.start * r.NormFloat64()
			for range runs {
				x := day + start + w.run*m.Draw(r) + w.within*m.Draw(r)
				logs = append(logs, x)
				vals = append(vals, math.Exp(x))
				info = append(info, CalRun{Start: d*starts + s, Day: "2026-12-0" + string(rune('1'+d))})
			}
		}
	}
	ms := MetricSpread{Metric: "itl_p99", RunSD: sampleSDOf(logs), WithinSD: w.within, DF: len(logs) - 1, Values: vals}
	ms.Components = componentsOf(vals, w.within, info)
	cal := &Calibration{Source: "calibrate", Runs: len(vals), Restarts: runs == 1, RunInfo: info, Metrics: []MetricSpread{ms}}
	return cal, logs
}

var edgeComponentsPolicy = stats.Policy{Direction: stats.LowerIsBetter, Tolerance: 0.10, Confidence: 0.95, Resamples: 100, AllowFewResamples: true}

// TestNoiseEdgeComponents proves, at the tolerance's edge, the rules that take a
// calibration's spread as production splits it (componentsOf, StartSpread): the
// committed rule, a candidate of 3 repeats on one start against a calibration spread
// over starts and days; and a swapped A/B job whose interval adds the calibration's
// spread between starts.
func TestNoiseEdgeComponents(t *testing.T) {
	waittest.ManyTrials(t)
	committed := func(w calWorld, days, starts, runs int) func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
		return func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			cal, logs := w.calibration(r, m, days, starts, runs)
			return committedTrial(r, m, w, delta, logs, days*starts, cal.Metrics[0].Spread())
		}
	}
	swapped := func(w calWorld, starts, runs, blocks int) func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
		return func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			cal, _ := w.calibration(r, m, 1, starts, runs)
			sd, df, ok, _ := StartSpread(cal, "itl_p99", edgeComponentsPolicy.Confidence)
			if !ok {
				panic("no start spread")
			}
			return swappedJob(r, m, w, delta, blocks, stats.Shared{Var: 2 * sd * sd, DF: df})
		}
	}
	// Negative controls: the committed rule dividing the whole spread by the repeats
	// (the starts' part not shared), and the swapped job adding the calibration's part
	// between starts as its point estimate, 0 taken as 0.
	unshared := func(w calWorld, starts int) func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
		return func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			cal, logs := w.calibration(r, m, 1, starts, 1)
			sp := cal.Metrics[0].Spread()
			sp.SharedSD = 0
			return committedTrial(r, m, w, delta, logs, starts, sp)
		}
	}
	pointOnly := func(w calWorld, starts, runs, blocks int) func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
		return func(r *rand.Rand, m statstest.NoiseModel, delta float64) bool {
			cal, _ := w.calibration(r, m, 1, starts, runs)
			c := cal.Metrics[0].Components
			sd, df := *c.StartsSD, float64(c.StartsDF)
			return swappedJob(r, m, w, delta, blocks, stats.Shared{Var: 2 * sd * sd, DF: df})
		}
	}
	w := calWorld{start: 0.05, run: 0.02, within: 0.03}
	small := calWorld{start: 0.02, run: 0.01, within: 0.04}
	rules := []statstest.EdgeRule{
		{Name: "committed, 3 repeats on 1 start; calibration of 10 starts", Fails: committed(w, 1, 10, 1), AA: 0.004, Power: 0.22},
		{Name: "committed, 3 repeats on 1 start; calibration of 5 starts × 2 runs", Fails: committed(w, 1, 5, 2), AA: 0.004, Power: 0.15},
		{Name: "committed, 3 repeats on 1 start; calibration of 3 days × 4 starts", Fails: committed(calWorld{day: 0.03, start: 0.04, run: 0.02, within: 0.03}, 3, 4, 1), AA: 0.004, Power: 0.005},
		{Name: "committed, 3 repeats on 1 start; calibration of 10 starts, sampling dominant", Fails: committed(small, 1, 10, 1), AA: 0.004, Power: 0.35},
		{Name: "committed, 3 repeats on 1 start; calibration of 10 starts, their part about half", Fails: committed(calWorld{start: 0.03, run: 0.01, within: 0.025}, 1, 10, 1), AA: 0.004, Power: 0.4},
		{Name: "committed, 3 repeats on 1 start; calibration of 10 starts, their part under half", Fails: committed(calWorld{start: 0.025, run: 0.01, within: 0.03}, 1, 10, 1), AA: 0.004, Power: 0.4},
		{Name: "committed, 3 repeats on 1 start; calibration of 5 starts × 2 runs, their part about half", Fails: committed(calWorld{start: 0.03, run: 0.01, within: 0.025}, 1, 5, 2), AA: 0.004, Power: 0.3},
		{Name: "committed, 3 repeats on 1 start; calibration of 4 days × 5 starts", Fails: committed(calWorld{day: 0.03, start: 0.01, run: 0.01, within: 0.025}, 4, 5, 1), AA: 0.004, Power: 0.17},
		{Name: "committed, 3 repeats on 1 start; calibration of 6 days × 3 starts", Fails: committed(calWorld{day: 0.03, start: 0.02, run: 0.01, within: 0.025}, 6, 3, 1), AA: 0.004, Power: 0.25},
		{Name: "A/B fixed, 8 blocks, swapped; starts from a calibration of 10", Fails: swapped(calWorld{start: 0.03, run: 0.02, within: 0.036}, 10, 1, 8), AA: 0.004, Power: 0.1},
		{Name: "A/B fixed, 16 blocks, swapped; starts from a calibration of 10, their part small", Fails: swapped(small, 10, 1, 16), AA: 0.004, Power: 0.12},
		{Name: "A/B fixed, 32 blocks, swapped; starts from a calibration of 5 starts × 2 runs", Fails: swapped(small, 5, 2, 32), AA: 0.004, Power: 0.25},
		{Name: "A/B fixed, 16 blocks, swapped; starts from a calibration of 10 starts × 3 runs, their part small", Fails: swapped(small, 10, 3, 16), AA: 0.004, Power: 0.38},
		{Name: "A/B fixed, 32 blocks, swapped; starts from a calibration of 10, their part dominant", Fails: swapped(calWorld{start: 0.04, run: 0.01, within: 0.02}, 10, 1, 32), AA: 0.004, Power: 0.17},
		{Name: "A/B fixed, 32 blocks, swapped; starts from a calibration of 10, their part about half", Fails: swapped(calWorld{start: 0.03, run: 0.01, within: 0.025}, 10, 1, 32), AA: 0.004, Power: 0.25},
		{Name: "A/B fixed, 32 blocks, swapped; starts from a calibration of 10, their part under half", Fails: swapped(calWorld{start: 0.025, run: 0.01, within: 0.03}, 10, 1, 32), AA: 0.004, Power: 0.2},
		{Name: "A/B fixed, 64 blocks, swapped; starts from a calibration of 10, their part under half", Fails: swapped(calWorld{start: 0.025, run: 0.01, within: 0.03}, 10, 1, 64), AA: 0.004, Power: 0.2},
		{Name: "negative control: committed, the starts' part divided by the repeats", Control: true, Fails: unshared(w, 10)},
		{Name: "negative control: A/B swapped, the starts' part as estimated, 0 as 0", Control: true, Fails: pointOnly(small, 10, 1, 16)},
	}
	statstest.RunEdge(t, 4545, 0, edgeComponentsPolicy.Tolerance, rules)
}

// flatMetric is a statistic of value v that resampling never moves.
func flatMetric(v float64) stats.Metric {
	return stats.Func{N: 1, F: func([]int32) float64 { return v }}
}

// swappedJob draws an A/B job of blocks blocks laid out ABBA whose engines each kept one
// start through their blocks, the candidate delta above the baseline, and judges it by
// the fixed interval with the start part sh, as EvaluateAB does; it says whether it
// failed.
func swappedJob(r *rand.Rand, m statstest.NoiseModel, w calWorld, delta float64, blocks int, sh stats.Shared) bool {
	startB, startC := w.start*r.NormFloat64(), w.start*r.NormFloat64()
	bl := make([]stats.Block, blocks)
	var sb, sc float64
	for i := range bl {
		cand := i%4 == 1 || i%4 == 2
		x := w.run*m.Draw(r) + w.within*m.Draw(r) + startB
		if cand {
			x += startC - startB + delta
			sc += x
		} else {
			sb += x
		}
		bl[i] = stats.Block{Candidate: cand, At: float64(i), Metric: flatMetric(math.Exp(x))}
	}
	half := float64(blocks / 2)
	res, _ := stats.CompareBlocksShared(bl, flatMetric(math.Exp(sb/half)), flatMetric(math.Exp(sc/half)), edgeComponentsPolicy, sh)
	return res.Verdict == stats.Fail
}

// committedTrial judges a candidate of 3 repeats on one fresh engine start, on another
// day, delta above the baseline, against a baseline of the calibration's runs logs
// (served by starts engine starts) with the spread sp, as the gate does
// (stats.CompareSides); it says whether it failed.
func committedTrial(r *rand.Rand, m statstest.NoiseModel, w calWorld, delta float64, logs []float64, starts int, sp stats.Spread) bool {
	var bm float64
	for _, x := range logs {
		bm += x
	}
	n := float64(len(logs))
	b := stats.Side{Runs: len(logs), Starts: starts, LogMean: bm / n, Within: w.within * w.within / n}
	off := delta + w.day*r.NormFloat64() + w.start*r.NormFloat64()
	var cm float64
	for range 3 {
		cm += off + w.run*m.Draw(r) + w.within*m.Draw(r)
	}
	c := stats.Side{Runs: 3, Starts: 1, LogMean: cm / 3, Within: w.within * w.within / 3}
	res, _ := stats.CompareSides(b, c, sp, "calibration", edgeComponentsPolicy, "")
	return res.Verdict == stats.Fail
}
