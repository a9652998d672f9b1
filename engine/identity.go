package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Engine names.
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineTGI      = "tgi"
	EngineTRTLLM   = "trtllm"
	EngineLlamaCpp = "llamacpp"
	EngineOllama   = "ollama"
	EngineSim      = "sim"
	EngineOpenAI   = "openai" // a generic OpenAI-compatible server
)

// Engines lists the engine names a workload file may name (besides "auto").
func Engines() []string {
	return []string{EngineVLLM, EngineSGLang, EngineTGI, EngineTRTLLM, EngineLlamaCpp, EngineOllama, EngineSim, EngineOpenAI}
}

// Identity is what an engine says about itself. Every string in it came from the server
// under test and has been cleaned with CleanText.
type Identity struct {
	Engine        string   `json:"engine"`
	Version       string   `json:"version"`
	ModelID       string   `json:"model_id"`
	ModelRevision string   `json:"model_revision,omitempty"`
	ServedModels  []string `json:"served_models,omitempty"`
	// MaxContext is the most tokens (prompt + output) one request may hold: vLLM's
	// max_model_len, one llama.cpp slot's n_ctx, SGLang's context_length, TGI's
	// max_total_tokens. ContextSource says where it came from.
	MaxContext    int    `json:"max_context,omitempty"`
	ContextSource string `json:"context_source,omitempty"`
	// KVCapacityTokens is the KV cache size in tokens, 0 when the engine does not expose it.
	KVCapacityTokens int64 `json:"kv_capacity_tokens,omitempty"`
	KVBlockSize      int   `json:"kv_block_size,omitempty"`
	// KVSource says where the capacity came from, e.g. "vllm cache_config_info".
	KVSource string `json:"kv_source,omitempty"`
	// Slots is the number of sequences the engine runs at once when it has fixed slots
	// (llama.cpp total_slots, Ollama's parallelism), each with its own share of the KV
	// cache; 0 for engines that share one pool.
	Slots int `json:"slots,omitempty"`
	// KVBytesPerToken where the engine exposes the architecture (Ollama /api/show).
	KVBytesPerToken int64 `json:"kv_bytes_per_token,omitempty"`
	// Metrics says how to read the engine's Prometheus page; empty Path for none.
	Metrics MetricSet `json:"-"`
	Notes   []string  `json:"notes,omitempty"`
}

// ErrUnreachable wraps a failure to reach the engine at all.
var ErrUnreachable = errors.New("engine unreachable")

// ErrStalled wraps a call to the engine that did not finish within its deadline (the
// server accepted the connection, perhaps sent headers, and then nothing): the error
// names the endpoint.
var ErrStalled = errors.New("engine stalled")

// DefaultProbeTimeout bounds every identification call (and each tokenize or metrics
// call): the small answers they get take milliseconds from a healthy engine.
const DefaultProbeTimeout = 10 * time.Second

// IdentifyOptions configure Identify.
type IdentifyOptions struct {
	BaseURL string
	APIKey  string
	// Engine forces an adapter; "" or "auto" detects it.
	Engine string
	// Model is the pinned model name, used to pick the served id and for Ollama's
	// /api/show.
	Model string
	// Parallel is the engine's configured parallelism where the engine does not expose it
	// (Ollama's OLLAMA_NUM_PARALLEL); default 1.
	Parallel int
	// KVUnified says whether llama.cpp's slots share one KV cache (--kv-unified, the
	// default of llama-server without -np) or each own n_ctx tokens (-np N). The server
	// does not say; nil takes the shared cache, the smaller capacity, and notes it.
	KVUnified *bool
	HTTP      *http.Client
	// Timeout bounds each call, from the request to the end of the answer's body;
	// default DefaultProbeTimeout.
	Timeout time.Duration
}

// maxBlockSize bounds a KV block size taken from the engine (real ones are 1 to 256
// tokens); a larger one is a broken page.
const maxBlockSize = 1 << 20

// kvProduct multiplies two factors of a KV capacity that the engine reported; ok is false
// when either is not positive or the product does not fit, and the capacity is then not
// used rather than wrapped around to a negative number.
func kvProduct(a, b int64) (int64, bool) {
	if a <= 0 || b <= 0 || a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// maxVersionText caps any identity string taken from the server.
const maxVersionText = 200

// CleanText makes text from the server under test safe to keep: control characters are
// dropped, whitespace runs collapse to one space, and the result is capped at max runes
// (with "…" when cut).
func CleanText(s string, max int) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar || (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			continue
		}
		if n >= max {
			b.WriteString("…")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func clean(s string) string { return CleanText(s, maxVersionText) }

type prober struct {
	base    string
	apiKey  string
	http    *http.Client
	timeout time.Duration
	// stall is the first call that passed its deadline; once set, every later call
	// fails at once, so that a stalled engine costs one deadline, not one per probe.
	stall error
}

// stalled records that method path passed the call's deadline while ctx did not end.
func (p *prober) stalled(ctx, cctx context.Context, method, path string) error {
	if ctx.Err() != nil || cctx.Err() == nil {
		return nil
	}
	if p.stall == nil {
		p.stall = fmt.Errorf("%w: %s %s%s gave no complete answer within %s", ErrStalled, method, p.base, path, p.timeout)
	}
	return p.stall
}

// maxProbeBytes caps identity responses; they are small JSON objects.
const maxProbeBytes = 4 << 20

// get fetches path; status 0 and an error mean the server could not be reached.
func (p *prober) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	if p.stall != nil {
		return 0, nil, p.stall
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		if s := p.stalled(parent, ctx, method, path); s != nil {
			return 0, nil, s
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBytes))
	if err != nil {
		if s := p.stalled(parent, ctx, method, path); s != nil {
			return 0, nil, s
		}
	}
	if p.apiKey != "" {
		// An engine that echoes the key it was sent (in a version, a model id) must not
		// put it into the identity, whatever field carried it.
		data = bytes.ReplaceAll(data, []byte(p.apiKey), []byte("[redacted]"))
	}
	return resp.StatusCode, data, err
}

// getJSON fetches path into v; ok is false on any non-200 or undecodable answer.
func (p *prober) getJSON(ctx context.Context, path string, v any) bool {
	st, data, err := p.do(ctx, http.MethodGet, path, nil)
	return err == nil && st == http.StatusOK && json.Unmarshal(data, v) == nil
}

type modelList struct {
	Data []struct {
		ID          string `json:"id"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		MaxModelLen int    `json:"max_model_len"`
	} `json:"data"`
}

// Identify detects (or takes) the engine behind BaseURL and reads its identity: version,
// served model, context, KV capacity and how to read its metrics. An engine that cannot
// be reached at all gives an error wrapping ErrUnreachable.
func Identify(ctx context.Context, o IdentifyOptions) (*Identity, error) {
	p := &prober{base: baseURL(o.BaseURL), apiKey: o.APIKey, http: o.HTTP, timeout: o.Timeout}
	if p.http == nil {
		p.http = http.DefaultClient
	}
	if p.timeout <= 0 {
		p.timeout = DefaultProbeTimeout
	}
	st, data, err := p.do(ctx, http.MethodGet, "/v1/models", nil)
	if errors.Is(err, ErrStalled) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s/v1/models: %v", ErrUnreachable, p.base, err)
	}
	var ml modelList
	if st == http.StatusOK {
		_ = json.Unmarshal(data, &ml)
	}
	id := &Identity{Engine: o.Engine}
	if id.Engine == "" || id.Engine == "auto" {
		id.Engine = detect(ctx, p, &ml)
	}
	for _, m := range ml.Data {
		id.ServedModels = append(id.ServedModels, clean(m.ID))
	}
	sort.Strings(id.ServedModels)
	id.ModelID = pickModel(id.ServedModels, o.Model)
	for _, m := range ml.Data {
		if clean(m.ID) == id.ModelID && m.MaxModelLen > 0 {
			id.MaxContext = m.MaxModelLen
			id.ContextSource = "/v1/models max_model_len"
		}
	}
	switch id.Engine {
	case EngineVLLM, EngineSim:
		identifyVLLM(ctx, p, id)
	case EngineSGLang:
		identifySGLang(ctx, p, id)
	case EngineTGI:
		identifyTGI(ctx, p, id)
	case EngineTRTLLM:
		identifyTRTLLM(ctx, p, id)
	case EngineLlamaCpp:
		identifyLlamaCpp(ctx, p, id, o.KVUnified)
	case EngineOllama:
		identifyOllama(ctx, p, id, o)
	default:
		id.Engine = EngineOpenAI
		id.Notes = append(id.Notes, "generic OpenAI-compatible server: no version, metrics or KV capacity exposed")
	}
	if p.stall != nil {
		return nil, p.stall
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("identifying the engine at %s: %w", p.base, context.Cause(ctx))
	}
	if id.Version == "" {
		id.Version = "unknown"
	}
	if id.Metrics.Empty() {
		id.Notes = append(id.Notes, "no server-side metrics: queue depth, KV usage and preemptions are not measured")
	}
	return id, nil
}

func baseURL(u string) string {
	u = strings.TrimRight(u, "/")
	return strings.TrimSuffix(u, "/v1")
}

// pickModel returns the pinned model when it is served, else the only or first id.
func pickModel(served []string, pinned string) string {
	for _, s := range served {
		if s == pinned {
			return s
		}
	}
	// Ollama serves "name:latest" for "name".
	for _, s := range served {
		if pinned != "" && strings.TrimSuffix(s, ":latest") == pinned {
			return s
		}
	}
	if len(served) > 0 {
		return served[0]
	}
	return ""
}

// detect guesses the engine from what it answers. Cheap, specific signals first.
func detect(ctx context.Context, p *prober, ml *modelList) string {
	owned := ""
	if len(ml.Data) > 0 {
		owned = strings.ToLower(ml.Data[0].OwnedBy)
	}
	switch owned {
	case "vllm":
		return EngineVLLM
	case "slogate-sim":
		return EngineSim
	case "sglang":
		return EngineSGLang
	case "llamacpp":
		return EngineLlamaCpp
	case "tensorrt_llm", "trtllm":
		return EngineTRTLLM
	case "tgi", "text-generation-inference":
		return EngineTGI
	}
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/api/version", &v) && v.Version != "" {
		return EngineOllama
	}
	var info struct {
		ModelID string `json:"model_id"`
	}
	if p.getJSON(ctx, "/info", &info) && info.ModelID != "" {
		return EngineTGI
	}
	var props map[string]any
	if p.getJSON(ctx, "/props", &props) && props["default_generation_settings"] != nil {
		return EngineLlamaCpp
	}
	var si map[string]any
	if p.getJSON(ctx, "/get_server_info", &si) || p.getJSON(ctx, "/server_info", &si) {
		if si["max_total_num_tokens"] != nil {
			return EngineSGLang
		}
	}
	if st, _, err := p.do(ctx, http.MethodGet, "/prometheus/metrics", nil); err == nil && st == http.StatusOK {
		return EngineTRTLLM
	}
	if p.getJSON(ctx, "/version", &v) && v.Version != "" {
		return EngineVLLM
	}
	return EngineOpenAI
}

// Metric sets per engine (DESIGN §9). Older names follow newer ones.
var (
	vllmMetrics = MetricSet{
		Path:          "/metrics",
		QueueDepth:    []string{"vllm:num_requests_waiting"},
		Running:       []string{"vllm:num_requests_running"},
		KVUsage:       []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		Preemptions:   []string{"vllm:num_preemptions_total", "vllm:num_preemptions"},
		PrefixHits:    []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"},
		PrefixQueries: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},
	}
	sglangMetrics = MetricSet{
		Path:          "/metrics",
		QueueDepth:    []string{"sglang:num_queue_reqs"},
		Running:       []string{"sglang:num_running_reqs"},
		KVUsage:       []string{"sglang:token_usage"},
		PrefixHitRate: []string{"sglang:cache_hit_rate"},
	}
	tgiMetrics = MetricSet{
		Path:       "/metrics",
		QueueDepth: []string{"tgi_queue_size"},
		Running:    []string{"tgi_batch_current_size"},
	}
	trtllmMetrics = MetricSet{
		Path:       "/prometheus/metrics",
		QueueDepth: []string{"trtllm_num_requests_waiting"},
		Running:    []string{"trtllm_num_requests_running"},
		KVUsage:    []string{"trtllm_kv_cache_utilization"},
	}
	// llama.cpp builds since 2025 export no KV-usage gauge (kv_cache_usage_ratio went
	// with the KV-cache rework); an older build that has it is read. Prefix-cache figures
	// come from its prompt-token counters.
	llamacppMetrics = MetricSet{
		Path:               "/metrics",
		QueueDepth:         []string{"llamacpp:requests_deferred"},
		Running:            []string{"llamacpp:requests_processing"},
		KVUsage:            []string{"llamacpp:kv_cache_usage_ratio"},
		PromptTokens:       []string{"llamacpp:prompt_tokens_total"},
		PromptTokensCached: []string{"llamacpp:prompt_tokens_cached_total"},
		OutputTokens:       []string{"llamacpp:tokens_predicted_total"},
	}
)

// MetricSetFor returns the metric set of an engine (empty for engines without one).
func MetricSetFor(engine string) MetricSet {
	switch engine {
	case EngineVLLM, EngineSim:
		return vllmMetrics
	case EngineSGLang:
		return sglangMetrics
	case EngineTGI:
		return tgiMetrics
	case EngineTRTLLM:
		return trtllmMetrics
	case EngineLlamaCpp:
		return llamacppMetrics
	}
	return MetricSet{}
}

// metricsPage fetches and parses the engine's metrics page; ok is false when it has none.
func metricsPage(ctx context.Context, p *prober, set MetricSet) (families, bool) {
	if p.stall != nil {
		return nil, false
	}
	s := &Scraper{URL: p.base + set.Path, Set: set, APIKey: p.apiKey, HTTP: p.http, Timeout: p.timeout}
	fams, err := s.fetch(ctx)
	if errors.Is(err, ErrStalled) && p.stall == nil {
		p.stall = err
	}
	return fams, err == nil
}

func identifyVLLM(ctx context.Context, p *prober, id *Identity) {
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/version", &v) {
		id.Version = clean(v.Version)
	}
	fams, ok := metricsPage(ctx, p, vllmMetrics)
	if !ok {
		id.Notes = append(id.Notes, "metrics page "+vllmMetrics.Path+" not available")
		return
	}
	id.Metrics = vllmMetrics
	blocks, ok1 := labelInt(fams, "vllm:cache_config_info", "num_gpu_blocks")
	bs, ok2 := labelInt(fams, "vllm:cache_config_info", "block_size")
	if ok1 && ok2 && blocks > 0 && bs > 0 {
		if c, ok := kvProduct(blocks, bs); ok && bs <= maxBlockSize {
			id.KVCapacityTokens = c
			id.KVBlockSize = int(bs)
			id.KVSource = fmt.Sprintf("engine: vllm:cache_config_info num_gpu_blocks %d × block_size %d", blocks, bs)
		} else {
			id.Notes = append(id.Notes, fmt.Sprintf("KV capacity not used: vllm:cache_config_info num_gpu_blocks %d × block_size %d is out of range", blocks, bs))
		}
	}
}

func identifySGLang(ctx context.Context, p *prober, id *Identity) {
	var si struct {
		Version           string `json:"version"`
		MaxTotalNumTokens int64  `json:"max_total_num_tokens"`
		ModelPath         string `json:"model_path"`
		PageSize          int    `json:"page_size"`
		ContextLength     int    `json:"context_length"`
	}
	if p.getJSON(ctx, "/get_server_info", &si) || p.getJSON(ctx, "/server_info", &si) {
		id.Version = clean(si.Version)
		if si.MaxTotalNumTokens > 0 {
			id.KVCapacityTokens = si.MaxTotalNumTokens
			id.KVBlockSize = max(si.PageSize, 1)
			id.KVSource = fmt.Sprintf("engine: sglang server_info max_total_num_tokens %d", si.MaxTotalNumTokens)
		}
		if si.ContextLength > 0 && id.MaxContext == 0 {
			id.MaxContext = si.ContextLength
			id.ContextSource = "sglang server_info context_length"
		}
	}
	if _, ok := metricsPage(ctx, p, sglangMetrics); ok {
		id.Metrics = sglangMetrics
	} else {
		id.Notes = append(id.Notes, "metrics page not available (start SGLang with --enable-metrics)")
	}
}

func identifyTGI(ctx context.Context, p *prober, id *Identity) {
	var info struct {
		ModelID              string `json:"model_id"`
		ModelSHA             string `json:"model_sha"`
		Version              string `json:"version"`
		MaxTotalTokens       int    `json:"max_total_tokens"`
		MaxBatchTotalTokens  int64  `json:"max_batch_total_tokens"`
		MaxConcurrentRequest int    `json:"max_concurrent_requests"`
	}
	if p.getJSON(ctx, "/info", &info) {
		id.Version = clean(info.Version)
		if info.ModelID != "" {
			id.ModelID = clean(info.ModelID)
		}
		id.ModelRevision = clean(info.ModelSHA)
		if info.MaxTotalTokens > 0 {
			id.MaxContext = info.MaxTotalTokens
			id.ContextSource = "tgi /info max_total_tokens"
		}
		if info.MaxBatchTotalTokens > 0 {
			id.KVCapacityTokens = info.MaxBatchTotalTokens
			id.KVBlockSize = 1
			id.KVSource = fmt.Sprintf("engine: tgi /info max_batch_total_tokens %d", info.MaxBatchTotalTokens)
		}
	}
	if _, ok := metricsPage(ctx, p, tgiMetrics); ok {
		id.Metrics = tgiMetrics
	}
}

func identifyTRTLLM(ctx context.Context, p *prober, id *Identity) {
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/version", &v) {
		id.Version = clean(v.Version)
	}
	fams, ok := metricsPage(ctx, p, trtllmMetrics)
	if !ok {
		return
	}
	id.Metrics = trtllmMetrics
	blocks, ok1 := familyValue(fams, "trtllm_kv_cache_max_blocks")
	per, ok2 := familyValue(fams, "trtllm_kv_cache_tokens_per_block")
	if ok1 && ok2 && blocks > 0 && per > 0 {
		// Floats from the page: converted only where they are whole numbers in range.
		c, ok := int64(0), blocks < 1<<53 && per <= maxBlockSize && blocks == math.Trunc(blocks) && per == math.Trunc(per)
		if ok {
			c, ok = kvProduct(int64(blocks), int64(per))
		}
		if ok {
			id.KVCapacityTokens = c
			id.KVBlockSize = int(per)
			id.KVSource = fmt.Sprintf("engine: trtllm_kv_cache_max_blocks %.0f × trtllm_kv_cache_tokens_per_block %.0f", blocks, per)
		} else {
			id.Notes = append(id.Notes, fmt.Sprintf("KV capacity not used: trtllm_kv_cache_max_blocks %g × trtllm_kv_cache_tokens_per_block %g is out of range", blocks, per))
		}
	}
}

func identifyLlamaCpp(ctx context.Context, p *prober, id *Identity, unified *bool) {
	var props struct {
		BuildInfo  string `json:"build_info"`
		TotalSlots int    `json:"total_slots"`
		ModelPath  string `json:"model_path"`
		Settings   struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if p.getJSON(ctx, "/props", &props) {
		id.Version = clean(props.BuildInfo)
		if props.Settings.NCtx > 0 {
			applyLlamaCppSlots(id, props.Settings.NCtx, props.TotalSlots, unified)
		}
	}
	if fams, ok := metricsPage(ctx, p, llamacppMetrics); ok {
		id.Metrics = llamacppMetrics
		noteMissingMetrics(id, fams)
	} else {
		id.Notes = append(id.Notes, "metrics page not available (start llama-server with --metrics)")
	}
}

// applyLlamaCppSlots sets the context and KV capacity from llama.cpp's /props: n_ctx in
// default_generation_settings is one slot's context, the most one request may hold. With a
// unified KV cache (llama-server's default without -np) all slots share one cache of n_ctx
// tokens; without it (-np N) each slot owns n_ctx tokens of its own.
func applyLlamaCppSlots(id *Identity, nCtx, totalSlots int, unified *bool) {
	slots := max(totalSlots, 1)
	id.Slots = slots
	id.MaxContext = nCtx
	id.ContextSource = "llama.cpp /props default_generation_settings.n_ctx (one slot's context)"
	id.KVBlockSize = 1
	switch {
	case slots == 1:
		id.KVCapacityTokens = int64(nCtx)
		id.KVSource = fmt.Sprintf("engine: llama.cpp /props n_ctx %d, 1 slot", nCtx)
	case unified != nil && !*unified:
		c, ok := kvProduct(int64(nCtx), int64(slots))
		if !ok {
			id.KVCapacityTokens, id.KVBlockSize = 0, 0
			id.Notes = append(id.Notes, fmt.Sprintf("KV capacity not used: llama.cpp /props n_ctx %d × total_slots %d is out of range", nCtx, slots))
			return
		}
		id.KVCapacityTokens = c
		id.KVSource = fmt.Sprintf("engine: llama.cpp /props n_ctx %d per slot × total_slots %d, each slot its own cache (target.kv_unified: false)", nCtx, slots)
	case unified != nil:
		id.KVCapacityTokens = int64(nCtx)
		id.KVSource = fmt.Sprintf("engine: llama.cpp /props n_ctx %d, one cache shared by total_slots %d (target.kv_unified: true)", nCtx, slots)
	default:
		id.KVCapacityTokens = int64(nCtx)
		id.KVSource = fmt.Sprintf("engine: llama.cpp /props n_ctx %d, taken as one cache shared by total_slots %d (llama-server's default without -np)", nCtx, slots)
		id.Notes = append(id.Notes, fmt.Sprintf(
			"llama.cpp does not say whether its %d slots share one KV cache: KV capacity is taken as one shared cache of n_ctx %d tokens, as llama-server runs without -np; a server started with -np %d and without --kv-unified has %d × %d = %d tokens (set target.kv_unified: false)",
			slots, nCtx, slots, slots, nCtx, int64(slots)*int64(nCtx)))
	}
}

// noteMissingMetrics says in the identity which quantities of the engine's metric set its
// page lacks, so that a record without, say, KV usage says why.
func noteMissingMetrics(id *Identity, fams families) {
	if miss := id.Metrics.Missing(fams); len(miss) > 0 {
		id.Notes = append(id.Notes, fmt.Sprintf("the %s metrics page (%s) exports no %s: not measured", id.Engine, id.Metrics.Path, strings.Join(miss, "; ")))
	}
}

func identifyOllama(ctx context.Context, p *prober, id *Identity, o IdentifyOptions) {
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/api/version", &v) {
		id.Version = clean(v.Version)
	}
	name := id.ModelID
	if name == "" {
		name = o.Model
	}
	st, data, err := p.do(ctx, http.MethodPost, "/api/show", map[string]string{"model": name})
	if err != nil || st != http.StatusOK {
		id.Notes = append(id.Notes, "ollama /api/show unavailable: KV capacity unknown")
		return
	}
	var show struct {
		ModelInfo  map[string]any `json:"model_info"`
		Parameters string         `json:"parameters"`
		Details    struct {
			QuantizationLevel string `json:"quantization_level"`
		} `json:"details"`
	}
	if json.Unmarshal(data, &show) != nil {
		return
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	num := func(key string) int64 {
		f, _ := show.ModelInfo[arch+"."+key].(float64)
		return int64(f)
	}
	layers, kvHeads, heads, embd, trainCtx := num("block_count"), num("attention.head_count_kv"), num("attention.head_count"), num("embedding_length"), num("context_length")
	if kvHeads == 0 {
		kvHeads = heads
	}
	headDim := num("attention.key_length")
	if headDim == 0 && heads > 0 {
		headDim = embd / heads
	}
	numCtx := paramInt(show.Parameters, "num_ctx")
	if numCtx == 0 {
		numCtx = 2048 // Ollama's default context when neither the Modelfile nor the request sets one
	}
	if trainCtx > 0 && id.MaxContext == 0 {
		id.MaxContext = int(min(numCtx, trainCtx))
		id.ContextSource = fmt.Sprintf("ollama /api/show: num_ctx %d, model context_length %d", numCtx, trainCtx)
	}
	parallel := int64(max(o.Parallel, 1))
	id.Slots = int(parallel)
	c, ok := kvProduct(numCtx, parallel)
	if !ok {
		id.Notes = append(id.Notes, fmt.Sprintf("KV capacity not used: ollama num_ctx %d × parallel %d is out of range", numCtx, parallel))
		return
	}
	id.KVCapacityTokens = c
	id.KVBlockSize = 1
	// Ollama's KV cache is f16 by default: 2 bytes per element.
	if layers > 0 && kvHeads > 0 && headDim > 0 {
		b, ok := kvProduct(layers, kvHeads)
		if ok {
			b, ok = kvProduct(b, headDim)
		}
		if ok {
			b, ok = kvProduct(b, 4) // K and V, 2 bytes each
		}
		if ok {
			id.KVBytesPerToken = b
		}
	}
	id.KVSource = fmt.Sprintf("derived: ollama /api/show num_ctx %d × parallel %d (block_count %d, kv_heads %d, head_dim %d); not reported by the engine",
		numCtx, parallel, layers, kvHeads, headDim)
}

// paramInt reads "name value" from Ollama's parameters text.
func paramInt(params, name string) int64 {
	for _, line := range strings.Split(params, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == name {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
