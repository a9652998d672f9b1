package measure

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// SweepParams are the settings of a sweep: the rates it may try, the precision of the
// answer and the size of each step.
type SweepParams struct {
	MinRate, MaxRate float64
	Precision        float64
	StepRequests     int
	StepDuration     time.Duration
}

const (
	// SweepFactor is the ramp's growth per step.
	SweepFactor = 2.0
	// MaxSweepSteps bounds a sweep whose precision would need an unreasonable number of
	// bisection steps (a 1% precision from 1 to 10,000 req/s takes about 27).
	MaxSweepSteps = 40
)

// StepProcess is the arrival process of every step: the workload's own where it is an
// open-loop process with a rate (constant, gamma), else poisson.
func StepProcess(w *workload.Workload) string {
	switch w.Arrival.Process {
	case workload.ArrivalConstant, workload.ArrivalGamma:
		return w.Arrival.Process
	}
	return workload.ArrivalPoisson
}

// CheckSweepable refuses a workload that a sweep cannot rescale: a trace with lengths
// gives each request's lengths with its arrival, so replacing its arrivals by a rate
// would leave no lengths to send.
func CheckSweepable(w *workload.Workload) error {
	if w.Arrival.HasLengths() {
		return badInput("workload %q replays a %s trace with its own lengths: a sweep replaces the arrivals by a rate and cannot keep them; sweep a workload with length distributions (or use time_scale to replay the trace faster)", w.Name, w.Arrival.Format)
	}
	return nil
}

// StepWorkload is w as one sweep step: open loop at rate, the step's size, no rate
// profile, its seed, lengths and SLO kept. Only the first step warms up: the engine is
// warm for the others.
func StepWorkload(w *workload.Workload, rate float64, p SweepParams, warm bool) *workload.Workload {
	s := *w
	s.Arrival = workload.Arrival{Process: StepProcess(w), Rate: rate}
	if s.Arrival.Process == workload.ArrivalGamma {
		s.Arrival.Burstiness = w.Arrival.Burstiness
	}
	s.Requests, s.Duration = p.StepRequests, p.StepDuration
	s.Repeats = 1
	if !warm {
		s.Warmup = workload.Warmup{}
	}
	return &s
}

// SweepHash is the workload hash a sweep of w with sw's step size has (the step
// workload at rate 0, without warm-up), so that a sweep is checked against the config as
// a run record is.
func SweepHash(f *workload.File, w *workload.Workload, sw *result.Sweep) string {
	p := SweepParams{
		StepRequests: sw.Params.StepRequests,
		StepDuration: time.Duration(math.Round(sw.Params.StepDurationS * float64(time.Second))),
	}
	return workload.Hash(f, StepWorkload(w, 0, p, false))
}

// SweepStepDone is told of each run of a step as it completes (run 1, then the runs that
// extend an undecided step, result.MaxStepRuns); it returns where the record was kept (""
// and an error when it could not be). st is the step as judged so far.
type SweepStepDone func(step, run int, rec *result.Record, st result.SweepStep) (path string, err error)

// Sweep searches for the highest rate at which w meets its SLO against t. Every step's
// record goes to done as it completes, before the next step starts.
func (r *Runner) Sweep(ctx context.Context, f *workload.File, w *workload.Workload, t *Target, p SweepParams, done SweepStepDone) *result.Sweep {
	sw := &result.Sweep{
		Schema:                result.SweepSchema,
		Workload:              w.Name,
		WorkloadHash:          workload.Hash(f, StepWorkload(w, 0, p, false)),
		Config:                f.Path,
		Target:                t.URL,
		API:                   f.Target.API,
		Model:                 t.ID.ModelID,
		Start:                 r.now().UTC(),
		ToolVersion:           r.ToolVersion,
		Hardware:              t.Hardware,
		Environment:           t.Flat,
		SLOAttainmentTarget:   w.SLO.Attainment,
		SLOAttainmentDeclared: w.SLO.AttainmentSet,
		Params: result.SweepParams{
			MinRPS: p.MinRate, MaxRPS: p.MaxRate, Factor: SweepFactor, Process: StepProcess(w),
			Precision: p.Precision, StepRequests: p.StepRequests, StepDurationS: p.StepDuration.Seconds(),
		},
	}
	for _, s := range w.SLO.Targets {
		sw.SLO = append(sw.SLO, result.SLOTarget{Metric: s.Metric, Percentile: s.Percentile, LimitMS: ms(s.Limit)})
	}
	if proc := w.Arrival.Process; proc != sw.Params.Process {
		sw.Notes = append(sw.Notes, fmt.Sprintf("the workload's %s arrivals were replaced by %s arrivals at each step's rate", proc, sw.Params.Process))
	}
	if w.Arrival.Profile != nil {
		sw.Notes = append(sw.Notes, "the workload's rate profile is not used: each step holds one rate")
	}

	// A step that fails its SLO by the point estimate while its interval still holds the
	// threshold is run again at the same rate, and its runs pooled, up to
	// result.MaxStepRuns runs; then the point estimate decides.
	probe := func(k int, phase string, rate float64) result.SweepStep {
		var recs []*result.Record
		var paths []string
		var st result.SweepStep
		for run := 1; run <= result.MaxStepRuns; run++ {
			rec := r.Run(ctx, f, StepWorkload(w, rate, p, k == 1 && run == 1), t, Trial{})
			note := fmt.Sprintf("sweep step %d (%s) at %s req/s", k, phase, strconv.FormatFloat(rate, 'g', -1, 64))
			if run > 1 {
				note += fmt.Sprintf(", run %d: the step's verdict was undecided after %d runs", run, run-1)
			}
			rec.Notes = append(rec.Notes, note)
			if sw.Engine == nil {
				sw.Engine = rec.Engine
			}
			recs = append(recs, rec)
			st = result.StepOfRuns(recs, rate)
			st.Step, st.Phase = k, phase
			path, err := done(k, run, rec, st)
			if err != nil {
				st.Verdict, st.Reason = result.StepFailed, "record not written: "+err.Error()
				return st
			}
			paths = append(paths, path)
			st.Record, st.MoreRecords = paths[0], paths[1:]
			if ctx.Err() != nil && st.Verdict != result.StepFailed {
				st.Verdict, st.Reason = result.StepFailed, "interrupted"
				return st
			}
			// Only a fail the interval cannot confirm is run again: a short step at a low
			// rate must not lose the capacity to one slow request. A pass by the point
			// estimate stands, as the search always took it.
			if !st.Undecided || st.Verdict != result.StepFail {
				break
			}
		}
		return st
	}
	Search(sw, SweepPlan{Min: p.MinRate, Max: p.MaxRate, Factor: SweepFactor, Precision: p.Precision, MaxSteps: MaxSweepSteps}, probe)
	return sw
}

// FormatRate prints a rate in requests/s as the sweep's messages do.
func FormatRate(r float64) string { return strconv.FormatFloat(r, 'g', 6, 64) }

// SweepPlan are the settings of the search.
type SweepPlan struct {
	Min, Max, Factor, Precision float64
	MaxSteps                    int
}

// Search ramps the rate geometrically from plan.Min until a step fails, then bisects
// between the last passing and the first failing rate until (hi − lo) / lo is within the
// precision. probe runs step k at a rate. A client-limited or failed step ends the search
// with no capacity: it is not a verdict on the engine either way.
func Search(sw *result.Sweep, plan SweepPlan, probe func(k int, phase string, rate float64) result.SweepStep) {
	var lo, hi float64 // highest passing, lowest failing; 0 = none yet
	// run reports whether the search may go on.
	run := func(phase string, rate float64) bool {
		st := probe(len(sw.Steps)+1, phase, rate)
		sw.Steps = append(sw.Steps, st)
		switch st.Verdict {
		case result.StepPass:
			lo = max(lo, rate)
		case result.StepFail, result.StepSaturated:
			if hi == 0 || rate < hi {
				hi = rate
			}
		case result.StepClient:
			sw.Bound = result.BoundClient
			return false
		default:
			sw.Failure = fmt.Sprintf("step %d at %s req/s: %s", st.Step, FormatRate(rate), st.Reason)
			return false
		}
		return true
	}
	rate := plan.Min
	for {
		if !run("ramp", rate) {
			return
		}
		if hi > 0 {
			break
		}
		if rate >= plan.Max {
			sw.Bound = result.BoundMaxRate
			sw.MaxSustainableRPS = ptr(lo)
			return
		}
		if len(sw.Steps) >= plan.MaxSteps {
			break
		}
		rate = min(rate*plan.Factor, plan.Max)
	}
	if hi == 0 {
		sw.Bound = result.BoundSLO
		sw.MaxSustainableRPS = ptr(lo)
		sw.Notes = append(sw.Notes, fmt.Sprintf("stopped after %d steps without a failing step: the capacity is at least %s req/s", len(sw.Steps), FormatRate(lo)))
		return
	}
	if lo == 0 {
		sw.Bound = result.BoundSLO
		sw.FirstFailingRPS = ptr(hi)
		sw.Notes = append(sw.Notes, fmt.Sprintf("the first step, at --min-rate %s req/s, already failed: lower --min-rate to find the capacity", FormatRate(plan.Min)))
		return
	}
	for (hi-lo)/lo > plan.Precision {
		if len(sw.Steps) >= plan.MaxSteps {
			sw.Notes = append(sw.Notes, fmt.Sprintf("stopped after %d steps with the bracket [%s, %s] req/s wider than the precision", len(sw.Steps), FormatRate(lo), FormatRate(hi)))
			break
		}
		if !run("bisect", (lo+hi)/2) {
			return
		}
	}
	sw.Bound = result.BoundSLO
	sw.MaxSustainableRPS, sw.FirstFailingRPS = ptr(lo), ptr(hi)
}

func ptr[T any](v T) *T { return &v }
