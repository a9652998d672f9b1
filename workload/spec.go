// Package workload owns the pinned workload file (slogate.yaml): its types, loading with
// file:line:col errors, validation, the canonical workload hash, and the deterministic
// generation of what is sent (arrival schedule, lengths, classes, prompts).
//
// It knows nothing of HTTP: the engine's tokenizer reaches it through the Tokenizer
// interface.
package workload

import (
	"slices"
	"time"
)

// File is a whole slogate.yaml after loading and defaulting.
type File struct {
	// Path is the file the spec was loaded from ("" when built in code). Relative paths
	// inside the file (traces, empirical length files) resolve against its directory.
	Path      string
	Version   int
	Target    Target
	Model     Model
	Workloads []Workload
	Gate      GateConfig
	Capacity  *CapacityConfig // nil when the file has no capacity section
}

// Target says where and how to talk to the engine under test.
type Target struct {
	URL       string     // OpenAI-compatible base URL, e.g. http://127.0.0.1:8000
	API       string     // "chat" or "completions"
	Engine    string     // auto|vllm|sglang|tgi|trtllm|llamacpp|ollama|sim|openai
	APIKeyEnv string     // name of the environment variable holding the API key; "" for none
	Image     string     // engine container image, recorded in the environment (optional)
	Start     *StartSpec // optional: slogate starts the engine and stops it afterwards
	// Swap says how an A/B job puts this engine aside between its blocks and brings it
	// back; nil: as target.start says (a restart per block, or nothing).
	Swap    *SwapSpec
	Metrics MetricsSpec // server-side metric scraping
	// KVUnified declares whether the engine's slots share one KV cache (llama.cpp
	// --kv-unified, llama-server's default without -np) or each own their context (-np
	// N). llama.cpp does not expose it; nil: not declared (a shared cache is assumed and
	// the record says so). It changes the KV capacity read, not what is sent.
	KVUnified *bool
}

// StartSpec is an engine that slogate starts itself.
type StartSpec struct {
	Command      []string
	Env          map[string]string
	ReadyTimeout time.Duration // default 20m
}

// Swap modes: how an A/B job brings an engine up for its block and puts it aside after.
const (
	// SwapSleep uses vLLM's sleep mode (POST /sleep, POST /wake_up, GET /is_sleeping;
	// --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1): both engines stay loaded, the idle
	// one sleeps.
	SwapSleep = "sleep"
	// SwapMemoryRelease uses SGLang's POST /release_memory_occupation and
	// /resume_memory_occupation (--enable-memory-saver).
	SwapMemoryRelease = "memory_release"
	// SwapResident keeps both engines up side by side; the idle one receives no traffic.
	SwapResident = "resident"
	// SwapRestart starts the engine afresh for each of its blocks (target.start).
	SwapRestart = "restart"
)

// SwapModes lists the valid target.swap.mode values.
func SwapModes() []string {
	return []string{SwapSleep, SwapMemoryRelease, SwapResident, SwapRestart}
}

// SwapSpec is target.swap. It changes how engines are brought up between A/B blocks,
// never what is sent, so it stays out of the workload hash.
type SwapSpec struct {
	Mode         string
	Level        int           // vLLM sleep level; 1 (the only one a wake alone undoes)
	SleepTimeout time.Duration // bounds putting the engine aside; default 2m
	WakeTimeout  time.Duration // bounds bringing it back; default 10m
}

// MetricsSpec controls scraping of the engine's Prometheus page during the measured window.
type MetricsSpec struct {
	URL      string        // default: the adapter's metrics path under Target.URL
	Interval time.Duration // default 1s
	Disabled bool
}

// Model pins the model the engine must serve.
type Model struct {
	Name            string // must equal the served model id unless AllowMismatch
	Revision        string // optional; checked where the engine exposes one
	Precision       string // informational: bf16, fp8, ...
	AllowMismatch   bool   // allow a served id or revision that differs from the pin
	KVBytesPerToken int64  // optional; else from the engine or Architecture
	Architecture    *Architecture
	// GPUMemoryUtilization is the fraction of GPU memory the engine may use (vLLM's
	// --gpu-memory-utilization), for deriving KV capacity from GPU memory. Default 0.9.
	GPUMemoryUtilization float64
	WeightsBytes         int64 // model weights in bytes per GPU, for deriving KV capacity
	BlockSize            int   // KV block size in tokens for rounding; default 16
}

// Architecture fields from which KV bytes per token are derived.
type Architecture struct {
	Layers         int
	KVHeads        int
	HeadDim        int
	DTypeBytes     float64 // 2 for bf16/fp16, 1 for fp8
	TensorParallel int     // default 1
	MLA            bool    // multi-head latent attention: one latent instead of K and V
}

// Workload is one entry of workloads[]: a pinned description of what is sent and when.
type Workload struct {
	Name     string
	Seed     int64
	Requests int           // measured requests; exclusive with Duration
	Duration time.Duration // measured window length; exclusive with Requests
	Warmup   Warmup
	Arrival  Arrival
	// PromptTokens and OutputTokens are the length distributions of the default class.
	PromptTokens LengthDist
	OutputTokens LengthDist
	PrefixCache  PrefixCache
	// Dataset, when set, gives every request's prompt text (and output length where the
	// entry has one) from a local file; nil: prompts are cut from the corpus.
	Dataset *Dataset
	Timeout time.Duration // per request; default 120s. A timeout is an error.
	SLO     SLO
	Classes []Class // optional mix; when empty the workload is one implicit class
	// IgnoreEOS forces the output length with ignore_eos (and min_tokens); nil means "where
	// the engine accepts it" (vLLM, SGLang, the simulator).
	IgnoreEOS *bool
	Repeats   int // trials per workload for the gate; default 1
	// MaxDispatchLag, when set (max_dispatch_lag), bounds the client's health: the p99
	// dispatch lag and the p99 lateness of its goroutines, above which the run is
	// client-saturated. 0: derived from the SLO (measure.MaxDispatchLag).
	MaxDispatchLag time.Duration
	// Sweep, when set, asks slogate ci to sweep the workload's arrival rate after its
	// run (slogate sweep with these settings), so that the fleet section prices the
	// capacity its SLO allows rather than the rate the run offered.
	Sweep *SweepSpec
	// Sessions, when set, makes the workload a set of conversations: sessions arrive by
	// the arrival process (open loop), and within a session each turn is sent when the
	// previous one has ended and a think time has passed (closed loop), carrying the
	// whole history. Requests and Duration are unset: Sessions.Count bounds the run.
	Sessions *Sessions
	// Tasks, when set, groups the requests into tasks (workloads[].tasks) for task
	// goodput and the cost per completed task.
	Tasks *Tasks
}

// Tasks groups a workload's requests into tasks: an agent's session, or the requests of
// a trace or dataset that share a task_id.
type Tasks struct {
	By      string // TasksBySession or TasksByTaskID
	Success string // TaskSuccessAll or TaskSuccessLast
	// Retries is how often a session sends a failed turn again before the turn fails.
	Retries int
	// Line and Col are where the tasks key is in the file (0 when built in code).
	Line, Col int
}

// Task grouping and success rules (the record's result.TaskRule has the same names).
const (
	TasksBySession  = "session"
	TasksByTaskID   = "task_id"
	TaskSuccessAll  = "all"
	TaskSuccessLast = "last"
)

// MaxTaskRetries bounds tasks.retries.
const MaxTaskRetries = 10

// Sessions describes multi-turn conversations (workloads[].sessions).
type Sessions struct {
	Count int // measured sessions
	// Turns, UserTokens and OutputTokens are the distributions of the number of turns
	// of a session, the new message's tokens and the answer's tokens of each turn.
	// Unset (Dist "") when the dataset gives them (Dataset.Sessions).
	Turns, UserTokens, OutputTokens LengthDist
	// ThinkTime is the pause between the end of a turn and the sending of the next.
	ThinkTime ThinkTime
	// SystemPromptTokens is the length of the system message that opens every session
	// (its own text per session); 0: none.
	SystemPromptTokens int
	// Line and Col are where the sessions key is in the file (0 when built in code),
	// so that a session too long for the engine's context is reported there.
	Line, Col int
}

// Think-time distribution kinds (ThinkTime.Dist); fixed, uniform and lognormal are the
// length distributions' kinds.
const ThinkExponential = "exponential"

// ThinkTime is a distribution of durations, with the keys of a length distribution.
type ThinkTime struct {
	Dist     string        // fixed|uniform|lognormal|exponential; "" is fixed
	Value    time.Duration // fixed
	Min, Max time.Duration // uniform bounds; lognormal clip (Max 0: none)
	P50, P95 time.Duration // lognormal
	Mean     time.Duration // exponential
}

// SharesPrefixes reports whether requests of w share prompt prefixes by design: a shared
// prefix, a trace whose entries share blocks, or the turns of a session. Its prefix-cache hits are then the
// workload's, not a stale cache's.
func (w *Workload) SharesPrefixes() bool {
	if w.PrefixCache.Mode == PrefixShared || w.PrefixCache.Mode == PrefixRAG {
		return true
	}
	if w.Sessions != nil {
		// Each turn's prompt starts with the previous turn's prompt and answer.
		return true
	}
	if w.Arrival.HasLengths() {
		for i := range w.Arrival.Records {
			if len(w.Arrival.Records[i].Blocks) > 0 {
				return true
			}
		}
	}
	return false
}

// Warmup requests are sent before the measured window and excluded from its metrics.
type Warmup struct {
	Requests int
}

// Arrival processes.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
	ArrivalTrace    = "trace"
	ArrivalClosed   = "closed"
)

// Arrival says when requests are sent.
type Arrival struct {
	Process    string  // constant|poisson|gamma|trace|closed
	Rate       float64 // requests/s for constant, poisson, gamma (the mean rate)
	Burstiness float64 // gamma shape k: coefficient of variation of gaps = 1/sqrt(k); default 1
	Profile    *RateProfile
	Trace      string          // trace: file of arrival offsets, relative to the config file
	Offsets    []time.Duration // trace: loaded offsets, ascending (after Start, Window, TimeScale)
	// Format is the trace file's format: offsets (default: one duration per line),
	// mooncake (JSONL with lengths and hash_ids), azure or burstgpt (CSV with lengths).
	Format string
	// TimeScale multiplies the trace's gaps: 0.5 replays twice as fast. Default 1.
	TimeScale float64
	// Start skips the trace's first Start of trace time (from its first entry); Window,
	// when > 0, keeps only the entries in [Start, Start+Window). Both are trace time,
	// before TimeScale.
	Start, Window time.Duration
	// BlockTokens is the prompt length of one mooncake hash id; default 512.
	BlockTokens int
	// TraceSHA256 is the hex SHA-256 of the trace file (formats with lengths); it pins
	// the trace in the workload hash.
	TraceSHA256 string
	// Records are the loaded entries of a trace with lengths, one per offset.
	Records   []TraceRecord
	Users     int           // closed: concurrent users, at most MaxUsers
	Think     time.Duration // closed: think time between a response and the next request
	ThinkDist string        // closed: "fixed" (default) or "exponential" (mean Think)
}

// Dataset formats (Dataset.Format).
const (
	DatasetShareGPT = "sharegpt" // JSON array of {"conversations": [{"from", "value"}, ...]}
	DatasetPrompts  = "prompts"  // JSONL of {"prompt": text, "output_len": n (optional)}
)

// Dataset is a local file of prompts, pinned by its SHA-256.
type Dataset struct {
	Format  string
	File    string // relative to the config file
	SHA256  string // hex SHA-256 of the file
	Entries []DatasetEntry
	// Sessions replays each ShareGPT conversation as a session: its human turns are the
	// user messages, its answers' lengths the output lengths (Entries[k].Turns).
	Sessions bool
}

// DatasetEntry is one prompt of a dataset.
type DatasetEntry struct {
	Line   int    // line of the file where the entry starts
	Prompt string // the user's message
	// Reply is the first answer of a ShareGPT conversation, whose length in tokens is the
	// output length; "" for prompts.
	Reply string
	// OutputLen is the entry's output_len; 0: none (the reply's length, or the
	// workload's output_tokens).
	OutputLen int
	// Turns are the (human, answer) pairs of a ShareGPT conversation, for
	// Dataset.Sessions: the first is (Prompt, Reply).
	Turns []DatasetTurn
	// Task is the entry's task_id, "" for none.
	Task string
}

// DatasetTurn is one exchange of a conversation: the user's message and the answer whose
// length is the turn's output length.
type DatasetTurn struct {
	User, Reply string
}

// Trace formats (Arrival.Format).
const (
	TraceOffsets  = "offsets"
	TraceMooncake = "mooncake"
	TraceAzure    = "azure"
	TraceBurstGPT = "burstgpt"
)

// TraceRecord is one request of a trace with lengths.
type TraceRecord struct {
	Line   int    // line of the trace file, for messages
	Input  int    // prompt tokens
	Output int    // output tokens
	Task   string // the task id, "" for none
	// Blocks are mooncake hash ids: block j of the prompt (BlockTokens tokens) is the
	// same text in every request whose j-th id is the same.
	Blocks []int64
}

// HasLengths reports whether the arrival is a trace that brings each request's lengths.
func (a *Arrival) HasLengths() bool {
	return a.Process == ArrivalTrace && a.Format != "" && a.Format != TraceOffsets
}

// RateProfile makes the open-loop rate vary over time. Offsets are from the start of the
// measured window.
type RateProfile struct {
	Kind   string     // steps|ramp|diurnal
	Steps  []RateStep // steps: each held for its Duration; the last one holds to the end
	From   float64    // ramp: start rate
	To     float64    // ramp: end rate
	Over   time.Duration
	Trough float64 // diurnal: minimum rate
	Peak   float64 // diurnal: maximum rate
	Period time.Duration
}

// RateStep is one step of a stepped rate profile.
type RateStep struct {
	Rate     float64
	Duration time.Duration
}

// Length distribution kinds.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistLognormal = "lognormal"
	DistEmpirical = "empirical"
)

// LengthDist is a distribution of token counts.
type LengthDist struct {
	Dist   string // fixed|uniform|lognormal|empirical
	Value  int    // fixed
	Min    int    // uniform (inclusive); lognormal lower clip (default 1)
	Max    int    // uniform (inclusive); lognormal and empirical upper clip
	P50    int    // lognormal median
	P95    int    // lognormal 95th percentile
	Values []int  // empirical: inline list, or loaded from File
	File   string // empirical: one integer per line, relative to the config file
}

// PrefixCache modes.
const (
	PrefixCold   = "cold"   // a unique salt starts every prompt: no cross-request cache hits
	PrefixShared = "shared" // groups of requests share a common prefix of Tokens tokens
	// PrefixRAG: each request opens with k documents drawn from a pool of D shared ones
	// with Zipf-like popularity.
	PrefixRAG = "rag"
	// PrefixWarm: prompts as cold ones (unique to the run), and before the measured
	// window a priming pass sends every one of them once, asking for one token, so that
	// the window meets a cache that holds what fits of them.
	PrefixWarm = "warm"
)

// PrefixCache says how prompts interact with the engine's prefix cache.
type PrefixCache struct {
	Mode   string // cold (default) | shared | rag | warm
	Tokens int    // shared: length of the common prefix in tokens
	Groups int    // shared: number of distinct prefixes; default 1
	// rag: Documents in the pool (default 16), DocsPerRequest drawn for each request
	// (default 2), DocTokens in each (default 256), and the Zipf exponent of their
	// popularity, document j (from 0) drawn with weight 1/(j+1)^Zipf (default 1; 0 is
	// uniform).
	Documents, DocsPerRequest, DocTokens int
	Zipf                                 float64
	// Reset asks for the engine's prefix cache to be emptied before the warm-up (vLLM
	// POST /reset_prefix_cache, SGLang POST /flush_cache); the record says whether it was
	// done. It changes the conditions, not what is sent: it is not in the workload hash.
	Reset bool
}

// SLO is a set of latency targets and the attainment target.
//
// Each target "metric: {pNN: limit}" means two things: a request meets it when its own
// value is at or under the limit (TTFT, TPOT, E2E: the request's value; ITL: the request's
// own pNN gap), and the run meets it when the pNN over requests is at or under the limit.
type SLO struct {
	Targets    []SLOTarget // sorted by metric, then percentile
	Attainment float64     // fraction of measured requests that must meet every target; default 0.99
	// AttainmentSet says the file set Attainment (else it is the default). A sweep judges
	// a step by the declared attainment where there is one, else by each target's own
	// percentile (docs/workload.md).
	AttainmentSet bool
}

// SLOTarget is one latency limit.
type SLOTarget struct {
	Metric     string  // ttft|tpot|itl|e2e
	Percentile float64 // 50, 90, 95, 99, 99.9
	Limit      time.Duration
}

// Class is one member of a workload mix, chosen per request with probability
// Weight / sum of weights. Unset lengths and SLO targets inherit the workload's.
type Class struct {
	Name         string
	Weight       float64
	PromptTokens LengthDist
	OutputTokens LengthDist
	SLO          SLO
}

// GateConfig is the gate section. The gate package interprets it.
type GateConfig struct {
	Baselines       string        // directory of baselines; default "baselines"
	Rules           []Rule        // in file order; defaults applied when the section is absent
	Drift           []DriftPolicy // in file order
	MissingBaseline string        // fail (default) | allow (warn: the older spelling of allow)
	MaxBaselineAge  time.Duration // audit flags older baselines; 0 = no limit
	Resamples       int           // bootstrap resamples; default 2000
	Confidence      float64       // interval confidence; default 0.95
	Seed            int64         // bootstrap seed; default 1
}

// Rule is one gated metric.
type Rule struct {
	Metric    string   // goodput, itl_p99, ttft_p95, kv_concurrency, error_rate, ...
	Direction string   // higher|lower ("" for absolute-only rules)
	Tolerance float64  // relative, as a fraction (0.05 for 5%); 0 = none
	Max       *float64 // absolute upper limit, in the metric's unit (fraction for rates)
	Min       *float64 // absolute lower limit
}

// DriftPolicy is the policy for one environment field.
type DriftPolicy struct {
	Field  string // e.g. engine.version
	Policy string // expected|warn|fail|ignore
}

// CapacityConfig is the capacity section: the traffic profile for the fleet worksheet.
type CapacityConfig struct {
	PeakRPS           float64
	TargetUtilization float64
	Headroom          float64
	Redundancy        int
	GPUHourUSD        float64
}

// SweepSpec is a workload's sweep settings (the flags of slogate sweep); zero fields take
// slogate sweep's defaults.
type SweepSpec struct {
	MinRate, MaxRate float64
	Precision        float64
	StepRequests     int
	StepDuration     time.Duration
}

// Typical is a length the distribution's draws sit near: a fixed value, the middle of a
// uniform range, a lognormal's median, the median of empirical values; 0 when unknown.
func (d LengthDist) Typical() int {
	switch d.Dist {
	case "fixed":
		return d.Value
	case "uniform":
		return (d.Min + d.Max) / 2
	case "lognormal":
		return d.P50
	case "empirical":
		if len(d.Values) == 0 {
			return 0
		}
		v := slices.Clone(d.Values)
		slices.Sort(v)
		return v[len(v)/2]
	}
	return 0
}

// MaxUsers is the most concurrent users a closed loop may have: each holds a goroutine
// and a connection for the whole run, and a count in the millions exhausts the machine's
// memory before the first request. It is far more than one engine serves at once; a
// larger load is sharded across machines.
const MaxUsers = 10000
