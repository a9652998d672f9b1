package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const fixtures = "../testdata/import"

func testOptions(t *testing.T, cfg, name string) Options {
	t.Helper()
	f, err := workload.Load(filepath.Join(fixtures, cfg))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Workloads {
		if f.Workloads[i].Name == name {
			return Options{Config: f, Workload: &f.Workloads[i], Hardware: "imported", ToolVersion: "test", Benchmark: -1}
		}
	}
	t.Fatalf("no workload %q", name)
	return Options{}
}

func importFile(t *testing.T, tool, rel string, opt Options) ([]*result.Record, error) {
	t.Helper()
	path := filepath.Join(fixtures, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	beside := func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(filepath.Dir(path), n)) }
	return Import(tool, path, data, beside, opt)
}

func mustImport(t *testing.T, tool, rel string, opt Options) *result.Record {
	t.Helper()
	recs, err := importFile(t, tool, rel, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%s: %d records, want 1", rel, len(recs))
	}
	return recs[0]
}

// fixtureJSON reads the fixture rel and decodes it into v; it returns the file's bytes.
func fixtureJSON(t *testing.T, rel string, v any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	return data
}

// sent are the means over a record's successful requests of TTFT and E2E from the send
// (ms), and the count and sum (ms) of their gaps between chunks: what the peers' own
// summaries state.
type sent struct {
	ttft, e2e, gapSum float64
	gaps              int
}

// wantFormatError checks that err is a *FormatError whose message says each of wants,
// and returns it (nil when it is not one).
func wantFormatError(t *testing.T, err error, wants ...string) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("error %v, want a *FormatError", err)
		return nil
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	return fe
}

func sentOf(rec *result.Record) sent {
	var s sent
	n := 0
	for _, q := range rec.Requests {
		if q.Error != "" {
			continue
		}
		n++
		s.ttft += float64(q.FirstUS-q.SendUS) / 1e3
		s.e2e += float64(q.EndUS-q.SendUS) / 1e3
		for _, g := range q.ITLUS {
			s.gapSum += float64(g) / 1e3
			s.gaps++
		}
	}
	s.ttft, s.e2e = s.ttft/float64(n), s.e2e/float64(n)
	return s
}

func TestImportVLLM(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	rec := mustImport(t, ToolVLLM, "vllm/candidate.json", opt)

	var raw struct {
		TTFTs  []float64   `json:"ttfts"`
		ITLs   [][]float64 `json:"itls"`
		Errors []string    `json:"errors"`
		Dur    float64     `json:"duration"`
	}
	data, _ := os.ReadFile(filepath.Join(fixtures, "vllm/candidate.json"))
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if rec.Summary.Requests != len(raw.TTFTs) || rec.Summary.Requests-rec.Summary.Completed != 3 {
		t.Fatalf("requests %d completed %d, want %d and 3 errors", rec.Summary.Requests, rec.Summary.Completed, len(raw.TTFTs))
	}
	// The traceback ends with a timeout; "Service Unavailable" is an HTTP reason phrase.
	if rec.Summary.Errors["timeout"] != 1 || rec.Summary.Errors["error"] != 2 {
		t.Errorf("errors %v, want 1 timeout and 2 error", rec.Summary.Errors)
	}
	if d := rec.Requests[7].ErrorDetail; !strings.Contains(d, "ServerTimeoutError") {
		t.Errorf("request 7 detail %q: want the traceback's last line", d)
	}
	q := rec.Requests[0]
	var sum int64
	for _, g := range raw.ITLs[0] {
		sum += int64(math.Round(g * 1e6))
	}
	if q.FirstUS != int64(math.Round(raw.TTFTs[0]*1e6)) || q.LastUS != q.FirstUS+sum || q.SchedUS != 0 || len(q.ITLUS) != len(raw.ITLs[0]) {
		t.Errorf("request 0 timeline %+v", q)
	}
	if got, want := rec.Summary.DurationS, raw.Dur; math.Abs(got-want) > 1e-6 {
		t.Errorf("duration %v, want the file's %v", got, want)
	}
	src := rec.Source
	if src == nil || src.Tool != ToolVLLM || src.ToolVersion != "0.11.0" || src.TTFTFrom != "send" || len(src.SHA256) != 64 {
		t.Fatalf("source %+v", src)
	}
	if _, ok := src.Lacks("dispatch_lag"); !ok {
		t.Error("vLLM has no scheduled times: dispatch_lag must be unavailable")
	}
	if rec.Summary.InFlight != (result.InFlight{}) {
		t.Errorf("in flight %+v: without send times it is unknown, not computed", rec.Summary.InFlight)
	}
	if rec.Environment["import.tool"] != "vllm" || rec.Environment["model.id"] != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("environment %v", rec.Environment)
	}
}

func TestImportGuideLLM(t *testing.T) {
	opt := testOptions(t, "guidellm.yaml", "guidellm-chat")
	opt.Benchmark = 1
	rec := mustImport(t, ToolGuideLLM, "guidellm/candidate.json", opt)
	if rec.Summary.Requests != 120 || rec.Summary.Requests-rec.Summary.Completed != 2 {
		t.Fatalf("requests %d completed %d", rec.Summary.Requests, rec.Summary.Completed)
	}
	if rec.Summary.Errors["http_503"]+rec.Summary.Errors["error"] != 1 || rec.Summary.Errors["timeout"] != 1 {
		t.Errorf("errors %v", rec.Summary.Errors)
	}
	// Scheduled times come from scheduler_info.targeted_start_time: TTFT from schedule.
	if rec.Source.TTFTFrom != "sched" || !strings.Contains(rec.Source.Benchmark, "constant@4") {
		t.Errorf("source %+v", rec.Source)
	}
	lagged := 0
	for _, q := range rec.Requests {
		if q.SendUS-q.SchedUS == 200 {
			lagged++
		}
	}
	if lagged != len(rec.Requests) {
		t.Errorf("%d of %d requests sent 200 µs after their schedule, as the fixture has them", lagged, len(rec.Requests))
	}
	if rec.Summary.ClientSaturated || rec.Summary.DispatchLagms.P99 < 0.19 || rec.Summary.DispatchLagms.P99 > 0.21 {
		t.Errorf("dispatch lag %+v", rec.Summary.DispatchLagms)
	}
	if _, ok := rec.Source.Lacks("itl"); !ok || rec.Summary.ITLms.Count != 0 {
		t.Error("guidellm keeps no chunk gaps: itl must be unavailable and empty")
	}
	if rec.Summary.TPOTms.Count == 0 {
		t.Error("TPOT is computable from first and last token times")
	}
	// Benchmark 0 is another rate: another workload identity.
	opt.Benchmark = 0
	other := mustImport(t, ToolGuideLLM, "guidellm/candidate.json", opt)
	if other.WorkloadHash == rec.WorkloadHash {
		t.Error("benchmarks at 2 and 4 req/s share a workload hash")
	}
}

func TestImportAIPerf(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "aiperf-chat")
	rec := mustImport(t, ToolAIPerf, "aiperf/candidate/profile_export.jsonl", opt)
	if rec.Summary.Requests != 120 || rec.Summary.Errors["http_503"] != 1 || rec.Summary.Errors["canceled"] != 1 {
		t.Fatalf("requests %d errors %v", rec.Summary.Requests, rec.Summary.Errors)
	}
	if rec.Source.ToolVersion != "0.5.0" || rec.Source.TTFTFrom != "send" || !strings.Contains(rec.Source.SHA256, AIPerfSummaryName+":") {
		t.Errorf("source %+v", rec.Source)
	}
	// Send times are known: requests are 250 ms apart and the in-flight count is measured.
	if d := rec.Requests[1].SendUS - rec.Requests[0].SendUS; d != 250000 {
		t.Errorf("send gap %d µs, want 250000", d)
	}
	if rec.Summary.InFlight.Mean <= 0 {
		t.Errorf("in flight %+v", rec.Summary.InFlight)
	}
	if rec.Model != "meta-llama/Llama-3.1-8B-Instruct" || rec.API != "chat" || rec.Mode != "open" {
		t.Errorf("model %q api %q mode %q", rec.Model, rec.API, rec.Mode)
	}
}

// TestIdentity: two imports of one benchmark share a hash; a changed benchmark, or
// another SLO, has another.
func TestIdentity(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	base := mustImport(t, ToolVLLM, "vllm/baseline.json", opt)
	for _, rel := range []string{"vllm/candidate.json", "vllm/regressed.json"} {
		if r := mustImport(t, ToolVLLM, rel, opt); r.WorkloadHash != base.WorkloadHash {
			t.Errorf("%s: hash %s, baseline %s: the same benchmark", rel, r.WorkloadHash, base.WorkloadHash)
		}
	}
	data, _ := os.ReadFile(filepath.Join(fixtures, "vllm/baseline.json"))
	changed := bytes.Replace(data, []byte(`"request_rate": 4.0`), []byte(`"request_rate": 8.0`), 1)
	if bytes.Equal(changed, data) {
		t.Fatal("fixture has no request_rate 4.0")
	}
	recs, err := Import(ToolVLLM, "changed.json", changed, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].WorkloadHash == base.WorkloadHash {
		t.Error("a changed request rate kept the hash")
	}
	w := *opt.Workload
	w.SLO.Targets = append([]workload.SLOTarget(nil), w.SLO.Targets...)
	w.SLO.Targets[0].Limit = time.Second
	opt.Workload = &w
	if r := mustImport(t, ToolVLLM, "vllm/baseline.json", opt); r.WorkloadHash == base.WorkloadHash {
		t.Error("another SLO kept the hash: goodput would be compared across SLOs")
	}
}

// TestRefused: files in other shapes are refused, naming the file, line where known,
// and field.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		tool, rel, cfg, name string
		want                 []string
	}{
		// A key vLLM's serve.py does not write, with a non-string value: a newer shape.
		{ToolVLLM, "vllm/unsupported.json", "slogate.yaml", "vllm-chat", []string{"unsupported.json:1: ", "request_start_times", "newer vLLM"}},
		// Saved without --save-detailed: no per-request arrays.
		{ToolVLLM, "vllm/no-detailed.json", "slogate.yaml", "vllm-chat", []string{"no-detailed.json:1: ttfts", "--save-detailed"}},
		// Another tool's file.
		{ToolVLLM, "guidellm/baseline.json", "slogate.yaml", "vllm-chat", []string{"date: missing"}},
		// The later guidellm report shape.
		{ToolGuideLLM, "guidellm/unsupported.json", "guidellm.yaml", "guidellm-chat", []string{"unsupported.json: benchmarks[0].config:", "later guidellm benchmark shape", "no metadata.guidellm_version"}},
		// Several benchmarks and none chosen: list them.
		{ToolGuideLLM, "guidellm/baseline.json", "guidellm.yaml", "guidellm-chat", []string{"2 benchmarks", "0: constant@2 req/s", "1: constant@4 req/s", "--benchmark"}},
		// A newer AIPerf summary schema.
		{ToolAIPerf, "aiperf/unsupported/profile_export.jsonl", "slogate.yaml", "aiperf-chat", []string{"unsupported/profile_export_aiperf.json: schema_version: \"2.0\""}},
		// No summary beside the records.
		{ToolAIPerf, "vllm/baseline.json", "slogate.yaml", "aiperf-chat", []string{"profile_export_aiperf.json beside it cannot be read"}},
	} {
		_, err := importFile(t, c.tool, c.rel, testOptions(t, c.cfg, c.name))
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s %s: error %v, want a *FormatError", c.tool, c.rel, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: %q does not say %q", c.tool, c.rel, err, w)
			}
		}
	}
}

// TestAIPerfBadLine: a broken record names its line.
func TestAIPerfBadLine(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "aiperf-chat")
	path := filepath.Join(fixtures, "aiperf/baseline/profile_export.jsonl")
	data, _ := os.ReadFile(path)
	lines := bytes.SplitN(data, []byte("\n"), 4)
	lines[2] = bytes.Replace(lines[2], []byte(`"unit":"ms"`), []byte(`"unit":"fortnights"`), 1)
	broken := bytes.Join(lines, []byte("\n"))
	beside := func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(filepath.Dir(path), n)) }
	_, err := Import(ToolAIPerf, path, broken, beside, opt)
	if err == nil || !strings.Contains(err.Error(), "profile_export.jsonl:3: metrics.ttft.unit: \"fortnights\"") {
		t.Errorf("error %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite the golden records in testdata/import/golden")

// TestGolden: the record each importer writes for its candidate fixture, byte for byte
// (go test ./interop -update rewrites them after an intended change). The schemas
// package validates these files as committed records.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		tool, rel, cfg, workload string
		bench                    int
	}{
		{ToolVLLM, "vllm/candidate.json", "slogate.yaml", "vllm-chat", -1},
		{ToolGuideLLM, "guidellm/candidate.json", "guidellm.yaml", "guidellm-chat", 1},
		{ToolAIPerf, "aiperf/candidate/profile_export.jsonl", "slogate.yaml", "aiperf-chat", -1},
	} {
		opt := testOptions(t, c.cfg, c.workload)
		opt.Benchmark = c.bench
		got, err := result.Marshal(mustImport(t, c.tool, c.rel, opt))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join(fixtures, "golden", c.tool+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./interop -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the import differs from %s (go test ./interop -update after an intended change)", c.rel, golden)
		}
	}
}

// TestVLLMAppended: --append-result writes one JSON object a line; each is a record,
// and says which one it is.
func TestVLLMAppended(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	a, _ := os.ReadFile(filepath.Join(fixtures, "vllm/baseline.json"))
	b, _ := os.ReadFile(filepath.Join(fixtures, "vllm/candidate.json"))
	recs, err := Import(ToolVLLM, "appended.json", bytes.Join([][]byte{a, b}, []byte("\n")), nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Source.Benchmark != "result 1 of 2" || recs[1].Summary.Completed != 117 {
		t.Fatalf("%d records; first %+v", len(recs), recs[0].Source)
	}
	// A broken second object is named by its line.
	_, err = Import(ToolVLLM, "appended.json", bytes.Join([][]byte{a, []byte(`{"date": 7}`)}, []byte("\n")), nil, opt)
	if err == nil || !strings.Contains(err.Error(), "appended.json:2: ") {
		t.Errorf("error %v; want it to name line 2", err)
	}
}

// TestPythonNonFinite: Python's json.dump writes NaN and Infinity bare; such a file is
// read (the values as null, counted in a note), and its SHA-256 is of the bytes given.
func TestPythonNonFinite(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	data, _ := os.ReadFile(filepath.Join(fixtures, "vllm/baseline.json"))
	odd := bytes.Replace(data, []byte(`"burstiness": 1.0`), []byte(`"burstiness": Infinity`), 1)
	odd = bytes.Replace(odd, []byte(`"std_itl_ms": 3.0`), []byte(`"std_itl_ms": NaN`), 1)
	odd = bytes.Replace(odd, []byte(`"vllm_version": "0.11.0"`), []byte(`"vllm_version": "NaN-build"`), 1)
	if bytes.Equal(odd, data) {
		t.Fatal("fixture changed: nothing replaced")
	}
	recs, err := Import(ToolVLLM, "odd.json", odd, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if r.Source.SHA256 != sha(odd) || r.Source.ToolVersion != "NaN-build" {
		t.Errorf("sha %s version %q", r.Source.SHA256, r.Source.ToolVersion)
	}
	if !slices.Contains(r.Notes, "2 non-finite numbers (NaN, Infinity) in the file were read as null") {
		t.Errorf("notes %q", r.Notes)
	}
	if _, err := result.Marshal(r); err != nil {
		t.Errorf("record does not encode: %v", err)
	}
}

// TestImportAIPerf0100: the real AIPerf 0.10.0 export (time_to_first_token, the model
// under models.items, the load as phases) imports as AIPerf's own summary states it: 10
// successful requests, their mean TTFT and E2E, the 2,780 gaps between chunks and their
// sum, the model; a second run of the benchmark into another directory keeps the hash.
func TestImportAIPerf0100(t *testing.T) {
	opt := testOptions(t, "peers.yaml", "aiperf-chatbot")
	rec := mustImport(t, ToolAIPerf, "peers/aiperf_0.10.0_chatbot/profile_export.jsonl", opt)
	var sum struct {
		TTFTRaw     struct{ Avg float64 }        `json:"time_to_first_token"`
		E2ERaw      struct{ Avg float64 }        `json:"request_latency"`
		InterChunk  struct{ Count, Sum float64 } `json:"inter_chunk_latency"`
		RequestsRaw struct{ Avg float64 }        `json:"request_count"`
	}
	data := fixtureJSON(t, "peers/aiperf_0.10.0_chatbot/profile_export_aiperf.json", &sum)
	if rec.Summary.Requests != int(sum.RequestsRaw.Avg) || rec.Summary.Completed != int(sum.RequestsRaw.Avg) || len(rec.Summary.Errors) != 0 {
		t.Fatalf("requests %d, completed %d, errors %v; the summary says %v succeeded", rec.Summary.Requests, rec.Summary.Completed, rec.Summary.Errors, sum.RequestsRaw.Avg)
	}
	got := sentOf(rec)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %.3f, the summary says %.3f", what, got, want)
		}
	}
	near("mean TTFT (ms)", got.ttft, sum.TTFTRaw.Avg, 0.01)
	near("mean E2E (ms)", got.e2e, sum.E2ERaw.Avg, 0.01)
	near("gaps between chunks", float64(got.gaps), sum.InterChunk.Count, 0)
	near("sum of the gaps (ms)", got.gapSum, sum.InterChunk.Sum, 1)
	if rec.Model != "Llama-3.1-8B-Instruct-optimumxt" || rec.Source.ToolVersion != "0.10.0" || rec.Mode != "closed" {
		t.Errorf("model %q, AIPerf %q, mode %q", rec.Model, rec.Source.ToolVersion, rec.Mode)
	}
	// The same benchmark written into another artifact directory: the same workload.
	dir := t.TempDir()
	sumPath := filepath.Join(fixtures, "peers/aiperf_0.10.0_chatbot/profile_export_aiperf.json")
	moved := bytes.ReplaceAll(data, []byte("/work/results/nvfp4/spark_repro_llama31"), []byte("/home/ci/run-2"))
	if bytes.Equal(moved, data) {
		t.Fatal("the summary names no artifact directory to move")
	}
	jsonl, err := os.ReadFile(filepath.Join(filepath.Dir(sumPath), "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Import(ToolAIPerf, filepath.Join(dir, "profile_export.jsonl"), jsonl, func(string) ([]byte, error) { return moved, nil }, opt)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].WorkloadHash != rec.WorkloadHash {
		t.Errorf("another artifact directory changed the workload's hash: %s, %s", recs[0].WorkloadHash, rec.WorkloadHash)
	}
}

// TestAIPerfCountsMustAgree: records that disagree with the summary's own counts are
// refused, naming both numbers: here the summary of the real 0.10.0 run beside records
// whose time to first token is spelt in no way AIPerf has used.
func TestAIPerfCountsMustAgree(t *testing.T) {
	opt := testOptions(t, "peers.yaml", "aiperf-chatbot")
	dir := filepath.Join(fixtures, "peers/aiperf_0.10.0_chatbot")
	jsonl, err := os.ReadFile(filepath.Join(dir, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(dir, AIPerfSummaryName))
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.ReplaceAll(jsonl, []byte(`"time_to_first_token"`), []byte(`"first_token_time"`))
	_, err = Import(ToolAIPerf, filepath.Join(dir, "profile_export.jsonl"), renamed, func(string) ([]byte, error) { return sum, nil }, opt)
	wantFormatError(t, err, "request_count.avg", "10 successful requests, while 0 records", "every one of the 10 records read as failed")
}

// TestImportAIPerfBeforeSchema: the real AIPerf example artifacts of October 2025
// (before schema_version: the summary's metrics under records, each request sent at
// metadata.timestamp_ns and ended at max_response_timestamp) import as the summary
// states them: 89 succeeded and 11 cancelled, their mean TTFT and E2E, the gaps between
// chunks, the model.
func TestImportAIPerfBeforeSchema(t *testing.T) {
	opt := testOptions(t, "peers.yaml", "aiperf-2025-10")
	rec := mustImport(t, ToolAIPerf, "peers/aiperf_2025-10_run1/profile_export.jsonl", opt)
	var sum struct {
		Records struct {
			TTFT       struct{ Avg float64 }        `json:"ttft"`
			E2E        struct{ Avg float64 }        `json:"request_latency"`
			InterChunk struct{ Avg, Count float64 } `json:"inter_chunk_latency"`
			OK         struct{ Avg float64 }        `json:"request_count"`
			Failed     struct{ Avg float64 }        `json:"error_request_count"`
		} `json:"records"`
	}
	fixtureJSON(t, "peers/aiperf_2025-10_run1/profile_export_aiperf.json", &sum)
	s := sum.Records
	failed := 0
	for _, n := range rec.Summary.Errors {
		failed += n
	}
	if rec.Summary.Requests != 100 || rec.Summary.Completed != int(s.OK.Avg) || failed != int(s.Failed.Avg) {
		t.Fatalf("requests %d, completed %d, errors %v; the summary says %v succeeded and %v failed", rec.Summary.Requests, rec.Summary.Completed, rec.Summary.Errors, s.OK.Avg, s.Failed.Avg)
	}
	got := sentOf(rec)
	if math.Abs(got.ttft-s.TTFT.Avg) > 0.01 || math.Abs(got.e2e-s.E2E.Avg) > 0.01 {
		t.Errorf("mean TTFT %.3f ms, E2E %.3f ms; the summary says %.3f and %.3f", got.ttft, got.e2e, s.TTFT.Avg, s.E2E.Avg)
	}
	if float64(got.gaps) != s.InterChunk.Count || math.Abs(got.gapSum/float64(got.gaps)-s.InterChunk.Avg) > 0.001 {
		t.Errorf("%d gaps of mean %.4f ms; the summary says %v of %.4f", got.gaps, got.gapSum/float64(got.gaps), s.InterChunk.Count, s.InterChunk.Avg)
	}
	if rec.Model != "openai/gpt-oss-20b" || rec.Mode != "closed" {
		t.Errorf("model %q, mode %q", rec.Model, rec.Mode)
	}
}

// TestVLLMRealFilesWithoutDetail: the real vLLM result files (0.25.1's vllm bench serve
// and a vllm bench sweep run, and nine benchmark_serving.py results of May 2025 appended
// in one file) carry aggregates only: each is refused for the per-request arrays it
// lacks, naming the flag that writes them, not for its later keys (rtfx, run_number,
// max_num_seqs).
func TestVLLMRealFilesWithoutDetail(t *testing.T) {
	for _, rel := range []string{"peers/vllm_er0080_bench_serve_v0.25.1.json", "peers/vllm_er0080_sweep_run0.json", "peers/vllm_nerdalert_results.json"} {
		_, err := importFile(t, ToolVLLM, rel, testOptions(t, "slogate.yaml", "vllm-chat"))
		if wantFormatError(t, err, filepath.Base(rel)+":1: ttfts: missing", "--save-detailed") == nil {
			continue
		}
		if strings.Contains(err.Error(), "newer vLLM") {
			t.Errorf("%s: %q blames a later key for what the file lacks", rel, err)
		}
	}
}

// TestGuideLLMCountsMustAgree: the real mid-2025 guidellm report lists 1 of the 46
// successful requests its request_totals states (a stripped report): refused, naming
// both numbers, where it imported as 1 request and a goodput 46 times low.
func TestGuideLLMCountsMustAgree(t *testing.T) {
	_, err := importFile(t, ToolGuideLLM, "peers/gl_stripped_9f9ddc9e.json", testOptions(t, "guidellm.yaml", "guidellm-chat"))
	wantFormatError(t, err, "benchmarks[0].requests.successful", "lists 1 request(s)", "request_totals.successful says 46", "46× low")
}

// TestImportGuideLLMLater: the real guidellm 0.5.0.dev0 report (the later shape: config,
// scheduler_metrics, info.timings) imports as its own metrics state it: 4 successful
// requests, their mean TTFT and request latency, the model; the real 0.8.0.dev18 report
// lists none of the 2 requests its totals count, and is refused naming both.
func TestImportGuideLLMLater(t *testing.T) {
	opt := testOptions(t, "guidellm.yaml", "guidellm-chat")
	rec := mustImport(t, ToolGuideLLM, "peers/gl_korat_sanity.json", opt)
	var rep struct {
		Benchmarks []struct {
			Metrics struct {
				TTFT    struct{ Successful struct{ Mean float64 } } `json:"time_to_first_token_ms"`
				Latency struct{ Successful struct{ Mean float64 } } `json:"request_latency"`
				Totals  struct{ Successful int }                    `json:"request_totals"`
			} `json:"metrics"`
		} `json:"benchmarks"`
	}
	fixtureJSON(t, "peers/gl_korat_sanity.json", &rep)
	m := rep.Benchmarks[0].Metrics
	if rec.Summary.Requests != m.Totals.Successful || rec.Summary.Completed != m.Totals.Successful {
		t.Fatalf("requests %d, completed %d; the report's totals say %d successful", rec.Summary.Requests, rec.Summary.Completed, m.Totals.Successful)
	}
	got := sentOf(rec)
	if math.Abs(got.ttft-m.TTFT.Successful.Mean) > 0.01 || math.Abs(got.e2e/1e3-m.Latency.Successful.Mean) > 1e-5 {
		t.Errorf("mean TTFT %.4f ms, latency %.6f s; the report says %.4f and %.6f", got.ttft, got.e2e/1e3, m.TTFT.Successful.Mean, m.Latency.Successful.Mean)
	}
	if rec.Model != "Qwen/Qwen3-4B-Thinking-2507" || rec.Source.ToolVersion != "0.5.0.dev0" || rec.Mode != "closed" || rec.API != "completions" {
		t.Errorf("model %q, guidellm %q, mode %q, api %q", rec.Model, rec.Source.ToolVersion, rec.Mode, rec.API)
	}
	opt.Benchmark = 0
	_, err := importFile(t, ToolGuideLLM, "peers/gl_llmd_report_v2_0.8.0.dev18.json", opt)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "lists 0 request(s) while the report's request_totals.successful says 2") {
		t.Errorf("0.8.0.dev18: %v, want a refusal naming 0 listed and 2 counted", err)
	}
}

// TestVLLMIgnoresUnknownAggregates: an unknown key holding a single value (an aggregate
// a later vLLM added) is read past with a note naming it; an unknown list is still
// refused (TestRefused).
func TestVLLMIgnoresUnknownAggregates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "vllm/candidate.json"))
	if err != nil {
		t.Fatal(err)
	}
	added := bytes.Replace(data, []byte(`{`), []byte(`{"goodput_at_slo_2x": 3.5, "speculative": true, "rtf_audio": null, `), 1)
	recs, err := Import(ToolVLLM, "later.json", added, nil, testOptions(t, "slogate.yaml", "vllm-chat"))
	if err != nil {
		t.Fatal(err)
	}
	want := "were not read: goodput_at_slo_2x, rtf_audio, speculative"
	if !slices.ContainsFunc(recs[0].Notes, func(n string) bool { return strings.Contains(n, want) }) {
		t.Errorf("notes %q do not say %q", recs[0].Notes, want)
	}
}

// TestAIPerfBeforeSchemaNeedsItsWindow: a summary of the earlier records shape without
// benchmark_duration is refused naming it (it crashed the importer).
func TestAIPerfBeforeSchemaNeedsItsWindow(t *testing.T) {
	var sum map[string]any
	fixtureJSON(t, "peers/aiperf_2025-10_run1/profile_export_aiperf.json", &sum)
	delete(sum["records"].(map[string]any), "benchmark_duration")
	cut, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	jsonl, err := os.ReadFile(filepath.Join(fixtures, "peers/aiperf_2025-10_run1/profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(ToolAIPerf, "profile_export.jsonl", jsonl, func(string) ([]byte, error) { return cut, nil }, testOptions(t, "peers.yaml", "aiperf-2025-10"))
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Field != "benchmark_duration.avg" {
		t.Errorf("error %v, want a *FormatError on benchmark_duration.avg", err)
	}
}

// TestVLLMCountsMustAgree: serve.py's completed and failed counts must agree with its
// per-request arrays, or nothing is imported and both numbers are named.
func TestVLLMCountsMustAgree(t *testing.T) {
	var doc map[string]any
	data := fixtureJSON(t, "vllm/candidate.json", &doc) // 120 requests, 117 completed, 3 failed
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	for _, c := range []struct {
		name string
		edit map[string]any
		want []string
	}{
		{"completed above the successes", map[string]any{"completed": 120, "failed": 0}, []string{"completed: 120", "117 requests without an error"}},
		{"completed below them", map[string]any{"completed": 100, "failed": 20}, []string{"completed: 100", "117 of them with a first token"}},
		{"counts that do not add up", map[string]any{"failed": 5}, []string{"failed: 5", "completed 117", "hold 120 requests"}},
	} {
		edited := map[string]any{}
		maps.Copy(edited, doc)
		maps.Copy(edited, c.edit)
		b, err := json.Marshal(edited)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Import(ToolVLLM, "counts.json", b, nil, opt)
		wantFormatError(t, err, c.want...)
	}
	// The file as written agrees with itself.
	if _, err := Import(ToolVLLM, "candidate.json", data, nil, opt); err != nil {
		t.Fatal(err)
	}
}

// TestVLLMStartTimes: later vLLM saves each request's send time (start_times, seconds of
// time.perf_counter()): the import sends each request then, counted from the first, so
// that in-flight counts are known; every latency stays what vLLM measured from the send.
func TestVLLMStartTimes(t *testing.T) {
	var doc map[string]any
	data := fixtureJSON(t, "vllm/candidate.json", &doc)
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	without, err := Import(ToolVLLM, "candidate.json", data, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	n := len(doc["ttfts"].([]any))
	starts := make([]float64, n)
	for i := range starts {
		starts[i] = 81234.5 + 0.25*float64(i) // perf_counter has no epoch
	}
	doc["start_times"] = starts
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Import(ToolVLLM, "later.json", b, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	rec, old := recs[0], without[0]
	for i, q := range rec.Requests {
		if want := int64(250_000 * i); q.SendUS != want || q.SchedUS != want {
			t.Fatalf("request %d: sched %d send %d µs, want %d", i, q.SchedUS, q.SendUS, want)
		}
		if o := old.Requests[i]; q.OK() && (q.FirstUS-q.SendUS != o.FirstUS || q.LastUS-q.SendUS != o.LastUS) {
			t.Fatalf("request %d: first %d last %d after the send, without start_times %d and %d", i, q.FirstUS-q.SendUS, q.LastUS-q.SendUS, o.FirstUS, o.LastUS)
		}
	}
	if rec.Summary.TTFTSendms != old.Summary.TTFTSendms || rec.Summary.E2Ems != old.Summary.E2Ems {
		t.Errorf("TTFT %+v E2E %+v; without start_times %+v %+v", rec.Summary.TTFTSendms, rec.Summary.E2Ems, old.Summary.TTFTSendms, old.Summary.E2Ems)
	}
	if _, lacks := rec.Source.Lacks("in_flight"); lacks || rec.Summary.InFlight.Max < 1 {
		t.Errorf("in flight %+v (unknown: %v): the send times give it", rec.Summary.InFlight, lacks)
	}
	if _, lacks := old.Source.Lacks("in_flight"); !lacks {
		t.Error("without start_times the in-flight counts are not known, and the record must say so")
	}
	// A NaN Python wrote bare is no send time.
	nan := bytes.Replace(b, []byte(`"start_times":[81234.5,`), []byte(`"start_times":[NaN,`), 1)
	if bytes.Equal(nan, b) {
		t.Fatal("no first start time to replace")
	}
	_, err = Import(ToolVLLM, "nan.json", nan, nil, opt)
	wantFormatError(t, err, "start_times", "entry 0 is null (NaN in the file)")
	doc["start_times"] = starts[1:]
	b, _ = json.Marshal(doc)
	_, err = Import(ToolVLLM, "short.json", b, nil, opt)
	wantFormatError(t, err, "start_times", fmt.Sprintf("has %d entries and ttfts %d", n-1, n))
}
