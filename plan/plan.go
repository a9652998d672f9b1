// Package plan says what gating a pull request costs on a GPU runner: before a job runs,
// the GPU minutes each way of gating takes (a committed baseline, an A/B job that starts
// its engines for every block, an A/B job that keeps both engines and swaps them), the
// blocks an A/B job can expect to run and the smallest change each can detect at the
// measured noise; after it runs, the GPU minutes its records show it held.
//
// The statistics are the gate's (gate/stats): the committed baseline's interval
// (calibration runs against candidate repeats), the A/B job's fixed regression interval
// or its confidence sequence. It knows nothing of flags, files or Markdown.
package plan

import (
	"cmp"
	"math"
	"strconv"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
)

// Modes of a Recipe.
const (
	ModeCommitted = "committed baseline"
	// ModeCommittedRestarts is the committed baseline with an engine start per repeat
	// (run --restart-every 1): costed beside the one start when there are repeats.
	ModeCommittedRestarts = "committed, a start per repeat"
	ModeABRestarts        = "A/B, restarts"
	ModeABSwaps           = "A/B, swaps"
)

// Job is what one workload's gate costs: how long its parts take on the runner.
type Job struct {
	// Run is one run of the workload (one A/B block), Warmup its warm-up.
	Run, Warmup time.Duration
	// Start is an engine start (to ready), Wake a wake from sleep mode.
	Start, Wake time.Duration
	// Repeats are the candidate's runs against a committed baseline.
	Repeats int
	// MinBlocks and MaxBlocks bound an A/B job; equal for the fixed job.
	MinBlocks, MaxBlocks int
	// FutilityFrom is the block from which a sequential job stops once no rule can be
	// decided by MaxBlocks (ab --futility-from); 0: never.
	FutilityFrom int
	// FinalShare is the share of the error rate kept for the fixed interval that judges
	// a sequential job at MaxBlocks (ab --final-share); 0: the sequences judge it.
	FinalShare float64
	// Confidence of the gate's intervals (0.95).
	Confidence float64
}

// Rule is one gated rule at its noise: the standard deviation of the log of one run's
// value between runs (their own sampling noise included), measured on CalRuns runs.
type Rule struct {
	Metric    string
	Tolerance float64
	RunSD     float64
	CalRuns   int
	// SharedSD is the part of RunSD that the runs of one engine start share (between
	// starts and days: stats.Spread.SharedSD); CalStarts the calibration's distinct
	// starts (0: one per run). DF are RunSD's degrees of freedom (0: CalRuns − 1).
	SharedSD  float64
	CalStarts int
	DF        int
	// WithinSD is the runs' own sampling part of RunSD and SharedBelow what the levels
	// below put into the mean square SharedSD was taken out of (stats.Spread's): the
	// gate takes a shared part against them on its own degrees of freedom. 0: unknown,
	// the sampling noise counted inside RunSD.
	WithinSD, SharedBelow float64
	// StartsSD is the calibration's spread between engine starts (sd of the log of one
	// start's offset) on StartsDF degrees of freedom: what a swapped job's intervals add
	// once per engine kept through its blocks. 0: not measured.
	StartsSD float64
	StartsDF int
	// PoolsRepeats: the calibration's runs shared one engine start (gate.OneStart),
	// and the gate pools a candidate's repeats into its spread, on their degrees of
	// freedom too.
	PoolsRepeats bool
	// Source says where RunSD came from: a calibration's file, or the default.
	Source string
}

// Plan is what one workload's gate will cost.
type Plan struct {
	Workload string
	Job      Job
	// StartFrom says where Job.Start came from: the records' measured starts, or a
	// flag.
	StartFrom string
	Rules     []Rule
	Recipes   []Recipe
	// Tails are what each percentile rule needs of a run to pass: the values beyond
	// its percentile (gate.TailNeeds).
	Tails    []gate.TailNeed
	Warnings []string
}

// Recipe is one way of gating a pull request.
type Recipe struct {
	Mode string
	// GPUMinutes per pull request: with Blocks blocks for an A/B job.
	GPUMinutes float64
	// Blocks an A/B job can expect to run for an unchanged candidate, and its maximum
	// (0 for the committed baseline).
	Blocks, MaxBlocks int
	// Detectable is, per rule in order, the smallest change (0.12: +12%) the recipe
	// fails 95% of the time; +Inf where it cannot fail any.
	Detectable []float64
}

// Costs gives the recipes of a job for its rules.
//
// GPU minutes: the committed baseline starts the engine once and runs the candidate's
// repeats (start + repeats × (warm-up + run)); an A/B job with restarts starts an engine
// for every block (blocks × (start + warm-up + run)); with swaps each engine starts once
// and wakes for each of its blocks (2 × start + blocks × (wake + warm-up + run)).
//
// Blocks: a sequential job stops for an unchanged candidate once every rule's sequence
// lies within its tolerance, which at the rule's noise takes the fewest pairs n with
// h(n)·√2·sd ≤ ln(1 + tolerance) (h the sequence's half-width per unit of the pairs'
// standard deviation, which the noise of two runs makes √2·sd); a close call and the
// fixed job run the maximum.
//
// Detectable change (fails with probability 95%): ln(1 + d) = ln(1 + t) + (q + z₀.₉₅)·se,
// with se and q the interval's: the committed baseline's se = sd·√(1/calibration runs +
// 1/repeats) and q the t quantile on calibration runs − 1 degrees of freedom; the fixed
// A/B job's se = 2·sd/√blocks on blocks − 3; the sequential job's se = √2·sd/√pairs at
// its maximum, with the sequence's half-width there in place of q·se; with a final
// share F, the fixed job's at confidence 1 − F·(1 − confidence), its looks before the
// maximum at the rest of the error rate (gate.ABStop). A swapped job's
// engines each keep one start's offset, which its blocks cannot see: its interval adds
// the calibration's spread between starts twice over (gate/abstarts.go), in the fixed
// job's se (q on the fewer of the two degrees of freedom) and, for the sequential job,
// as a fixed interval at half the error rate beside the pairs' sequence at the other
// half; its expected blocks follow from that interval. Without a measured spread
// between starts it is costed like restarts, which the gate then warns about.
func Costs(j Job, rules []Rule) []Recipe {
	conf := j.Confidence
	if conf == 0 {
		conf = stats.DefaultConfidence
	}
	z := stats.NormalQuantile(0.95)
	per := j.Warmup + j.Run
	repeats := max(j.Repeats, 1)
	committed := Recipe{Mode: ModeCommitted, GPUMinutes: (j.Start + time.Duration(repeats)*per).Minutes()}
	restartEach := Recipe{Mode: ModeCommittedRestarts, GPUMinutes: (time.Duration(repeats) * (j.Start + per)).Minutes()}
	seq := j.MinBlocks > 0 && j.MinBlocks < j.MaxBlocks
	blocks := j.MinBlocks
	if !seq {
		blocks = j.MaxBlocks
	}
	// A sequential job's looks before the maximum take seqConf; with a final share the
	// maximum is judged by the fixed interval at finalConf (gate.ABStop).
	seqConf, finalConf := conf, 0.0
	if seq {
		stop := gate.ABStop{MinBlocks: j.MinBlocks, MaxBlocks: j.MaxBlocks, FinalShare: j.FinalShare}
		seqConf, finalConf = stop.SeqConfidence(conf), stop.FinalConfidence(conf)
	}
	var ab, sw []float64
	swBlocks := blocks
	for _, r := range rules {
		lt := math.Log1p(r.Tolerance)
		// Committed baseline: the repeats on one start, and on a start each.
		committed.Detectable = append(committed.Detectable, r.committedDetectable(conf, repeats, 1))
		restartEach.Detectable = append(restartEach.Detectable, r.committedDetectable(conf, repeats, repeats))
		// A/B.
		sPair := math.Sqrt2 * r.RunSD
		pairs := j.MaxBlocks / 2
		// The blocks an unchanged candidate's sequential job runs with the pairs' own
		// sequence.
		n := j.MaxBlocks
		df := float64(max(j.MaxBlocks-3, 1))
		se := 2 * r.RunSD / math.Sqrt(float64(j.MaxBlocks))
		switch {
		case seq && finalConf > 0:
			hw := func(p int) float64 { return stats.SequenceHalfWidth(p, sPair, seqConf) }
			n = stopsAt(j, r.Tolerance, sPair, hw, func(p int) float64 { return stats.FixedHalfWidth(p, sPair, finalConf) })
			ab = append(ab, math.Expm1(lt+(stats.TQuantile((1+finalConf)/2, df)+z)*se))
			blocks = max(blocks, n)
		case seq:
			hw := func(p int) float64 { return stats.SequenceHalfWidth(p, sPair, conf) }
			n = stopsAt(j, r.Tolerance, sPair, hw, hw)
			ab = append(ab, math.Expm1(lt+stats.SequenceHalfWidth(pairs, sPair, conf)+z*sPair/math.Sqrt(float64(pairs))))
			blocks = max(blocks, n)
		default:
			ab = append(ab, math.Expm1(lt+(stats.TQuantile((1+conf)/2, df)+z)*se))
		}
		// A/B with swaps: the same, plus the two engines' start offsets.
		if r.StartsSD <= 0 || r.StartsDF <= 0 {
			sw = append(sw, ab[len(ab)-1])
			if seq {
				swBlocks = max(swBlocks, n)
			}
			continue
		}
		v := 2 * r.StartsSD * r.StartsSD
		sh := stats.Shared{Var: v, DF: float64(r.StartsDF)}
		// The swapped job's sequence: the pairs' and the starts' half-widths, as the
		// gate adds them.
		hw := func(n int) float64 {
			return sh.HalfWidth(seqConf, func(level float64) float64 { return stats.SequenceHalfWidth(n, sPair, level) })
		}
		// The fixed interval, the starts' part on the fewer of the two degrees of
		// freedom.
		fixed := func(level float64) float64 {
			df := float64(max(min(j.MaxBlocks-3, r.StartsDF), 1))
			se := math.Sqrt(4*r.RunSD*r.RunSD/float64(j.MaxBlocks) + v)
			return math.Expm1(lt + (stats.TQuantile((1+level)/2, df)+z)*se)
		}
		switch {
		case seq && finalConf > 0:
			sw = append(sw, fixed(finalConf))
			swBlocks = max(swBlocks, stopsAt(j, r.Tolerance, sPair, hw, func(n int) float64 {
				return sh.HalfWidth(finalConf, func(level float64) float64 { return stats.FixedHalfWidth(n, sPair, level) })
			}))
		case seq:
			sw = append(sw, math.Expm1(lt+hw(pairs)+z*math.Sqrt(sPair*sPair/float64(pairs)+v)))
			swBlocks = max(swBlocks, stopsAt(j, r.Tolerance, sPair, hw, hw))
		default:
			sw = append(sw, fixed(conf))
		}
	}
	if !seq {
		swBlocks = j.MaxBlocks
	}
	if len(rules) == 0 {
		blocks, swBlocks = j.MaxBlocks, j.MaxBlocks
	}
	restarts := Recipe{Mode: ModeABRestarts, Blocks: blocks, MaxBlocks: j.MaxBlocks, Detectable: ab,
		GPUMinutes: (time.Duration(blocks) * (j.Start + per)).Minutes()}
	swaps := Recipe{Mode: ModeABSwaps, Blocks: swBlocks, MaxBlocks: j.MaxBlocks, Detectable: sw,
		GPUMinutes: (2*j.Start + time.Duration(swBlocks)*(j.Wake+per)).Minutes()}
	out := []Recipe{committed, restarts, swaps}
	if repeats > 1 {
		out = append(out, restartEach)
	}
	return out
}

// committedDetectable is the change that a committed-baseline gate of repeats runs on
// starts engine starts fails 95% of the time: the gate's own interval (stats.CompareSides
// on the calibration's spread, its starts' part counted once per distinct start, the
// repeats pooled into a spread measured on one start), with the sampling noise inside
// RunSD. Without a calibration RunSD is taken as known.
func (r Rule) committedDetectable(conf float64, repeats, starts int) float64 {
	if !(r.RunSD > 0) {
		return math.Inf(1)
	}
	sp := stats.Spread{RunSD: r.RunSD, WithinSD: r.WithinSD, DF: cmp.Or(r.DF, r.CalRuns-1), SharedSD: r.SharedSD, SharedBelow: r.SharedBelow}
	w := r.WithinSD * r.WithinSD
	base := stats.Side{Runs: r.CalRuns, Starts: r.CalStarts}
	if r.CalRuns < 2 {
		sp.DF, base = math.MaxInt32, stats.Side{Runs: 1} // known: the normal quantile
		sp.WithinSD, w = 0, 0
	} else if r.PoolsRepeats && repeats > 1 {
		sp.DF += repeats - 1
	}
	// Each side's sampling noise, as the gate measures it: the runs' own over their count.
	base.Within = w / float64(base.Runs)
	pol := stats.Policy{Direction: stats.LowerIsBetter, Tolerance: r.Tolerance, Confidence: conf}
	_, nz := stats.CompareSides(base, stats.Side{Runs: repeats, Starts: starts, Within: w / float64(repeats)}, sp, "calibration", pol, "")
	return stats.Detectable(nz, r.Tolerance, 0.95)
}

// stopsAt is the fewest blocks, from j.MinBlocks in pairs, at which a sequence of
// half-width hw(pairs) lies within ln(1 + tol) = lt; j.MaxBlocks when none does. With
// j.FutilityFrom, a job also stops at its first futility look where an unchanged
// candidate (pairs about no change, of spread sPair) has less than
// stats.FutilityPower chance of a verdict beyond the tolerance at the maximum, whose
// interval has half-width atMax(pairs) (the sequence's, or the fixed interval's with a
// final share): the gate's forecast (stats.Futile) with the pairs' mean at no change.
func stopsAt(j Job, tol, sPair float64, hw, atMax func(pairs int) float64) int {
	lt, maxPairs := math.Log1p(tol), j.MaxBlocks/2
	for k := j.MinBlocks; k < j.MaxBlocks; k += 2 {
		if hw(k/2) <= lt {
			return k
		}
		if j.FutilityFrom > 0 && k >= j.FutilityFrom && stats.ConditionalPower(tol, 0, sPair, k/2, maxPairs, atMax(maxPairs)) < stats.FutilityPower {
			return k
		}
	}
	return j.MaxBlocks
}

// Used is the GPU minutes a job's records show it held: each run's warm-up, priming and
// measured window, and the engine starts, times the GPUs of its environment (one where
// it names none). An A/B block that started its engine (ab.restarted) counts its own
// start; the other records count one start between them, the longest recorded, since a
// run starts its engine once for all its workloads and repeats. An engine that was
// running before the job has no recorded start, and only the runs count.
func Used(recs []*result.Record) float64 {
	var sec, shared float64
	gpus := 1.0
	for _, r := range recs {
		s := r.Summary.DurationS
		var start float64
		if r.Warmup != nil {
			s += r.Warmup.DurationS
			start = r.Warmup.EngineStartS
		}
		if r.Priming != nil {
			s += r.Priming.DurationS
		}
		if r.AB != nil && r.AB.Restarted {
			s += start
		} else {
			shared = max(shared, start)
		}
		sec += s
		if n, err := strconv.Atoi(r.Environment["gpu.count"]); err == nil && float64(n) > gpus {
			gpus = float64(n)
		}
	}
	return (sec + shared) * gpus / 60
}
