package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/plan"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const planUsage = `slogate plan -c FILE [-w NAME] [--baselines B] [--records DIR] [--start-cost D] [--wake-cost D] [--blocks N] [--min-blocks N]

Prints what gating a pull request will cost before anything runs, per workload: GPU
minutes by mode (a committed baseline, A/B with an engine start per block, A/B with
both engines kept and swapped), the blocks an A/B job can expect to run, and the
smallest change each mode detects at the measured noise: each gated rule's run-to-run
spread from the calibration stored with its baseline (slogate calibrate), else an
assumed one, said so. An engine start takes the median of the starts recorded in
DIR's run records (target.start), else --start-cost (docs/noise.md).
Exit codes: 0 printed, 2 bad input.`

// defaultRunSD is the run-to-run standard deviation of the log assumed for a rule
// without a calibration: ITL p99 of vLLM's benchmark_serving.py over three runs
// (docs/noise.md, the simulator's "gpu" level).
const defaultRunSD = 0.04

func (a *app) cmdPlan(_ context.Context, args []string) int {
	fs := a.flagSet("plan", planUsage)
	config := fs.String("c", "slogate.yaml", "workload `file`")
	fs.StringVar(config, "config", "slogate.yaml", "workload `file` (same as -c)")
	var names stringList
	fs.Var(&names, "w", "workload `name` (repeatable or comma-separated; default: all)")
	baselines := fs.String("baselines", "", "baselines `dir`ectory (default: gate.baselines of FILE)")
	records := fs.String("records", "", "`dir`ectory of run records whose engine starts (target.start) give the start cost")
	startCost := fs.Duration("start-cost", 90*time.Second, "an engine start, when no record measured one")
	wakeCost := fs.Duration("wake-cost", 3*time.Second, "a wake of an engine from sleep mode")
	blocks := fs.Int("blocks", 16, "an A/B job's blocks at most: a multiple of 4, at least 4")
	minBlocks := fs.Int("min-blocks", 0, "the fewest blocks after which an A/B job may stop: even, at least 4 (default: --blocks)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	switch {
	case *startCost <= 0:
		a.errorf("plan: --start-cost %v: want a duration above 0 (90s for vLLM serving an 8B model)", *startCost)
		return ExitBadInput
	case *wakeCost < 0:
		a.errorf("plan: --wake-cost %v: want a duration of 0 or more", *wakeCost)
		return ExitBadInput
	case *blocks < 4 || *blocks%4 != 0:
		a.errorf("plan: --blocks %d: want a multiple of 4, at least 4", *blocks)
		return ExitBadInput
	}
	if *minBlocks == 0 {
		*minBlocks = *blocks
	}
	if *minBlocks < 4 || *minBlocks%2 != 0 || *minBlocks > *blocks {
		a.errorf("plan: --min-blocks %d: want an even number from 4 to --blocks %d", *minBlocks, *blocks)
		return ExitBadInput
	}
	f, code := a.loadConfig(*config)
	if f == nil {
		return code
	}
	selected, err := measure.SelectWorkloads(f, names)
	if err != nil {
		return a.measureError(err)
	}
	rules, err := gate.NoiseRules(f)
	if err != nil {
		return a.gateError(err)
	}
	var recs []*result.Record
	if *records != "" {
		if recs, err = readRecordsDir(*records); err != nil {
			a.errorf("plan: --records %s: %v", *records, err)
			return ExitBadInput
		}
	}
	store := baselineStore(f, *baselines)
	for i, w := range selected {
		run, warm, why := runLength(w)
		if why != "" {
			a.errorf("plan: %s: workload %q: %s", f.Path, w.Name, why)
			return ExitBadInput
		}
		p := plan.Plan{Workload: w.Name, Job: plan.Job{Run: run, Warmup: warm, Start: *startCost, Wake: *wakeCost,
			Repeats: max(w.Repeats, 1), MinBlocks: *minBlocks, MaxBlocks: *blocks, Confidence: f.Gate.Confidence},
			StartFrom: "--start-cost, not measured"}
		if s, n := measuredStart(recs, w.Name); n > 0 {
			p.Job.Start, p.StartFrom = s, fmt.Sprintf("median of %d recorded starts", n)
		}
		cal, calPath := calibrationOf(store, w.Name)
		for _, r := range rules {
			pr := plan.Rule{Metric: r.Metric, Tolerance: r.Tolerance, RunSD: defaultRunSD, Source: fmt.Sprintf("assumed: no calibration; %g is vLLM's ITL p99 over three runs", defaultRunSD)}
			if m := cal.Lookup(r.Metric); m != nil {
				pr.RunSD, pr.CalRuns, pr.Source = m.RunSD, m.DF+1, fmt.Sprintf("calibration of %d runs, %s", m.DF+1, calPath)
				if c := m.Components; c != nil && c.StartsSD != nil {
					pr.StartsSD, pr.StartsDF = *c.StartsSD, cmp.Or(c.StartsDF, c.DF)
				} else {
					p.Warnings = append(p.Warnings, fmt.Sprintf("%s: the calibration did not measure the spread between engine starts: A/B with swaps is costed as if its engines' one start each added nothing, and its job will warn (calibrate with --restart-every K)", r.Metric))
				}
			} else {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s has no measured run-to-run spread: measure it with slogate calibrate", r.Metric))
			}
			p.Rules = append(p.Rules, pr)
		}
		p.Recipes = plan.Costs(p.Job, p.Rules)
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		report.PlanTable(a.stdout, p)
	}
	return ExitOK
}

// runLength is how long one run of w lasts and its warm-up, from its duration or its
// requests at its arrival rate; why says what is missing to tell.
func runLength(w *workload.Workload) (run, warm time.Duration, why string) {
	rate := w.Arrival.Rate
	perReq := func(n int) time.Duration { return time.Duration(float64(n) / rate * float64(time.Second)) }
	switch {
	case w.Duration > 0:
		run = w.Duration
	case w.Requests > 0 && rate > 0:
		run = perReq(w.Requests)
	default:
		return 0, 0, fmt.Sprintf("arrival %q without a rate and no duration: the length of a run cannot be told before it runs; set duration", w.Arrival.Process)
	}
	if w.Warmup.Requests > 0 && rate > 0 {
		warm = perReq(w.Warmup.Requests)
	}
	return run, warm, ""
}

// measuredStart is the median engine start of the records of a workload (those that
// started their engine), and how many there were.
func measuredStart(recs []*result.Record, name string) (time.Duration, int) {
	var ss []float64
	for _, r := range recs {
		if r.Workload == name && r.Warmup != nil && r.Warmup.EngineStartS > 0 {
			ss = append(ss, r.Warmup.EngineStartS)
		}
	}
	if len(ss) == 0 {
		return 0, 0
	}
	slices.Sort(ss)
	m := ss[len(ss)/2]
	if len(ss)%2 == 0 {
		m = (ss[len(ss)/2-1] + m) / 2
	}
	return time.Duration(m * float64(time.Second)), len(ss)
}

// calibrationOf is the calibration of the first baseline of a workload (any hardware)
// that has one, and its path.
func calibrationOf(store gate.Store, name string) (*gate.Calibration, string) {
	if store.FS == nil {
		return nil, ""
	}
	files, _ := fs.Glob(store.FS, path.Join(name, "*.json"))
	for _, rel := range files {
		if strings.HasSuffix(rel, ".sweep.json") {
			continue
		}
		b, err := gate.Load(store.FS, rel)
		if err == nil && b.Noise != nil {
			return b.Noise, filepath.Join(store.Dir, filepath.FromSlash(rel))
		}
	}
	return nil, ""
}

// readRecordsDir reads every run record in dir (files that are not records are
// skipped).
func readRecordsDir(dir string) ([]*result.Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if _, err := filepath.Abs(dir); err != nil {
		return nil, err
	}
	var recs []*result.Record
	for _, p := range paths {
		if r, err := result.Read(p); err == nil {
			recs = append(recs, r)
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("no .json files")
	}
	return recs, nil
}
