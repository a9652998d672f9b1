package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/slogate/slogate/result"
)

// AIPerfFormat is the AIPerf shape read: profile_export.jsonl records (MetricRecordInfo:
// metadata.request_start_ns, request_end_ns, benchmark_phase; metrics.ttft,
// inter_chunk_latency, input_sequence_length, output_sequence_length, each {value,
// unit}; error {code, type, message}), as docs/tutorials/working-with-profile-exports.md
// documents them at commit e51cbbaf65a6 of ai-dynamo/aiperf, with the summary
// profile_export_aiperf.json beside it (JsonExportData, schema_version 1.3, which
// carries aiperf_version and input_config).
const AIPerfFormat = "aiperf profile_export.jsonl + profile_export_aiperf.json schema 1.3, docs@e51cbbaf65a6"

// AIPerfSummaryName is the summary file read beside profile_export.jsonl.
const AIPerfSummaryName = "profile_export_aiperf.json"

// aiperfSchemas are the summary schema versions this tool reads.
var aiperfSchemas = []string{"1.3"}

type apValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

type apRecord struct {
	Metadata *struct {
		SessionNum     *int    `json:"session_num"`
		RequestStartNS *int64  `json:"request_start_ns"`
		RequestEndNS   *int64  `json:"request_end_ns"`
		Phase          *string `json:"benchmark_phase"`
		WasCancelled   bool    `json:"was_cancelled"`
		TimestampNS    *int64  `json:"timestamp_ns"` // the earlier shape
	} `json:"metadata"`
	Metrics map[string]apValue `json:"metrics"`
	Error   *struct {
		Code    int    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type apSummary struct {
	SchemaVersion *string         `json:"schema_version"`
	AIPerfVersion string          `json:"aiperf_version"`
	InputConfig   json.RawMessage `json:"input_config"`
	Duration      *struct {
		Avg  float64 `json:"avg"`
		Unit string  `json:"unit"`
	} `json:"benchmark_duration"`
	StartTime string `json:"start_time"`
}

func parseAIPerf(path string, data []byte, readBeside func(string) ([]byte, error)) ([]*imported, error) {
	sumData, err := readBeside(AIPerfSummaryName)
	if err != nil {
		return nil, &FormatError{Path: path, Reason: fmt.Sprintf("the summary %s beside it cannot be read (%v): it holds the AIPerf version and the benchmark's configuration, which the workload identity needs", AIPerfSummaryName, err)}
	}
	sumPath := filepath.Join(filepath.Dir(path), AIPerfSummaryName)
	var sum apSummary
	if err := json.Unmarshal(sumData, &sum); err != nil {
		return nil, jsonError(sumPath, sumData, 0, err)
	}
	switch {
	case sum.SchemaVersion == nil:
		return nil, &FormatError{Path: sumPath, Field: "schema_version", Reason: fmt.Sprintf("missing: an AIPerf summary older than schema %q, which this tool reads", aiperfSchemas)}
	case !slices.Contains(aiperfSchemas, *sum.SchemaVersion):
		return nil, &FormatError{Path: sumPath, Field: "schema_version", Reason: fmt.Sprintf("%q: this tool reads AIPerf summary schema %q; a newer AIPerf changed the export", *sum.SchemaVersion, aiperfSchemas)}
	case len(sum.InputConfig) == 0 || string(sum.InputConfig) == "null":
		return nil, &FormatError{Path: sumPath, Field: "input_config", Reason: "missing: the benchmark's configuration is the workload's identity"}
	case sum.Duration == nil || !(sum.Duration.Avg > 0):
		return nil, &FormatError{Path: sumPath, Field: "benchmark_duration.avg", Reason: "missing or not positive: the measured window is needed"}
	}
	durS := sum.Duration.Avg
	switch sum.Duration.Unit {
	case "sec", "s":
	case "ms":
		durS /= 1e3
	case "ns":
		durS /= 1e9
	default:
		return nil, &FormatError{Path: sumPath, Field: "benchmark_duration.unit", Reason: fmt.Sprintf("%q: expected sec, ms or ns", sum.Duration.Unit)}
	}

	type parsed struct {
		line int
		rec  apRecord
	}
	var recs []parsed
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line, warm := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r apRecord
		if err := json.Unmarshal(b, &r); err != nil {
			fe := jsonError(path, b, 0, err)
			fe.Line = line
			return nil, fe
		}
		bad := func(field, format string, args ...any) error {
			return &FormatError{Path: path, Line: line, Field: field, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case r.Metadata == nil:
			return nil, bad("metadata", "missing: not an AIPerf profile_export.jsonl record (%s)", AIPerfFormat)
		case r.Metadata.RequestStartNS == nil && r.Metadata.TimestampNS != nil:
			return nil, bad("metadata.timestamp_ns", "the earlier AIPerf record shape (timestamp_ns, credit_phase); this tool reads metadata.request_start_ns and request_end_ns (%s)", AIPerfFormat)
		case r.Metadata.RequestStartNS == nil:
			return nil, bad("metadata.request_start_ns", "missing")
		case r.Metadata.RequestEndNS == nil:
			return nil, bad("metadata.request_end_ns", "missing")
		}
		if p := r.Metadata.Phase; p != nil && *p != "profiling" {
			warm++
			continue
		}
		recs = append(recs, parsed{line, r})
	}
	if err := sc.Err(); err != nil {
		return nil, &FormatError{Path: path, Line: line + 1, Reason: err.Error()}
	}
	if len(recs) == 0 {
		return nil, &FormatError{Path: path, Reason: "no profiling records"}
	}
	slices.SortStableFunc(recs, func(x, y parsed) int {
		return cmpInt64(*x.rec.Metadata.RequestStartNS, *y.rec.Metadata.RequestStartNS)
	})
	t0 := *recs[0].rec.Metadata.RequestStartNS
	at := func(ns int64) int64 { return int64(math.Round(float64(ns-t0) / 1e3)) }

	im := &imported{
		start: time.Unix(0, t0), window: result.Window{StartUS: 0, EndUS: us(durS)},
		env: map[string]string{},
	}
	im.src = result.Source{
		Tool: ToolAIPerf, ToolVersion: sum.AIPerfVersion, Format: AIPerfFormat, File: path,
		SHA256: sha(data) + " " + AIPerfSummaryName + ":" + sha(sumData), TTFTFrom: "send",
		Unavailable: []string{
			"dispatch_lag: AIPerf records when a request was sent, not when it was scheduled; TTFT and E2E are measured from the send",
			"output_target: the records hold no requested output lengths",
			"kv_concurrency: the export has no KV capacity",
			"server_metrics: not read from the export",
		},
	}
	if warm > 0 {
		im.notes = append(im.notes, fmt.Sprintf("%d records outside the profiling phase (warm-up) are not measured", warm))
	}
	cfg := canonical(sum.InputConfig, "url", "urls", "api_key", "cli_command", "output", "artifact_directory", "verbose", "extra_verbose", "ui_type", "log_level")
	im.identity = map[string]any{"input_config": cfg}
	var ic struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
			Type       string   `json:"type"`
		} `json:"endpoint"`
		Loadgen map[string]json.RawMessage `json:"loadgen"`
	}
	_ = json.Unmarshal(sum.InputConfig, &ic)
	if len(ic.Endpoint.ModelNames) > 0 {
		im.model = ic.Endpoint.ModelNames[0]
	}
	im.api = ic.Endpoint.Type
	im.mode = "open"
	if _, ok := ic.Loadgen["request_rate"]; !ok {
		im.mode = "closed"
		im.notes = append(im.notes, "AIPerf ran at a fixed concurrency: latency at that concurrency; it hides queueing")
	}

	for i, p := range recs {
		r := p.rec
		bad := func(field, format string, args ...any) error {
			return &FormatError{Path: path, Line: p.line, Field: field, Reason: fmt.Sprintf(format, args...)}
		}
		q := result.Request{I: i, SendUS: at(*r.Metadata.RequestStartNS), EndUS: at(*r.Metadata.RequestEndNS)}
		q.SchedUS = q.SendUS
		num := func(name string) (float64, bool, error) {
			v, ok := r.Metrics[name]
			if !ok {
				return 0, false, nil
			}
			var f float64
			if err := json.Unmarshal(v.Value, &f); err != nil {
				return 0, false, bad("metrics."+name+".value", "%s: a number is expected", v.Value)
			}
			s, err := scaleMS(v.Unit, name)
			if err != nil {
				return 0, false, bad("metrics."+name+".unit", "%v", err)
			}
			return f * s, true, nil
		}
		tokens := func(names ...string) (int, error) {
			for _, n := range names {
				if v, ok := r.Metrics[n]; ok {
					var f float64
					if err := json.Unmarshal(v.Value, &f); err != nil {
						return 0, bad("metrics."+n+".value", "%s: a number is expected", v.Value)
					}
					return int(math.Round(f)), nil
				}
			}
			return 0, nil
		}
		var err error
		if q.PromptTokens, err = tokens("input_sequence_length", "error_isl"); err != nil {
			return nil, err
		}
		q.PromptTarget = q.PromptTokens
		if r.Error != nil || r.Metadata.WasCancelled {
			if r.Error != nil {
				q.Error, q.ErrorDetail = errorReason(r.Error.Type+" "+r.Error.Message, r.Error.Code), detail(r.Error.Type+": "+r.Error.Message)
			} else {
				q.Error = "canceled"
			}
			im.reqs = append(im.reqs, q)
			continue
		}
		// output_sequence_length counts reasoning tokens too, as a server's usage does.
		if q.OutputTokens, err = tokens("output_sequence_length", "output_token_count"); err != nil {
			return nil, err
		}
		ttft, ok, err := num("ttft")
		if err != nil {
			return nil, err
		}
		if !ok {
			q.Error, q.ErrorDetail = "no_content", "AIPerf recorded no ttft"
			im.reqs = append(im.reqs, q)
			continue
		}
		q.FirstUS = max(q.SendUS+int64(math.Round(ttft*1e3)), 1)
		q.LastUS = q.FirstUS
		if v, ok := r.Metrics["inter_chunk_latency"]; ok {
			var gaps []float64
			if err := json.Unmarshal(v.Value, &gaps); err != nil {
				return nil, bad("metrics.inter_chunk_latency.value", "a list of numbers is expected")
			}
			s, err := scaleMS(v.Unit, "inter_chunk_latency")
			if err != nil {
				return nil, bad("metrics.inter_chunk_latency.unit", "%v", err)
			}
			for _, g := range gaps {
				gu := int64(math.Round(g * s * 1e3))
				q.ITLUS = append(q.ITLUS, gu)
				q.LastUS += gu
			}
		}
		q.Chunks = len(q.ITLUS) + 1
		q.Finish = "stop"
		im.reqs = append(im.reqs, q)
	}
	return []*imported{im}, nil
}

// scaleMS is the factor that turns a value in unit into milliseconds.
func scaleMS(unit, name string) (float64, error) {
	switch unit {
	case "ms":
		return 1, nil
	case "ns":
		return 1e-6, nil
	case "us":
		return 1e-3, nil
	case "s", "sec":
		return 1e3, nil
	}
	return 0, fmt.Errorf("%q: expected ms, us, ns or sec for %s", unit, name)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
