package plan

import (
	"fmt"
	"slices"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// DefaultRunSD is the run-to-run standard deviation of the log assumed for a rule
// without a calibration: ITL p99 of vLLM's benchmark_serving.py over three runs
// (docs/noise.md, the simulator's "gpu" level).
const DefaultRunSD = 0.04

// Inputs are what a workload's plan is made of besides the workload itself.
type Inputs struct {
	// Job gives the start and wake costs, the A/B job's bounds and the confidence; the
	// run, its warm-up and the repeats come from the workload.
	Job Job
	// StartFrom says where Job.Start came from when no record measured a start.
	StartFrom string
	// Rules are the gated rules with noise (gate.NoiseRules).
	Rules []workload.Rule
	// Calibration is the workload's baseline calibration (nil: none), read from
	// CalibrationPath.
	Calibration     *gate.Calibration
	CalibrationPath string
	// Records are run records whose engine starts give the start cost.
	Records []*result.Record
}

// ForWorkload is the plan of workload w: its run length, the median start its records
// measured (else in.Job.Start), each rule at its calibrated noise (else DefaultRunSD,
// with a warning), and the recipes' costs. An error says why the length of a run cannot
// be told before it runs.
func ForWorkload(w *workload.Workload, in Inputs) (Plan, error) {
	run, warm, err := runLength(w)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Workload: w.Name, Job: in.Job, StartFrom: in.StartFrom}
	p.Job.Run, p.Job.Warmup, p.Job.Repeats = run, warm, max(w.Repeats, 1)
	if s, n := measuredStart(in.Records, w.Name); n > 0 {
		p.Job.Start, p.StartFrom = s, fmt.Sprintf("median of %d recorded starts", n)
	}
	for _, r := range in.Rules {
		pr := Rule{Metric: r.Metric, Tolerance: r.Tolerance, RunSD: DefaultRunSD, Source: fmt.Sprintf("assumed: no calibration; %g is vLLM's ITL p99 over three runs", DefaultRunSD)}
		if m := in.Calibration.Lookup(r.Metric); m != nil {
			// The spread the gate takes (a stopped calibration's corrected for the stop).
			sp := m.Spread()
			pr.RunSD, pr.CalRuns, pr.Source = sp.RunSD, m.DF+1, fmt.Sprintf("calibration of %d runs, %s", m.DF+1, in.CalibrationPath)
			pr.PoolsRepeats = gate.OneStart(in.Calibration, m)
			if sp.SharedSD > 0 {
				// Every part measured, the starts' and days' shared by the runs of one
				// start, on the highest level's degrees of freedom.
				pr.SharedSD, pr.DF = sp.SharedSD, sp.DF
				pr.WithinSD, pr.SharedBelow = sp.WithinSD, sp.SharedBelow
				pr.CalStarts = in.Calibration.Starts()
			}
			if sd, df, ok, bound := gate.StartSpread(in.Calibration, r.Metric, in.Job.Confidence); ok {
				// The swapped job adds what the gate will: a part measured less surely
				// than the whole spread of its starts' means is replaced by that whole.
				pr.StartsSD, pr.StartsDF = sd, int(df)
				if bound {
					p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s: A/B with swaps is costed, as its job will judge it, with the whole spread of its starts' means (%.3f) in its place (more runs per start, slogate calibrate --restart-every K, narrow it; more starts measure the part itself)", r.Metric, gate.StartBoundWhy, sd))
				}
			} else {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: the calibration did not measure the spread between engine starts: A/B with swaps is costed as if its engines' one start each added nothing, and its job will warn (calibrate with --restart-every K)", r.Metric))
			}
		} else {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s has no measured run-to-run spread: measure it with slogate calibrate", r.Metric))
		}
		p.Rules = append(p.Rules, pr)
	}
	p.Tails = gate.TailNeeds(w, in.Rules)
	p.Recipes = Costs(p.Job, p.Rules)
	return p, nil
}

// runLength is how long one run of w lasts and its warm-up, from its duration or its
// requests at its arrival rate.
func runLength(w *workload.Workload) (run, warm time.Duration, err error) {
	rate := w.Arrival.Rate
	perReq := func(n int) time.Duration { return time.Duration(float64(n) / rate * float64(time.Second)) }
	switch {
	case w.Duration > 0:
		run = w.Duration
	case w.Requests > 0 && rate > 0:
		run = perReq(w.Requests)
	default:
		return 0, 0, fmt.Errorf("arrival %q without a rate and no duration: the length of a run cannot be told before it runs; set duration", w.Arrival.Process)
	}
	if w.Warmup.Requests > 0 && rate > 0 {
		warm = perReq(w.Warmup.Requests)
	}
	return run, warm, nil
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
