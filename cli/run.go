package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const runUsage = `slogate run -c FILE [-w NAME] [--target URL] [-o DIR]

Runs the workloads of FILE against the engine and writes DIR/<workload>.json for each
(DIR/<workload>.t<N>.json per trial when repeats > 1), then prints a summary table.
Exit codes: 0 ok, 2 bad input, 3 engine unreachable or failed, run interrupted, or the
load generator saturated (the record is still written).`

func (a *app) cmdRun(ctx context.Context, args []string) int {
	fs := a.flagSet("run", runUsage)
	var p runParams
	fs.StringVar(&p.config, "c", "slogate.yaml", "workload `file`")
	fs.StringVar(&p.config, "config", "slogate.yaml", "workload `file` (same as -c)")
	fs.Var(&p.names, "w", "workload `name` to run (repeatable or comma-separated; default: all)")
	fs.Var(&p.names, "workload", "workload `name` (same as -w)")
	fs.StringVar(&p.target, "target", "", "engine base `URL`, overriding target.url")
	fs.StringVar(&p.outDir, "o", "slogate-out", "output `dir`ectory for run records")
	fs.StringVar(&p.outDir, "out", "slogate-out", "output `dir`ectory (same as -o)")
	fs.StringVar(&p.shard, "shard", "", "send shard `i/n` of the schedule (every n-th arrival); merge the n records with 'slogate merge'")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return code
	}
	_, code = a.runWorkloads(ctx, f, p)
	return code
}

type runParams struct {
	quiet  bool   // no summary table (the caller prints its own)
	shard  string // "i/n": this machine sends shard i of n of the schedule
	config string
	names  stringList
	target string
	outDir string
}

// loadConfig loads and validates a workload file, printing every error on failure.
func (a *app) loadConfig(path string) (*workload.File, int) {
	f, err := workload.Load(path)
	if err != nil {
		fmt.Fprintln(a.stderr, err)
		return nil, ExitBadInput
	}
	return f, ExitOK
}

// runner is the measurement orchestration wired to this command's outside world.
func (a *app) runner() *measure.Runner {
	version, _ := ToolVersion()
	r := &measure.Runner{Getenv: a.getenv, Now: a.now, EnvOptions: a.envOptions, Log: a.stderr, ToolVersion: version,
		ProbeTimeout: a.probeTimeout, PreflightTimeout: a.preflightTimeout}
	if a.isTTY {
		r.Progress = a.progressLine
		r.ProgressDone = func() { fmt.Fprint(a.stderr, "\r\033[K") }
	}
	return r
}

// measureError prints an error of the measure package and returns its exit code.
func (a *app) measureError(err error) int {
	a.errorf("%v", err)
	if measure.IsBadInput(err) {
		return ExitBadInput
	}
	return ExitFailure
}

// recordPath names a run record in the results directory.
func recordPath(dir, name string, trial, repeats int) string {
	if repeats > 1 {
		return filepath.Join(dir, fmt.Sprintf("%s.t%d.json", name, trial))
	}
	return filepath.Join(dir, name+".json")
}

// runWorkloads runs the selected workloads one after another and writes their records.
// Every record is written before this returns, whatever happened.
func (a *app) runWorkloads(ctx context.Context, f *workload.File, p runParams) ([]*result.Record, int) {
	selected, err := measure.SelectWorkloads(f, p.names)
	if err != nil {
		return nil, a.measureError(err)
	}
	shardI, shardN, err := measure.ParseShard(p.shard, selected)
	if err != nil {
		return nil, a.measureError(err)
	}
	r := a.runner()
	var launched *engine.Process
	if f.Target.Start != nil {
		var stop func()
		var code int
		if launched, stop, code = a.launchEngine(ctx, r, f, p); launched == nil {
			return nil, code
		}
		defer stop()
	}
	t, err := r.Prepare(ctx, f, p.target)
	if err != nil {
		return nil, a.measureError(err)
	}
	var recs []*result.Record
	code := ExitOK
	for _, w := range selected {
		repeats := max(w.Repeats, 1)
		for trial := 1; trial <= repeats; trial++ {
			rec := r.Run(ctx, f, w, t, measure.Trial{N: trial, Of: repeats, ShardI: shardI, ShardN: shardN})
			if launched != nil {
				if rec.Warmup == nil {
					rec.Warmup = &result.WarmupSummary{}
				}
				rec.Warmup.EngineStartS = launched.StartDuration.Seconds()
			}
			path := recordPath(p.outDir, w.Name, trial, repeats)
			if err := result.Write(path, rec); err != nil {
				a.errorf("writing %s: %v", path, err)
				return recs, ExitFailure
			}
			recs = append(recs, rec)
			if !p.quiet {
				report.RunTable(a.stdout, rec, path)
			}
			switch {
			case rec.Incomplete:
				a.errorf("%s: run incomplete (%s); what was measured is in %s", w.Name, rec.IncompleteReason, path)
				code = ExitFailure
			case rec.Summary.ClientSaturated:
				a.errorf("%s: the load generator could not keep the schedule (dispatch lag p99 %.3f ms > %s): the run measured the client, not the engine",
					w.Name, rec.Summary.DispatchLagms.P99, measure.MaxDispatchLag(w))
				code = ExitFailure
			}
			if ctx.Err() != nil {
				return recs, ExitFailure
			}
		}
	}
	return recs, code
}

// launchEngine starts the engine of target.start, its output going to DIR/engine.log,
// and waits until it is ready.
func (a *app) launchEngine(ctx context.Context, r *measure.Runner, f *workload.File, p runParams) (*engine.Process, func(), int) {
	if measure.TargetURL(f, p.target) == "" {
		a.errorf("%s: target.start needs target.url (or --target): where the started engine will answer", f.Path)
		return nil, nil, ExitBadInput
	}
	if err := os.MkdirAll(p.outDir, 0o755); err != nil {
		a.errorf("%v", err)
		return nil, nil, ExitFailure
	}
	logPath := filepath.Join(p.outDir, "engine.log")
	log, err := os.Create(logPath)
	if err != nil {
		a.errorf("%v", err)
		return nil, nil, ExitFailure
	}
	proc, stop, err := r.Launch(ctx, f, p.target, log, logPath)
	if err != nil {
		log.Close()
		return nil, nil, a.measureError(err)
	}
	return proc, func() { stop(); log.Close() }, ExitOK
}

func (a *app) progressLine(name string) func(loadgen.Progress) {
	return func(p loadgen.Progress) {
		total := "?"
		if p.Total > 0 {
			total = fmt.Sprint(p.Total)
		}
		fmt.Fprintf(a.stderr, "\r\033[K[%s] %d/%s done, %d errors, %d in flight, %s", name, p.Done, total, p.Errors, p.InFlight, p.Elapsed.Round(100*time.Millisecond))
	}
}
