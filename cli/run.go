package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const runUsage = `slogate run -c FILE [-w NAME] [--target URL] [--min-repeats N [--baselines DIR]] [--restart-every K] [-o DIR]

Runs the workloads of FILE against the engine and writes DIR/<workload>.json for each
(DIR/<workload>.t<N>.json per trial when repeats > 1), then prints a summary table.
With --min-repeats N, a workload of repeats above N stops its trials as soon as the
answer is known: from trial N on, after each trial, every gated rule whose spread the
committed baseline's calibration (in --baselines, default gate.baselines relative to
FILE) measured is looked at by a confidence sequence valid at every look, and the trials
stop when one rule is decided fail or every one is decided; the last trial's record says
how many ran and why (repeat_stop), and the gate judges by the same sequence.
With target.start, the engine is started once for the whole run; --restart-every K
starts it afresh every K trials of a workload (its log in DIR/engine.startN.log), so
that repeats are spread over engine starts; each record's startup.start says which.
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
	fs.BoolVar(&p.shardFromEnv, "shard-from-env", false, "take the shard from $JOB_COMPLETION_INDEX (0-based, a Kubernetes Indexed Job) of $SLOGATE_SHARDS")
	fs.Var(startAtFlag{&p.startAt}, "start-at", "anchor the schedule to a wall-clock `time` every shard shares (RFC 3339, or @UNIX seconds)")
	fs.DurationVar(&p.maxStartLate, "max-start-late", 0, "how late after --start-at a shard may open its window before the gate refuses it (default 100ms)")
	fs.IntVar(&p.minRepeats, "min-repeats", 0, "the fewest trials after which a workload's repeats may stop, its answer known against the committed baseline (default 0: every repeat runs)")
	fs.StringVar(&p.baselines, "baselines", "", "baselines `dir`ectory that --min-repeats judges against (default: gate.baselines, relative to the config file)")
	fs.IntVar(&p.restartEvery, "restart-every", 0, "start the engine afresh every `K` trials of a workload (target.start; default 0: every trial on the one start)")
	a.quietFlag(fs)
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if p.minRepeats < 0 {
		a.errorf("run: --min-repeats %d: want 0 (every repeat runs) or the fewest trials after which the repeats may stop, 1 or more", p.minRepeats)
		return ExitBadInput
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return code
	}
	if code := a.checkRestartEvery("run", "trials", "one engine start", p.restartEvery, f); code != ExitOK {
		return code
	}
	_, code = a.runWorkloads(ctx, f, p)
	return code
}

type runParams struct {
	quiet        bool   // no summary table (the caller prints its own)
	shard        string // "i/n": this machine sends shard i of n of the schedule
	shardFromEnv bool
	startAt      time.Time
	maxStartLate time.Duration
	config       string
	names        stringList
	target       string
	outDir       string
	// minRepeats > 0 makes repeats sequential (LookRepeats against the baselines in
	// baselines, "" for gate.baselines).
	minRepeats int
	baselines  string
	// restartEvery > 0 starts the engine (target.start) afresh every that many trials of
	// a workload, so that repeats are spread over engine starts as the gate's noise
	// model needs them to be (docs/noise.md); 0: one start for the whole run.
	restartEvery int
}

// checkRestartEvery checks --restart-every K of cmd, whose units (trials, runs) it
// restarts the engine between: 0 (which means zero to cmd), or 1 or more with
// target.start.
func (a *app) checkRestartEvery(cmd, units, zero string, k int, f *workload.File) int {
	switch {
	case k < 0:
		a.errorf("%s: --restart-every %d: want 0 (%s) or a number of %s, at least 1", cmd, k, zero, units)
		return ExitBadInput
	case k > 0 && f.Target.Start == nil:
		a.errorf("%s: --restart-every %d: %s has no target.start, so slogate cannot start the engine; add target.start, or leave out --restart-every (the %s then share the running engine)", cmd, k, f.Path, units)
		return ExitBadInput
	}
	return ExitOK
}

// loadConfig loads and validates a workload file, printing every error on failure.
func (a *app) loadConfig(path string) (*workload.File, int) {
	f, err := workload.Load(path)
	if err != nil {
		fmt.Fprintln(a.stderr, err)
		return nil, ExitBadInput
	}
	if a.secrets != nil {
		if f.Target.APIKeyEnv != "" {
			a.secrets.Add(a.getenv(f.Target.APIKeyEnv))
		}
		// A password in a URL is a secret like the API key: never in a record, a
		// report or the log.
		a.secrets.Add(workload.URLSecrets(f.Target.URL)...)
		a.secrets.Add(workload.URLSecrets(f.Target.Metrics.URL)...)
		if st := f.Target.Start; st != nil {
			_, keys := measure.RedactCommand(st.Command)
			a.secrets.Add(keys...)
		}
	}
	return f, ExitOK
}

// runner is the measurement orchestration wired to this command's outside world.
func (a *app) runner() *measure.Runner {
	version, _ := ToolVersion()
	r := &measure.Runner{Getenv: a.getenv, Now: a.now, EnvOptions: a.envOptions, Log: a.stderr, ToolVersion: version,
		ProbeTimeout: a.probeTimeout, PreflightTimeout: a.preflightTimeout, Secrets: a.secrets, Measured: a.measured, NewRunID: a.newRunID}
	r.Progress, r.ProgressDone = a.progress(nil)
	return r
}

// measureError prints an error of the measure package and returns its exit code.
func (a *app) measureError(err error) int {
	a.errorf("%v", err)
	if measure.IsBadInput(err) || badFile(err) {
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
	if p.shardFromEnv {
		if p.shard != "" {
			a.errorf("give --shard or --shard-from-env, not both")
			return nil, ExitBadInput
		}
		if p.shard, err = shardFromEnv(a.getenv); err != nil {
			a.errorf("%v", err)
			return nil, ExitBadInput
		}
	}
	if p.target != "" {
		if err := workload.CheckURL(p.target); err != nil {
			a.errorf("%v", err)
			return nil, ExitBadInput
		}
	}
	shardI, shardN, err := measure.ParseShard(p.shard, selected)
	if err != nil {
		return nil, a.measureError(err)
	}
	// The output directory is written before the engine is reached: a directory that
	// cannot take a file, or a record's path that is a link or a pipe, is found now, not
	// after the run has measured everything.
	if code := a.checkOutputs(p.outDir, runOutputs(p.outDir, selected, f.Target.Start != nil, p.restartEvery)...); code != ExitOK {
		return nil, code
	}
	r := a.runner()
	r.Progress, r.ProgressDone = a.progress(f)
	var launched *engine.Process
	stop := func() {}
	starts := 0
	if f.Target.Start != nil {
		var code int
		if launched, stop, code = a.launchEngine(ctx, r, f, p); launched == nil {
			return nil, code
		}
		starts = 1
	}
	defer func() { stop() }()
	t, err := r.Prepare(ctx, f, p.target)
	if err != nil {
		return nil, a.measureError(err)
	}
	if err := measure.CheckContext(f, t, selected); err != nil {
		return nil, a.measureError(err)
	}
	// The manifest lists the records of this run, and only those: written before the
	// first request, it replaces an earlier run's.
	manifest := &result.Manifest{Start: a.now().UTC(), Records: []result.ManifestEntry{}}
	if err := result.WriteManifest(p.outDir, manifest); err != nil {
		a.errorf("the output directory %s cannot be written (%v): nothing was sent; give a writable directory with -o", p.outDir, err)
		return nil, ExitBadInput
	}
	var recs []*result.Record
	code := ExitOK
	for _, w := range selected {
		repeats := max(w.Repeats, 1)
		var mine []*result.Record // this workload's trials so far
		for trial := 1; trial <= repeats; trial++ {
			if launched != nil && restartsAt(trial, p.restartEvery) {
				// A fresh engine for this trial and the K − 1 after it.
				stop()
				starts++
				var code int
				if launched, stop, code = a.launchEngineLog(ctx, r, f, p, engineLogName(starts)); launched == nil {
					stop = func() {}
					return recs, code
				}
			}
			path := recordPath(p.outDir, w.Name, trial, repeats)
			rec := r.Run(ctx, f, w, t, measure.Trial{N: trial, Of: repeats, ShardI: shardI, ShardN: shardN, StartAt: p.startAt, MaxStartLate: p.maxStartLate,
				Journal: journalPath(path)})
			if launched != nil {
				if rec.Warmup == nil {
					rec.Warmup = &result.WarmupSummary{}
				}
				rec.Warmup.EngineStartS = launched.StartDuration.Seconds()
				rec.Startup = measure.StartupOf(launched)
				rec.Startup.Start = starts
			}
			if err := result.Write(path, rec); err != nil {
				// The directory took the manifest before the run (a full disk, a
				// directory removed since): keep the measurement somewhere that works.
				alt := filepath.Join(a.tempDir(), fmt.Sprintf("slogate-%s-%s", a.now().UTC().Format("20060102T150405Z"), filepath.Base(path)))
				if aerr := result.Write(alt, rec); aerr != nil {
					a.errorf("writing %s: %v; writing %s instead: %v: the record is lost", path, err, alt, aerr)
				} else {
					a.errorf("writing %s: %v; the record is in %s", path, err, alt)
				}
				return append(recs, rec), ExitFailure
			}
			manifest.Records = append(manifest.Records, result.ManifestEntry{File: filepath.Base(path), Workload: w.Name, Trial: rec.Trial})
			if err := result.WriteManifest(p.outDir, manifest); err != nil {
				a.errorf("writing the manifest of %s: %v", p.outDir, err)
				code = ExitFailure
			}
			recs = append(recs, rec)
			if !p.quiet {
				report.RunTable(a.stdout, rec, path)
			}
			// One check of whether the run measured the engine (result.Record.Unfit,
			// less the shards' common start, which merge and the gate judge).
			if why := rec.UnfitMeasurement(); why != "" {
				a.errorf("%s: %s; what was measured is in %s", w.Name, why, path)
				code = ExitFailure
			}
			if ctx.Err() != nil {
				return recs, ExitFailure
			}
			mine = append(mine, rec)
			if p.minRepeats > 0 && repeats > 1 {
				st, err := gate.LookRepeats(f, baselineStore(f, p.baselines), p.minRepeats, mine)
				if err != nil {
					return recs, a.gateError(err)
				}
				if st != nil {
					// The last trial says how the repeats ended: written again with it.
					rec.RepeatStop = st
					if err := result.Write(path, rec); err != nil {
						a.errorf("writing %s: %v", path, err)
						return recs, writeExit(err)
					}
					if st.Reason == result.RepeatsDecided {
						fmt.Fprintf(a.stderr, "slogate: %s: stopping after trial %d of at most %d: %s\n", w.Name, trial, repeats, st.Why)
						break
					}
				}
			}
		}
	}
	return recs, code
}

// launchEngine starts the engine of target.start, its output going to DIR/engine.log,
// and waits until it is ready.
func (a *app) launchEngine(ctx context.Context, r *measure.Runner, f *workload.File, p runParams) (*engine.Process, func(), int) {
	return a.launchEngineLog(ctx, r, f, p, "engine.log")
}

// launchEngineLog is launchEngine with the engine's output in DIR/logName.
func (a *app) launchEngineLog(ctx context.Context, r *measure.Runner, f *workload.File, p runParams, logName string) (*engine.Process, func(), int) {
	if measure.TargetURL(f, p.target) == "" {
		a.errorf("%s: target.start needs target.url (or --target): where the started engine will answer", f.Path)
		return nil, nil, ExitBadInput
	}
	if err := os.MkdirAll(p.outDir, 0o755); err != nil {
		a.errorf("%v", err)
		return nil, nil, ExitFailure
	}
	logPath := filepath.Join(p.outDir, logName)
	log, err := fsafe.Create(logPath)
	if err != nil {
		a.errorf("%v", err)
		return nil, nil, writeExit(err)
	}
	proc, stop, err := r.Launch(ctx, f, p.target, log, logPath)
	if err != nil {
		log.Close()
		return nil, nil, a.measureError(err)
	}
	return proc, func() { stop(); log.Close() }, ExitOK
}

// shardFromEnv is the shard of a Kubernetes Indexed Job's pod: JOB_COMPLETION_INDEX
// (0-based, set by Kubernetes) of SLOGATE_SHARDS (the Job's completions, set in the
// manifest), as "i/n" with i from 1.
func shardFromEnv(getenv func(string) string) (string, error) {
	idx, n := getenv("JOB_COMPLETION_INDEX"), getenv("SLOGATE_SHARDS")
	if idx == "" || n == "" {
		return "", fmt.Errorf("--shard-from-env: JOB_COMPLETION_INDEX (%q) and SLOGATE_SHARDS (%q) must both be set: the Indexed Job sets the first, the manifest the second (its completions)", idx, n)
	}
	i, err1 := strconv.Atoi(idx)
	c, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || i < 0 || c < 1 || i >= c {
		return "", fmt.Errorf("--shard-from-env: JOB_COMPLETION_INDEX %q of SLOGATE_SHARDS %q: expected an index from 0 to SLOGATE_SHARDS-1", idx, n)
	}
	return fmt.Sprintf("%d/%d", i+1, c), nil
}

// startAtFlag is a wall-clock time: RFC 3339 (2026-12-01T20:00:00Z) or @UNIX seconds
// (@1796155200, what `date +@%s` prints).
type startAtFlag struct{ t *time.Time }

func (f startAtFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f startAtFlag) Set(s string) error {
	t, err := parseStartAt(s)
	if err != nil {
		return err
	}
	*f.t = t
	return nil
}

func parseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if u, ok := strings.CutPrefix(s, "@"); ok {
		sec, err := strconv.ParseFloat(u, 64)
		if err != nil || sec < 0 || sec > 1e11 {
			return time.Time{}, fmt.Errorf("%q: expected @UNIX seconds (e.g. @1796155200) or an RFC 3339 time (e.g. 2026-12-01T20:00:00Z)", s)
		}
		return time.Unix(0, int64(sec*1e9)).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: expected an RFC 3339 time (e.g. 2026-12-01T20:00:00Z) or @UNIX seconds", s)
	}
	return t, nil
}
