// Package result owns the run record (schema slogate.run/v1): its JSON form, the metric
// computation from per-request timelines (HdrHistogram percentiles), atomic writing, and
// the merging of shards.
//
// It knows nothing of HTTP or GitHub.
package result

import (
	"encoding/json"
	"fmt"
	"time"
)

// Schema identifies a run record.
const Schema = "slogate.run/v1"

// Record is one run of one workload: what was sent, what happened, and its summary.
type Record struct {
	Schema       string `json:"schema"`
	Workload     string `json:"workload"`
	WorkloadHash string `json:"workload_hash"`
	// WorkloadForm is what the hash was taken of (workload.Form): when a baseline's
	// hash differs, the gate names the keys that changed. Absent in older records and
	// imported ones.
	WorkloadForm json.RawMessage `json:"workload_form,omitempty"`
	Config       string          `json:"config,omitempty"` // path of the workload file
	Target       string          `json:"target,omitempty"` // base URL
	API          string          `json:"api,omitempty"`
	Model        string          `json:"model,omitempty"`
	Mode         string          `json:"mode"` // open | closed
	Start        time.Time       `json:"start"`
	ToolVersion  string          `json:"tool_version"`
	Trial        int             `json:"trial,omitempty"` // 1-based when repeats > 1
	Shard        string          `json:"shard,omitempty"` // "i/n" when sharded
	// AB places the run in an A/B job (slogate ab); nil otherwise.
	AB *ABBlock `json:"ab,omitempty"`
	// RepeatStop, on the last trial of a candidate's sequential repeats (run
	// --min-repeats), says how many ran and why they stopped; nil otherwise.
	RepeatStop *RepeatStop `json:"repeat_stop,omitempty"`
	// RunID is unique to this run. The salt that opens every prompt depends on it, so a
	// cold run finds nothing of an earlier run in the engine's prefix cache; it is kept
	// out of the workload hash, so reruns stay comparable.
	RunID string `json:"run_id,omitempty"`
	// Start is how a run anchored to a common start time (--start-at) opened its window;
	// in a merged record, the worst shard's lateness.
	Sync *StartSync `json:"start_sync,omitempty"`
	// Shards are the shards a merged record was made from, each with its environment.
	Shards []ShardInfo `json:"shards,omitempty"`
	// PrefixCache says how the run's prompts meet the engine's prefix cache: the
	// workload's mode, and whether the cache was reset before the run.
	PrefixCache *PrefixCacheRun `json:"prefix_cache,omitempty"`
	// Incomplete is set when the run was interrupted or the engine failed; what was
	// measured up to then is kept.
	Incomplete       bool   `json:"incomplete,omitempty"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`

	// Window is the measured window in microseconds from the record's epoch.
	Window Window `json:"window"`
	// Calibration: how prompt lengths were hit ("tokenize" or "estimate").
	Calibration Calibration `json:"calibration"`
	// SLO targets the requests were judged against.
	SLO []SLOTarget `json:"slo,omitempty"`
	// Tasks is how the requests form tasks (workloads[].tasks); nil: no tasks.
	Tasks *TaskRule `json:"tasks,omitempty"`
	// ClassSLO holds, for each class of the mix whose SLO differs from the workload's,
	// the targets its requests were judged against (inherited targets included).
	ClassSLO map[string][]SLOTarget `json:"class_slo,omitempty"`
	// SLOAttainmentTarget is the fraction of requests that must meet every SLO.
	SLOAttainmentTarget float64 `json:"slo_attainment_target,omitempty"`
	// SLOAttainmentDeclared: the workload set the attainment target (else it is the
	// default, 0.99); a sweep step is judged by it only then (StepOf).
	SLOAttainmentDeclared bool `json:"slo_attainment_declared,omitempty"`
	// MaxDispatchLagMS is the dispatch-lag p99 bound the run was held to (the summary's
	// client_saturated flag); kept so that merging shards can recompute the flag.
	MaxDispatchLagMS float64 `json:"max_dispatch_lag_ms,omitempty"`
	// MaxReaderLagMS bounds summary.reader_lag_ms.p99 (0: not judged, no SLO to derive
	// it from).
	MaxReaderLagMS float64 `json:"max_reader_lag_ms,omitempty"`

	// Hardware is the normalized hardware id baselines are filed under
	// (baselines/<workload>/<hardware>.json): e.g. h100-80gb-hbm3-x1, cpu, or sim for the
	// simulated engine, whose speed does not depend on the machine's GPU.
	Hardware string `json:"hardware,omitempty"`
	// Engine is what the engine said about itself (cleaned of control characters).
	Engine *EngineInfo `json:"engine,omitempty"`

	// Environment holds flat, stable keys for drift: engine.name, engine.version,
	// model.id, gpu.name, gpu.driver, gpu.cuda, tool.version, ...
	Environment map[string]string `json:"environment,omitempty"`

	Summary Summary `json:"summary"`
	// Warmup summarizes the warm-up phase, excluded from Summary.
	Warmup *WarmupSummary `json:"warmup,omitempty"`
	// Startup is the start of the engine this run was measured on, when slogate started
	// it (target.start); nil otherwise.
	Startup *Startup `json:"startup,omitempty"`
	// Priming summarizes the priming pass of a warm run (prefix_cache: warm), sent after
	// the warm-up and before the window, excluded from Summary; nil for other modes.
	Priming *PrimingSummary `json:"priming,omitempty"`
	// Requests are the measured requests, in index order.
	Requests []Request `json:"requests"`
	// Series are time series sampled during the run (client in-flight count, and the
	// engine's gauges where it exposes them).
	Series Series `json:"series,omitempty"`
	// Source is set on a record imported from another benchmark tool (slogate import):
	// the tool, the file and what it could not give. Nil on a record slogate measured.
	Source *Source `json:"source,omitempty"`
	// Notes are facts a reader must know (no usage from the server, closed loop hides
	// queueing, no server metrics, ...).
	Notes []string `json:"notes,omitempty"`
}

// StartSync is how a run's window opened against the start time the shards of a run
// agreed on. Lateness is measured against this machine's wall clock: clocks that
// disagree between machines (no NTP) are not seen here.
type StartSync struct {
	StartAt  time.Time `json:"start_at"`
	OpenedAt time.Time `json:"opened_at"` // this machine's wall clock when the window opened
	LateMS   float64   `json:"late_ms"`   // how late the window opened; worst shard when merged
	// MaxLateMS is the bound the gate holds LateMS to (0: none).
	MaxLateMS float64 `json:"max_late_ms,omitempty"`
	// WorstShard names the latest shard of a merged record.
	WorstShard string `json:"worst_shard,omitempty"`
}

// ShardInfo is one shard of a merged record.
type ShardInfo struct {
	Shard       string            `json:"shard"`
	Start       time.Time         `json:"start"`
	Requests    int               `json:"requests"`
	Hardware    string            `json:"hardware,omitempty"`
	ToolVersion string            `json:"tool_version,omitempty"`
	Sync        *StartSync        `json:"start_sync,omitempty"`
	Scraped     bool              `json:"scraped_engine,omitempty"` // this shard scraped the engine's metrics
	Environment map[string]string `json:"environment,omitempty"`
	Incomplete  string            `json:"incomplete,omitempty"`
}

// Window is the measured window, in microseconds from the record's epoch.
type Window struct {
	StartUS int64 `json:"start_us"`
	EndUS   int64 `json:"end_us"`
}

// Calibration mirrors workload.Calibration in the record.
type Calibration struct {
	Method        string  `json:"method"`
	CharsPerToken float64 `json:"chars_per_token"`
}

// SLOTarget is one latency SLO as recorded.
type SLOTarget struct {
	Metric     string  `json:"metric"` // ttft|tpot|itl|e2e
	Percentile float64 `json:"percentile"`
	LimitMS    float64 `json:"limit_ms"`
}

// Request is one request's timeline. Times are microseconds from the record's epoch;
// First and Last are 0 when no content arrived.
type Request struct {
	I     int    `json:"i"`
	Class string `json:"class,omitempty"`
	// Session and Turn place a turn of a multi-turn session (both 1-based; 0 for a
	// request that stands alone). HistoryTokens is the prompt tokens the turn carried
	// from earlier turns (system prompt, earlier user messages and answers), as sent.
	Session       int `json:"session,omitempty"`
	Turn          int `json:"turn,omitempty"`
	HistoryTokens int `json:"history_tokens,omitempty"`
	// Task is the task id the request's trace or dataset entry carried ("" for none);
	// Attempt numbers the sends of one failed call again (0 for the first send), the
	// task's retries (Record.Tasks).
	Task         string `json:"task,omitempty"`
	Attempt      int    `json:"attempt,omitempty"`
	SchedUS      int64  `json:"sched_us"`
	SendUS       int64  `json:"send_us"`
	FirstUS      int64  `json:"first_us,omitempty"`
	LastUS       int64  `json:"last_us,omitempty"`
	EndUS        int64  `json:"end_us"`
	PromptTarget int    `json:"prompt_target"`
	OutputTarget int    `json:"output_target"`
	PromptTokens int    `json:"prompt_tokens"`
	OutputTokens int    `json:"output_tokens"`
	NoUsage      bool   `json:"no_usage,omitempty"` // OutputTokens is the chunk count
	// CachedTokens is the prompt tokens the engine's prefix cache served when it first
	// scheduled the request (usage.prompt_tokens_details.cached_tokens); nil when the
	// engine did not say. A re-admission after preemption does not change it.
	CachedTokens *int `json:"cached_tokens,omitempty"`
	// UsageFlag says why the server's usage was not believed ("" when it was): an output
	// count above max_tokens + slack or below the content chunks (OutputTokens is then
	// the chunk count), or an impossible prompt count (PromptTokens is then 0).
	UsageFlag string `json:"usage_flag,omitempty"`
	// DialUS is the time spent dialing a connection inside this request (its latency
	// includes it), rounded up; 0 when it used a connection reused or dialed ahead.
	DialUS int64 `json:"dial_us,omitempty"`
	// Retries counts resends on a fresh connection after the server had closed the one
	// first used before any byte of the request was written (never read: not an error).
	Retries int     `json:"retries,omitempty"`
	Chunks  int     `json:"chunks"`
	ITLUS   []int64 `json:"itl_us,omitempty"` // gaps between content chunks
	// ChunkTokens are the tokens each content chunk carried, as the server said (a usage
	// in every chunk); absent when it did not, or when every chunk carried one.
	ChunkTokens []int  `json:"chunk_tokens,omitempty"`
	Finish      string `json:"finish,omitempty"`
	Error       string `json:"error,omitempty"` // reason; "" on success
	ErrorDetail string `json:"error_detail,omitempty"`
	SLOMet      bool   `json:"slo_met"`
}

// Percentiles of a latency metric, in milliseconds.
type Percentiles struct {
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
	Count int64   `json:"count"`
	// Clamped counts values outside the histogram's range (below 0 or above one hour),
	// recorded at the nearest end of it rather than dropped.
	Clamped int64 `json:"clamped,omitempty"`
}

// Summary holds the metrics the gate compares. Definitions are DESIGN §4.
type Summary struct {
	TTFTms Percentiles `json:"ttft_ms"`
	// TTFTSendms is first − send (TTFT without client-side dispatch lag).
	TTFTSendms Percentiles `json:"ttft_send_ms"`
	TPOTms     Percentiles `json:"tpot_ms"`
	// ITLms is the chunk ITL: every gap between consecutive content chunks.
	ITLms Percentiles `json:"itl_ms"`
	// ITLTokenms is the per-token ITL: a gap followed by a chunk of k tokens counts as k
	// intervals of gap / k (see TokensPerChunk for where k came from). Equal to ITLms
	// when every chunk carried one token.
	ITLTokenms Percentiles `json:"itl_token_ms"`
	// TokensPerChunk says how many tokens content chunks carried; absent when every
	// successful request had one token per chunk.
	TokensPerChunk *TokensPerChunk `json:"tokens_per_chunk,omitempty"`
	E2Ems          Percentiles     `json:"e2e_ms"`

	Requests      int            `json:"requests"`
	Completed     int            `json:"completed"`
	Errors        map[string]int `json:"errors"`
	ErrorRate     float64        `json:"error_rate"`
	SLOAttainment float64        `json:"slo_attainment"`
	// GoodputRPS is good requests (succeeded and met every SLO) per second of the span
	// of scheduled arrivals (ArrivalSpanS): what the engine served well of what was
	// offered, independent of how long the last requests took to drain. Where arrival
	// times are unknown (ArrivalSpanS 0: an imported result) it is GoodputWindowRPS.
	GoodputRPS float64 `json:"goodput_rps"`
	// GoodputWindowRPS is good requests per second of the measured window (DurationS,
	// which includes the drain): the "request goodput" vllm bench serve prints. A
	// slower engine gets a longer window, so it is shown, not gated by default.
	GoodputWindowRPS float64 `json:"goodput_window_rps"`
	// ArrivalSpanS is the span of scheduled arrivals: last − first scheduled arrival of
	// the measured requests, × n/(n − 1), so that n arrivals at a constant rate λ span
	// n/λ. 0 with fewer than two requests or no arrival times.
	ArrivalSpanS   float64 `json:"arrival_span_s"`
	ThroughputRPS  float64 `json:"throughput_rps"`
	OutputTokensPS float64 `json:"output_tokens_per_s"`
	// Tasks is the run's tasks, when its workload groups requests into tasks.
	Tasks *TaskSummary `json:"tasks,omitempty"`

	DispatchLagms   LagSummary `json:"dispatch_lag_ms"`
	ClientSaturated bool       `json:"client_saturated"`
	// ReaderLagms is how late the client's goroutines ran when they could over the
	// window (the Go runtime's scheduling latency), and ReaderSaturated whether its p99
	// passed the record's max_reader_lag_ms (then ClientSaturated is set too): a reader
	// that wakes late stretches ITL however well sending keeps up.
	ReaderLagms     *LagSummary `json:"reader_lag_ms,omitempty"`
	ReaderSaturated bool        `json:"reader_saturated,omitempty"`
	DurationS       float64     `json:"duration_s"`
	InFlight        InFlight    `json:"in_flight"`

	// Lengths compares the achieved token counts (from usage) with the targets.
	Lengths Lengths `json:"lengths"`
	// EarlyStops counts successful requests that produced fewer tokens than asked (by
	// the server's usage; requests without usage, or with a flagged one, are not counted).
	EarlyStops int `json:"early_stops"`
	// UsageFlagged counts the measured requests whose usage was flagged (Request.UsageFlag).
	UsageFlagged int `json:"usage_flagged,omitempty"`
	// SLOChecks are the run-level checks: pNN over requests against each limit.
	SLOChecks []SLOCheck `json:"slo_checks,omitempty"`

	// Server-side metrics scraped during the measured window; absent (nil) when the engine
	// exposes none, never zero-filled.
	QueueDepth         *Gauge   `json:"queue_depth,omitempty"`
	KVUsage            *Gauge   `json:"kv_usage,omitempty"`
	Running            *Gauge   `json:"running,omitempty"`
	Preemptions        *float64 `json:"preemptions,omitempty"`           // counter delta over the window
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"` // 0..1; PrefixCache.HitRate
	// PrefixCache is the engine's prefix-cache figures over the measured window; absent
	// when the engine reports none.
	PrefixCache *PrefixCacheStats `json:"prefix_cache,omitempty"`
	// EngineTokens are the engine's own token counters over the window, where it exports
	// them (llama.cpp): the prompt work it really did, beside what was sent.
	EngineTokens *EngineTokens `json:"engine_tokens,omitempty"`

	// Connections says how requests got their connections; absent when every one was
	// reused or dialed ahead without a retry.
	Connections *Connections `json:"connections,omitempty"`

	// KVConcurrency is the KV-limited concurrency for this workload's request sizes.
	KVConcurrency *KVConcurrency `json:"kv_concurrency,omitempty"`
	// LittleLaw checks mean in flight against arrival rate × mean E2E.
	LittleLaw *LittleLaw `json:"little_law,omitempty"`

	// ByClass breaks the run down by class, when its requests carry more than one
	// (breakdown.go); ByTurn by turn index and ByHistory by history length, when they are
	// turns of sessions. Absent otherwise.
	ByClass   []ClassStats   `json:"by_class,omitempty"`
	ByTurn    []TurnStats    `json:"by_turn,omitempty"`
	ByHistory []HistoryStats `json:"by_history,omitempty"`
}

// EngineTokens are deltas of the engine's token counters from the scrape before the first
// measured request to the scrape after the last one ended; nil fields were not exported.
// PromptProcessed + PromptCached is every prompt token the engine received (it equals the
// sum of the requests' prompt tokens when nothing else used the engine); PromptCached /
// (PromptProcessed + PromptCached) is the prefix-cache hit rate.
type EngineTokens struct {
	PromptProcessed *float64 `json:"prompt_processed,omitempty"` // computed; cache hits excluded
	PromptCached    *float64 `json:"prompt_cached,omitempty"`    // served from the prefix cache
	Output          *float64 `json:"output,omitempty"`           // generated
}

// Prefix-cache modes of a run (PrefixCacheRun.Mode), as the workload names them.
const (
	PrefixCold   = "cold"
	PrefixShared = "shared"
	// PrefixWarm: every measured prompt was sent once (with max_tokens 1) before the
	// window, so the window meets the cache those prompts left (Record.Priming).
	PrefixWarm = "warm"
)

// ColdHitRateMax is the prefix-cache hit rate above which a cold run is not judged: its
// prompts are unique to the run, so what hits is an earlier run's state or a shared
// opening (a chat template, the salt's first characters) that token-level caches such
// as llama.cpp's reuse. 5% leaves room for the latter on short prompts and none for a
// rerun that found its prompts cached (the defect this guards against read 96%).
const ColdHitRateMax = 0.05

// ColdOpeningTokens is how many tokens of each cold prompt a token-level cache (KV block
// size 1) may serve on top of ColdHitRateMax when the opening every prompt shares was not
// measured (PrefixCacheRun.Opening; measured, it is excluded exactly instead). Against
// llama.cpp serving stories260K, two cold runs of 100 requests each saw 3.06 and 3.14
// tokens a request from the cache (306 and 314 of about 6,265), the first run on a fresh
// server.
const ColdOpeningTokens = 4

// PrefixCacheRun is how a run met the engine's prefix cache.
type PrefixCacheRun struct {
	Mode  string      `json:"mode"`            // cold | shared | warm
	Reset *CacheReset `json:"reset,omitempty"` // nil: no reset asked for
	// Opening is what every prompt of a cold run shares on this engine; nil when the
	// run is not cold.
	Opening *Opening `json:"opening,omitempty"`
}

// Ways an opening was measured (Opening.Method).
const (
	// OpeningTokenize: three of the run's prompts rendered as the engine serves them
	// (its tokenizer and, for chat, its chat template), their common token prefix.
	OpeningTokenize = "tokenize"
	// OpeningNone: not measured (Opening.Detail says why); the cold check then allows
	// ColdOpeningTokens a request on a token-level cache.
	OpeningNone = "none"
)

// Opening is the prompt opening every request of a cold run shares on this engine: what
// the prompts render to before their salt, such as a chat template's header and the BOS
// token. The engine's prefix cache serves it to every request after the first however
// cold the run, so the cold check does not count it (AttributePrefixHits).
type Opening struct {
	Method string `json:"method"` // tokenize | none
	// Common is how many leading tokens the rendered prompts share.
	Common int `json:"common_tokens"`
	// BlockSize is the engine's KV block size (1 when it caches single tokens or did not
	// say), and Tokens is Common in whole blocks: what a prefix cache can serve, since a
	// block is cached only when full.
	BlockSize int    `json:"block_size"`
	Tokens    int    `json:"tokens"`
	Detail    string `json:"detail,omitempty"`
}

// CacheReset records the prefix-cache reset asked for before the warm-up (the workload's
// prefix_cache.reset).
type CacheReset struct {
	Done     bool   `json:"done"`
	Endpoint string `json:"endpoint,omitempty"` // e.g. POST /reset_prefix_cache
	// Detail says why it was not done (no such endpoint, the engine refused).
	Detail string `json:"detail,omitempty"`
}

// PrefixCacheStats are the engine's prefix-cache figures over the measured window.
// Queries and Hits are tokens (vLLM's counters; a per-response cached-token count such
// as llama.cpp's timings.cache_n against the prompt tokens), as deltas over the window;
// engines that export only a rate (SGLang's cache_hit_rate) leave them 0 and set
// HitRate. Source says where the figures came from.
type PrefixCacheStats struct {
	Queries float64 `json:"queries,omitempty"`
	Hits    float64 `json:"hits,omitempty"`
	HitRate float64 `json:"hit_rate"` // hits / queries, 0..1
	Source  string  `json:"source"`
	// Own is the part of Hits that the run's own requests computed inside the window,
	// and Foreign the rest: what a cache warm from before the window could have given,
	// the only part a cold run is judged by (AttributePrefixHits). Nil when the hits
	// were not attributed (no token counts, or not a cold run).
	Own     *OwnHits `json:"own,omitempty"`
	Foreign *float64 `json:"foreign_hits,omitempty"`
	// ForeignRate is Foreign over the prompt tokens the measured requests first queried
	// (their prompt tokens; the engine's queries where those are unknown).
	ForeignRate *float64 `json:"foreign_rate,omitempty"`
}

// OwnHits are prefix-cache hits on KV blocks the run itself computed.
type OwnHits struct {
	Hits float64 `json:"hits"` // Readmitted + Declared
	// Readmitted: hits of sequences re-admitted after preemption on their own blocks,
	// which vLLM before 0.11 (pull request 25787) counts in its prefix-cache counters.
	Readmitted float64 `json:"readmitted"`
	// Declared: hits a request's first admission took from prompt blocks the workload
	// declares shared with an earlier request of the run (a session's history).
	Declared float64 `json:"declared"`
	// Opening: hits a request's first admission took from the opening every prompt of
	// the run shares (PrefixCacheRun.Opening), beyond its declared history.
	Opening float64 `json:"opening"`
	// Method says how the hits were split: "per-request" from each request's
	// cached_tokens at its first scheduling; "bound" from the preemptions and the
	// declared history alone, taking as own the most they could explain (the engine
	// gave no per-request counts: vLLM's --enable-prompt-tokens-details gives them).
	Method string `json:"method"`
}

// WarmCold says why a cold run cannot be judged because the engine's prefix cache served
// more than ColdHitRateMax of its prompt tokens; "" when it can (or it is not cold, or
// the engine reported nothing).
func (r *Record) WarmCold() string {
	if r.PrefixCache == nil || r.PrefixCache.Mode != PrefixCold || r.Summary.PrefixCache == nil {
		return ""
	}
	pc := r.Summary.PrefixCache
	// A cold run is judged by the hits its own requests did not compute, where they were
	// told apart (AttributePrefixHits); else by all of them.
	rate, hits, queries := pc.HitRate, pc.Hits, pc.Queries
	attributed := pc.Own != nil && pc.Foreign != nil && pc.ForeignRate != nil
	if attributed {
		rate, hits = *pc.ForeignRate, *pc.Foreign
		if rate > 0 {
			queries = hits / rate
		}
	}
	if !(rate > ColdHitRateMax) {
		return ""
	}
	measured := r.PrefixCache.Opening != nil && r.PrefixCache.Opening.Method == OpeningTokenize
	if k := r.Summary.KVConcurrency; k != nil && k.BlockSize == 1 && queries > 0 && !measured {
		// A cache of single tokens (llama.cpp) reuses what every prompt opens with,
		// however unique the rest: the BOS token, the salt's bracket and now and then its
		// first hex digit. Where the opening was not measured, that much per request is
		// not a warm cache.
		allowed := ColdHitRateMax*queries + ColdOpeningTokens*float64(r.Summary.Requests)
		if hits <= allowed {
			return ""
		}
	}
	what := fmt.Sprintf("%.1f%%", 100*rate)
	if queries > 0 {
		what += fmt.Sprintf(" (%.0f of %.0f prompt tokens)", hits, queries)
	}
	what += fmt.Sprintf(" in the engine's prefix cache (%s)", pc.Source)
	if attributed {
		what += fmt.Sprintf(" that its own requests did not compute (of %.0f hits, %.0f were re-admissions after preemption, %.0f declared shared history and %.0f the opening every prompt shares, told apart %s)",
			pc.Hits, pc.Own.Readmitted, pc.Own.Declared, pc.Own.Opening, ownMethodText[pc.Own.Method])
	}
	return fmt.Sprintf("a cold run found %s, above the %.0f%% a cold run allows: it measured a warm cache; reset the cache before the run (prefix_cache: {mode: cold, reset: true}) or restart the engine",
		what, 100*ColdHitRateMax)
}

// TokensPerChunk describes chunks that carried more than one token.
type TokensPerChunk struct {
	// Mean is output tokens / content chunks over successful requests.
	Mean float64 `json:"mean"`
	// Known counts requests with several tokens in a chunk whose per-chunk counts the
	// server gave (Request.ChunkTokens); Inferred those whose counts were inferred as
	// output_tokens / chunks, the same for every chunk of the request.
	Known    int `json:"known"`
	Inferred int `json:"inferred"`
}

// Connections summarizes connection set-up inside the measured window.
type Connections struct {
	// Dials counts measured requests that dialed their connection inside their own
	// latency; DialP50ms and DialMaxms are over those dials.
	Dials     int     `json:"dials"`
	DialP50ms float64 `json:"dial_p50_ms"`
	DialMaxms float64 `json:"dial_max_ms"`
	// Retried counts requests resent on a fresh connection (Request.Retries > 0).
	Retried int `json:"retried"`
}

// Gauge summarizes a server gauge sampled over the window.
type Gauge struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// EngineInfo is the engine's identity as recorded.
type EngineInfo struct {
	Name             string   `json:"name"`
	Version          string   `json:"version"`
	ModelID          string   `json:"model_id"`
	ModelRevision    string   `json:"model_revision,omitempty"`
	MaxContext       int      `json:"max_context,omitempty"`
	ContextSource    string   `json:"context_source,omitempty"`
	KVCapacityTokens int64    `json:"kv_capacity_tokens,omitempty"`
	KVSource         string   `json:"kv_source,omitempty"`
	Notes            []string `json:"notes,omitempty"`
}

// KVConcurrency is how many requests of this workload fit in the KV cache at once:
// ⌊capacity tokens / per-request tokens⌋, per-request tokens being the p95 of prompt +
// output tokens rounded up to whole blocks.
type KVConcurrency struct {
	Value            int    `json:"value"`
	CapacityTokens   int64  `json:"capacity_tokens"`
	PerRequestTokens int    `json:"per_request_tokens"`
	Source           string `json:"source"`
	// BlockSize is the KV block the per-request tokens were rounded to, and Slots the
	// engine's fixed sequence slots that cap the value (0: none); kept so that a merge of
	// shards can recompute the figure over all their requests.
	BlockSize int `json:"block_size,omitempty"`
	Slots     int `json:"slots,omitempty"`
}

// LittleLaw compares the measured mean number of requests in flight with the one Little's
// law predicts from the arrival rate and the mean time in the system (L = λW).
type LittleLaw struct {
	ArrivalRPS        float64 `json:"arrival_rps"`
	MeanE2ES          float64 `json:"mean_e2e_s"`
	PredictedInFlight float64 `json:"predicted_in_flight"`
	MeasuredInFlight  float64 `json:"measured_in_flight"`
	Deviation         float64 `json:"deviation"` // |measured − predicted| / predicted
	Flagged           bool    `json:"flagged"`   // deviation > 10%
}

// LagSummary is the dispatch lag (actual send − scheduled send) in milliseconds.
type LagSummary struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// InFlight is the client-side number of requests in flight (scheduled, not finished).
type InFlight struct {
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

// Lengths are targets against achieved token counts.
type Lengths struct {
	PromptTarget LengthStats `json:"prompt_target"`
	Prompt       LengthStats `json:"prompt"`
	OutputTarget LengthStats `json:"output_target"`
	Output       LengthStats `json:"output"`
}

// LengthStats summarize token counts.
type LengthStats struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// SLOCheck is one run-level SLO check.
type SLOCheck struct {
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile"`
	LimitMS    float64 `json:"limit_ms"`
	ValueMS    float64 `json:"value_ms"`
	Met        bool    `json:"met"`
}

// WarmupSummary reports the warm-up phase apart from the measured window.
type WarmupSummary struct {
	Requests int            `json:"requests"`
	Errors   map[string]int `json:"errors,omitempty"`
	// ColdTTFTms is the TTFT of the very first request (cold start of the engine's caches).
	ColdTTFTms float64     `json:"cold_ttft_ms"`
	TTFTms     Percentiles `json:"ttft_ms"`
	DurationS  float64     `json:"duration_s"`
	// EngineStartS is how long a started engine took to become ready (0 if not started).
	EngineStartS float64 `json:"engine_start_s,omitempty"`
}

// PrimingSummary reports the priming pass of a warm run: requests that sent the measured
// requests' prompts, each asking for one token, so that the engine's prefix cache holds
// them when the window opens. None of it is in the summary.
type PrimingSummary struct {
	Requests int            `json:"requests"`
	Errors   map[string]int `json:"errors,omitempty"`
	// PromptTokens are the prompt tokens of the successful ones, from the server's usage
	// (0 where it gave none).
	PromptTokens int     `json:"prompt_tokens"`
	Concurrency  int     `json:"concurrency"`
	DurationS    float64 `json:"duration_s"`
}

// Series are time series sampled during the run.
type Series struct {
	// InFlight is the client-side in-flight count.
	InFlight []Sample `json:"in_flight,omitempty"`
	// Engine gauges by name (queue_depth, running, kv_usage, preemptions, ...).
	Engine map[string][]Sample `json:"engine,omitempty"`
}

// Sample is one point of a series: microseconds from the record's epoch, and a value.
type Sample struct {
	TUS int64   `json:"t_us"`
	V   float64 `json:"v"`
}
