package interop

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slogate/slogate/result"
)

// VLLMFormat is the vLLM result shape read: what `vllm bench serve --save-result
// --save-detailed` writes, as vllm/benchmarks/serve.py builds it at commit
// def9ce85ba1079af970a58ed3d42dd861ae35d58 (benchmark() and main_async()).
const VLLMFormat = "vllm bench serve --save-result --save-detailed, serve.py@def9ce85ba10"

// vllmKnown are the keys serve.py writes. Keys it does not know are refused unless their
// value is a string: --metadata KEY=VALUE pairs are merged into the top level as strings.
var vllmKnown = []string{
	"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
	"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
	"max_output_tokens_per_s", "max_concurrent_requests", "rps_change_events",
	// Aggregates of later vLLM (0.25): the real-time factor of audio benchmarks, and
	// what `vllm bench sweep` adds to each run's file (the run's number and the serve
	// parameter swept).
	"rtfx", "run_number", "max_num_seqs",
	// Per request, in later vLLM's --save-detailed: when each was sent
	// (time.perf_counter() at the send, seconds).
	"start_times",
}

// vllmStat matches the statistics process_one_metric writes: mean_ttft_ms, p99_itl_ms,
// p99.9_e2el_ms, ...
var vllmStat = regexp.MustCompile(`^(mean|median|std|p[0-9]+(\.[0-9]+)?)_(ttft|tpot|itl|e2el)_ms$`)

// vllmDetailed are the per-request arrays slogate needs.
var vllmDetailed = []string{"ttfts", "itls", "input_lens", "output_lens", "errors"}

// vllmResult is the part of the file read into the record.
type vllmResult struct {
	Date        string          `json:"date"`
	Backend     string          `json:"backend"`
	Label       *string         `json:"label"`
	ModelID     string          `json:"model_id"`
	TokenizerID string          `json:"tokenizer_id"`
	NumPrompts  int             `json:"num_prompts"`
	RequestRate json.RawMessage `json:"request_rate"` // a number, or "inf"
	Burstiness  *float64        `json:"burstiness"`
	MaxConc     *int            `json:"max_concurrency"`
	RampUp      *string         `json:"ramp_up_strategy"`
	RampStart   *float64        `json:"ramp_up_start_rps"`
	RampEnd     *float64        `json:"ramp_up_end_rps"`
	Duration    float64         `json:"duration"`
	Completed   *int            `json:"completed"`
	Failed      *int            `json:"failed"`
	InputLens   []int           `json:"input_lens"`
	OutputLens  []int           `json:"output_lens"`
	TTFTs       []float64       `json:"ttfts"`
	ITLs        [][]float64     `json:"itls"`
	Errors      []string        `json:"errors"`
	StartTimes  []*float64      `json:"start_times"`
}

// parseVLLM reads one result file; with --append-result it holds several JSON objects,
// one a line, each a record.
func parseVLLM(path string, data []byte) ([]*imported, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []*imported
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, jsonError(path, data, 0, err)
		}
		im, err := vllmOne(path, data, start, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	if len(out) == 0 {
		return nil, &FormatError{Path: path, Reason: "empty file, not a vllm bench serve result"}
	}
	if len(out) > 1 {
		// One source, several results: each says which one it is.
		for i, im := range out {
			im.src.Benchmark = fmt.Sprintf("result %d of %d", i+1, len(out))
		}
	}
	return out, nil
}

func vllmOne(path string, data []byte, base int64, raw json.RawMessage) (*imported, error) {
	// The decoder's offset is where the previous value ended: skip the space before this one.
	for base < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n"), data[base]) >= 0 {
		base++
	}
	line := lineAt(data, base)
	bad := func(field, format string, args ...any) error {
		return &FormatError{Path: path, Line: line, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, bad("", "not a vllm bench serve result (the JSON is not an object)")
	}
	if _, ok := top["date"]; !ok {
		return nil, bad("date", "missing: not a vllm bench serve result (%s)", VLLMFormat)
	}
	metadata := map[string]string{}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// A file without the per-request arrays is refused for that, whatever else it
	// holds: it is what every such file lacks, and the flag that writes them is the fix.
	for _, k := range vllmDetailed {
		if _, ok := top[k]; !ok {
			return nil, bad(k, "missing: the result was saved without --save-detailed (vllm bench serve --save-result --save-detailed); slogate needs the per-request arrays %q, and gates no file of aggregates only (means and percentiles without their requests give no interval)", vllmDetailed)
		}
	}
	var ignored []string
	for _, k := range keys {
		if slices.Contains(vllmKnown, k) || vllmStat.MatchString(k) {
			continue
		}
		v := bytes.TrimSpace(top[k])
		var s string
		if string(v) != "null" && json.Unmarshal(v, &s) == nil {
			metadata[k] = s // --metadata KEY=VALUE
			continue
		}
		if len(v) > 0 && v[0] != '[' && v[0] != '{' {
			// A number, a boolean or null: an aggregate a later vLLM added, which
			// changes nothing slogate computes from the requests.
			ignored = append(ignored, k)
			continue
		}
		return nil, bad(k, "not a field of the result shape this tool reads (%s), nor a --metadata string, nor a single value: a list or object whose meaning this tool cannot know (a newer vLLM?). Refused rather than guessed", VLLMFormat)
	}
	var r vllmResult
	if err := json.Unmarshal(raw, &r); err != nil {
		fe := jsonError(path, data, base, err)
		return nil, fe
	}
	n := len(r.TTFTs)
	for _, f := range []struct {
		name string
		n    int
	}{{"itls", len(r.ITLs)}, {"input_lens", len(r.InputLens)}, {"output_lens", len(r.OutputLens)}, {"errors", len(r.Errors)}} {
		if f.n != n {
			return nil, bad(f.name, "has %d entries and ttfts %d: one entry per request is expected", f.n, n)
		}
	}
	if n == 0 {
		return nil, bad("ttfts", "no requests")
	}
	// The file's own counts. serve.py counts a request completed when it succeeded; its
	// error string is then empty, but a failure may have an empty one too (an HTTP
	// status without a reason), and a success may have no first token (a stream
	// without content). So the completed count lies between the requests without an
	// error string that had a first token and all those without an error string.
	noErr, withFirst := 0, 0
	for i, e := range r.Errors {
		if e == "" {
			noErr++
			if r.TTFTs[i] > 0 {
				withFirst++
			}
		}
	}
	if c := r.Completed; c != nil && (*c < withFirst || *c > noErr) {
		return nil, bad("completed", "%d, but the per-request arrays hold %d requests without an error, %d of them with a first token: the file disagrees with itself, and nothing was imported", *c, noErr, withFirst)
	}
	if c, f := r.Completed, r.Failed; c != nil && f != nil && *c+*f != n {
		return nil, bad("failed", "%d, and completed %d: %d in all, but the per-request arrays hold %d requests: the file disagrees with itself, and nothing was imported", *f, *c, *c+*f, n)
	}
	// Send times, where the file has them: relative to the first send (perf_counter
	// has no epoch, and the benchmark's own start is not saved).
	var sends []int64
	if r.StartTimes != nil {
		if len(r.StartTimes) != n {
			return nil, bad("start_times", "has %d entries and ttfts %d: one entry per request is expected", len(r.StartTimes), n)
		}
		// A NaN that Python wrote bare is read as null (pythonJSON): no send time.
		for i, st := range r.StartTimes {
			if st == nil {
				return nil, bad("start_times", "entry %d is null (NaN in the file): a send time in seconds is expected", i)
			}
		}
		t0 := *slices.MinFunc(r.StartTimes, func(a, b *float64) int { return cmp.Compare(*a, *b) })
		sends = make([]int64, n)
		for i, st := range r.StartTimes {
			sends[i] = us(*st - t0)
		}
	}
	if !(r.Duration > 0) {
		return nil, bad("duration", "%v: a positive benchmark duration in seconds is expected", r.Duration)
	}
	rate, rateText, err := vllmRate(r.RequestRate)
	if err != nil {
		return nil, bad("request_rate", "%v", err)
	}
	start, err := time.Parse("20060102-150405", r.Date)
	if err != nil {
		return nil, bad("date", "%q: expected YYYYMMDD-HHMMSS as serve.py writes it", r.Date)
	}

	im := &imported{
		model: r.ModelID, api: vllmAPI(r.Backend), start: start,
		window: result.Window{StartUS: 0, EndUS: us(r.Duration)},
		env:    map[string]string{},
	}
	for k, v := range metadata {
		im.env["import.metadata."+k] = v
	}
	version := metadata["vllm_version"]
	if version == "" {
		version = metadata["version"]
	}
	im.src = result.Source{
		Tool: ToolVLLM, ToolVersion: version, Format: VLLMFormat, File: path, SHA256: sha(data), TTFTFrom: "send",
		Unavailable: []string{
			"dispatch_lag: vLLM records no scheduled times; TTFT and E2E are measured from the send",
			"output_target: vLLM records no requested output lengths",
			"kv_concurrency: the file has no KV capacity",
			"server_metrics: the file has no engine metrics",
		},
	}
	if sends == nil {
		im.src.Unavailable = slices.Insert(im.src.Unavailable, 1, "in_flight: this vLLM recorded no send times (start_times, written by later vLLM)")
	} else {
		im.notes = append(im.notes, "send times from start_times, counted from the first send (vLLM saves no benchmark start): the window starts there")
	}
	im.notes = append(im.notes, "vLLM writes its date in the benchmarking machine's local time without a zone; read as UTC")
	if len(ignored) > 0 {
		im.notes = append(im.notes, fmt.Sprintf("keys this tool does not know, each a single value (an aggregate), were not read: %s", strings.Join(ignored, ", ")))
	}
	im.mode = "open"
	if math.IsInf(rate, 1) || r.MaxConc != nil || r.RampUp != nil {
		im.mode = "closed"
		im.notes = append(im.notes, "vLLM sent with an infinite rate, a ramp-up or a concurrency cap: latency at that concurrency, not under an open-loop arrival process")
	}
	im.identity = map[string]any{
		"backend": r.Backend, "model_id": r.ModelID, "tokenizer_id": r.TokenizerID, "num_prompts": r.NumPrompts,
		"request_rate": rateText, "burstiness": r.Burstiness, "max_concurrency": r.MaxConc,
		"ramp_up": []any{r.RampUp, r.RampStart, r.RampEnd},
		// serve.py saves neither the dataset nor the seed; the prompt lengths it sampled
		// are their fingerprint.
		"input_lens": r.InputLens,
	}

	// Exported by slogate from a record without chunk gaps: each request's one gap spans
	// its first to its last token, which gives its latency and TPOT but no ITL.
	spanned := strings.HasPrefix(metadata[exportSpanKey], exportSpanValue)
	if spanned {
		im.src.Unavailable = append(im.src.Unavailable, "itl: exported by slogate from a record whose source kept no chunk gaps ("+exportSpanKey+")")
	}
	im.reqs = make([]result.Request, n)
	for i := range n {
		q := &im.reqs[i]
		q.I = i
		var send int64
		if sends != nil {
			// Scheduled when sent: vLLM records no schedule (dispatch lag unknown).
			send = sends[i]
			q.SchedUS, q.SendUS, q.EndUS = send, send, send
		}
		q.PromptTarget, q.PromptTokens = r.InputLens[i], r.InputLens[i]
		q.OutputTokens = r.OutputLens[i]
		if e := r.Errors[i]; e != "" {
			q.Error, q.ErrorDetail = errorReason(e, 0), detail(e)
			if m := ownError.FindStringSubmatch(e); m != nil {
				// Written by ExportVLLM: "reason: detail".
				q.Error, q.ErrorDetail = m[1], detail(e[len(m[0]):])
			}
			continue
		}
		if r.TTFTs[i] <= 0 {
			// serve.py's chat request counts a stream without content as a success;
			// slogate does not (success needs content).
			q.Error, q.ErrorDetail = "no_content", "vLLM recorded no first token"
			continue
		}
		q.FirstUS = send + max(us(r.TTFTs[i]), 1)
		q.LastUS = q.FirstUS
		for _, g := range r.ITLs[i] {
			gu := us(g)
			q.ITLUS = append(q.ITLUS, gu)
			q.LastUS += gu
		}
		q.EndUS = q.LastUS // serve.py's latency ends at the last chunk
		q.Chunks = len(r.ITLs[i]) + 1
		if spanned {
			q.ITLUS, q.Chunks = nil, 0
		}
		q.Finish = "stop"
	}
	return im, nil
}

func vllmRate(raw json.RawMessage) (float64, string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "inf" {
			return math.Inf(1), "inf", nil
		}
		return 0, "", fmt.Errorf("%q: a number or \"inf\" is expected", s)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || !(f > 0) {
		return 0, "", fmt.Errorf("%s: a positive number or \"inf\" is expected", raw)
	}
	return f, strconv.FormatFloat(f, 'g', -1, 64), nil
}

// vllmAPI maps serve.py's --backend to slogate's api.
func vllmAPI(backend string) string {
	switch backend {
	case "openai-chat", "vllm-chat":
		return "chat"
	case "openai", "vllm", "":
		return "completions"
	}
	return backend
}
