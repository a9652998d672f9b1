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
// metadata.request_start_ns, request_end_ns, benchmark_phase; metrics.ttft (AIPerf
// 0.10.0: time_to_first_token), inter_chunk_latency, input_sequence_length,
// output_sequence_length, each {value, unit}; error {code, type, message}), as
// docs/tutorials/working-with-profile-exports.md documents them at commit e51cbbaf65a6 of
// ai-dynamo/aiperf, with the summary profile_export_aiperf.json beside it (JsonExportData,
// schema_version 1.3, which carries aiperf_version, input_config (the model under
// endpoint.model_names, or from 0.10.0 models.items[].name) and request_count).
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
		// The earlier shape (AIPerf of October 2025): when the request was sent, and
		// its phase; its end is the record's metrics.max_response_timestamp.
		TimestampNS *int64  `json:"timestamp_ns"`
		CreditPhase *string `json:"credit_phase"`
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
	// Records holds the metrics in the summary of AIPerf before schema_version
	// (October 2025): benchmark_duration, request_count and error_request_count among
	// them.
	Records map[string]json.RawMessage `json:"records"`
	// The summary's own counts: successful requests, and failed ones (absent when none
	// failed).
	RequestCount *struct {
		Avg float64 `json:"avg"`
	} `json:"request_count"`
	ErrorRequestCount *struct {
		Avg float64 `json:"avg"`
	} `json:"error_request_count"`
}

// aiperfTTFT are the names AIPerf has given time to first token in its records.
var aiperfTTFT = []string{"ttft", "time_to_first_token"}

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
	if sum.SchemaVersion == nil && sum.Records != nil {
		// Before schema_version: the summary's metrics sit under records.
		for name, into := range map[string]any{"benchmark_duration": &sum.Duration, "request_count": &sum.RequestCount, "error_request_count": &sum.ErrorRequestCount} {
			if raw, ok := sum.Records[name]; ok {
				if err := json.Unmarshal(raw, into); err != nil {
					return nil, &FormatError{Path: sumPath, Field: "records." + name, Reason: "an object {avg, unit} is expected"}
				}
			}
		}
		if sum.AIPerfVersion == "" {
			sum.AIPerfVersion = "before schema_version (records shape)"
		}
	}
	switch {
	case sum.SchemaVersion == nil && sum.Records == nil:
		return nil, &FormatError{Path: sumPath, Field: "schema_version", Reason: fmt.Sprintf("missing, and no records either: not an AIPerf summary this tool knows (schema %q, or the earlier records shape)", aiperfSchemas)}
	case sum.SchemaVersion != nil && !slices.Contains(aiperfSchemas, *sum.SchemaVersion):
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
		if md := r.Metadata; md != nil && md.RequestStartNS == nil && md.TimestampNS != nil {
			// The earlier record shape: sent at timestamp_ns (min_request_timestamp
			// where the record has it), ended at max_response_timestamp, or at once for
			// a request that failed before any response.
			start, end := *md.TimestampNS, *md.TimestampNS
			if v, ok := nsMetric(r.Metrics, "min_request_timestamp"); ok {
				start = v
			}
			end = max(end, start)
			if v, ok := nsMetric(r.Metrics, "max_response_timestamp"); ok {
				end = v
			}
			md.RequestStartNS, md.RequestEndNS, md.Phase = &start, &end, md.CreditPhase
		}
		switch {
		case r.Metadata == nil:
			return nil, bad("metadata", "missing: not an AIPerf profile_export.jsonl record (%s)", AIPerfFormat)
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
	// Where a run wrote its files, and how it logged, are not the benchmark: two runs of
	// one benchmark into two directories compare.
	cfg := canonical(sum.InputConfig, "url", "urls", "api_key", "cli_command", "output", "artifact_directory", "artifacts", "verbose", "extra_verbose", "ui_type", "log_level", "runtime")
	im.identity = map[string]any{"input_config": cfg}
	var ic struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
			Type       string   `json:"type"`
		} `json:"endpoint"`
		// From 0.10.0: the models, and the load as phases.
		Models struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		} `json:"models"`
		Loadgen map[string]json.RawMessage `json:"loadgen"`
		Phases  []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"phases"`
	}
	_ = json.Unmarshal(sum.InputConfig, &ic)
	switch {
	case len(ic.Endpoint.ModelNames) > 0:
		im.model = ic.Endpoint.ModelNames[0]
	case len(ic.Models.Items) > 0:
		im.model = ic.Models.Items[0].Name
	}
	im.api = ic.Endpoint.Type
	im.mode = "open"
	// Open only where the load says a rate: loadgen.request_rate, or (0.10.0) a
	// profiling phase of another type than concurrency.
	closed := ic.Loadgen["request_rate"] == nil
	for _, ph := range ic.Phases {
		if ph.Name == "profiling" {
			closed = ph.Type == "concurrency"
		}
	}
	if closed {
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
		var ttft float64
		var ok bool
		for _, name := range aiperfTTFT {
			if ttft, ok, err = num(name); err != nil {
				return nil, err
			}
			if ok {
				break
			}
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
	if err := checkAIPerfCounts(sumPath, &sum, im.reqs); err != nil {
		return nil, err
	}
	return []*imported{im}, nil
}

// checkAIPerfCounts holds the import to the summary's own counts: its request_count (the
// requests that succeeded) and error_request_count (those that failed), where it states
// them.
func checkAIPerfCounts(sumPath string, sum *apSummary, reqs []result.Request) error {
	ok, failed := 0, 0
	for _, q := range reqs {
		if q.Error == "" {
			ok++
		} else {
			failed++
		}
	}
	if c := sum.RequestCount; c != nil && int(math.Round(c.Avg)) != ok {
		why := ""
		if ok == 0 {
			why = fmt.Sprintf(" (every one of the %d records read as failed: their metrics name no time to first token this tool knows, %q)", len(reqs), aiperfTTFT)
		}
		return &FormatError{Path: sumPath, Field: "request_count.avg", Reason: fmt.Sprintf("%v successful requests, while %d records of profile_export.jsonl succeeded%s: the files disagree, and nothing is imported", c.Avg, ok, why)}
	}
	if c := sum.ErrorRequestCount; c != nil && int(math.Round(c.Avg)) != failed {
		return &FormatError{Path: sumPath, Field: "error_request_count.avg", Reason: fmt.Sprintf("%v failed requests, while %d records of profile_export.jsonl failed: the files disagree, and nothing is imported", c.Avg, failed)}
	}
	return nil
}

// nsMetric is a record's metric in nanoseconds (a timestamp), ok false when absent or
// not in ns.
func nsMetric(ms map[string]apValue, name string) (int64, bool) {
	v, ok := ms[name]
	if !ok || v.Unit != "ns" {
		return 0, false
	}
	var n int64
	if json.Unmarshal(v.Value, &n) == nil {
		return n, true
	}
	var f float64
	if json.Unmarshal(v.Value, &f) != nil {
		return 0, false
	}
	return int64(f), true
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
