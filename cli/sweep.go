package cli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slogate/slogate/measure"
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
before the misses show), its requests completed at under 90% of the pace they were sent
at (the engine did not keep up), attainment collapsed, or the error rate is high. A step
whose load generator could not keep the schedule stops the sweep: it measured the
client, not the engine, and no capacity is reported. A step too short to show its
queue's growth or its pace stops the sweep too (exit 2), naming the shortest step that
can.

Writes DIR/<name>.sweep/step<K>.json (each step's run record) and DIR/<name>.sweep.json
(schema slogate.sweep/v1, with max_sustainable_rps), and prints the table.
Exit codes: 0 a result, 2 bad input (a step too short), 3 client-limited, engine failure
or interrupted.`

// sweepParams are the sweep's flags.
type sweepParams struct {
	config, name, target, outDir string
	measure.SweepParams
}

// Defaults of the sweep.
const (
	defaultSweepMinRate   = 1.0
	defaultSweepMaxRate   = 10000.0
	defaultSweepPrecision = 0.05
	defaultStepDuration   = 30 * time.Second
)

func (a *app) cmdSweep(ctx context.Context, args []string) int {
	fs := a.flagSet("sweep", sweepUsage)
	p := sweepParams{SweepParams: measure.SweepParams{Precision: defaultSweepPrecision}}
	fs.StringVar(&p.config, "c", "slogate.yaml", "workload `file`")
	fs.StringVar(&p.config, "config", "slogate.yaml", "workload `file` (same as -c)")
	fs.StringVar(&p.name, "w", "", "workload `name` to sweep (required)")
	fs.StringVar(&p.name, "workload", "", "workload `name` (same as -w)")
	fs.StringVar(&p.target, "target", "", "engine base `URL`, overriding target.url")
	fs.StringVar(&p.outDir, "o", "slogate-out", "output `dir`ectory for the records")
	fs.StringVar(&p.outDir, "out", "slogate-out", "output `dir`ectory (same as -o)")
	fs.Float64Var(&p.MinRate, "min-rate", defaultSweepMinRate, "first step's arrival `rate` in requests/s")
	fs.Float64Var(&p.MaxRate, "max-rate", defaultSweepMaxRate, "highest arrival `rate` to try, in requests/s")
	fs.Var(fractionFlag{&p.Precision}, "precision", "relative width of the final bracket, e.g. 5% or 0.05")
	fs.IntVar(&p.StepRequests, "step-requests", 0, "measured `requests` per step (instead of --step-duration)")
	fs.DurationVar(&p.StepDuration, "step-duration", 0, "length of each step's arrivals (default 30s)")
	a.quietFlag(fs)
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
	sel, err := measure.SelectWorkloads(f, []string{p.name})
	if err != nil {
		return a.measureError(err)
	}
	w := sel[0]
	if err := measure.CheckSweepable(w); err != nil {
		return a.measureError(err)
	}
	if code := a.checkOutputs(p.outDir, sweepOutputs(p.outDir, w)...); code != ExitOK {
		return code
	}
	t, err := a.runner().Prepare(ctx, f, p.target)
	if err != nil {
		return a.measureError(err)
	}
	if err := measure.CheckContext(f, t, sel); err != nil {
		return a.measureError(err)
	}
	sw, code := a.sweep(ctx, f, w, t, p)
	path := filepath.Join(p.outDir, w.Name+".sweep.json")
	if err := result.WriteSweep(path, sw); err != nil {
		a.errorf("writing %s: %v", path, err)
		return writeExit(err)
	}
	report.SweepTable(a.stdout, sw, path)
	return code
}

// check reports the first bad combination of flags, or "".
func (p *sweepParams) check() string {
	switch {
	case p.name == "":
		return "name the workload to sweep with -w"
	case !(p.MinRate > 0) || math.IsInf(p.MinRate, 0):
		return fmt.Sprintf("--min-rate %g: must be more than 0", p.MinRate)
	case !(p.MaxRate >= p.MinRate) || math.IsInf(p.MaxRate, 0):
		return fmt.Sprintf("--max-rate %g: must be at least --min-rate %g", p.MaxRate, p.MinRate)
	case !(p.Precision > 0 && p.Precision < 1):
		return fmt.Sprintf("--precision %g: must be more than 0%% and less than 100%%", p.Precision)
	case p.StepRequests < 0 || p.StepDuration < 0:
		return "--step-requests and --step-duration must not be negative"
	case p.StepRequests > 0 && p.StepDuration > 0:
		return "give --step-requests or --step-duration, not both"
	}
	if p.StepRequests == 0 && p.StepDuration == 0 {
		p.StepDuration = defaultStepDuration
	}
	return ""
}

// sweep runs the search, writing every step's record as it completes, and returns the
// sweep record and the exit code.
func (a *app) sweep(ctx context.Context, f *workload.File, w *workload.Workload, t *measure.Target, p sweepParams) (*result.Sweep, int) {
	save := func(k, run int, rec *result.Record, st result.SweepStep) (string, error) {
		// Steps go to a subdirectory: they are runs of another workload (another rate),
		// which a gate over DIR must not read as trials of this one.
		name := fmt.Sprintf("step%d.json", k)
		if run > 1 {
			name = fmt.Sprintf("step%d.run%d.json", k, run)
		}
		path := filepath.Join(p.outDir, w.Name+".sweep", name)
		if err := result.Write(path, rec); err != nil {
			a.errorf("writing %s: %v", path, err)
			return "", err
		}
		step := fmt.Sprintf("%d", k)
		if run > 1 {
			step += fmt.Sprintf(" run %d", run)
		}
		line := fmt.Sprintf("sweep step %s (%s) %s req/s: %s, %d requests, attainment %.2f%%, TTFT p99 %.1f ms, dispatch lag p99 %.3f ms",
			step, st.Phase, fmtRate(st.RateRPS), st.Verdict, st.Requests, 100*st.SLOAttainment, st.TTFTP99ms, st.DispatchLagP99ms)
		if st.Undecided && st.Verdict == result.StepFail && run < result.MaxStepRuns {
			line += "; undecided, running the step again"
		}
		if st.Reason != "" {
			line += " (" + st.Reason + ")"
		}
		fmt.Fprintln(a.stderr, line)
		return path, nil
	}
	sw := a.runner().Sweep(ctx, f, w, t, p.SweepParams, save)
	switch {
	case sw.Bound == result.BoundClient:
		last := sw.Steps[len(sw.Steps)-1]
		a.errorf("%s: client-limited at %s req/s: the load generator, not the engine, bounded this step (%s); no capacity is reported. Run the load generator on a less loaded machine.",
			w.Name, fmtRate(last.RateRPS), last.Reason)
		return sw, ExitFailure
	case sw.Failure != "" && sw.Steps[len(sw.Steps)-1].Verdict == result.StepTooShort:
		// The step's size is the sweep's flag: a longer step is the fix.
		a.errorf("%s: sweep refused: %s", w.Name, sw.Failure)
		return sw, ExitBadInput
	case sw.Failure != "":
		a.errorf("%s: sweep failed: %s", w.Name, sw.Failure)
		return sw, ExitFailure
	case sw.MaxSustainableRPS == nil:
		a.errorf("%s: no step met the SLO: the capacity within the SLO is below --min-rate %s req/s", w.Name, fmtRate(p.MinRate))
	}
	return sw, ExitOK
}

func fmtRate(r float64) string { return measure.FormatRate(r) }

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
