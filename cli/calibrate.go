package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const calibrateUsage = `slogate calibrate -c FILE [-w NAME] [--target URL] [--runs N] [-o DIR] [--baselines DIR]

Measures how much an unchanged engine moves between runs on this runner: runs each
workload N times (A/A; the engine started afresh for every run when target.start is
set), writes the records to DIR/<workload>.c<I>.json, and writes the baseline
DIR/<workload>/<hardware>.json under --baselines (else gate.baselines) with all N runs
as its trials and each gated metric's run-to-run spread stored beside them. The gate
then adds that spread to the requests' sampling noise, so that a single candidate run is
judged against the noise it really has (docs/noise.md).
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
	runs := fs.Int("runs", 10, "A/A runs per workload (at least 2)")
	baselines := fs.String("baselines", "", "baselines `dir`ectory (default: gate.baselines of FILE)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if *runs < 2 {
		a.errorf("calibrate: --runs %d: a spread needs at least 2 runs", *runs)
		return ExitBadInput
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return code
	}
	_, code = a.calibrate(ctx, f, p, *runs, baselineStore(f, *baselines))
	return code
}

// calibrate makes runs A/A runs of each selected workload and writes their baselines
// with the calibration; it returns the files written.
func (a *app) calibrate(ctx context.Context, f *workload.File, p runParams, runs int, store gate.Store) ([]string, int) {
	selected, err := measure.SelectWorkloads(f, p.names)
	if err != nil {
		return nil, a.measureError(err)
	}
	r := a.runner()
	restarts := f.Target.Start != nil
	var written []string
	for _, w := range selected {
		var recs []*result.Record
		for i := 1; i <= runs; i++ {
			rec, code := a.measureOnce(ctx, r, f, w, p.target, p.outDir, measure.Trial{N: i, Of: runs,
				Journal: filepath.Join(p.outDir, fmt.Sprintf("%s.c%d.journal.jsonl", w.Name, i))}, fmt.Sprintf("engine.c%d.log", i))
			if rec != nil {
				path := filepath.Join(p.outDir, fmt.Sprintf("%s.c%d.json", w.Name, i))
				if err := result.Write(path, rec); err != nil {
					a.errorf("writing %s: %v", path, err)
					return written, ExitFailure
				}
				fmt.Fprintf(a.stderr, "slogate: calibration run %d/%d of %s: ITL p99 %.2f ms, TTFT p95 %.1f ms, goodput %.3f req/s (%s)\n",
					i, runs, w.Name, rec.Summary.ITLms.P99, rec.Summary.TTFTms.P95, rec.Summary.GoodputRPS, path)
				recs = append(recs, rec)
			}
			if code != ExitOK {
				return written, code
			}
		}
		b, err := gate.FromRecords(recs, a.now())
		if err != nil {
			return written, a.gateError(err)
		}
		if b.Noise, err = gate.Calibrate(f, recs, restarts, a.now()); err != nil {
			return written, a.gateError(err)
		}
		path, err := gate.Write(store.Dir, b)
		if err != nil {
			a.errorf("writing the baseline of %s on %s: %v", b.Workload, b.Hardware, err)
			return written, ExitFailure
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s on %s: %d A/A runs, engine %s)\n", path, b.Workload, b.Hardware, runs, engineOf(b.Environment))
		for _, m := range b.Noise.Metrics {
			if m.DF == 0 {
				fmt.Fprintf(a.stdout, "  %-14s spread unknown: %s\n", m.Metric, m.Reason)
				continue
			}
			sp := m.Spread()
			fmt.Fprintf(a.stdout, "  %-14s run-to-run ±%.1f%% (sd of the log), of which between runs ±%.1f%%, within a run ±%.1f%%\n",
				m.Metric, 100*sp.RunSD, 100*sp.Between(), 100*sp.WithinSD)
		}
		written = append(written, path)
	}
	return written, ExitOK
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
	t, err := r.Prepare(ctx, f, target)
	if err != nil {
		return nil, a.measureError(err)
	}
	rec := r.Run(ctx, f, w, t, tr)
	if f.Target.Start != nil {
		if rec.Warmup == nil {
			rec.Warmup = &result.WarmupSummary{}
		}
		rec.Warmup.EngineStartS = started
		rec.Startup = startup
	}
	switch {
	case rec.Incomplete:
		a.errorf("%s: run incomplete (%s)", w.Name, rec.IncompleteReason)
		return rec, ExitFailure
	case rec.Summary.ClientSaturated:
		a.errorf("%s: the load generator could not keep the schedule: the run measured the client, not the engine", w.Name)
		return rec, ExitFailure
	case ctx.Err() != nil:
		return rec, ExitFailure
	}
	return rec, ExitOK
}
