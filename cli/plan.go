package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/plan"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
)

const planUsage = `slogate plan -c FILE [-w NAME] [--baselines B] [--records DIR] [--start-cost D] [--wake-cost D] [--blocks N] [--min-blocks N] [--futility-from N] [--final-share F]

Prints what gating a pull request will cost before anything runs, per workload: GPU
minutes by mode (a committed baseline, A/B with an engine start per block, A/B with
both engines kept and swapped), the blocks an A/B job can expect to run, and the
smallest change each mode detects at the measured noise: each gated rule's run-to-run
spread from the calibration stored with its baseline (slogate calibrate), else an
assumed one, said so. An engine start takes the median of the starts recorded in
DIR's run records (target.start), else --start-cost (docs/noise.md).
Exit codes: 0 printed, 2 bad input.`

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
	finalShare := fs.Float64("final-share", 0, "the `share` of the error rate kept for the fixed interval that judges an A/B job reaching --blocks (ab --final-share; 0: none)")
	futilityFrom := fs.Int("futility-from", 0, "the `block` from which an A/B job stops once no rule is likely to leave its tolerance by --blocks (ab --futility-from; 0: never)")
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
	stop := gate.ABStop{MinBlocks: *minBlocks, MaxBlocks: *blocks, FutilityFrom: *futilityFrom, FinalShare: *finalShare}
	if err := stop.CheckFinal(); err != nil {
		a.errorf("plan: --final-share %g: %v", *finalShare, err)
		return ExitBadInput
	}
	if err := stop.CheckFutility(); err != nil {
		a.errorf("plan: --futility-from %d: %v", *futilityFrom, err)
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
		if recs, err = result.ReadDir(*records); err == nil && len(recs) == 0 {
			err = errors.New("no run records")
		}
		if err != nil {
			a.errorf("plan: --records %s: %v", *records, err)
			return ExitBadInput
		}
	}
	store := baselineStore(f, *baselines)
	for i, w := range selected {
		cal, calPath, err := calibrationOf(store, w.Name)
		if err != nil {
			return a.gateError(err)
		}
		p, err := plan.ForWorkload(w, plan.Inputs{
			Job:       plan.Job{Start: *startCost, Wake: *wakeCost, MinBlocks: *minBlocks, MaxBlocks: *blocks, FutilityFrom: *futilityFrom, FinalShare: *finalShare, Confidence: f.Gate.Confidence},
			StartFrom: "--start-cost, not measured",
			Rules:     rules, Calibration: cal, CalibrationPath: calPath, Records: recs,
		})
		if err != nil {
			a.errorf("plan: %s: workload %q: %v", f.Path, w.Name, err)
			return ExitBadInput
		}
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		report.PlanTable(a.stdout, p)
	}
	return ExitOK
}

// calibrationOf is the calibration of the first baseline of a workload (any hardware)
// that has one, and its path. A baseline that cannot be read or parsed is an error: a
// plan that silently assumed no calibration would cost the job on the wrong noise.
func calibrationOf(store gate.Store, name string) (*gate.Calibration, string, error) {
	bs, shown, err := store.Baselines(name)
	if err != nil {
		return nil, "", err
	}
	for i, b := range bs {
		if b.Noise != nil {
			return b.Noise, shown[i], nil
		}
	}
	return nil, "", nil
}
