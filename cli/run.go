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
	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/loadgen"
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

// selectWorkloads returns the workloads named, in file order, or all of them.
func selectWorkloads(f *workload.File, names []string) ([]*workload.Workload, error) {
	if len(names) == 0 {
		out := make([]*workload.Workload, len(f.Workloads))
		for i := range f.Workloads {
			out[i] = &f.Workloads[i]
		}
		return out, nil
	}
	byName := map[string]*workload.Workload{}
	var valid []string
	for i := range f.Workloads {
		byName[f.Workloads[i].Name] = &f.Workloads[i]
		valid = append(valid, f.Workloads[i].Name)
	}
	var out []*workload.Workload
	for _, n := range names {
		w, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("%s: no workload %q; expected one of %s", f.Path, n, quoteList(valid))
		}
		out = append(out, w)
	}
	return out, nil
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
	selected, err := selectWorkloads(f, p.names)
	if err != nil {
		a.errorf("%v", err)
		return nil, ExitBadInput
	}
	shardI, shardN, err := parseShardFlag(p.shard, selected)
	if err != nil {
		a.errorf("%v", err)
		return nil, ExitBadInput
	}
	var launched *engine.Process
	if f.Target.Start != nil {
		var stop func()
		var code int
		if launched, stop, code = a.launchEngine(ctx, f, p); launched == nil {
			return nil, code
		}
		defer stop()
	}
	t, code := a.prepareTarget(ctx, f, p.target)
	if t == nil {
		return nil, code
	}
	var recs []*result.Record
	code = ExitOK
	for _, w := range selected {
		repeats := max(w.Repeats, 1)
		for trial := 1; trial <= repeats; trial++ {
			rec := a.runOne(ctx, f, w, t, trial, repeats, shardI, shardN)
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
					w.Name, rec.Summary.DispatchLagms.P99, durationOr(w.MaxDispatchLag, time.Millisecond))
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
// and waits until it is ready. The cold start is reported, never gated silently.
func (a *app) launchEngine(ctx context.Context, f *workload.File, p runParams) (*engine.Process, func(), int) {
	url := p.target
	if url == "" {
		url = f.Target.URL
	}
	if url == "" {
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
	st := f.Target.Start
	var env []string
	for _, k := range sortedKeys(st.Env) {
		env = append(env, k+"="+st.Env[k])
	}
	fmt.Fprintf(a.stderr, "slogate: starting the engine: %s (output in %s)\n", strings.Join(st.Command, " "), logPath)
	proc, err := engine.Launch(ctx, engine.LaunchSpec{Command: st.Command, Env: env, BaseURL: url, ReadyTimeout: st.ReadyTimeout, Log: log})
	if err != nil {
		log.Close()
		a.errorf("%v", err)
		return nil, nil, ExitFailure
	}
	fmt.Fprintf(a.stderr, "slogate: engine ready after %s\n", proc.StartDuration.Round(time.Millisecond))
	return proc, func() { proc.Stop(); log.Close() }, ExitOK
}

// target is the engine under test and the environment it runs in.
type target struct {
	url, apiKey string
	id          *engine.Identity
	env         *envinfo.Env
	flat        map[string]string
	hardware    string
}

// prepareTarget reaches the engine, reads its identity, checks the pinned model and
// collects the environment. A nil target comes with the exit code.
func (a *app) prepareTarget(ctx context.Context, f *workload.File, override string) (*target, int) {
	t := &target{url: override}
	if t.url == "" {
		t.url = f.Target.URL
	}
	if t.url == "" {
		a.errorf("%s: no engine URL: set target.url or pass --target", f.Path)
		return nil, ExitBadInput
	}
	if f.Target.APIKeyEnv != "" {
		t.apiKey = a.getenv(f.Target.APIKeyEnv)
		if t.apiKey == "" {
			a.errorf("%s: target.api_key_env names %q, which is not set in the environment", f.Path, f.Target.APIKeyEnv)
			return nil, ExitBadInput
		}
	}
	parallel, _ := strconv.Atoi(a.getenv("OLLAMA_NUM_PARALLEL"))
	id, err := engine.Identify(ctx, engine.IdentifyOptions{BaseURL: t.url, APIKey: t.apiKey, Engine: f.Target.Engine, Model: f.Model.Name, Parallel: parallel})
	if err != nil {
		a.errorf("%v", err)
		return nil, ExitFailure
	}
	t.id = id
	if msg := modelMismatch(f, id); msg != "" {
		if !f.Model.AllowMismatch {
			a.errorf("%s (set model.allow_mismatch: true in %s to run anyway)", msg, f.Path)
			return nil, ExitFailure
		}
		a.errorf("warning: %s (allowed by model.allow_mismatch)", msg)
	}
	env, err := collectEnv(ctx, a, f.Target.Image)
	if err != nil {
		a.errorf("%v", err)
		return nil, ExitFailure
	}
	t.env = env
	t.flat = env.Flat()
	t.flat["engine.name"] = id.Engine
	t.flat["engine.version"] = id.Version
	if id.ModelID != "" {
		t.flat["model.id"] = id.ModelID
	}
	if id.ModelRevision != "" {
		t.flat["model.revision"] = id.ModelRevision
	}
	t.hardware = envinfo.HardwareKey(env)
	if id.Engine == engine.EngineSim {
		// The simulator's speed is its profile's, whatever GPU the machine has.
		t.hardware = "sim"
	}
	return t, ExitOK
}

// modelMismatch says how the served model differs from the pinned one, or "".
func modelMismatch(f *workload.File, id *engine.Identity) string {
	served := id.ModelID
	if served != f.Model.Name && strings.TrimSuffix(served, ":latest") != f.Model.Name {
		return fmt.Sprintf("the engine serves model %q, but model.name pins %q", served, f.Model.Name)
	}
	if f.Model.Revision != "" && id.ModelRevision != "" && f.Model.Revision != id.ModelRevision {
		return fmt.Sprintf("the engine serves revision %q of %s, but model.revision pins %q", id.ModelRevision, served, f.Model.Revision)
	}
	return ""
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// ignoreEOS decides whether output lengths are forced: the file's choice, else where the
// engine is known to accept ignore_eos.
func ignoreEOS(w *workload.Workload, engineName string) bool {
	if w.IgnoreEOS != nil {
		return *w.IgnoreEOS
	}
	switch engineName {
	case "vllm", "sglang", "sim":
		return true
	}
	return false
}

// runOne runs one trial of one workload and returns its record, complete or not.
func (a *app) runOne(ctx context.Context, f *workload.File, w *workload.Workload, t *target, trial, repeats, shardI, shardN int) *result.Record {
	start := a.now()
	epoch := time.Now()
	client := engine.NewClient(engine.ClientOptions{BaseURL: t.url, APIKey: t.apiKey, Model: t.id.ModelID, Epoch: epoch})
	version, _ := ToolVersion()
	rec := &result.Record{
		Schema:       result.Schema,
		Workload:     w.Name,
		WorkloadHash: workload.Hash(f, w),
		Config:       f.Path,
		Target:       t.url,
		API:          f.Target.API,
		Model:        t.id.ModelID,
		Hardware:     t.hardware,
		Environment:  t.flat,
		Engine: &result.EngineInfo{
			Name: t.id.Engine, Version: t.id.Version, ModelID: t.id.ModelID, ModelRevision: t.id.ModelRevision,
			MaxContext: t.id.MaxContext, KVCapacityTokens: t.id.KVCapacityTokens, KVSource: t.id.KVSource, Notes: t.id.Notes,
		},
		Mode:        "open",
		Start:       start.UTC(),
		ToolVersion: version,
		Requests:    []result.Request{},
	}
	if repeats > 1 {
		rec.Trial = trial
	}
	closed := w.Arrival.Process == workload.ArrivalClosed
	if closed {
		rec.Mode = "closed"
		rec.Notes = append(rec.Notes, "closed loop: latency at a fixed concurrency; it hides queueing (an open-loop arrival process shows it)")
	}
	for _, t := range w.SLO.Targets {
		rec.SLO = append(rec.SLO, result.SLOTarget{Metric: t.Metric, Percentile: t.Percentile, LimitMS: ms(t.Limit)})
	}
	rec.SLOAttainmentTarget = w.SLO.Attainment

	gen, err := workload.NewGenerator(w)
	if err != nil {
		rec.Incomplete, rec.IncompleteReason = true, "workload: "+err.Error()
		return rec
	}
	if t.id.Engine != engine.EngineVLLM && t.id.Engine != engine.EngineLlamaCpp && t.id.Engine != engine.EngineSim {
		rec.Notes = append(rec.Notes, fmt.Sprintf("prompt lengths use the estimate of %.1f characters per token: %s has no tokenize endpoint", workload.DefaultCharsPerToken, t.id.Engine))
	} else if err := gen.Calibrate(ctx, client); err != nil {
		rec.Notes = append(rec.Notes, "prompt lengths estimated, not calibrated: "+err.Error())
	}
	cal := gen.Calibration()
	rec.Calibration = result.Calibration{Method: cal.Method, CharsPerToken: cal.CharsPerToken}

	var src loadgen.Source = gen
	var shard *shardSource
	if shardN > 0 {
		shard = newShardSource(gen, shardI, shardN)
		src = shard
		rec.Shard = fmt.Sprintf("%d/%d", shardI, shardN)
	}
	cfg := loadgen.Config{
		Streamer:  client,
		Source:    src,
		Epoch:     epoch,
		API:       f.Target.API,
		Model:     t.id.ModelID,
		IgnoreEOS: ignoreEOS(w, t.id.Engine),
		Timeout:   w.Timeout,
		Warmup:    w.Warmup.Requests,
		Closed:    closed,
		Users:     w.Arrival.Users,
		Requests:  w.Requests,
		Duration:  w.Duration,
		// An engine that refuses 20 requests in a row has gone away: stop, keep what
		// was measured, and say so, rather than send the rest of the schedule to a
		// closed port.
		StopAfterConnectErrors: 20,
	}
	if a.isTTY {
		cfg.Progress = a.progressLine(w.Name)
	}
	var sampler *loadgen.EngineSampler
	if !t.id.Metrics.Empty() && !f.Target.Metrics.Disabled {
		url := f.Target.Metrics.URL
		if url == "" {
			url = strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(t.url, "/"), "/v1"), "/") + t.id.Metrics.Path
		}
		sc := &engine.Scraper{URL: url, Set: t.id.Metrics, APIKey: t.apiKey}
		sampler = &loadgen.EngineSampler{Scrape: sc.Scrape, Every: f.Target.Metrics.Interval, Epoch: epoch}
		cfg.Observe = sampler.Run
	}
	out, err := loadgen.Run(ctx, cfg)
	if a.isTTY {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	if err != nil {
		rec.Incomplete, rec.IncompleteReason = true, err.Error()
		return rec
	}
	var shiftUS int64
	if shard != nil {
		shiftUS = shard.toSchedule(out)
	}
	a.fillRecord(rec, w, out, closed)
	if sampler != nil {
		sampler.Apply(rec)
		for _, ss := range rec.Series.Engine {
			for k := range ss {
				ss[k].TUS -= shiftUS
			}
		}
	}
	kvConcurrency(rec, f, t)
	rec.Summary.LittleLaw = littleLaw(rec)
	return rec
}

// fillRecord judges every request and summarizes the outcome into rec.
func (a *app) fillRecord(rec *result.Record, w *workload.Workload, out *loadgen.Outcome, closed bool) {
	rec.Window = out.Window
	rec.Requests = out.Measured
	rec.MaxDispatchLagMS = ms(durationOr(w.MaxDispatchLag, time.Millisecond))
	for i := range rec.Requests {
		result.Judge(&rec.Requests[i], rec.SLO)
	}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{
		Window:           out.Window,
		SLO:              rec.SLO,
		AttainmentTarget: w.SLO.Attainment,
		MaxDispatchLag:   durationOr(w.MaxDispatchLag, time.Millisecond),
		OpenLoop:         !closed,
	})
	if len(out.Warmup) > 0 {
		rec.Warmup = result.WarmupSummaryOf(out.Warmup)
	}
	rec.Series.InFlight = out.InFlight
	if out.Interrupted {
		rec.Incomplete, rec.IncompleteReason = true, "interrupted"
	} else if out.Stopped != "" {
		rec.Incomplete, rec.IncompleteReason = true, out.Stopped
	}
	noUsage := 0
	for _, r := range rec.Requests {
		if r.Error == "" && r.NoUsage {
			noUsage++
		}
	}
	if noUsage > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("the server reported no usage for %d requests: their output tokens are chunk counts", noUsage))
	}
	if n := rec.Summary.Errors[engine.ErrConnect]; n > 0 && n == rec.Summary.Requests {
		rec.Incomplete, rec.IncompleteReason = true, "engine unreachable: every request failed to connect"
	} else if n := trailingConnectErrors(rec.Requests); n > 0 && !rec.Incomplete {
		// The engine went away mid-run (a crash, an OOM kill): what it served before is
		// kept, but the run did not measure it serving the workload.
		rec.Incomplete, rec.IncompleteReason = true, fmt.Sprintf("engine stopped answering: the last %d of %d requests failed to connect", n, len(rec.Requests))
	}
	if rec.Summary.ClientSaturated {
		rec.Notes = append(rec.Notes, "client-saturated: the load generator could not keep the schedule; the gate refuses this run")
	}
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// collectEnv reads the GPU, host and runner environment.
func collectEnv(ctx context.Context, a *app, image ...string) (*envinfo.Env, error) {
	opts := a.envOptions()
	if opts.EngineImage == "" && len(image) > 0 {
		opts.EngineImage = image[0]
	}
	env, err := envinfo.Collect(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("reading the GPU environment: %w", err)
	}
	return env, nil
}

// trailingConnectErrors counts the requests at the end of the schedule that failed to
// connect: an engine that refuses the run's last requests is no longer there.
func trailingConnectErrors(reqs []result.Request) int {
	n := 0
	for i := len(reqs) - 1; i >= 0 && reqs[i].Error == engine.ErrConnect; i-- {
		n++
	}
	return n
}
