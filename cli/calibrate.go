package cli

import (
	"context"
	"fmt"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const calibrateUsage = `slogate calibrate -c FILE [-w NAME] [--target URL] [--runs N] [--min-runs M] [--restart-every K] [--append] [-o DIR] [--baselines DIR]

Measures how much an unchanged engine moves between runs on this runner: runs each
workload N times (A/A; the engine started afresh for every run when target.start is
set), writes the records to DIR/<workload>.c<I>.json, and writes the baseline
DIR/<workload>/<hardware>.json under --baselines (else gate.baselines) with all N runs
as its trials and each gated metric's run-to-run spread stored beside them. The gate
then adds that spread to the requests' sampling noise, so that a single candidate run is
judged against the noise it really has (docs/noise.md). --restart-every K starts the
engine afresh every K runs (target.start; default every run), so that the spread splits
between runs of one server and between engine starts; --append adds the runs to the
calibration of the existing baseline (made by an earlier job, another day) and measures
it again over all its runs, so that it shows what moves between days too. The gate uses
every part measured and says which it lacks. --min-runs M makes the runs sequential:
after each run from the M-th on, every gated rule's tolerance is checked against the
interval a candidate of the workload's repeats would be judged by, at the spread's
confidence interval so far, and the runs stop as soon as each rule is decided: its
tolerance supported, or too narrow for the noise even at N runs (docs/noise.md).
Exit codes: 0 written; 2 bad input; 3 the engine failed, a run is unfit to be a
baseline, or a write failed.`

func (a *app) cmdCalibrate(ctx context.Context, args []string) int {
	fs := a.flagSet("calibrate", calibrateUsage)
	var p runParams
	fs.StringVar(&p.config, "c", "slogate.yaml", "workload `file`")
	fs.StringVar(&p.config, "config", "slogate.yaml", "workload `file` (same as -c)")
	fs.Var(&p.names, "w", "workload `name` (repeatable or comma-separated; default: all)")
	fs.StringVar(&p.target, "target", "", "engine base `URL`, overriding target.url")
	fs.StringVar(&p.outDir, "o", "slogate-out", "output `dir`ectory for the run records")
	runs := fs.Int("runs", 10, "A/A runs per workload (at least 2; at least 1 with --append); with --min-runs, the most")
	minRuns := fs.Int("min-runs", 0, "stop as soon as every gated rule is decided, looking from this many `runs` on (0: run all --runs)")
	restartEvery := fs.Int("restart-every", 0, "start the engine afresh every `K` runs (target.start; default 1: every run)")
	appendRuns := fs.Bool("append", false, "add the runs to the existing baseline's calibration instead of replacing it")
	baselines := fs.String("baselines", "", "baselines `dir`ectory (default: gate.baselines of FILE)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if *runs < 2 && !(*appendRuns && *runs >= 1) {
		a.errorf("calibrate: --runs %d: a spread needs at least 2 runs (1 to append to an existing calibration)", *runs)
		return ExitBadInput
	}
	if *minRuns != 0 && (*minRuns < 3 || *minRuns > *runs) {
		a.errorf("calibrate: --min-runs %d: want 0 (every one of --runs) or from 3 (two runs know nothing of a spread) to --runs (%d)", *minRuns, *runs)
		return ExitBadInput
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return code
	}
	if code := a.checkRestartEvery("calibrate", "runs", "an engine start every run", *restartEvery, f); code != ExitOK {
		return code
	}
	_, code = a.calibrate(ctx, f, p, calibrateParams{runs: *runs, minRuns: *minRuns, restartEvery: max(*restartEvery, 1), append: *appendRuns}, baselineStore(f, *baselines))
	return code
}

// calibrateParams are how a calibration spreads its runs.
type calibrateParams struct {
	runs int
	// minRuns > 0 stops the runs from that many on as soon as every rule is decided
	// (gate.LookCalibration).
	minRuns int
	// restartEvery starts the engine afresh every that many runs (target.start).
	restartEvery int
	// append adds the runs to the existing baseline's calibration.
	append bool
}

// calibrate makes runs A/A runs of each selected workload and writes their baselines
// with the calibration; it returns the files written.
func (a *app) calibrate(ctx context.Context, f *workload.File, p runParams, cp calibrateParams, store gate.Store) ([]string, int) {
	runs := cp.runs
	selected, err := measure.SelectWorkloads(f, p.names)
	if err != nil {
		return nil, a.measureError(err)
	}
	restarts := f.Target.Start != nil
	// What the calibration writes, and the baselines it appends to, are checked before
	// the first run: a run's record path that is a link, an unwritable baselines
	// directory or a truncated baseline is found now, not after every run.
	if code := a.checkOutputs(p.outDir, calibrateOutputs(p.outDir, selected, runs, restarts)...); code != ExitOK {
		return nil, code
	}
	if err := fsafe.ProbeDir(store.Dir); err != nil {
		a.errorf("the baselines directory %s cannot be written (%v): nothing was sent; give a writable directory with --baselines", store.Dir, err)
		return nil, ExitBadInput
	}
	if cp.append {
		for _, w := range selected {
			if err := store.CheckAppend(w.Name); err != nil {
				a.errorf("calibrate --append: %v: nothing was sent", err)
				return nil, ExitBadInput
			}
		}
	}
	r := a.runner()
	var written []string
	for _, w := range selected {
		var recs []*result.Record
		var starts []int
		var stop func()
		var started float64
		var startup *result.Startup
		var calStop *gate.CalStop
		// The baseline the runs so far make: at each look of a sequential calibration
		// (whose last look holds every run), else once after the runs. The baseline
		// appended to is looked up once.
		var b, old *gate.Baseline
		baseline := func() int {
			b = nil
			if cp.append && old == nil {
				var code int
				if old, code = a.appendTarget(store, w.Name, gate.HardwareOf(recs[0])); old == nil {
					return code
				}
			}
			var code int
			b, code = a.calibrated(f, old, recs, starts)
			return code
		}
		for i := 1; i <= runs; i++ {
			start := 0
			if restarts {
				start = (i - 1) / cp.restartEvery
			}
			if restarts && (i-1)%cp.restartEvery == 0 {
				// A fresh engine for this run and the K − 1 after it.
				if stop != nil {
					stop()
				}
				proc, st, code := a.launchEngineLog(ctx, r, f, runParams{config: f.Path, target: p.target, outDir: p.outDir}, calEngineLog(i))
				if proc == nil {
					return written, code
				}
				stop, started = st, proc.StartDuration.Seconds()
				startup = measure.StartupOf(proc)
			} else if restarts {
				started, startup = 0, nil // this run's engine was started for an earlier one
			}
			rec, code := a.measureOn(ctx, r, f, w, p.target, measure.Trial{N: i, Of: runs,
				Journal: journalPath(calRunPath(p.outDir, w.Name, i))}, restarts, started, startup)
			if rec != nil {
				path := calRunPath(p.outDir, w.Name, i)
				if err := result.Write(path, rec); err != nil {
					a.errorf("writing %s: %v", path, err)
					return written, writeExit(err)
				}
				fmt.Fprintf(a.stderr, "slogate: calibration run %d/%d of %s: ITL p99 %.2f ms, TTFT p95 %.1f ms, goodput %.3f req/s (%s)\n",
					i, runs, w.Name, rec.Summary.ITLms.P99, rec.Summary.TTFTms.P95, rec.Summary.GoodputRPS, path)
				recs = append(recs, rec)
				starts = append(starts, start)
			}
			if code != ExitOK {
				if stop != nil {
					stop()
				}
				return written, code
			}
			if cp.minRuns > 0 && i >= cp.minRuns && (len(recs) >= 2 || cp.append) {
				if code := baseline(); b == nil {
					if stop != nil {
						stop()
					}
					return written, code
				}
				st, err := gate.LookCalibration(f, w, b.Noise, i, cp.minRuns, runs)
				if err != nil {
					if stop != nil {
						stop()
					}
					return written, a.gateError(err)
				}
				if calStop = st; st != nil {
					if st.Reason == gate.CalStopDecided {
						fmt.Fprintf(a.stderr, "slogate: calibration of %s: stopping after run %d of at most %d: %s\n", w.Name, i, runs, st.Why)
					}
					break
				}
			}
		}
		if stop != nil {
			stop()
		}
		if calStop == nil {
			if code := baseline(); b == nil {
				return written, code
			}
		}
		gate.ApplyStop(f, w, b.Noise, calStop)
		path, err := gate.Write(store.Dir, b)
		if err != nil {
			a.errorf("writing the baseline of %s on %s: %v", b.Workload, b.Hardware, err)
			return written, writeExit(err)
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s on %s: %d A/A runs, engine %s)\n", path, b.Workload, b.Hardware, b.Noise.Runs, engineOf(b.Environment))
		if st := b.Noise.Stop; st != nil {
			fmt.Fprintf(a.stdout, "  stopped after %d of at most %d runs (%s): %s\n", st.Runs, st.MaxRuns, st.Reason, st.Why)
		}
		for _, m := range b.Noise.Metrics {
			if m.DF == 0 {
				fmt.Fprintf(a.stdout, "  %-14s spread unknown: %s\n", m.Metric, m.Reason)
				continue
			}
			fmt.Fprintf(a.stdout, "  %-14s %s\n", m.Metric, spreadText(m, b.Noise.Runs))
			if c := m.Components; c != nil {
				fmt.Fprintf(a.stdout, "  %-14s by source: within a run %s, between runs of one server %s, between engine starts %s, between days %s\n",
					"", sdText(&c.WithinSD), sdText(c.RunsSD), sdText(c.StartsSD), sdText(c.DaysSD))
			}
		}
		written = append(written, path)
	}
	return written, ExitOK
}

// appendTarget is the stored baseline of workload on hardware that calibrate --append
// adds its runs to; nil, with the exit code of the error already reported, when there
// is none.
func (a *app) appendTarget(store gate.Store, workload, hardware string) (*gate.Baseline, int) {
	old, shown, err := store.Lookup(workload, hardware)
	switch {
	case err != nil:
		return nil, a.gateError(err)
	case old == nil:
		a.errorf("calibrate --append: %s: no baseline of %s on %s to append to: run slogate calibrate without --append first", shown, workload, hardware)
		return nil, ExitBadInput
	}
	return old, ExitOK
}

// calibrated is the baseline that the calibration runs recs (served by the engine
// starts starts) make: a new one, or old with them added (--append). A nil baseline
// comes with the exit code of its error, already reported.
func (a *app) calibrated(f *workload.File, old *gate.Baseline, recs []*result.Record, starts []int) (*gate.Baseline, int) {
	if old != nil {
		b, err := gate.AppendCalibration(f, old, recs, starts, a.now())
		if err != nil {
			return nil, a.gateError(err)
		}
		return b, ExitOK
	}
	b, err := gate.FromRecords(recs, a.now())
	if err != nil {
		return nil, a.gateError(err)
	}
	if b.Noise, err = gate.CalibrateStarts(f, recs, starts, a.now()); err != nil {
		return nil, a.gateError(err)
	}
	return b, ExitOK
}

// sdText is a standard deviation of the log as ±percent, "not measured" for none.
// spreadText says what a calibration measured of a metric's spread: the whole between
// runs, and its parts, in words that keep a part from reading as bigger than the whole.
func spreadText(m gate.MetricSpread, runs int) string {
	sp := m.Spread()
	txt := fmt.Sprintf("run-to-run ±%.1f%% (sd of the log", 100*sp.RunSD)
	if m.StopFactor > 1 {
		txt += fmt.Sprintf("; ±%.1f%% as measured, taken ×%.2f for the stop's selection", 100*m.RunSD, m.StopFactor)
	}
	txt += fmt.Sprintf("); each run's own sampling noise ±%.1f%%", 100*sp.WithinSD)
	if sp.WithinSD > sp.RunSD {
		return txt + fmt.Sprintf(", more than the whole: these %d runs spread less than their sampling noise alone would make them, so nothing is left to the runs themselves, and a few runs measure the whole only loosely", runs)
	}
	return txt + fmt.Sprintf(", and between runs beyond it ±%.1f%%", 100*sp.Between())
}

func sdText(x *float64) string {
	if x == nil {
		return "not measured"
	}
	return fmt.Sprintf("±%.1f%%", 100**x)
}

// measureOnce makes one run of w: it starts the engine of target.start (its output in
// outDir/logName) when the config has one and stops it afterwards, reaches the engine,
// and runs. The record is nil only when nothing was measured.
func (a *app) measureOnce(ctx context.Context, r *measure.Runner, f *workload.File, w *workload.Workload, target, outDir string, tr measure.Trial, logName string) (*result.Record, int) {
	p := runParams{config: f.Path, target: target, outDir: outDir}
	var started float64
	var startup *result.Startup
	if f.Target.Start != nil {
		proc, stop, code := a.launchEngineLog(ctx, r, f, p, logName)
		if proc == nil {
			return nil, code
		}
		defer stop()
		started = proc.StartDuration.Seconds()
		startup = measure.StartupOf(proc)
	}
	return a.measureOn(ctx, r, f, w, target, tr, f.Target.Start != nil, started, startup)
}

// measureOn makes one run of w on an engine that is up; started says whether slogate
// started it (target.start) and how long the start took (0 for a run after the first
// on one start).
func (a *app) measureOn(ctx context.Context, r *measure.Runner, f *workload.File, w *workload.Workload, target string, tr measure.Trial, launched bool, started float64, startup *result.Startup) (*result.Record, int) {
	t, err := r.Prepare(ctx, f, target)
	if err != nil {
		return nil, a.measureError(err)
	}
	rec := r.Run(ctx, f, w, t, tr)
	if launched {
		if rec.Warmup == nil {
			rec.Warmup = &result.WarmupSummary{}
		}
		rec.Warmup.EngineStartS = started
		rec.Startup = startup
	}
	// The one check of whether the run measured the engine, as the gate makes it: a
	// calibration run, a repeat or an A/B block that did not ends the job at once.
	switch why := rec.Unfit(); {
	case why != "":
		a.errorf("%s: %s", w.Name, why)
		return rec, ExitFailure
	case ctx.Err() != nil:
		return rec, ExitFailure
	}
	return rec, ExitOK
}
