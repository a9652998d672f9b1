// Package measure owns the orchestration of one measured run, shared by every command
// that measures (run, sweep, ci, demo, ab): reach the engine and identify it, check it
// against the config, calibrate the prompts, send the schedule, and fill the run record
// (judgement, summary, engine series, KV-limited concurrency, Little's law).
//
// It knows nothing of flags, exit codes or where records are written: callers map its
// errors with IsBadInput (the config or the flags are wrong) and treat any other error
// as the engine's or the tool's failure.
package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// DefaultMaxDispatchLag is the dispatch-lag p99 above which a run measured the client.
const DefaultMaxDispatchLag = time.Millisecond

// StopAfterFailures is the burst of consecutive failed requests that stops a closed loop.
const StopAfterFailures = 50

// BadInputError marks an error caused by the config or the flags (exit 2); any other
// error from this package is the engine's or the tool's (exit 3).
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

func badInput(format string, args ...any) error {
	return &BadInputError{Err: fmt.Errorf(format, args...)}
}

// IsBadInput reports whether err was caused by the caller's input.
func IsBadInput(err error) bool {
	var b *BadInputError
	return errors.As(err, &b)
}

// Runner holds what a measurement needs from the outside world, so that every command
// measures the same way and tests can fake the environment.
type Runner struct {
	Getenv func(string) string
	Now    func() time.Time
	// EnvOptions says how to read the GPU and host environment (tests fake nvidia-smi).
	EnvOptions func() envinfo.Options
	// Log receives warnings and lifecycle lines (stderr in the CLI); nil discards them.
	Log io.Writer
	// Progress, when set, returns the progress callback of a workload's run.
	Progress func(workload string) func(loadgen.Progress)
	// ProgressDone is called after a run that reported progress (to clear a TTY line).
	ProgressDone func()
	// ToolVersion is stamped into records.
	ToolVersion string
	// NewRunID returns the id of a new run (the record's run_id, the key of its prompt
	// salts); nil draws 16 random hex digits.
	NewRunID func() string
	// ProbeTimeout bounds each identification, tokenize and metrics call; default
	// engine.DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Secrets are redacted from every record, beside the engine's API key (which is
	// always redacted).
	Secrets *result.Secrets
	// PreflightTimeout bounds the whole identification, and separately the prompt
	// calibration of each run; default DefaultPreflightTimeout.
	PreflightTimeout time.Duration
	// Measured, when set, sees each record as Run returns it (tests make a run one
	// that did not measure the engine: a saturated block, a warm cold run).
	Measured func(*result.Record)

	mu          sync.Mutex
	tailsWarned map[string]bool // config path and workload: warnTails has warned
}

func (r *Runner) newRunID() string {
	if r.NewRunID != nil {
		return r.NewRunID()
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// DefaultPreflightTimeout bounds identification and calibration: a healthy engine
// answers them in seconds, and a stalled one must not hold the job until it is killed.
const DefaultPreflightTimeout = 2 * time.Minute

func (r *Runner) preflight(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.PreflightTimeout
	if d <= 0 {
		d = DefaultPreflightTimeout
	}
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("%w: the preflight (identification, calibration) did not finish within %s", engine.ErrStalled, d))
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "slogate: "+format+"\n", args...)
	}
}

func (r *Runner) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Runner) getenv(k string) string {
	if r.Getenv == nil {
		return os.Getenv(k)
	}
	return r.Getenv(k)
}

// Target is the engine under test and the environment it runs in.
type Target struct {
	URL, APIKey string
	ID          *engine.Identity
	Env         *envinfo.Env
	// Flat is the environment as the record's field map (envinfo's fields plus the
	// engine's name and version and the served model).
	Flat     map[string]string
	Hardware string
}

// TargetURL is the engine URL: the override (--target) where given, else target.url.
func TargetURL(f *workload.File, override string) string {
	if override != "" {
		return override
	}
	return f.Target.URL
}

// warnTails warns, once per config file and workload whatever the number of runs, blocks
// or sides that prepare it, of each percentile rule a run of the workload cannot give
// enough values beyond its percentile to pass (gate.TailNeeds).
func (r *Runner) warnTails(f *workload.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range f.Workloads {
		w := &f.Workloads[i]
		key := f.Path + "\x00" + w.Name
		if r.tailsWarned[key] {
			continue
		}
		if r.tailsWarned == nil {
			r.tailsWarned = map[string]bool{}
		}
		r.tailsWarned[key] = true
		for _, n := range gate.TailNeeds(w, f.Gate.Rules) {
			if n.Short() {
				r.logf("warning: workload %q: %s", w.Name, n)
			}
		}
	}
}

// Prepare reaches the engine, reads its identity, checks the pinned model and collects
// the environment.
func (r *Runner) Prepare(ctx context.Context, f *workload.File, override string) (*Target, error) {
	t := &Target{URL: TargetURL(f, override)}
	if t.URL == "" {
		return nil, badInput("%s: no engine URL: set target.url or pass --target", f.Path)
	}
	r.Secrets.Add(workload.URLSecrets(t.URL)...)
	r.warnTails(f)
	if override != "" {
		if err := workload.CheckURL(override); err != nil {
			return nil, &BadInputError{Err: err}
		}
	}
	if f.Target.APIKeyEnv != "" {
		t.APIKey = r.getenv(f.Target.APIKeyEnv)
		if t.APIKey == "" {
			return nil, badInput("%s: target.api_key_env names %q, which is not set in the environment", f.Path, f.Target.APIKeyEnv)
		}
	}
	parallel, _ := strconv.Atoi(r.getenv("OLLAMA_NUM_PARALLEL"))
	pctx, cancel := r.preflight(ctx)
	id, err := engine.Identify(pctx, engine.IdentifyOptions{BaseURL: t.URL, APIKey: t.APIKey, Engine: f.Target.Engine, Model: f.Model.Name, Parallel: parallel, Timeout: r.ProbeTimeout, KVUnified: f.Target.KVUnified})
	cancel()
	if err != nil {
		return nil, err
	}
	t.ID = id
	if msg := ModelMismatch(f, id); msg != "" {
		if !f.Model.AllowMismatch {
			return nil, fmt.Errorf("%s: set model.name in %s to the model this engine serves, or point target.url (--target) at the engine that serves %q; to measure this one anyway, set model.allow_mismatch: true", msg, f.Path, f.Model.Name)
		}
		r.logf("warning: %s (allowed by model.allow_mismatch)", msg)
	}
	env, err := r.CollectEnv(ctx, f.Target.Image)
	if err != nil {
		return nil, err
	}
	t.Env = env
	t.Flat = env.Flat()
	t.Flat["engine.name"] = id.Engine
	t.Flat["engine.version"] = id.Version
	if id.ModelID != "" {
		t.Flat["model.id"] = id.ModelID
	}
	if id.ModelRevision != "" {
		t.Flat["model.revision"] = id.ModelRevision
	}
	t.Hardware = envinfo.HardwareKey(env)
	if id.Engine == engine.EngineSim {
		// The simulator's speed is its profile's, whatever GPU the machine has.
		t.Hardware = "sim"
	}
	return t, nil
}

// CheckContext refuses, before anything is sent, the workloads whose longest request does
// not fit the engine's context per request (workload.CheckContext): a bad-input error
// naming every one, with the numbers.
func CheckContext(f *workload.File, t *Target, ws []*workload.Workload) error {
	var errs []error
	for _, w := range ws {
		if err := workload.CheckContext(w, t.ID.MaxContext, t.ID.ContextSource, f.Path); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &BadInputError{Err: errors.Join(errs...)}
}

// CollectEnv reads the GPU, host and runner environment; image names the engine's
// container image where the config pins one.
func (r *Runner) CollectEnv(ctx context.Context, image string) (*envinfo.Env, error) {
	opts := envinfo.DefaultOptions()
	if r.EnvOptions != nil {
		opts = r.EnvOptions()
	}
	if opts.EngineImage == "" {
		opts.EngineImage = image
	}
	env, err := envinfo.Collect(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("reading the GPU environment: %w", err)
	}
	return env, nil
}

// ModelMismatch says how the served model differs from the pinned one, or "".
func ModelMismatch(f *workload.File, id *engine.Identity) string {
	served := id.ModelID
	if served != f.Model.Name && strings.TrimSuffix(served, ":latest") != f.Model.Name {
		return fmt.Sprintf("the engine serves model %q, but model.name pins %q", served, f.Model.Name)
	}
	if f.Model.Revision != "" && id.ModelRevision != "" && f.Model.Revision != id.ModelRevision {
		return fmt.Sprintf("the engine serves revision %q of %s, but model.revision pins %q", id.ModelRevision, served, f.Model.Revision)
	}
	return ""
}

// Launch starts the engine of target.start, its output going to log, and waits until it
// is ready. The cold start is reported, never gated silently. stop ends the engine.
func (r *Runner) Launch(ctx context.Context, f *workload.File, override string, log io.Writer, logName string) (proc *engine.Process, stop func(), err error) {
	url := TargetURL(f, override)
	if url == "" {
		return nil, nil, badInput("%s: target.start needs target.url (or --target): where the started engine will answer", f.Path)
	}
	st := f.Target.Start
	var env []string
	keys := make([]string, 0, len(st.Env))
	for k := range st.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+st.Env[k])
	}
	shown, secrets := RedactCommand(st.Command)
	r.Secrets.Add(secrets...)
	r.Secrets.Add(workload.URLSecrets(url)...)
	r.logf("starting the engine: %s (output in %s)", shown, logName)
	proc, err = engine.Launch(ctx, engine.LaunchSpec{Command: st.Command, Env: env, BaseURL: url, ReadyTimeout: st.ReadyTimeout, Log: log})
	var busy *engine.PortBusyError
	if errors.As(err, &busy) {
		return nil, nil, &BadInputError{Err: fmt.Errorf("%s: %w", f.Path, err)}
	}
	if err != nil {
		return nil, nil, err
	}
	// The first token after a start, sent before anything else reaches the engine: what a
	// user of a freshly started replica waits for, compilation on first use included.
	key := ""
	if f.Target.APIKeyEnv != "" {
		key = r.getenv(f.Target.APIKeyEnv)
	}
	fctx, cancel := r.preflight(ctx)
	proc.FirstToken(fctx, &engine.Request{API: f.Target.API, Model: f.Model.Name, Prompt: FirstTokenPrompt, MaxTokens: 4}, key)
	cancel()
	up := proc.Startup
	r.logf("engine ready after %s (port %s, first token %s)%s", up.Ready().Round(time.Millisecond), up.Port.Round(time.Millisecond),
		up.FirstToken.Round(time.Millisecond), phaseNote(up.Phases))
	if up.FirstTokenError != "" {
		r.logf("warning: the first request after the start failed (%s): first_token_after_start is not measured", up.FirstTokenError)
	}
	return proc, proc.Stop, nil
}

// RedactCommand is a command line as it may be shown: the value of every flag whose name
// says it holds a secret (a word key, token, password, secret, credential), given as
// --api-key=V or --api-key V, replaced by result.Redacted; and those values, for the
// secrets that the engine's own output must not show either.
func RedactCommand(args []string) (shown string, secrets []string) {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, eq := strings.Cut(a, "=")
		if !secretFlag(name) {
			continue
		}
		if eq {
			secrets = append(secrets, val)
			out[i] = name + "=" + result.Redacted
		} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
			secrets = append(secrets, out[i+1])
			out[i+1] = result.Redacted
			i++
		}
	}
	return strings.Join(out, " "), secrets
}

// secretFlag says whether a flag's name says it holds a secret: one of its words
// (between - and _) is key, token, password... (--api-key, --hf-token), where
// --max-num-batched-tokens is a number.
func secretFlag(name string) bool {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' })
	for _, w := range words {
		switch w {
		case "key", "apikey", "token", "password", "passwd", "secret", "credential", "credentials", "auth":
			return true
		}
	}
	return false
}

// FirstTokenPrompt is the prompt of the request that times the first token after a start.
const FirstTokenPrompt = "The first request after a start:"

// phaseNote lists the startup phases the engine's output named, for the log line.
func phaseNote(ps []engine.StartPhase) string {
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s %.2f s", p.Name, p.Seconds)
	}
	return "; its log: " + strings.Join(parts, ", ")
}

// StartupOf is the record's form of a started engine's start; nil for none.
func StartupOf(proc *engine.Process) *result.Startup {
	if proc == nil {
		return nil
	}
	st := proc.Startup
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	out := &result.Startup{StartedAt: st.StartedAt.UTC().Round(0), PortMS: ms(st.Port), HealthMS: ms(st.Health), ModelMS: ms(st.Model),
		ReadyMS: ms(st.Ready()), FirstTokenMS: ms(st.FirstToken), FirstTokenError: st.FirstTokenError}
	for _, p := range st.Phases {
		out.Phases = append(out.Phases, result.StartPhase{Name: p.Name, Seconds: p.Seconds, Source: p.Source, AtMS: ms(p.At), Line: p.Line})
	}
	return out
}

// SelectWorkloads returns the workloads named, in file order, or all of them.
func SelectWorkloads(f *workload.File, names []string) ([]*workload.Workload, error) {
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
		valid = append(valid, fmt.Sprintf("%q", f.Workloads[i].Name))
	}
	var out []*workload.Workload
	for _, n := range names {
		w, ok := byName[n]
		if !ok {
			return nil, badInput("%s: no workload %q; expected one of %s", f.Path, n, strings.Join(valid, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// ClientBoundFraction is the share of the tightest latency SLO the client may take: a
// request's latency counts from its scheduled time, so a late send or a late read is
// charged to the engine and never flatters it; the bound keeps that charge small against
// what the SLO measures, so that the run measures the engine, not the client.
const ClientBoundFraction = 0.05

// MaxDispatchLag is the bound on dispatch-lag p99: max_dispatch_lag where the workload
// sets it, else ClientBoundFraction of its tightest TTFT or E2E SLO (the latencies a late
// send inflates), else of its tightest SLO of any kind, never below 1 ms; 1 ms without
// an SLO.
func MaxDispatchLag(w *workload.Workload) time.Duration {
	if w.MaxDispatchLag > 0 {
		return w.MaxDispatchLag
	}
	if b := sloBound(w, "ttft", "e2e"); b > 0 {
		return b
	}
	if b := sloBound(w); b > 0 {
		return b
	}
	return DefaultMaxDispatchLag
}

// MaxReaderLag is the bound on the p99 lateness of the client's goroutines (how long a
// goroutine that could run waited to run: a reader that wakes late stamps its chunks late
// and stretches ITL and TPOT however well sending keeps up): max_dispatch_lag where set,
// else ClientBoundFraction of the tightest ITL or TPOT SLO, else of the tightest SLO,
// never below 1 ms; 0 (not judged, only recorded) without an SLO.
func MaxReaderLag(w *workload.Workload) time.Duration {
	if w.MaxDispatchLag > 0 {
		return w.MaxDispatchLag
	}
	if b := sloBound(w, "itl", "tpot"); b > 0 {
		return b
	}
	return sloBound(w)
}

// sloBound is ClientBoundFraction of the tightest SLO limit among metrics (all when
// none are named), at least 1 ms; 0 when the workload has no such SLO.
func sloBound(w *workload.Workload, metrics ...string) time.Duration {
	var tight time.Duration
	targets := slices.Clone(w.SLO.Targets)
	for _, c := range w.Classes {
		targets = append(targets, c.SLO.Targets...)
	}
	for _, t := range targets {
		if len(metrics) > 0 && !slices.Contains(metrics, t.Metric) {
			continue
		}
		if t.Limit > 0 && (tight == 0 || t.Limit < tight) {
			tight = t.Limit
		}
	}
	if tight == 0 {
		return 0
	}
	return max(time.Duration(float64(tight)*ClientBoundFraction), time.Millisecond)
}

// classSLO is the record's class_slo: the targets of each class whose SLO (inherited
// targets included) differs from the workload's; nil when none does.
func classSLO(w *workload.Workload) map[string][]result.SLOTarget {
	var m map[string][]result.SLOTarget
	for _, c := range w.Classes {
		if slices.Equal(c.SLO.Targets, w.SLO.Targets) {
			continue
		}
		if m == nil {
			m = map[string][]result.SLOTarget{}
		}
		ts := []result.SLOTarget{}
		for _, t := range c.SLO.Targets {
			ts = append(ts, result.SLOTarget{Metric: t.Metric, Percentile: t.Percentile, LimitMS: ms(t.Limit)})
		}
		m[c.Name] = ts
	}
	return m
}

// IgnoreEOS decides whether output lengths are forced: the file's choice, else where the
// engine is known to accept ignore_eos.
func IgnoreEOS(w *workload.Workload, engineName string) bool {
	if w.IgnoreEOS != nil {
		return *w.IgnoreEOS
	}
	switch engineName {
	case "vllm", "sglang", "sim":
		return true
	}
	return false
}

// Trial says which trial of a workload a run is, and which shard of the schedule it
// sends.
type Trial struct {
	N, Of          int // trial N of Of (Of ≤ 1: a single run)
	ShardI, ShardN int // shard i of n (n = 0: the whole schedule)
	// StartAt anchors the schedule to a wall-clock time that every shard shares (zero:
	// start when the warm-up ends); MaxStartLate bounds how late the window may open
	// (0: DefaultMaxStartLate).
	StartAt      time.Time
	MaxStartLate time.Duration
	// Journal, when set, is the file each request is appended to as it finishes (JSONL,
	// see journal.go), so that what was measured survives a run that never gets to write
	// its record.
	Journal string
}

// DefaultMaxStartLate is the least bound on how late a shard may open its window after
// the common start time: well above a timer's wake-up on a busy machine, well below a
// runner that came up late.
const DefaultMaxStartLate = 100 * time.Millisecond

// ScrapingShard is the shard that scrapes the engine's metrics in a sharded run: one
// engine scraped by n shards would be counted n times when merged.
const ScrapingShard = 1

// Run runs one trial of one workload and returns its record, complete or not: a failure
// during the run marks the record incomplete and keeps what was measured.
func (r *Runner) Run(ctx context.Context, f *workload.File, w *workload.Workload, t *Target, tr Trial) *result.Record {
	rec := r.run(ctx, f, w, t, tr)
	// Whatever the server sent (a version, a model id, an error, a metrics label) may
	// echo the key it was sent.
	var s result.Secrets
	s.Add(t.APIKey)
	s.Redact(rec)
	r.Secrets.Redact(rec)
	if r.Measured != nil {
		r.Measured(rec)
	}
	return rec
}

func (r *Runner) run(ctx context.Context, f *workload.File, w *workload.Workload, t *Target, tr Trial) *result.Record {
	start := r.now()
	epoch := time.Now()
	client := engine.NewClient(engine.ClientOptions{BaseURL: t.URL, APIKey: t.APIKey, Model: t.ID.ModelID, Epoch: epoch})
	rec := &result.Record{
		Schema:       result.Schema,
		Workload:     w.Name,
		WorkloadHash: workload.Hash(f, w),
		WorkloadForm: workload.Form(f, w),
		Config:       f.Path,
		Target:       t.URL,
		API:          f.Target.API,
		Model:        t.ID.ModelID,
		Hardware:     t.Hardware,
		Environment:  t.Flat,
		Engine: &result.EngineInfo{
			Name: t.ID.Engine, Version: t.ID.Version, ModelID: t.ID.ModelID, ModelRevision: t.ID.ModelRevision,
			MaxContext: t.ID.MaxContext, ContextSource: t.ID.ContextSource, KVCapacityTokens: t.ID.KVCapacityTokens, KVSource: t.ID.KVSource, Notes: t.ID.Notes,
		},
		Mode:        "open",
		RunID:       r.newRunID(),
		Start:       start.UTC(),
		ToolVersion: r.ToolVersion,
		Requests:    []result.Request{},
	}
	if tr.Of > 1 {
		rec.Trial = tr.N
	}
	closed := w.Arrival.Process == workload.ArrivalClosed
	if closed {
		rec.Mode = "closed"
		rec.Notes = append(rec.Notes, "closed loop: latency at a fixed concurrency; it hides queueing (an open-loop arrival process shows it)")
	}
	for _, s := range w.SLO.Targets {
		rec.SLO = append(rec.SLO, result.SLOTarget{Metric: s.Metric, Percentile: s.Percentile, LimitMS: ms(s.Limit)})
	}
	rec.ClassSLO = classSLO(w)
	rec.SLOAttainmentTarget = w.SLO.Attainment
	rec.SLOAttainmentDeclared = w.SLO.AttainmentSet

	gen, err := workload.NewGenerator(w)
	if err != nil {
		rec.Incomplete, rec.IncompleteReason = true, "workload: "+err.Error()
		return rec
	}
	gen.SetRunID(rec.RunID)
	if !hasTokenizer(t.ID.Engine) {
		rec.Notes = append(rec.Notes, fmt.Sprintf("prompt lengths use the estimate of %.1f characters per token: %s has no tokenize endpoint", workload.DefaultCharsPerToken, t.ID.Engine))
	} else {
		pctx, cancel := r.preflight(ctx)
		err := gen.Calibrate(pctx, client)
		if err != nil && ctx.Err() == nil && (errors.Is(err, engine.ErrStalled) || pctx.Err() != nil) {
			// An engine that takes the request and never answers would stall the run
			// the same way: nothing is sent, and the record says which call stalled.
			cause := err.Error()
			if pctx.Err() != nil && !errors.Is(err, engine.ErrStalled) {
				cause = context.Cause(pctx).Error() + ": " + cause
			}
			cancel()
			rec.Incomplete, rec.IncompleteReason = true, cause
			return rec
		}
		cancel()
		if err != nil {
			rec.Notes = append(rec.Notes, "prompt lengths estimated, not calibrated: "+err.Error())
		}
	}
	cal := gen.Calibration()
	rec.Calibration = result.Calibration{Method: cal.Method, CharsPerToken: cal.CharsPerToken}
	rec.PrefixCache = &result.PrefixCacheRun{Mode: result.PrefixCold}
	switch {
	case w.PrefixCache.Mode == workload.PrefixWarm:
		rec.PrefixCache.Mode = result.PrefixWarm
	case w.SharesPrefixes():
		rec.PrefixCache.Mode = result.PrefixShared
	}
	if rec.PrefixCache.Mode == result.PrefixCold {
		pctx, cancel := r.preflight(ctx)
		rec.PrefixCache.Opening = MeasureOpening(pctx, client, gen, w, f.Target.API, t.ID)
		cancel()
	}
	if w.PrefixCache.Reset {
		rec.PrefixCache.Reset = r.resetPrefixCache(ctx, t)
		if !rec.PrefixCache.Reset.Done {
			rec.Notes = append(rec.Notes, "prefix cache not reset before the run: "+rec.PrefixCache.Reset.Detail)
		}
	}

	var src loadgen.Source = gen
	var shard *ShardSource
	if tr.ShardN > 0 && w.Sessions != nil {
		rec.Incomplete, rec.IncompleteReason = true, fmt.Sprintf("workload %q: a session workload is not split into shards: run it whole", w.Name)
		return rec
	}
	if tr.ShardN > 0 {
		shard = NewShardSource(gen, tr.ShardI, tr.ShardN)
		src = shard
		rec.Shard = fmt.Sprintf("%d/%d", tr.ShardI, tr.ShardN)
	}
	cfg := loadgen.Config{
		Streamer:  client,
		Source:    src,
		Epoch:     epoch,
		API:       f.Target.API,
		Model:     t.ID.ModelID,
		IgnoreEOS: IgnoreEOS(w, t.ID.Engine),
		Timeout:   w.Timeout,
		Warmup:    w.Warmup.Requests,
		Closed:    closed,
		Users:     w.Arrival.Users,
		Requests:  w.Requests,
		Duration:  w.Duration,
		StartAt:   tr.StartAt,
		// An engine that refuses 20 requests in a row has gone away: stop, keep what
		// was measured, and say so, rather than send the rest of the schedule to a
		// closed port.
		StopAfterConnectErrors: 20,
	}
	if w.Sessions != nil {
		cfg.Sessions = gen
		if t := w.Tasks; t != nil {
			cfg.TurnRetries = t.Retries
			cfg.ContinueAfterFailure = t.Success == workload.TaskSuccessLast
		}
	}
	if closed {
		// A closed loop sends its next request as soon as the last one ends: against an
		// engine that fails every request at once it would send thousands a second.
		cfg.StopAfterFailures = StopAfterFailures
	}
	if r.Progress != nil {
		cfg.Progress = r.Progress(w.Name)
	}
	var sampler *loadgen.EngineSampler
	if tr.ShardN > 0 && tr.ShardI != ScrapingShard && !t.ID.Metrics.Empty() && !f.Target.Metrics.Disabled {
		rec.Notes = append(rec.Notes, fmt.Sprintf("the engine's metrics are scraped by shard %d/%d only", ScrapingShard, tr.ShardN))
	} else if !t.ID.Metrics.Empty() && !f.Target.Metrics.Disabled {
		url := f.Target.Metrics.URL
		if url == "" {
			url = strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(t.URL, "/"), "/v1"), "/") + t.ID.Metrics.Path
		}
		sc := &engine.Scraper{URL: url, Set: t.ID.Metrics, APIKey: t.APIKey, Timeout: r.ProbeTimeout}
		sampler = &loadgen.EngineSampler{Scrape: sc.Scrape, Every: f.Target.Metrics.Interval, Epoch: epoch}
		cfg.OpenWindow, cfg.Observe = sampler.Prime, sampler.Run
	}
	if tr.Journal != "" {
		var keys result.Secrets
		keys.Add(t.APIKey)
		redact := func(s string) string { return r.Secrets.String(keys.String(s)) }
		j, err := openJournal(tr.Journal, JournalHead{Workload: w.Name, RunID: rec.RunID, Trial: rec.Trial, Shard: rec.Shard, Start: start.UTC()}, redact)
		if err != nil {
			rec.Notes = append(rec.Notes, "no journal of requests as they finished: "+err.Error())
		} else {
			// The journal keeps the measured requests while the window runs, so that
			// the client's memory does not grow with the run's length.
			cfg.Finished, cfg.Spill = j.add, j.readBack
			defer func() {
				if err := j.close(); err != nil {
					rec.Notes = append(rec.Notes, "the journal of requests as they finished is incomplete: "+err.Error())
				}
			}()
		}
	}
	if w.PrefixCache.Mode == workload.PrefixWarm {
		// The priming pass goes after the warm-up (which measures the engine's cold
		// start) and before the window's first scrape (so that the window's figures
		// exclude it).
		n, open := primeCount(w, src), cfg.OpenWindow
		cfg.OpenWindow = func(ctx context.Context) {
			r.logf("priming the prefix cache: %d prompts of workload %q (prefix_cache: warm)", n, w.Name)
			rec.Priming = r.prime(ctx, client, src, n, f.Target.API, t.ID.ModelID, w.Timeout)
			if note := primingNote(rec.Priming); note != "" {
				rec.Notes = append(rec.Notes, note)
			}
			if open != nil {
				open(ctx)
			}
		}
	}
	out, err := loadgen.Run(ctx, cfg)
	if r.Progress != nil && r.ProgressDone != nil {
		r.ProgressDone()
	}
	if err != nil {
		rec.Incomplete, rec.IncompleteReason = true, err.Error()
		return rec
	}
	if out.Start != nil {
		rec.Sync = out.Start
		bound := tr.MaxStartLate
		if bound <= 0 {
			bound = DefaultMaxStartLate
		}
		rec.Sync.MaxLateMS = ms(bound)
	}
	var shiftUS int64
	if shard != nil {
		shiftUS = shard.ToSchedule(out)
	}
	FillRecord(rec, w, out, closed)
	if sampler != nil {
		sampler.Apply(rec)
		for _, ss := range rec.Series.Engine {
			for k := range ss {
				ss[k].TUS -= shiftUS
			}
		}
	}
	KVConcurrency(rec, f, t)
	rec.Summary.LittleLaw = LittleLaw(rec)
	result.AttributePrefixHits(rec)
	scrapedElsewhere := tr.ShardN > 0 && tr.ShardI != ScrapingShard
	if rec.PrefixCache.Mode == result.PrefixCold && rec.Summary.PrefixCache == nil && !scrapedElsewhere {
		rec.Notes = append(rec.Notes, "prefix-cache hits not measured: the engine reports no prefix-cache figures, so nothing shows whether this cold run met a warm cache")
	}
	if rec.PrefixCache.Mode == result.PrefixWarm && rec.Summary.PrefixCache == nil && !scrapedElsewhere {
		rec.Notes = append(rec.Notes, "prefix-cache hits not measured: the engine reports no prefix-cache figures, so nothing shows how much of the primed prompts the window found cached")
	}
	if why := rec.WarmCold(); why != "" {
		rec.Notes = append(rec.Notes, why+"; the gate refuses this run")
	}
	return rec
}

// Merge merges the shard records of one sharded run into the record of the whole run
// (result.Merge) and recomputes what needs more than the requests: KV-limited
// concurrency over all of them, with the capacity the shards found, and Little's law.
func Merge(recs ...*result.Record) (*result.Record, error) {
	m, err := result.Merge(recs...)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if k := r.Summary.KVConcurrency; k != nil {
			source, _, _ := strings.Cut(k.Source, slotsCap)
			m.Summary.KVConcurrency = kvFromRequests(m, k.CapacityTokens, k.BlockSize, k.Slots, source)
			break
		}
	}
	m.Summary.LittleLaw = LittleLaw(m)
	// Every shard scraped the one engine, whose counters count every shard's prompts:
	// the first shard's figures are the engine's over the run.
	for _, r := range recs {
		if r.Summary.PrefixCache != nil && m.Summary.PrefixCache == nil {
			pc := *r.Summary.PrefixCache
			m.Summary.PrefixCache = &pc
			m.Summary.PrefixCacheHitRate = r.Summary.PrefixCacheHitRate
			if m.Summary.Preemptions == nil && r.Summary.Preemptions != nil {
				p := *r.Summary.Preemptions
				m.Summary.Preemptions = &p
			}
		}
	}
	result.AttributePrefixHits(m)
	return m, nil
}

// resetPrefixCache empties the engine's prefix cache where it offers a way to, and says
// what happened.
func (r *Runner) resetPrefixCache(ctx context.Context, t *Target) *result.CacheReset {
	ep, err := engine.ResetPrefixCache(ctx, t.URL, t.APIKey, t.ID.Engine, nil)
	cr := &result.CacheReset{Endpoint: ep, Done: err == nil}
	if err != nil {
		cr.Detail = err.Error()
		r.logf("warning: prefix cache not reset: %v", err)
	}
	return cr
}

// TaskRule is the task rule a record of w carries (Record.Tasks); nil when w has no
// tasks.
func TaskRule(w *workload.Workload) *result.TaskRule {
	if w.Tasks == nil {
		return nil
	}
	return &result.TaskRule{By: w.Tasks.By, Success: w.Tasks.Success, Retries: w.Tasks.Retries}
}

// FillRecord judges every request and summarizes the outcome into rec.
func FillRecord(rec *result.Record, w *workload.Workload, out *loadgen.Outcome, closed bool) {
	rec.Window = out.Window
	rec.Requests = out.Measured
	rec.MaxDispatchLagMS = ms(MaxDispatchLag(w))
	rec.MaxReaderLagMS = ms(MaxReaderLag(w))
	rec.Tasks = TaskRule(w)
	for i := range rec.Requests {
		q := &rec.Requests[i]
		result.Judge(q, result.SLOFor(q.Class, rec.SLO, rec.ClassSLO))
	}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{
		Window:           out.Window,
		SLO:              rec.SLO,
		ClassSLO:         rec.ClassSLO,
		AttainmentTarget: w.SLO.Attainment,
		MaxDispatchLag:   MaxDispatchLag(w),
		OpenLoop:         !closed,
		Tasks:            rec.Tasks,
	})
	if len(out.Warmup) > 0 {
		rec.Warmup = result.WarmupSummaryOf(out.Warmup)
	}
	rec.Series.InFlight = out.InFlight
	rec.Notes = append(rec.Notes, out.Notes...)
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
		rec.Notes = append(rec.Notes, result.NoUsageNote(noUsage))
	}
	if n := rec.Summary.Errors[engine.ErrConnect]; n > 0 && n == rec.Summary.Requests {
		rec.Incomplete, rec.IncompleteReason = true, "engine unreachable: every request failed to connect"
	} else if n := trailingConnectErrors(rec.Requests); n > 0 && !rec.Incomplete {
		// The engine went away mid-run (a crash, an OOM kill): what it served before is
		// kept, but the run did not measure it serving the workload.
		rec.Incomplete, rec.IncompleteReason = true, fmt.Sprintf("engine stopped answering: the last %d of %d requests failed to connect", n, len(rec.Requests))
	} else if n := rec.Summary.Requests; n > 0 && rec.Summary.Completed == 0 && !rec.Incomplete {
		// Not one request succeeded: the run measured a failing engine, not its service.
		rec.Incomplete, rec.IncompleteReason = true, fmt.Sprintf("engine failed every request: %d of %d failed (%s)", n, n, result.ErrorCounts(rec.Summary.Errors))
	}
	rec.Summary.ReaderLagms = out.ReaderLag
	result.JudgeReader(rec)
	if rec.Summary.ClientSaturated {
		rec.Notes = append(rec.Notes, result.NoteClientSaturated)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// trailingConnectErrors counts the requests at the end of the schedule that failed to
// connect: an engine that refuses the run's last requests is no longer there.
func trailingConnectErrors(reqs []result.Request) int {
	n := 0
	for i := len(reqs) - 1; i >= 0 && reqs[i].Error == engine.ErrConnect; i-- {
		n++
	}
	return n
}

// CheckTrials checks that the records of each workload are one run's trials: as many
// whole-run records as the workload's repeats, numbered 1..repeats. More records than
// that are stale ones of an earlier run, judged as if they were this run's; fewer are a
// run that did not finish. Shard records are merged first and are not counted.
func CheckTrials(f *workload.File, recs []*result.Record) error {
	byName := map[string][]*result.Record{}
	for _, r := range recs {
		if r.Shard == "" {
			byName[r.Workload] = append(byName[r.Workload], r)
		}
	}
	var errs []error
	for i := range f.Workloads {
		w := &f.Workloads[i]
		rs := byName[w.Name]
		if len(rs) == 0 {
			continue
		}
		repeats := max(w.Repeats, 1)
		want := repeats
		seen := map[int]bool{}
		for _, r := range rs {
			seen[max(r.Trial, 1)] = true
		}
		// Sequential repeats that stopped early (run --min-repeats) say how many ran,
		// on their last trial: that many, numbered 1..Run, are the whole run.
		stop := result.RepeatStopOf(rs)
		if stop != nil && stop.Repeats == repeats && stop.Run >= 1 && stop.Run <= repeats {
			want = stop.Run
		}
		ok := len(rs) == want && len(seen) == want
		for t := 1; ok && t <= want; t++ {
			ok = seen[t]
		}
		if !ok {
			ran := ""
			if stop != nil {
				ran = fmt.Sprintf(" (its last trial says %d of %d ran)", stop.Run, stop.Repeats)
			}
			errs = append(errs, badInput("workload %q: %d run records with trials %v, but repeats is %d in %s%s: the gate judges the trials of one run (records of an earlier run left in the directory?)",
				w.Name, len(rs), trialList(rs), repeats, f.Path, ran))
		}
	}
	return errors.Join(errs...)
}

func trialList(rs []*result.Record) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = max(r.Trial, 1)
	}
	sort.Ints(out)
	return out
}
