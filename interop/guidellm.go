package interop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slogate/slogate/result"
)

// GuideLLMFormat is the guidellm report shape read: GenerativeBenchmarksReport as
// src/guidellm/benchmark/output.py and benchmark.py define it at commit
// f3b9500670ad9be9da67bb19ac428ecb1a4de1c1 of neuralmagic/guidellm (benchmarks[] of
// type_ generative_benchmark, each with args, worker, request_loader and
// requests.{successful, incomplete, errored}). The later shape is GuideLLMLaterFormat.
const GuideLLMFormat = "guidellm benchmarks.json, benchmark.py@f3b950067"

// GuideLLMLaterFormat is the report shape of guidellm 0.5 to 0.8 (metadata.version 1
// and 2, metadata.guidellm_version): each benchmark's config (strategy, backend with
// its model, requests), scheduler_metrics (the measured window), metrics.request_totals
// and requests.{successful,errored,incomplete}, each request's info.timings
// (targeted_start, request_start, first_token_iteration, last_token_iteration,
// request_end), prompt_tokens and output_tokens.
const GuideLLMLaterFormat = "guidellm 0.5-0.8 report (metadata.version 1-2)"

type glReport struct {
	Benchmarks []json.RawMessage `json:"benchmarks"`
}

type glBenchmark struct {
	Type          string          `json:"type_"`
	ID            string          `json:"id_"`
	RunID         string          `json:"run_id"`
	Args          glArgs          `json:"args"`
	Worker        json.RawMessage `json:"worker"`
	RequestLoader json.RawMessage `json:"request_loader"`
	StartTime     float64         `json:"start_time"`
	EndTime       float64         `json:"end_time"`
	RequestTotals *struct {
		Successful, Incomplete, Errored int
	} `json:"request_totals"`
	RequestSamples json.RawMessage `json:"request_samples"`
	Requests       *struct {
		Successful []glRequest `json:"successful"`
		Incomplete []glRequest `json:"incomplete"`
		Errored    []glRequest `json:"errored"`
	} `json:"requests"`
	// laterConfig is a later-shape benchmark's config (glFromLater); nil otherwise.
	laterConfig json.RawMessage
}

type glArgs struct {
	Strategy json.RawMessage `json:"strategy"`
	Profile  json.RawMessage `json:"profile"`
	MaxNum   *int            `json:"max_number"`
	MaxDur   *float64        `json:"max_duration"`
	WarmN    *int            `json:"warmup_number"`
	WarmD    *float64        `json:"warmup_duration"`
	CoolN    *int            `json:"cooldown_number"`
	CoolD    *float64        `json:"cooldown_duration"`
}

type glWorker struct {
	Type          string `json:"type_"`
	BackendType   string `json:"backend_type"`
	BackendTarget string `json:"backend_target"`
	BackendModel  string `json:"backend_model"`
}

type glRequest struct {
	Type          string   `json:"type_"`
	RequestID     *string  `json:"request_id"`
	RequestType   string   `json:"request_type"`
	PromptTokens  *int     `json:"prompt_tokens"`
	OutputTokens  *int     `json:"output_tokens"`
	StartTime     *float64 `json:"start_time"`
	EndTime       *float64 `json:"end_time"`
	FirstToken    *float64 `json:"first_token_time"`
	LastToken     *float64 `json:"last_token_time"`
	Error         string   `json:"error"`
	SchedulerInfo struct {
		TargetedStart *float64 `json:"targeted_start_time"`
	} `json:"scheduler_info"`
}

func parseGuideLLM(path string, data []byte, pick int) ([]*imported, error) {
	bad := func(field, format string, args ...any) error {
		return &FormatError{Path: path, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(path, data, 0, err)
	}
	var rep glReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, jsonError(path, data, 0, err)
	}
	later, version := glLaterShape(top)
	if rep.Benchmarks == nil {
		return nil, bad("benchmarks", "missing: not a guidellm benchmarks report (%s)", GuideLLMFormat)
	}
	if len(rep.Benchmarks) == 0 {
		return nil, bad("benchmarks", "empty: the report holds no benchmark")
	}
	bs := make([]glBenchmark, len(rep.Benchmarks))
	names := make([]string, len(bs))
	for i, raw := range rep.Benchmarks {
		field := fmt.Sprintf("benchmarks[%d]", i)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return nil, bad(field, "not an object")
		}
		if !later {
			for _, k := range []string{"config", "scheduler_state", "scheduler_metrics"} {
				if _, ok := keys[k]; ok {
					return nil, bad(field+"."+k, "is the later guidellm benchmark shape, but the report has no metadata.guidellm_version to say which; it reads %s and the reports of guidellm 0.5 to 0.8 (%s)", GuideLLMFormat, GuideLLMLaterFormat)
				}
			}
		}
		var err error
		if later {
			err = glFromLater(raw, &bs[i])
		} else {
			err = json.Unmarshal(raw, &bs[i])
		}
		if err != nil {
			fe := jsonError(path, data, 0, err)
			fe.Field = field + "." + fe.Field
			return nil, fe
		}
		if bs[i].Type != "generative_benchmark" {
			return nil, bad(field+".type_", "%q: only generative_benchmark is read", bs[i].Type)
		}
		names[i] = fmt.Sprintf("%d: %s", i, glStrategyName(bs[i].Args.Strategy))
	}
	var sel []int
	switch {
	case pick >= len(bs):
		return nil, bad("benchmarks", "--benchmark %d: the report holds %d benchmarks (%s)", pick, len(bs), strings.Join(names, "; "))
	case pick >= 0:
		sel = []int{pick}
	case len(bs) == 1:
		sel = []int{0}
	default:
		return nil, bad("benchmarks", "the report holds %d benchmarks (%s): choose one with --benchmark N, each is another rate", len(bs), strings.Join(names, "; "))
	}
	var out []*imported
	for _, i := range sel {
		im, err := glOne(path, data, i, &bs[i])
		if err != nil {
			return nil, err
		}
		if later {
			im.src.Format, im.src.ToolVersion = GuideLLMLaterFormat, version
			// The benchmark's configuration less what differs between runs of it.
			im.identity = map[string]any{"config": canonical(bs[i].laterConfig, "run_id", "id_", "run_index", "environment", "target", "url", "validate_backend", "openai_paths"), "api": im.api}
		}
		if len(bs) > 1 {
			im.src.Benchmark = fmt.Sprintf("benchmark %s of %d", names[i], len(bs))
		}
		out = append(out, im)
	}
	return out, nil
}

func glStrategyName(raw json.RawMessage) string {
	var s struct {
		Type    string   `json:"type_"`
		Rate    *float64 `json:"rate"`
		Streams *int     `json:"streams"`
	}
	_ = json.Unmarshal(raw, &s)
	switch {
	case s.Rate != nil:
		return fmt.Sprintf("%s@%g req/s", s.Type, *s.Rate)
	case s.Streams != nil:
		return fmt.Sprintf("%s x%d", s.Type, *s.Streams)
	}
	return s.Type
}

func glOne(path string, data []byte, bi int, b *glBenchmark) (*imported, error) {
	field := fmt.Sprintf("benchmarks[%d]", bi)
	bad := func(f, format string, args ...any) error {
		return &FormatError{Path: path, Field: field + "." + f, Reason: fmt.Sprintf(format, args...)}
	}
	if b.Requests == nil {
		return nil, bad("requests", "missing: the per-request timings are needed")
	}
	if len(b.RequestSamples) > 0 && string(b.RequestSamples) != "null" {
		return nil, bad("request_samples", "the report keeps a sample of the requests (--output-sampling): rates over the window cannot be computed from a sample; rerun without sampling")
	}
	if t := b.RequestTotals; t != nil {
		// The report's own totals: the requests listed must be all of them, or the rates
		// over the window come out as low as the list is short.
		for _, c := range []struct {
			name        string
			total, list int
		}{{"successful", t.Successful, len(b.Requests.Successful)}, {"errored", t.Errored, len(b.Requests.Errored)}, {"incomplete", t.Incomplete, len(b.Requests.Incomplete)}} {
			if c.total != c.list {
				effect := "no goodput could be measured"
				if c.list > 0 {
					effect = fmt.Sprintf("goodput over the window would come out %d× low", c.total/c.list)
				}
				return nil, bad("requests."+c.name, "lists %d request(s) while the report's request_totals.%s says %d: the report keeps only some of its requests (stripped or sampled), and %s; save the report with every request", c.list, c.name, c.total, effect)
			}
		}
	}
	var worker glWorker
	if err := json.Unmarshal(b.Worker, &worker); err != nil || worker.BackendModel == "" {
		return nil, bad("worker.backend_model", "missing: the model is part of the workload's identity")
	}
	var strat struct {
		Type string `json:"type_"`
	}
	if json.Unmarshal(b.Args.Strategy, &strat) != nil || strat.Type == "" {
		return nil, bad("args.strategy.type_", "missing")
	}

	type entry struct {
		r      *glRequest
		status string
		idx    int
	}
	var all []entry
	for i := range b.Requests.Successful {
		all = append(all, entry{&b.Requests.Successful[i], "successful", i})
	}
	for i := range b.Requests.Errored {
		all = append(all, entry{&b.Requests.Errored[i], "errored", i})
	}
	if len(all) == 0 {
		return nil, bad("requests.successful", "no requests")
	}
	// The epoch is the earliest scheduled or actual start.
	t0 := math.Inf(1)
	targeted := true
	for _, e := range all {
		f := fmt.Sprintf("requests.%s[%d]", e.status, e.idx)
		if e.r.StartTime == nil || e.r.EndTime == nil {
			return nil, bad(f+".start_time", "missing")
		}
		if e.r.PromptTokens == nil {
			return nil, bad(f+".prompt_tokens", "missing")
		}
		if e.status == "successful" && (e.r.FirstToken == nil || e.r.LastToken == nil || e.r.OutputTokens == nil) {
			return nil, bad(f+".first_token_time", "missing on a successful request")
		}
		t0 = min(t0, *e.r.StartTime)
		if ts := e.r.SchedulerInfo.TargetedStart; ts != nil && *ts > 0 {
			t0 = min(t0, *ts)
		} else {
			targeted = false
		}
	}
	t0 = min(t0, b.StartTime)
	at := func(t float64) int64 { return us(t - t0) }

	im := &imported{
		model: worker.BackendModel, start: time.Unix(0, int64(t0*1e9)),
		env: map[string]string{"engine.name": worker.BackendType},
	}
	// The window opens at the earliest scheduled start (slogate measures from the
	// schedule) and closes with the last request.
	im.window = result.Window{StartUS: 0, EndUS: at(b.EndTime)}
	im.mode = "open"
	switch strat.Type {
	case "synchronous", "concurrent", "throughput":
		im.mode = "closed"
		im.notes = append(im.notes, "guidellm "+strat.Type+" strategy: latency at a fixed concurrency; it hides queueing")
	default:
		im.openLoop = targeted
	}
	im.src = result.Source{
		Tool: ToolGuideLLM, Format: GuideLLMFormat, File: path, SHA256: sha(data), TTFTFrom: "sched",
		Unavailable: []string{
			"itl: guidellm keeps the first and last token times of a request, not its chunks",
			"output_target: guidellm records no requested output lengths per request",
			"kv_concurrency: the report has no KV capacity",
			"server_metrics: the report has no engine metrics",
		},
	}
	if !targeted {
		im.src.TTFTFrom = "send"
		im.src.Unavailable = append(im.src.Unavailable, "dispatch_lag: some requests have no scheduler_info.targeted_start_time; TTFT and E2E are measured from the send")
	}
	if n := len(b.Requests.Incomplete); n > 0 {
		im.notes = append(im.notes, fmt.Sprintf("%d incomplete requests (cut off when the benchmark ended) are not measured", n))
	}
	im.identity = map[string]any{
		"strategy":       canonical(b.Args.Strategy),
		"max_number":     b.Args.MaxNum,
		"max_duration":   b.Args.MaxDur,
		"warmup":         []any{b.Args.WarmN, b.Args.WarmD},
		"cooldown":       []any{b.Args.CoolN, b.Args.CoolD},
		"request_loader": canonical(b.RequestLoader),
		"backend_type":   worker.BackendType,
		"model":          worker.BackendModel,
	}
	// Requests in order of their start.
	slices.SortStableFunc(all, func(x, y entry) int {
		switch {
		case *x.r.StartTime < *y.r.StartTime:
			return -1
		case *x.r.StartTime > *y.r.StartTime:
			return 1
		}
		return 0
	})
	types := map[string]bool{}
	for i, e := range all {
		r := e.r
		types[r.RequestType] = true
		q := result.Request{I: i, SendUS: at(*r.StartTime), EndUS: at(*r.EndTime), PromptTokens: *r.PromptTokens, PromptTarget: *r.PromptTokens}
		q.SchedUS = q.SendUS
		if ts := r.SchedulerInfo.TargetedStart; targeted && ts != nil {
			q.SchedUS = min(at(*ts), q.SendUS)
		}
		if r.OutputTokens != nil {
			q.OutputTokens = *r.OutputTokens
		}
		if r.FirstToken != nil && r.LastToken != nil && q.OutputTokens > 0 {
			q.FirstUS = max(at(*r.FirstToken), 1)
			q.LastUS = max(at(*r.LastToken), q.FirstUS)
		}
		if e.status == "errored" {
			q.Error, q.ErrorDetail = errorReason(r.Error, 0), detail(r.Error)
		} else if q.FirstUS == 0 {
			q.Error, q.ErrorDetail = "no_content", "guidellm recorded no output token"
		} else {
			q.Finish = "stop"
		}
		im.reqs = append(im.reqs, q)
	}
	switch {
	case types["chat_completions"] && !types["text_completions"]:
		im.api = "chat"
	case types["text_completions"] && !types["chat_completions"]:
		im.api = "completions"
	}
	im.identity["api"] = im.api
	return im, nil
}

// glLaterShape says whether a report is the later shape (guidellm 0.5 and after), by its
// metadata.guidellm_version, and which version wrote it.
func glLaterShape(top map[string]json.RawMessage) (bool, string) {
	var md struct {
		Version         *int   `json:"version"`
		GuideLLMVersion string `json:"guidellm_version"`
	}
	if raw, ok := top["metadata"]; !ok || json.Unmarshal(raw, &md) != nil || md.GuideLLMVersion == "" || md.Version == nil {
		return false, ""
	}
	return *md.Version >= 1 && *md.Version <= 2, md.GuideLLMVersion
}

// glLaterRequest is a request of the later report shape.
type glLaterRequest struct {
	RequestArgs  string `json:"request_args"`
	PromptTokens *int   `json:"prompt_tokens"`
	OutputTokens *int   `json:"output_tokens"`
	Info         struct {
		Error   *string `json:"error"`
		Timings struct {
			TargetedStart *float64 `json:"targeted_start"`
			RequestStart  *float64 `json:"request_start"`
			FirstToken    *float64 `json:"first_token_iteration"`
			LastToken     *float64 `json:"last_token_iteration"`
			RequestEnd    *float64 `json:"request_end"`
		} `json:"timings"`
	} `json:"info"`
}

// glFromLater reads a benchmark of the later shape into the earlier one's fields, each
// by its meaning: the strategy, backend model and request loader from its config, the
// window from scheduler_metrics, each request's times from its info.timings.
func glFromLater(raw json.RawMessage, b *glBenchmark) error {
	var l struct {
		Type   string          `json:"type_"`
		Config json.RawMessage `json:"config"`
		Window struct {
			Start float64 `json:"measure_start_time"`
			End   float64 `json:"measure_end_time"`
		} `json:"scheduler_metrics"`
		StartTime float64 `json:"start_time"`
		EndTime   float64 `json:"end_time"`
		Metrics   struct {
			Totals *struct {
				Successful, Incomplete, Errored int
			} `json:"request_totals"`
		} `json:"metrics"`
		Requests *struct {
			Successful []glLaterRequest `json:"successful"`
			Incomplete []glLaterRequest `json:"incomplete"`
			Errored    []glLaterRequest `json:"errored"`
		} `json:"requests"`
	}
	var cfg struct {
		Strategy json.RawMessage `json:"strategy"`
		Requests json.RawMessage `json:"requests"`
		Backend  struct {
			Type  string `json:"type_"`
			Model string `json:"model"`
		} `json:"backend"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	if len(l.Config) > 0 {
		if err := json.Unmarshal(l.Config, &cfg); err != nil {
			return err
		}
	}
	b.laterConfig = l.Config
	b.Type, b.Args.Strategy, b.RequestLoader = l.Type, cfg.Strategy, cfg.Requests
	b.StartTime, b.EndTime = cmp.Or(l.Window.Start, l.StartTime), cmp.Or(l.Window.End, l.EndTime)
	w, _ := json.Marshal(glWorker{BackendType: cmp.Or(cfg.Backend.Type, "openai_http"), BackendModel: cfg.Backend.Model})
	b.Worker = w
	b.RequestTotals = l.Metrics.Totals
	if l.Requests == nil {
		return nil
	}
	conv := func(rs []glLaterRequest) []glRequest {
		out := make([]glRequest, len(rs))
		for i, r := range rs {
			t := r.Info.Timings
			q := glRequest{PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens, StartTime: t.RequestStart, EndTime: t.RequestEnd, FirstToken: t.FirstToken, LastToken: t.LastToken}
			q.SchedulerInfo.TargetedStart = t.TargetedStart
			if r.Info.Error != nil {
				q.Error = *r.Info.Error
			}
			// The request's body says which API it called.
			switch {
			case strings.Contains(r.RequestArgs, `"messages"`):
				q.RequestType = "chat_completions"
			case strings.Contains(r.RequestArgs, `"prompt"`):
				q.RequestType = "text_completions"
			}
			out[i] = q
		}
		return out
	}
	b.Requests = &struct {
		Successful []glRequest `json:"successful"`
		Incomplete []glRequest `json:"incomplete"`
		Errored    []glRequest `json:"errored"`
	}{conv(l.Requests.Successful), conv(l.Requests.Incomplete), conv(l.Requests.Errored)}
	return nil
}
