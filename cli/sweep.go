package cli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const sweepUsage = `slogate sweep -c FILE -w NAME [--target URL] [-o DIR] [--min-rate R] [--max-rate R]
              [--precision 5%] [--step-requests N | --step-duration D]

Finds the highest open-loop arrival rate at which the workload's SLO attainment stays at
or above its target (slo.attainment, default 99%): the capacity a latency SLO allows,
which saturated throughput is not. Each step is a short open-loop run of the workload at
one rate (its lengths, seed and SLO; a poisson process unless it uses constant or gamma
arrivals). The rate doubles from --min-rate until a step fails, then bisection narrows
the bracket between the last passing and the first failing rate to --precision.

A step fails when attainment is below the target, and on clear saturation even when
attainment passed: the waiting queue grew while arrivals lasted (a short step may end
before the misses show), attainment collapsed, or the error rate is high. A step whose
load generator could not keep the schedule stops the sweep: it measured the client, not
the engine, and no capacity is reported.

Writes DIR/<name>.sweep/step<K>.json (each step's run record) and DIR/<name>.sweep.json
(schema slogate.sweep/v1, with max_sustainable_rps), and prints the table.
Exit codes: 0 a result, 2 bad input, 3 client-limited, engine failure or interrupted.`

// sweepParams are the sweep's flags.
type sweepParams struct {
	config, name, target, outDir string
	minRate, maxRate             float64
	precision                    float64
	stepRequests                 int
	stepDuration                 time.Duration
}

// Defaults of the sweep.
const (
	defaultSweepMinRate   = 1.0
	defaultSweepMaxRate   = 10000.0
	defaultSweepPrecision = 0.05
	defaultStepDuration   = 30 * time.Second
	sweepFactor           = 2.0
	// maxSweepSteps bounds a sweep whose precision would need an unreasonable number of
	// bisection steps (a 1% precision from 1 to 10,000 req/s takes about 27).
	maxSweepSteps = 40
)

func (a *app) cmdSweep(ctx context.Context, args []string) int {
	fs := a.flagSet("sweep", sweepUsage)
	p := sweepParams{precision: defaultSweepPrecision}
	fs.StringVar(&p.config, "c", "slogate.yaml", "workload `file`")
	fs.StringVar(&p.config, "config", "slogate.yaml", "workload `file` (same as -c)")
	fs.StringVar(&p.name, "w", "", "workload `name` to sweep (required)")
	fs.StringVar(&p.name, "workload", "", "workload `name` (same as -w)")
	fs.StringVar(&p.target, "target", "", "engine base `URL`, overriding target.url")
	fs.StringVar(&p.outDir, "o", "slogate-out", "output `dir`ectory for the records")
	fs.StringVar(&p.outDir, "out", "slogate-out", "output `dir`ectory (same as -o)")
	fs.Float64Var(&p.minRate, "min-rate", defaultSweepMinRate, "first step's arrival `rate` in requests/s")
	fs.Float64Var(&p.maxRate, "max-rate", defaultSweepMaxRate, "highest arrival `rate` to try, in requests/s")
	fs.Var(fractionFlag{&p.precision}, "precision", "relative width of the final bracket, e.g. 5% or 0.05")
	fs.IntVar(&p.stepRequests, "step-requests", 0, "measured `requests` per step (instead of --step-duration)")
	fs.DurationVar(&p.stepDuration, "step-duration", 0, "length of each step's arrivals (default 30s)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if msg := p.check(); msg != "" {
		a.errorf("sweep: %s", msg)
		return ExitBadInput
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return code
	}
	sel, err := selectWorkloads(f, []string{p.name})
	if err != nil {
		a.errorf("%v", err)
		return ExitBadInput
	}
	w := sel[0]
	t, code := a.prepareTarget(ctx, f, p.target)
	if t == nil {
		return code
	}
	sw, code := a.sweep(ctx, f, w, t, p)
	path := filepath.Join(p.outDir, w.Name+".sweep.json")
	if err := result.WriteSweep(path, sw); err != nil {
		a.errorf("writing %s: %v", path, err)
		return ExitFailure
	}
	report.SweepTable(a.stdout, sw, path)
	return code
}

// check reports the first bad combination of flags, or "".
func (p *sweepParams) check() string {
	switch {
	case p.name == "":
		return "name the workload to sweep with -w"
	case !(p.minRate > 0) || math.IsInf(p.minRate, 0):
		return fmt.Sprintf("--min-rate %g: must be more than 0", p.minRate)
	case !(p.maxRate >= p.minRate) || math.IsInf(p.maxRate, 0):
		return fmt.Sprintf("--max-rate %g: must be at least --min-rate %g", p.maxRate, p.minRate)
	case !(p.precision > 0 && p.precision < 1):
		return fmt.Sprintf("--precision %g: must be more than 0%% and less than 100%%", p.precision)
	case p.stepRequests < 0 || p.stepDuration < 0:
		return "--step-requests and --step-duration must not be negative"
	case p.stepRequests > 0 && p.stepDuration > 0:
		return "give --step-requests or --step-duration, not both"
	}
	if p.stepRequests == 0 && p.stepDuration == 0 {
		p.stepDuration = defaultStepDuration
	}
	return ""
}

// stepProcess is the arrival process of every step: the workload's own where it is an
// open-loop process with a rate (constant, gamma), else poisson.
func stepProcess(w *workload.Workload) string {
	switch w.Arrival.Process {
	case workload.ArrivalConstant, workload.ArrivalGamma:
		return w.Arrival.Process
	}
	return workload.ArrivalPoisson
}

// stepWorkload is w as one sweep step: open loop at rate, the step's size, no rate
// profile, its seed, lengths and SLO kept. Only the first step warms up: the engine is
// warm for the others.
func stepWorkload(w *workload.Workload, rate float64, p sweepParams, warm bool) *workload.Workload {
	s := *w
	s.Arrival = workload.Arrival{Process: stepProcess(w), Rate: rate}
	if s.Arrival.Process == workload.ArrivalGamma {
		s.Arrival.Burstiness = w.Arrival.Burstiness
	}
	s.Requests, s.Duration = p.stepRequests, p.stepDuration
	s.Repeats = 1
	if !warm {
		s.Warmup = workload.Warmup{}
	}
	return &s
}

// sweep runs the search and returns the sweep record and the exit code. Every step's
// record is written as it completes.
func (a *app) sweep(ctx context.Context, f *workload.File, w *workload.Workload, t *target, p sweepParams) (*result.Sweep, int) {
	version, _ := ToolVersion()
	sw := &result.Sweep{
		Schema:              result.SweepSchema,
		Workload:            w.Name,
		WorkloadHash:        workload.Hash(f, stepWorkload(w, 0, p, false)),
		Config:              f.Path,
		Target:              t.url,
		API:                 f.Target.API,
		Model:               t.id.ModelID,
		Start:               a.now().UTC(),
		ToolVersion:         version,
		Hardware:            t.hardware,
		Environment:         t.flat,
		SLOAttainmentTarget: w.SLO.Attainment,
		Params: result.SweepParams{
			MinRPS: p.minRate, MaxRPS: p.maxRate, Factor: sweepFactor, Process: stepProcess(w),
			Precision: p.precision, StepRequests: p.stepRequests, StepDurationS: p.stepDuration.Seconds(),
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

	probe := func(k int, phase string, rate float64) result.SweepStep {
		rec := a.runOne(ctx, f, stepWorkload(w, rate, p, k == 1), t, 0, 1, 0, 0)
		rec.Notes = append(rec.Notes, fmt.Sprintf("sweep step %d (%s) at %s req/s", k, phase, strconv.FormatFloat(rate, 'g', -1, 64)))
		if sw.Engine == nil {
			sw.Engine = rec.Engine
		}
		st := result.StepOf(rec, rate)
		st.Step, st.Phase = k, phase
		// Steps go to a subdirectory: they are runs of another workload (another rate),
		// which a gate over DIR must not read as trials of this one.
		path := filepath.Join(p.outDir, w.Name+".sweep", fmt.Sprintf("step%d.json", k))
		if err := result.Write(path, rec); err != nil {
			a.errorf("writing %s: %v", path, err)
			st.Verdict, st.Reason = result.StepFailed, "record not written: "+err.Error()
			return st
		}
		st.Record = path
		if ctx.Err() != nil && st.Verdict != result.StepFailed {
			st.Verdict, st.Reason = result.StepFailed, "interrupted"
		}
		line := fmt.Sprintf("sweep step %d (%s) %s req/s: %s, attainment %.2f%%, TTFT p99 %.1f ms, dispatch lag p99 %.3f ms",
			k, phase, fmtRate(rate), st.Verdict, 100*st.SLOAttainment, st.TTFTP99ms, st.DispatchLagP99ms)
		if st.Reason != "" {
			line += " (" + st.Reason + ")"
		}
		fmt.Fprintln(a.stderr, line)
		return st
	}
	search(sw, sweepPlan{min: p.minRate, max: p.maxRate, factor: sweepFactor, precision: p.precision, maxSteps: maxSweepSteps}, probe)

	switch {
	case sw.Bound == result.BoundClient:
		last := sw.Steps[len(sw.Steps)-1]
		a.errorf("%s: client-limited at %s req/s: the load generator, not the engine, bounded this step (%s); no capacity is reported. Run the load generator on a less loaded machine.",
			w.Name, fmtRate(last.RateRPS), last.Reason)
		return sw, ExitFailure
	case sw.Failure != "":
		a.errorf("%s: sweep failed: %s", w.Name, sw.Failure)
		return sw, ExitFailure
	case sw.MaxSustainableRPS == nil:
		a.errorf("%s: no step met the SLO: the capacity within the SLO is below --min-rate %s req/s", w.Name, fmtRate(p.minRate))
	}
	return sw, ExitOK
}

func fmtRate(r float64) string { return strconv.FormatFloat(r, 'g', 6, 64) }

// sweepPlan are the settings of the search.
type sweepPlan struct {
	min, max, factor, precision float64
	maxSteps                    int
}

// search ramps the rate geometrically from plan.min until a step fails, then bisects
// between the last passing and the first failing rate until (hi − lo) / lo is within the
// precision. probe runs step k at a rate. A client-limited or failed step ends the search
// with no capacity: it is not a verdict on the engine either way.
func search(sw *result.Sweep, plan sweepPlan, probe func(k int, phase string, rate float64) result.SweepStep) {
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
			sw.Failure = fmt.Sprintf("step %d at %s req/s: %s", st.Step, fmtRate(rate), st.Reason)
			return false
		}
		return true
	}
	rate := plan.min
	for {
		if !run("ramp", rate) {
			return
		}
		if hi > 0 {
			break
		}
		if rate >= plan.max {
			sw.Bound = result.BoundMaxRate
			sw.MaxSustainableRPS = ptr(lo)
			return
		}
		if len(sw.Steps) >= plan.maxSteps {
			break
		}
		rate = min(rate*plan.factor, plan.max)
	}
	if hi == 0 {
		sw.Bound = result.BoundSLO
		sw.MaxSustainableRPS = ptr(lo)
		sw.Notes = append(sw.Notes, fmt.Sprintf("stopped after %d steps without a failing step: the capacity is at least %s req/s", len(sw.Steps), fmtRate(lo)))
		return
	}
	if lo == 0 {
		sw.Bound = result.BoundSLO
		sw.FirstFailingRPS = ptr(hi)
		sw.Notes = append(sw.Notes, fmt.Sprintf("the first step, at --min-rate %s req/s, already failed: lower --min-rate to find the capacity", fmtRate(plan.min)))
		return
	}
	for (hi-lo)/lo > plan.precision {
		if len(sw.Steps) >= plan.maxSteps {
			sw.Notes = append(sw.Notes, fmt.Sprintf("stopped after %d steps with the bracket [%s, %s] req/s wider than the precision", len(sw.Steps), fmtRate(lo), fmtRate(hi)))
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

// fractionFlag accepts a fraction as "5%" or "0.05".
type fractionFlag struct{ v *float64 }

func (f fractionFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatFloat(100**f.v, 'g', -1, 64) + "%"
}

func (f fractionFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = t, 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%q is not a fraction (e.g. 5%% or 0.05)", s)
	}
	*f.v = v * scale
	return nil
}
