package workload

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// nameRE is the shape of workload and class names: they become file and directory names
// (baselines/<workload>/...) and keys in reports, so they are kept portable.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

const maxNameLen = 64

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Rule metrics. Latency metrics are <ttft|tpot|itl|e2e>_<stat>.
var (
	ruleMetrics  = []string{"goodput", "throughput", "output_tokens_per_s", "slo_attainment", "error_rate", "kv_concurrency", "max_sustainable_rps", "engine_start", "first_token_after_start", "task_goodput"}
	latencyStats = []string{"p50", "p90", "p95", "p99", "p999", "max", "mean"}
)

var ruleMetricList = quoteList(ruleMetrics) + `, or <ttft|tpot|itl|itl_token|e2e>_<p50|p90|p95|p99|p999|max|mean> such as "itl_p99"`

// IsRuleMetric reports whether name is a metric that gate rules may name.
func IsRuleMetric(name string) bool {
	return validRuleMetric(name)
}

func validRuleMetric(name string) bool {
	if stat, ok := strings.CutPrefix(name, "itl_token_"); ok {
		// Per-token intervals: a chunk of k tokens counts k times as its gap / k.
		return slices.Contains(latencyStats, stat)
	}
	return slices.Contains(ruleMetrics, name) || isLatencyMetric(name)
}

// IsStartMetric reports whether a rule's metric is a time of a started engine's start
// (target.start), judged over starts rather than requests.
func IsStartMetric(name string) bool {
	return name == "engine_start" || name == "first_token_after_start"
}

func isLatencyMetric(name string) bool {
	m, stat, ok := strings.Cut(name, "_")
	return ok && slices.Contains(validSLOMetrics, m) && slices.Contains(latencyStats, stat)
}

type unit int

const (
	unitNumber   unit = iota // requests/s, tokens/s, a count
	unitFraction             // error_rate, slo_attainment
	unitLatency              // milliseconds in Rule.Max and Rule.Min; a duration in the file
)

func metricUnit(name string) unit {
	switch {
	case name == "error_rate" || name == "slo_attainment":
		return unitFraction
	case isLatencyMetric(name) || IsStartMetric(name):
		return unitLatency
	}
	return unitNumber
}

// DriftFields are the environment fields that gate.drift may name: the flat keys of the
// run record's environment (engine and model identity from the engine adapter, the rest
// from envinfo). Keep in step with envinfo's Key* constants.
var DriftFields = []string{
	"engine.name", "engine.version", "engine.image",
	"model.id", "model.revision",
	"gpu.name", "gpu.count", "gpu.memory_mib", "gpu.compute_cap", "gpu.driver", "gpu.cuda",
	"host.os", "host.kernel", "host.cpu", "host.cores",
	"runner.name", "runner.os",
	"tool.version", "tool.commit",
}

// DefaultRules are the rules used when gate.rules is absent or empty.
func DefaultRules() []Rule {
	maxErr := 0.005
	return []Rule{
		{Metric: "goodput", Direction: "higher", Tolerance: 0.05},
		{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10},
		{Metric: "kv_concurrency", Direction: "higher", Tolerance: 0.01},
		{Metric: "error_rate", Max: &maxErr},
	}
}

// DefaultDrift is the drift policy of the fields a file does not name. What identifies the
// measured thing (engine, model, GPU) fails; what often moves underneath (engine version
// and image, driver, CUDA) warns; the tool's own version and commit are ignored. Fields
// in neither list (host.*, runner.*, gpu.memory_mib, gpu.compute_cap) have no policy
// here and are left to the gate.
func DefaultDrift() []DriftPolicy {
	return []DriftPolicy{
		{"engine.name", "fail"},
		{"engine.version", "warn"},
		{"model.id", "fail"},
		{"model.revision", "fail"},
		{"gpu.name", "fail"},
		{"gpu.count", "fail"},
		{"gpu.driver", "warn"},
		{"gpu.cuda", "warn"},
		{"engine.image", "warn"},
		{"tool.version", "ignore"},
		{"tool.commit", "ignore"},
	}
}

// mergeDrift keeps the file's entries in file order and appends the defaults it does not
// override.
func mergeDrift(file, defaults []DriftPolicy) []DriftPolicy {
	out := slices.Clone(file)
	for _, def := range defaults {
		if !slices.ContainsFunc(file, func(p DriftPolicy) bool { return p.Field == def.Field }) {
			out = append(out, def)
		}
	}
	return out
}

// node is the node to report a problem at path on: its own value, else the nearest
// enclosing one that the file has.
func (d *decoder) node(path string) *yaml.Node {
	for {
		if n, ok := d.nodes[path]; ok {
			return n
		}
		if path == "" {
			return nil
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// keyNode is the key of path where the file has one, else the node of path.
func (d *decoder) keyNode(path string) *yaml.Node {
	if k, ok := d.keys[path]; ok {
		return k
	}
	return d.node(path)
}

// ok reports whether path holds a value that decoded cleanly, so that it can be checked.
func (d *decoder) ok(path string) bool { return d.has(path) && !d.bad[path] }

// check reports "invalid <path> <value>: <msg>" when path holds a clean value and cond is
// false. Absent values are left to their defaults and to the required checks.
func (d *decoder) check(path string, cond bool, format string, args ...any) {
	if d.ok(path) && !cond {
		d.fail(path, d.nodes[path], format, args...)
	}
}

// checkFrac is check for fractions: a bare number above 1 is most likely a percentage
// written without its sign, and the message says how to write one.
func (d *decoder) checkFrac(path string, cond bool, format string, args ...any) {
	if !d.ok(path) || cond {
		return
	}
	n := d.nodes[path]
	msg := fmt.Sprintf(format, args...)
	if v, err := strconv.ParseFloat(n.Value, 64); err == nil && v > 1 {
		msg += fmt.Sprintf("; a bare number is a fraction, write \"%s%%\" for %s percent", n.Value, n.Value)
	}
	d.fail(path, n, "%s", msg)
}

// require reports a key missing from the mapping at parent, unless the parent itself is
// missing or malformed (already reported).
func (d *decoder) require(parent, key, hint string) bool {
	if !d.ok(parent) {
		return false
	}
	if d.has(join(parent, key)) {
		return true
	}
	msg := fmt.Sprintf("missing required key %q %s", key, where(parent))
	if hint != "" {
		msg += "; " + hint
	}
	d.errorf(d.nodes[parent], "%s", msg)
	return false
}

// notFor reports keys that the file gives but that do not apply in the chosen mode.
func (d *decoder) notFor(parent, key, kind, value, applies string) {
	if p := join(parent, key); d.has(p) {
		d.errorf(d.keyNode(p), "%q does not apply to %s %q in %q; it applies to %s", key, kind, value, disp(parent), applies)
		d.bad[p] = true
	}
}

func (d *decoder) validate(f *File) {
	if d.require("", "version", "the current version is 1") {
		d.check("version", f.Version == 1, "the only supported version is 1")
	}
	d.validateTarget(&f.Target)
	if d.require("", "model", "") {
		d.validateModel(&f.Model)
	}
	if d.require("", "workloads", "") && d.ok("workloads") && len(f.Workloads) == 0 {
		d.fail("workloads", d.nodes["workloads"], "at least one workload is needed")
	}
	names := map[string]*yaml.Node{}
	for i := range f.Workloads {
		p := fmt.Sprintf("workloads[%d]", i)
		d.validateWorkload(p, &f.Workloads[i])
		if np := join(p, "name"); d.ok(np) && nameRE.MatchString(f.Workloads[i].Name) {
			if first, dup := names[f.Workloads[i].Name]; dup {
				d.errorf(d.nodes[np], "duplicate workload name %q; first used at line %d", f.Workloads[i].Name, first.Line)
			} else {
				names[f.Workloads[i].Name] = d.nodes[np]
			}
		}
	}
	for i := range f.Workloads {
		// A conversation's history is a list of messages: the chat API only.
		if sp := fmt.Sprintf("workloads[%d].sessions", i); f.Workloads[i].Sessions != nil && f.Target.API != "chat" && d.ok("target.api") {
			d.errorf(d.keyNode(sp), "\"sessions\" needs target.api \"chat\": each turn sends the conversation's messages, which %q cannot carry", f.Target.API)
		}
	}
	d.validateGate(&f.Gate)
	if f.Capacity != nil {
		d.validateCapacity(f.Capacity)
	}
}

func (d *decoder) validateURL(path, u string) {
	if !d.ok(path) || u == "" {
		return
	}
	if err := CheckURL(u); err != nil {
		why := urlForms
		if pu, perr := url.Parse(u); perr == nil && (pu.RawQuery != "" || pu.Fragment != "" || pu.ForceQuery) {
			why = urlNoQuery
		}
		d.fail(path, d.nodes[path], "%s", why)
	}
}

const (
	urlForms = "expected an http:// or https:// URL such as \"http://127.0.0.1:8000\""
	// urlNoQuery: the API's paths are appended to the URL, so a query or a fragment
	// would end up in the middle of every request's path (…/?key=x/v1/models).
	urlNoQuery = "a query or a fragment would land in the middle of every request's path: give the base URL alone (an API key goes in target.api_key_env)"
)

// CheckURL checks an engine URL given outside the file (--target, the Action's target
// input) as target.url is checked, with the same message.
func CheckURL(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return fmt.Errorf("invalid target %q: %s", u, urlForms)
	}
	if pu.RawQuery != "" || pu.Fragment != "" || pu.ForceQuery {
		return fmt.Errorf("invalid target %q: %s", pu.Redacted(), urlNoQuery)
	}
	return nil
}

func (d *decoder) validateTarget(t *Target) {
	// An empty url is allowed: --target sets it at run time.
	d.validateURL("target.url", t.URL)
	d.check("target.api_key_env", t.APIKeyEnv == "" || envNameRE.MatchString(t.APIKeyEnv), "expected the name of an environment variable such as \"SERVING_API_KEY\" (the key itself never goes in the file)")
	if t.Start != nil && d.ok("target.start") {
		if d.require("target.start", "command", "give the command that starts the engine as a list, e.g. [vllm, serve, MODEL]") {
			d.check("target.start.command", len(t.Start.Command) > 0, "the command needs at least the program name")
		}
		d.check("target.start.ready_timeout", t.Start.ReadyTimeout > 0, "must be more than 0s")
	}
	if t.Swap != nil && d.ok("target.swap") {
		if d.require("target.swap", "mode", "say how an A/B job puts the engine aside between blocks: one of "+quoteList(SwapModes())) {
			d.check("target.swap.mode", t.Swap.Mode != SwapRestart || t.Start != nil, "a restart needs target.start (the command that starts the engine)")
		}
		d.check("target.swap.level", !d.has("target.swap.level") || t.Swap.Mode == SwapSleep || !d.ok("target.swap.mode"), "only mode \"sleep\" has a level")
		// Level 2 discards the weights: a wake alone does not load them back (vLLM wants
		// a reload through /collective_rpc), so the woken engine would not be the one
		// measured before.
		d.check("target.swap.level", t.Swap.Level == 1, "expected 1 (level 2 discards the weights, and a wake alone does not reload them)")
		d.check("target.swap.sleep_timeout", t.Swap.SleepTimeout > 0, "must be more than 0s")
		d.check("target.swap.wake_timeout", t.Swap.WakeTimeout > 0, "must be more than 0s")
	}
	d.validateURL("target.metrics.url", t.Metrics.URL)
	d.check("target.metrics.interval", t.Metrics.Interval > 0, "must be more than 0s")
}

func (d *decoder) validateModel(m *Model) {
	if d.require("model", "name", "give the model id the engine serves, e.g. \"meta-llama/Llama-3.1-8B-Instruct\"") {
		d.check("model.name", m.Name != "", "must not be empty")
	}
	d.check("model.kv_bytes_per_token", m.KVBytesPerToken >= 1, "must be at least 1")
	if m.Architecture != nil && d.ok("model.architecture") {
		a := m.Architecture
		for _, k := range []string{"layers", "kv_heads", "head_dim", "dtype_bytes"} {
			d.require("model.architecture", k, "")
		}
		d.check("model.architecture.layers", a.Layers >= 1, "must be at least 1")
		d.check("model.architecture.kv_heads", a.KVHeads >= 1, "must be at least 1")
		d.check("model.architecture.head_dim", a.HeadDim >= 1, "must be at least 1")
		d.check("model.architecture.dtype_bytes", a.DTypeBytes > 0, "must be more than 0 (2 for bf16, 1 for fp8)")
		d.check("model.architecture.tensor_parallel", a.TensorParallel >= 1, "must be at least 1")
	}
	d.checkFrac("model.gpu_memory_utilization", m.GPUMemoryUtilization > 0 && m.GPUMemoryUtilization <= 1, "must be more than 0 and at most 100%%")
	d.check("model.weights_bytes", m.WeightsBytes >= 0, "must not be negative")
	d.check("model.block_size", m.BlockSize >= 1, "must be at least 1")
}

func (d *decoder) validateName(path, name, what string) {
	d.check(path, len(name) <= maxNameLen && nameRE.MatchString(name),
		"%s names become file names: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d characters", what, maxNameLen)
}

func (d *decoder) validateWorkload(p string, w *Workload) {
	if !d.ok(p) {
		return
	}
	if d.require(p, "name", "") {
		d.validateName(join(p, "name"), w.Name, "workload")
	}
	rp, dp := join(p, "requests"), join(p, "duration")
	switch {
	case w.Sessions != nil:
		d.validateSessions(p, w)
	case d.has(rp) && d.has(dp):
		d.errorf(d.keyNode(dp), "\"requests\" and \"duration\" are exclusive in %q; give one", disp(p))
	case !d.has(rp) && !d.has(dp):
		d.errorf(d.nodes[p], "missing \"requests\" or \"duration\" %s; give one", where(p))
	}
	d.check(rp, w.Requests >= 1, "must be at least 1")
	d.check(dp, w.Duration > 0, "must be more than 0s")
	d.check(join(p, "warmup.requests"), w.Warmup.Requests >= 0, "must not be negative")
	d.check(rp, w.Requests <= MaxScheduledRequests, "%d requests is over the bound of %d on one run's schedule (every request's timeline is kept in memory and in the record); split the run or shorten it", w.Requests, MaxScheduledRequests)
	d.check(join(p, "warmup.requests"), w.Warmup.Requests <= MaxScheduledRequests, "%d warm-up requests is over the bound of %d on one run's schedule", w.Warmup.Requests, MaxScheduledRequests)
	if d.require(p, "arrival", "") {
		d.validateArrival(join(p, "arrival"), &w.Arrival)
		// An open loop over a duration sends about duration × rate requests, all of
		// them scheduled before the first is sent.
		if peak := peakRate(&w.Arrival); w.Duration > 0 && peak > 0 && d.ok(dp) && d.ok(join(p, "arrival")) {
			if n := w.Duration.Seconds() * peak; n > MaxScheduledRequests {
				d.check(dp, false, "duration %s × rate %g/s schedules about %.3g requests, over the bound of %d on one run's schedule (every request's timeline is kept in memory and in the record); shorten the duration or lower the rate",
					w.Duration, peak, n, MaxScheduledRequests)
			}
		}
	}
	// A trace replays its offsets once: more requests than offsets would end the run
	// early with fewer requests than the file promises.
	if w.Arrival.Process == ArrivalTrace && d.ok(join(p, "arrival.trace")) {
		d.check(rp, w.Requests <= len(w.Arrival.Offsets), "the trace %s holds %d offsets", w.Arrival.Trace, len(w.Arrival.Offsets))
	}
	// A trace with lengths brings every request's lengths: neither the workload nor a
	// class may set others.
	if w.Arrival.HasLengths() {
		why := fmt.Sprintf("the %s trace gives every request's lengths", w.Arrival.Format)
		for _, k := range []string{"prompt_tokens", "output_tokens", "classes"} {
			if kp := join(p, k); d.has(kp) {
				d.errorf(d.keyNode(kp), "%q does not apply to a trace with lengths: %s", k, why)
				d.bad[kp] = true
			}
		}
		if w.PrefixCache.Mode == PrefixRAG {
			d.errorf(d.keyNode(join(p, "prefix_cache")), "prefix_cache mode %q does not apply to a trace with lengths: the trace gives every request's prompt length", PrefixRAG)
		}
		if w.Arrival.Format == TraceMooncake && w.PrefixCache.Mode == PrefixShared && d.has(join(p, "prefix_cache")) {
			d.errorf(d.keyNode(join(p, "prefix_cache")), "prefix_cache mode %q does not apply to a mooncake trace: its hash_ids decide what is shared", PrefixShared)
		}
	}
	dsp := join(p, "dataset")
	if w.Dataset != nil && d.ok(dsp) {
		d.require(dsp, "format", "expected one of "+quoteList(validDatasetFormats))
		d.require(dsp, "file", "give a local file of prompts")
		if w.Arrival.HasLengths() {
			d.errorf(d.keyNode(dsp), "\"dataset\" does not apply to a trace with lengths: the trace gives every request's lengths")
		}
		if w.PrefixCache.Mode == PrefixRAG {
			d.errorf(d.keyNode(join(p, "prefix_cache")), "prefix_cache mode %q does not apply to a workload with a dataset", PrefixRAG)
		}
		for _, k := range []string{"prompt_tokens", "classes"} {
			if kp := join(p, k); d.has(kp) {
				d.errorf(d.keyNode(kp), "%q does not apply to a workload with a dataset: its prompts come from the dataset", k)
				d.bad[kp] = true
			}
		}
		op := join(p, "output_tokens")
		if sp := join(dsp, "sessions"); w.Dataset.Sessions {
			if w.Dataset.Format != DatasetShareGPT && d.ok(join(dsp, "format")) {
				d.errorf(d.keyNode(sp), "\"sessions\" applies to format %q only: its conversations are replayed turn by turn", DatasetShareGPT)
			}
			if w.Sessions == nil {
				d.errorf(d.keyNode(sp), "dataset \"sessions\": true needs a \"sessions\" block in %q with the count of sessions (and think_time)", disp(p))
			}
		}
		if w.Sessions != nil {
			// validateSessions has judged the keys a session workload takes.
		} else if d.ok(join(dsp, "file")) && len(w.Dataset.Entries) > 0 {
			switch need := w.Dataset.needsOutputTokens(); {
			case need && !d.has(op):
				d.errorf(d.nodes[dsp], "missing \"output_tokens\" %s: some entries of the dataset %s have no output_len", where(p), w.Dataset.File)
			case !need && d.has(op):
				d.errorf(d.keyNode(op), "\"output_tokens\" does not apply: every entry of the dataset %s has its own output length", w.Dataset.File)
			case need:
				d.validateLength(op)
			}
		}
	}
	// Lengths are needed for the workload unless every class brings its own.
	for _, k := range []string{"prompt_tokens", "output_tokens"} {
		if w.Arrival.HasLengths() || w.Dataset != nil || w.Sessions != nil {
			break
		}
		lp := join(p, k)
		if d.has(lp) {
			d.validateLength(lp)
			continue
		}
		if len(w.Classes) == 0 {
			d.require(p, k, "")
			continue
		}
		for j := range w.Classes {
			cp := fmt.Sprintf("%s.classes[%d]", p, j)
			d.require(cp, k, "the workload sets none to inherit")
		}
	}
	d.validatePrefix(join(p, "prefix_cache"), &w.PrefixCache)
	// A session workload refuses every mode but cold (validateSessions): its later turns
	// carry answers that do not exist before the run, so there is nothing to prime.
	if pp := join(p, "prefix_cache"); w.PrefixCache.Mode == PrefixWarm && w.Sessions == nil && w.Arrival.Process == ArrivalClosed && w.Requests == 0 && d.ok(pp) {
		d.fail(pp, d.nodes[pp], "prefix_cache mode %q primes every prompt the run will send, and a closed loop bounded by duration alone sends a number not known in advance: set requests", PrefixWarm)
	}
	d.check(join(p, "timeout"), w.Timeout > 0, "must be more than 0s; a request without a deadline can hang the run")
	d.validateSLO(join(p, "slo"), &w.SLO)
	if sw := w.Sweep; sw != nil {
		sp := join(p, "sweep")
		if d.has(join(sp, "min_rate")) {
			d.check(join(sp, "min_rate"), sw.MinRate > 0 && !math.IsInf(sw.MinRate, 0), "must be more than 0 requests/s")
		}
		if d.has(join(sp, "max_rate")) {
			d.check(join(sp, "max_rate"), sw.MaxRate > 0 && !math.IsInf(sw.MaxRate, 0) && (sw.MinRate == 0 || sw.MaxRate >= sw.MinRate), "must be at least min_rate (requests/s)")
		}
		if d.has(join(sp, "precision")) {
			d.checkFrac(join(sp, "precision"), sw.Precision > 0 && sw.Precision < 1, "must be more than 0%% and less than 100%%")
		}
		if d.has(join(sp, "step_requests")) {
			d.check(join(sp, "step_requests"), sw.StepRequests > 0 && !d.has(join(sp, "step_duration")), "must be more than 0, and not given with step_duration")
		}
		if d.has(join(sp, "step_duration")) {
			d.check(join(sp, "step_duration"), sw.StepDuration > 0, "must be more than 0s")
		}
		d.check(sp, w.Arrival.Process != ArrivalClosed, "a sweep steps an open-loop arrival rate; this workload is closed-loop")
	}
	classNames := map[string]*yaml.Node{}
	for j := range w.Classes {
		cp := fmt.Sprintf("%s.classes[%d]", p, j)
		c := &w.Classes[j]
		if !d.ok(cp) {
			continue
		}
		if d.require(cp, "name", "") {
			np := join(cp, "name")
			d.validateName(np, c.Name, "class")
			if first, dup := classNames[c.Name]; dup && d.ok(np) {
				d.errorf(d.nodes[np], "duplicate class name %q; first used at line %d", c.Name, first.Line)
			} else if d.ok(np) {
				classNames[c.Name] = d.nodes[np]
			}
		}
		if d.require(cp, "weight", "give a relative weight such as 1") {
			d.check(join(cp, "weight"), c.Weight > 0, "must be more than 0")
		}
		for _, k := range []string{"prompt_tokens", "output_tokens"} {
			if lp := join(cp, k); d.has(lp) {
				d.validateLength(lp)
			}
		}
		d.validateSLO(join(cp, "slo"), &c.SLO)
	}
	d.check(join(p, "repeats"), w.Repeats >= 1, "must be at least 1")
	d.check(join(p, "max_dispatch_lag"), w.MaxDispatchLag > 0, "must be more than 0s")
	d.validateTasks(p, w)
}

var (
	openProcesses = []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma}
	// arrivalKeys says which processes each key of arrival applies to.
	arrivalKeys = []struct {
		key   string
		procs []string
	}{
		{"rate", openProcesses},
		{"burstiness", []string{ArrivalGamma}},
		{"profile", openProcesses},
		{"trace", []string{ArrivalTrace}},
		{"format", []string{ArrivalTrace}},
		{"time_scale", []string{ArrivalTrace}},
		{"start", []string{ArrivalTrace}},
		{"window", []string{ArrivalTrace}},
		{"block_tokens", []string{ArrivalTrace}},
		{"users", []string{ArrivalClosed}},
		{"think", []string{ArrivalClosed}},
		{"think_dist", []string{ArrivalClosed}},
	}
)

// MaxScheduledRequests bounds the requests of one run (and of its warm-up): each is
// scheduled before the first is sent and its timeline kept in memory and in the record,
// about 1 KiB apiece. Larger runs are split into shards or into workloads.
const MaxScheduledRequests = 1_000_000

// peakRate is the highest rate an open-loop arrival process reaches (0 for a trace or a
// closed loop, whose length is bounded otherwise).
func peakRate(a *Arrival) float64 {
	switch a.Process {
	case ArrivalConstant, ArrivalPoisson, ArrivalGamma:
	default:
		return 0
	}
	if a.Profile == nil {
		return a.Rate
	}
	r := max(a.Profile.From, a.Profile.To, a.Profile.Peak, a.Profile.Trough)
	for _, s := range a.Profile.Steps {
		r = max(r, s.Rate)
	}
	return r
}

func (d *decoder) validateArrival(p string, a *Arrival) {
	if !d.ok(p) || !d.require(p, "process", "expected one of "+quoteList(validProcesses)) || !d.ok(join(p, "process")) {
		return
	}
	for _, k := range arrivalKeys {
		if !slices.Contains(k.procs, a.Process) {
			d.notFor(p, k.key, "process", a.Process, quoteList(k.procs))
		}
	}
	switch a.Process {
	case ArrivalConstant, ArrivalPoisson, ArrivalGamma:
		rp, pp := join(p, "rate"), join(p, "profile")
		switch {
		case d.has(rp) && d.has(pp):
			d.errorf(d.keyNode(pp), "\"rate\" and \"profile\" are exclusive in %q; the profile sets the rate", disp(p))
		case !d.has(rp) && !d.has(pp):
			d.errorf(d.nodes[p], "missing \"rate\" or \"profile\" in %q for process %q", disp(p), a.Process)
		}
		d.check(rp, a.Rate > 0, "must be more than 0 requests/s")
		if a.Process == ArrivalGamma {
			d.check(join(p, "burstiness"), a.Burstiness > 0, "must be more than 0 (1 is Poisson, below 1 is burstier)")
		}
		if a.Profile != nil {
			d.validateProfile(pp, a.Profile)
		}
	case ArrivalTrace:
		d.require(p, "trace", "give a file of arrival offsets, one duration per line, or a trace with lengths and its \"format\"")
		d.check(join(p, "time_scale"), a.TimeScale > 0, "must be more than 0 (0.5 replays twice as fast)")
		d.check(join(p, "start"), a.Start >= 0, "must not be negative")
		d.check(join(p, "window"), a.Window > 0, "must be more than 0s")
		if a.Format != TraceMooncake && d.ok(join(p, "format")) {
			d.notFor(p, "block_tokens", "format", a.Format, quoteList([]string{TraceMooncake}))
		}
		d.check(join(p, "block_tokens"), a.BlockTokens >= 1, "must be at least 1 (the published Mooncake trace uses 512)")
		if tp := join(p, "trace"); d.ok(tp) && len(a.Offsets) == 0 && (d.has(join(p, "start")) || d.has(join(p, "window"))) {
			cut := "start " + a.Start.String()
			if a.Window > 0 {
				cut += ", window " + a.Window.String()
			}
			d.fail(tp, d.nodes[tp], "%s keeps none of the trace's entries (trace time starts at 0s at its first entry)", cut)
		}
	case ArrivalClosed:
		if d.require(p, "users", "give the number of concurrent users") {
			d.check(join(p, "users"), a.Users >= 1, "must be at least 1")
			d.check(join(p, "users"), a.Users <= MaxUsers, "at most %d: each user is a goroutine and a connection held through the run (shard the run across machines for more)", MaxUsers)
		}
		d.check(join(p, "think"), a.Think >= 0, "must not be negative")
	}
}

func (d *decoder) validateProfile(p string, r *RateProfile) {
	if !d.ok(p) {
		return
	}
	kinds := []string{"steps", "ramp", "diurnal"}
	var given []string
	for _, k := range kinds {
		if d.has(join(p, k)) {
			given = append(given, k)
		}
	}
	switch {
	case len(given) == 0:
		d.errorf(d.nodes[p], "%q needs one of %s", disp(p), quoteList(kinds))
		return
	case len(given) > 1:
		d.errorf(d.keyNode(join(p, given[1])), "%q takes one of %s, not several", disp(p), quoteList(kinds))
		return
	}
	switch r.Kind {
	case "steps":
		sp := join(p, "steps")
		if d.ok(sp) && len(r.Steps) == 0 {
			d.fail(sp, d.nodes[sp], "at least one step is needed")
		}
		anyPositive := false
		for i, s := range r.Steps {
			ip := fmt.Sprintf("%s[%d]", sp, i)
			if !d.ok(ip) {
				continue
			}
			if d.require(ip, "rate", "") {
				d.check(join(ip, "rate"), s.Rate >= 0, "must not be negative")
			}
			anyPositive = anyPositive || s.Rate > 0
			// The last step holds to the end of the run; the others need a length.
			if i < len(r.Steps)-1 {
				d.require(ip, "duration", "every step but the last needs one")
			}
			d.check(join(ip, "duration"), s.Duration > 0, "must be more than 0s")
		}
		if len(r.Steps) > 0 && !anyPositive && d.ok(sp) {
			d.fail(sp, d.nodes[sp], "at least one step needs a rate above 0")
		}
	case "ramp":
		rp := join(p, "ramp")
		for _, k := range []string{"from", "to", "over"} {
			d.require(rp, k, "")
		}
		d.check(join(rp, "from"), r.From >= 0, "must not be negative")
		d.check(join(rp, "to"), r.To >= 0, "must not be negative")
		d.check(join(rp, "to"), r.From > 0 || r.To > 0, "a ramp from 0 to 0 sends nothing")
		d.check(join(rp, "over"), r.Over > 0, "must be more than 0s")
	case "diurnal":
		dp := join(p, "diurnal")
		for _, k := range []string{"trough", "peak", "period"} {
			d.require(dp, k, "")
		}
		d.check(join(dp, "trough"), r.Trough >= 0, "must not be negative")
		d.check(join(dp, "peak"), r.Peak > 0, "must be more than 0")
		if d.ok(join(dp, "trough")) {
			d.check(join(dp, "peak"), r.Peak >= r.Trough, "must be at least the trough (%v)", r.Trough)
		}
		d.check(join(dp, "period"), r.Period > 0, "must be more than 0s")
	}
}

// validateLength checks the length distribution decoded at path p.
func (d *decoder) validateLength(p string) {
	if !d.ok(p) {
		return
	}
	n, l := d.nodes[p], d.lengths[p]
	if n.Kind == yaml.ScalarNode {
		d.check(p, l.Value >= 1, "token counts must be at least 1")
		return
	}
	if !d.require(p, "dist", "expected one of "+quoteList(validDists)) || !d.ok(join(p, "dist")) {
		return
	}
	atLeast1 := func(k string, v int) { d.check(join(p, k), v >= 1, "token counts must be at least 1") }
	switch l.Dist {
	case DistFixed:
		if d.require(p, "value", "") {
			atLeast1("value", l.Value)
		}
	case DistUniform:
		d.require(p, "min", "")
		d.require(p, "max", "")
		atLeast1("min", l.Min)
		if d.ok(join(p, "min")) {
			d.check(join(p, "max"), l.Max >= l.Min, "must be at least min (%d)", l.Min)
		}
	case DistLognormal:
		for _, k := range []string{"p50", "p95", "max"} {
			d.require(p, k, "")
		}
		atLeast1("p50", l.P50)
		atLeast1("min", l.Min)
		if d.ok(join(p, "p50")) {
			d.check(join(p, "p95"), l.P95 > l.P50, "must be more than p50 (%d)", l.P50)
			d.check(join(p, "min"), l.Min <= l.P50, "must be at most p50 (%d)", l.P50)
		}
		if d.ok(join(p, "p95")) {
			d.check(join(p, "max"), l.Max >= l.P95, "must be at least p95 (%d)", l.P95)
		}
	case DistEmpirical:
		vp, fp := join(p, "values"), join(p, "file")
		switch {
		case d.has(vp) && d.has(fp):
			d.errorf(d.keyNode(fp), "\"values\" and \"file\" are exclusive in %q; give one", disp(p))
		case !d.has(vp) && !d.has(fp):
			d.errorf(n, "missing \"values\" or \"file\" in %q for dist %q", disp(p), DistEmpirical)
		}
		d.check(vp, len(l.Values) > 0, "at least one value is needed")
		atLeast1("max", l.Max)
	}
}

func (d *decoder) validatePrefix(p string, pc *PrefixCache) {
	if !d.ok(p) {
		return
	}
	if pc.Mode != PrefixShared && d.ok(join(p, "mode")) {
		d.notFor(p, "tokens", "mode", pc.Mode, quoteList([]string{PrefixShared}))
		d.notFor(p, "groups", "mode", pc.Mode, quoteList([]string{PrefixShared}))
	}
	if pc.Mode != PrefixRAG && d.ok(join(p, "mode")) {
		for _, k := range []string{"documents", "docs_per_request", "doc_tokens", "zipf"} {
			d.notFor(p, k, "mode", pc.Mode, quoteList([]string{PrefixRAG}))
		}
	}
	d.check(join(p, "documents"), pc.Documents >= 1, "must be at least 1")
	d.check(join(p, "docs_per_request"), pc.DocsPerRequest >= 1 && pc.DocsPerRequest <= max(pc.Documents, 1), "must be from 1 to documents (%d): a request draws distinct documents", pc.Documents)
	d.check(join(p, "doc_tokens"), pc.DocTokens >= 1, "must be at least 1")
	d.check(join(p, "zipf"), pc.Zipf >= 0 && pc.Zipf <= 10, "must be from 0 (uniform) to 10")
	if d.nodes[p].Kind == yaml.MappingNode {
		d.require(p, "mode", "expected one of "+quoteList(validPrefixModes))
	}
	d.check(join(p, "tokens"), pc.Tokens >= 1, "must be at least 1")
	d.check(join(p, "groups"), pc.Groups >= 1, "must be at least 1")
}

func (d *decoder) validateSLO(p string, s *SLO) {
	if !d.ok(p) {
		return
	}
	for _, t := range s.Targets {
		key := fmt.Sprintf("p%g", t.Percentile)
		if t.Percentile == 99.9 {
			// Either spelling may be in the file.
			if !d.has(join(p, t.Metric+".p999")) {
				key = "p99.9"
			} else {
				key = "p999"
			}
		}
		d.check(join(p, t.Metric+"."+key), t.Limit > 0, "must be more than 0s")
	}
	d.checkFrac(join(p, "attainment"), s.Attainment > 0 && s.Attainment <= 1, "must be more than 0 and at most 100%%")
}

func (d *decoder) validateGate(g *GateConfig) {
	for _, r := range g.Rules {
		p := join("gate.rules", r.Metric)
		if !d.ok(p) {
			continue // a default rule, or one already reported
		}
		if r.Direction == "" && r.Max == nil && r.Min == nil && !d.bad[join(p, "direction")] {
			d.errorf(d.nodes[p], "rule %q needs a \"direction\" (with a \"tolerance\") or an absolute \"max\" or \"min\"", r.Metric)
		}
		if d.has(join(p, "tolerance")) && !d.has(join(p, "direction")) {
			d.errorf(d.keyNode(join(p, "tolerance")), "\"tolerance\" in rule %q needs a \"direction\" (%s)", r.Metric, quoteList(validDirections))
		}
		d.checkFrac(join(p, "tolerance"), r.Tolerance >= 0 && r.Tolerance <= 1, "must be between 0%% and 100%%")
		for _, lim := range []struct {
			key string
			v   *float64
		}{{"max", r.Max}, {"min", r.Min}} {
			if lim.v == nil {
				continue
			}
			if metricUnit(r.Metric) == unitFraction {
				d.checkFrac(join(p, lim.key), *lim.v >= 0 && *lim.v <= 1, "must be between 0%% and 100%%")
			} else {
				d.check(join(p, lim.key), *lim.v >= 0, "must not be negative")
			}
		}
		if r.Max != nil && r.Min != nil && d.ok(join(p, "max")) && d.ok(join(p, "min")) {
			d.check(join(p, "min"), *r.Min <= *r.Max, "must not be above max")
		}
	}
	d.check("gate.baselines", g.Baselines != "", "must not be empty")
	d.check("gate.max_baseline_age", g.MaxBaselineAge >= 0, "must not be negative")
	d.check("gate.resamples", g.Resamples >= 2000, "must be at least 2000: fewer resamples give intervals too coarse to gate on")
	d.checkFrac("gate.confidence", g.Confidence > 0 && g.Confidence < 1, "must be more than 0 and less than 100%%")
}

func (d *decoder) validateCapacity(c *CapacityConfig) {
	if !d.ok("capacity") {
		return
	}
	if d.require("capacity", "peak_rps", "give the peak arrival rate to size the fleet for") {
		d.check("capacity.peak_rps", c.PeakRPS > 0, "must be more than 0")
	}
	if d.require("capacity", "target_utilization", "give the fraction of measured capacity to plan for, e.g. 60%") {
		d.checkFrac("capacity.target_utilization", c.TargetUtilization > 0 && c.TargetUtilization <= 1, "must be more than 0 and at most 100%%")
	}
	d.checkFrac("capacity.headroom", c.Headroom >= 0 && c.Headroom < 1, "must be at least 0 and less than 100%%")
	d.check("capacity.redundancy", c.Redundancy >= 0, "must not be negative")
	d.check("capacity.gpu_hour_usd", c.GPUHourUSD >= 0, "must not be negative")
}

// URLSecrets are what a URL's user info holds that must never be written: the password,
// and the user:password pair. None for a URL without a password.
func URLSecrets(u string) []string {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil {
		return nil
	}
	pw, ok := pu.User.Password()
	if !ok || pw == "" {
		return nil
	}
	// Both as written and as url.URL.String writes them (escaped).
	return []string{pw, url.QueryEscape(pw), pu.User.Username() + ":" + pw, pu.User.String()}
}
