package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
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
		{ToolGuideLLM, "guidellm/unsupported.json", "guidellm.yaml", "guidellm-chat", []string{"unsupported.json: args:", "later guidellm report shape"}},
		// Several benchmarks and none chosen: list them.
		{ToolGuideLLM, "guidellm/baseline.json", "guidellm.yaml", "guidellm-chat", []string{"2 benchmarks", "0: constant@2 req/s", "1: constant@4 req/s", "--benchmark"}},
		// A newer AIPerf summary schema.
		{ToolAIPerf, "aiperf/unsupported/profile_export.jsonl", "slogate.yaml", "aiperf-chat", []string{"unsupported/profile_export_aiperf.json: schema_version: \"2.0\""}},
		// The earlier AIPerf record shape.
		{ToolAIPerf, "aiperf/old-records/profile_export.jsonl", "slogate.yaml", "aiperf-chat", []string{"profile_export.jsonl:1: metadata.timestamp_ns", "earlier AIPerf record shape"}},
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
