package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Calibration is the between-run spread of each gated metric, measured by A/A runs of
// the baseline's system on its runner (slogate calibrate) and stored with the baseline:
// what the gate adds to the sampling noise of the requests so that a single candidate
// run can be judged against it (docs/noise.md).
type Calibration struct {
	// Source says how the runs were made: "calibrate" (A/A runs on the runner).
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
	Runs    int       `json:"runs"`
	// Restarts is true when the engine was started afresh for every run, so that the
	// spread includes what differs between engine starts.
	Restarts bool           `json:"restarts,omitempty"`
	Metrics  []MetricSpread `json:"metrics"`
	// RunInfo says, per run in trial order, which engine start served it and on which
	// day it ran; absent in calibrations older than it.
	RunInfo []CalRun `json:"run_info,omitempty"`
	// Stop says how a sequential calibration (calibrate --min-runs) ended; absent when
	// it ran a fixed number of runs.
	Stop *CalStop `json:"stop,omitempty"`
}

// MetricSpread is one metric's spread over the calibration runs.
type MetricSpread struct {
	Metric string `json:"metric"`
	// RunSD, WithinSD and DF are stats.Spread's.
	RunSD    float64 `json:"run_sd"`
	WithinSD float64 `json:"within_sd"`
	DF       int     `json:"df"`
	// Values are the runs' values in the metric's unit, in run order.
	Values []float64 `json:"values"`
	// Reason says why the spread is unknown (DF 0); "" otherwise.
	Reason string `json:"reason,omitempty"`
	// Components split the spread by where it comes from (componentsOf).
	Components *Components `json:"components,omitempty"`
	// StopFactor (at least 1, absent when 1) is how many times the measured spread is
	// taken, because a sequential calibration stopped when this metric's rule was
	// decided supported: the stop selects a low estimate (StopFactor, ApplyStop).
	StopFactor float64 `json:"stop_factor,omitempty"`
}

// Spread is the metric's spread for the statistics: with components, every part the
// calibration measured (Components.spread).
func (m *MetricSpread) Spread() stats.Spread {
	sp := m.Components.spread(stats.Spread{RunSD: m.RunSD, WithinSD: m.WithinSD, DF: m.DF})
	if f := m.StopFactor; f > 1 {
		sp.RunSD *= f
		sp.SharedSD *= f
	}
	return sp
}

// Starts is how many distinct engine starts served the calibration's runs, as its
// run_info labels them; 0 for a calibration older than those labels.
func (c *Calibration) Starts() int {
	seen := map[int]bool{}
	for _, x := range c.RunInfo {
		seen[x.Start] = true
	}
	return len(seen)
}

// Lookup is the calibrated spread of metric, nil when it has none (or too few runs).
func (c *Calibration) Lookup(metric string) *MetricSpread {
	if c == nil {
		return nil
	}
	for i := range c.Metrics {
		if c.Metrics[i].Metric == metric && c.Metrics[i].DF > 0 {
			return &c.Metrics[i]
		}
	}
	return nil
}

// Calibrate measures the between-run spread of every bootstrapped rule of cfg over recs,
// the A/A runs of one workload on one hardware. It refuses runs that cannot be judged
// (*UnfitError) and fewer than two runs. With restarts every run had its own engine
// start; without, one server served them all.
func Calibrate(cfg *workload.File, recs []*result.Record, restarts bool, now time.Time) (*Calibration, error) {
	starts := make([]int, len(recs))
	for i := range starts {
		if restarts {
			starts[i] = i
		}
	}
	return CalibrateStarts(cfg, recs, starts, now)
}

// CalibrateStarts is Calibrate for runs whose engine starts are known: starts[i] numbers
// the engine start that served recs[i] (runs of one start share its number), so that
// the spread can be split between runs of one server and between engine starts.
func CalibrateStarts(cfg *workload.File, recs []*result.Record, starts []int, now time.Time) (*Calibration, error) {
	if len(recs) < 2 {
		return nil, fmt.Errorf("a calibration needs at least 2 runs, got %d", len(recs))
	}
	if len(starts) != len(recs) {
		return nil, fmt.Errorf("%d engine starts for %d runs", len(starts), len(recs))
	}
	for _, r := range recs {
		if why := r.Unfit(); why != "" {
			return nil, &UnfitError{Workload: r.Workload, Trial: r.Trial, Reason: why}
		}
		if r.WorkloadHash != recs[0].WorkloadHash {
			return nil, errors.New("calibration runs of different workload hashes")
		}
	}
	runs := make([]*run, len(recs))
	info := make([]CalRun, len(recs))
	for i, r := range recs {
		runs[i] = runOf(r)
		info[i] = CalRun{Start: starts[i], Day: r.Start.UTC().Format(time.DateOnly)}
	}
	return calibrateRuns(cfg, runs, info, now)
}

// AppendCalibration adds the A/A runs recs, served by the engine starts starts
// (numbered among themselves), to a calibrated baseline b: their trials join b's after
// its own, their engine starts are numbered after b's, and the calibration is measured
// again over every run, so that runs made in several jobs, on several days, show what
// moves between them.
func AppendCalibration(cfg *workload.File, b *Baseline, recs []*result.Record, starts []int, now time.Time) (*Baseline, error) {
	if b.Noise == nil {
		return nil, inputErrorf("%s on %s: the baseline has no calibration to append to: make one with slogate calibrate", b.Workload, b.Hardware)
	}
	if len(starts) != len(recs) {
		return nil, fmt.Errorf("%d engine starts for %d runs", len(starts), len(recs))
	}
	nb, err := FromRecords(recs, now)
	if err != nil {
		return nil, err
	}
	if nb.WorkloadHash != b.WorkloadHash || nb.Hardware != b.Hardware {
		return nil, inputErrorf("%s: the new runs (hash %s on %s) are not of the baseline's workload (hash %s on %s): a calibration cannot mix them", b.Workload, nb.WorkloadHash, nb.Hardware, b.WorkloadHash, b.Hardware)
	}
	old, err := b.trialRuns()
	if err != nil {
		return nil, err
	}
	info := b.Noise.RunInfo
	if len(info) != len(old) {
		// A calibration older than run labels: each run its own start when it restarted,
		// else one server; the day from the trial's start.
		info = make([]CalRun, len(old))
		for i, t := range b.Trials {
			info[i] = CalRun{Day: t.Start.UTC().Format(time.DateOnly)}
			if b.Noise.Restarts {
				info[i].Start = i
			}
		}
	}
	next := 0
	for _, x := range info {
		next = max(next, x.Start+1)
	}
	out := *b
	out.Trials = slices.Clone(b.Trials)
	runs := slices.Clone(old)
	info = slices.Clone(info)
	for i, t := range nb.Trials {
		t.Trial = len(out.Trials) + 1
		out.Trials = append(out.Trials, t)
		runs = append(runs, nb.runs[i])
		info = append(info, CalRun{Start: next + starts[i], Day: recs[i].Start.UTC().Format(time.DateOnly)})
	}
	out.runs = runs
	if out.Noise, err = calibrateRuns(cfg, runs, info, now); err != nil {
		return nil, err
	}
	return &out, nil
}

func calibrateRuns(cfg *workload.File, runs []*run, info []CalRun, now time.Time) (*Calibration, error) {
	rules := cfg.Gate.Rules
	if len(rules) == 0 {
		rules = workload.DefaultRules()
	}
	g := cfg.Gate
	starts := map[int]bool{}
	for _, x := range info {
		starts[x.Start] = true
	}
	c := &Calibration{Source: "calibrate", Created: now.UTC().Truncate(time.Second), Runs: len(runs), Restarts: len(starts) == len(runs), RunInfo: info}
	for _, r := range rules {
		def, err := lookupMetric(r.Metric)
		if err != nil {
			return nil, inputErrorf("%s: gate.rules: %v", cfg.Path, err)
		}
		relative := isRelative(r)
		if def.kind != kindBootstrap || !relative || slices.ContainsFunc(c.Metrics, func(m MetricSpread) bool { return m.Metric == r.Metric }) {
			continue
		}
		if _, _, lacking := missingData(def, nil, runs); lacking {
			continue // nothing to calibrate: the gate says so of the rule itself
		}
		ms := make([]stats.Metric, len(runs))
		vals := make([]float64, len(runs))
		for i, x := range runs {
			ms[i] = def.build(x)
			vals[i] = stats.Value(ms[i]) * def.scale
			if math.IsNaN(vals[i]) || math.IsInf(vals[i], 0) {
				vals[i] = 0
			}
		}
		sp, why := stats.MeasureSpread(ms, stats.Policy{Direction: stats.LowerIsBetter, Resamples: g.Resamples, Confidence: g.Confidence, Seed: uint64(g.Seed)})
		sp = round6(sp)
		m := MetricSpread{Metric: r.Metric, RunSD: sp.RunSD, WithinSD: sp.WithinSD, DF: sp.DF, Values: vals, Reason: why}
		if why == "" {
			m.Components = componentsOf(vals, sp.WithinSD, info)
		}
		c.Metrics = append(c.Metrics, m)
	}
	return c, nil
}

func round6(s stats.Spread) stats.Spread {
	r := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
	return stats.Spread{RunSD: r(s.RunSD), WithinSD: r(s.WithinSD), DF: s.DF}
}

// NoiseResult says what a metric's interval is made of, as standard deviations of the
// log of the ratio (0.03: about ±3%), and what that noise supports.
type NoiseResult struct {
	// Source of the between-run spread: "calibration" (stored with the baseline),
	// "trials" (the repeated trials of either side), "blocks" (an A/B job's blocks);
	// "" when none is known and the interval holds only the requests' sampling noise.
	Source    string  `json:"source,omitempty"`
	WithinSD  float64 `json:"within_sd"`
	BetweenSD float64 `json:"between_sd"`
	TotalSD   float64 `json:"total_sd"`
	// DF are the degrees of freedom of the interval's t quantile; 0 for a normal one.
	DF float64 `json:"df,omitempty"`
	// Supported is the narrowest tolerance this noise supports: the interval's
	// half-width (a narrower tolerance flaps).
	Supported float64 `json:"supported_tolerance"`
	// Detectable is the smallest change that this comparison fails 95% of the time at
	// the rule's tolerance.
	Detectable float64 `json:"detectable_change"`
	// StartsSD is the part of an A/B job's interval that its engines' one start each
	// adds (their offsets, which the blocks cannot see), from the baseline's
	// calibration; 0 when every block had its own engine start.
	StartsSD float64 `json:"starts_sd,omitempty"`
	// StartsDF are StartsSD's degrees of freedom (StartSpread: the part's own, or the
	// starts' where the whole spread of their means was taken).
	StartsDF float64 `json:"starts_df,omitempty"`
	// BaselineStarts and CandidateStarts are the distinct engine starts that served
	// each side's runs, over which the spread between engine starts is averaged
	// (repeats on one start count once); absent when no between-run spread is known.
	BaselineStarts  int `json:"baseline_starts,omitempty"`
	CandidateStarts int `json:"candidate_starts,omitempty"`
	// CandidateDF are the degrees of freedom the candidate's own repeats added to a
	// calibrated spread measured on one engine start (pooled with it: both measure the
	// spread between runs of one start); absent where they were not pooled.
	CandidateDF int `json:"candidate_df,omitempty"`
}

func noiseResult(nz stats.Noise, res stats.Result) *NoiseResult {
	r := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0
		}
		return math.Round(x*1e6) / 1e6
	}
	return &NoiseResult{
		Source: nz.Source, WithinSD: r(nz.Within), BetweenSD: r(nz.Between), TotalSD: r(nz.Total), DF: r(nz.DF),
		Supported: r(res.Resolution), Detectable: r(stats.Detectable(nz, res.Policy.Tolerance, 0.95)),
		BaselineStarts: nz.BaselineStarts, CandidateStarts: nz.CandidateStarts,
	}
}

// spreadOf is the between-run spread a comparison of base and cand uses: the
// calibration stored with the baseline (pooled with the candidate's own repeats where
// both measure one spread: withCandidate), else the spread of the trials of either side,
// else none.
func spreadOf(metric string, cal *Calibration, bms, cms []stats.Metric, pol stats.Policy) (sp stats.Spread, source string, pr pooledRepeats) {
	if ms := cal.Lookup(metric); ms != nil {
		sp, pr = withCandidate(cal, ms, cms, pol)
		return sp, "calibration", pr
	}
	var parts []stats.Spread
	for _, side := range [][]stats.Metric{bms, cms} {
		if len(side) > 1 {
			if s, why := stats.MeasureSpread(side, pol); why == "" {
				parts = append(parts, s)
			}
		}
	}
	if sp := stats.Pool(parts...); sp.Known() {
		return sp, "trials", pooledRepeats{}
	}
	return stats.Spread{}, "", pooledRepeats{}
}

// pooledRepeats says what a candidate's repeats added to a calibrated spread: their
// degrees of freedom (0: not pooled), and a warning when they spread more than twice
// the calibration's runs.
type pooledRepeats struct {
	DF      int
	Warning string
}

// withCandidate is the calibrated spread ms, pooled with the spread of the candidate's
// own runs cms (their resamples the comparison's: stats.StreamCandidate) where the
// calibration's runs shared one engine start on one day (OneStart): its spread is then
// that between runs of one start, which the candidate's repeats measure too. Not pooled:
// fewer than two repeats, a run without a value, or a calibration whose runs spread
// over starts or days (its spread holds parts that repeats on one start cannot see).
func withCandidate(cal *Calibration, ms *MetricSpread, cms []stats.Metric, pol stats.Policy) (stats.Spread, pooledRepeats) {
	if len(cms) < 2 || !OneStart(cal, ms) {
		return ms.Spread(), pooledRepeats{}
	}
	cs, _, why := stats.MeasureSide(cms, pol, stats.StreamCandidate)
	if why != "" {
		return ms.Spread(), pooledRepeats{}
	}
	return poolRepeats(ms.Spread(), cs)
}

// poolRepeats pools a candidate's repeats' spread cs into the calibrated spread sp, as
// a two-sample t test pools its samples (repeats on starts of their own put more into
// it, never less).
//
// A calibration sees only its own runs: run-level noise with heavy tails (a stall in
// one run of twenty) is missing from the 36% of 20-run calibrations that drew no stall,
// and a candidate whose one repeat stalled then failed at the tolerance's edge 82 times
// in 2,000 against the 73 a 2.5% rule allows; pooled, the stalled repeat widens its own
// interval (64 of 2,000; TestNoiseEdgeCalibrationStop).
func poolRepeats(sp, cs stats.Spread) (stats.Spread, pooledRepeats) {
	pr := pooledRepeats{DF: cs.DF}
	if cs.RunSD > 2*sp.RunSD {
		pr.Warning = fmt.Sprintf("the candidate's %d repeats spread ±%.1f%% (sd of the log), more than twice the calibration's ±%.1f%%: pooled into the spread, they widen the interval (a run that stalled counts as noise, not as the change)", cs.DF+1, 100*cs.RunSD, 100*sp.RunSD)
	}
	return stats.Pool(sp, cs), pr
}

// OneStart says whether the calibration's runs of ms shared one engine start on one day
// (no part between starts or days measured, nor runs labelled with several starts). The
// gate pools a candidate's repeats into such a spread, and plan costs them so.
func OneStart(cal *Calibration, ms *MetricSpread) bool {
	c := ms.Components
	return cal.Starts() <= 1 && (c == nil || (c.StartsSD == nil && c.DaysSD == nil))
}

// startsOf is how many distinct engine starts served runs: as the calibration cal
// labelled them when it holds one label per run; else by their records, where runs
// whose engine slogate did not start were served by one engine, runs it started share
// the start their record numbers (run --restart-every), and a started run without a
// number had its own.
func startsOf(runs []*run, cal *Calibration) int {
	if cal != nil && len(cal.RunInfo) == len(runs) {
		return cal.Starts()
	}
	seen := map[int]bool{}
	n := 0
	for _, r := range runs {
		key := -1 // the one engine slogate did not start
		switch {
		case r.start == nil:
		case r.start.Start > 0:
			key = r.start.Start
		default:
			n++
			continue
		}
		if !seen[key] {
			seen[key] = true
			n++
		}
	}
	return n
}
