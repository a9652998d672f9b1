package interop

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/slogate/slogate/result"
)

// exportVLLM is ExportVLLM's file, and the same decoded.
func exportVLLM(t *testing.T, rec *result.Record, rate float64) ([]byte, map[string]any) {
	t.Helper()
	data, err := ExportVLLM(rec, rate)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return data, out
}

// TestVLLMRoundTrip: importing slogate's vLLM export of a record gives back the same
// metrics.
func TestVLLMRoundTrip(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "vllm-chat")
	for _, c := range []struct{ tool, rel string }{
		{ToolVLLM, "vllm/candidate.json"},                     // with errors
		{ToolAIPerf, "aiperf/candidate/profile_export.jsonl"}, // send times known, sched = send
	} {
		orig := mustImport(t, c.tool, c.rel, opt)
		data, out := exportVLLM(t, orig, 4)
		back, err := Import(ToolVLLM, "export.json", data, nil, opt)
		if err != nil {
			t.Fatalf("%s: re-import: %v", c.rel, err)
		}
		a, b := orig.Summary, back[0].Summary
		for _, m := range []struct {
			name string
			x, y result.Percentiles
		}{{"ttft", a.TTFTms, b.TTFTms}, {"ttft_send", a.TTFTSendms, b.TTFTSendms}, {"itl", a.ITLms, b.ITLms}, {"tpot", a.TPOTms, b.TPOTms}, {"e2e", a.E2Ems, b.E2Ems}} {
			if m.x != m.y {
				t.Errorf("%s: %s %+v, back %+v", c.rel, m.name, m.x, m.y)
			}
		}
		if a.Completed != b.Completed || a.ErrorRate != b.ErrorRate || a.SLOAttainment != b.SLOAttainment || math.Abs(a.GoodputWindowRPS-b.GoodputWindowRPS) > 1e-9 {
			// vLLM's format keeps the duration-based goodput only (no arrival times).
			t.Errorf("%s: completed %d/%d error rate %v/%v attainment %v/%v goodput %v/%v", c.rel, a.Completed, b.Completed, a.ErrorRate, b.ErrorRate, a.SLOAttainment, b.SLOAttainment, a.GoodputWindowRPS, b.GoodputWindowRPS)
		}
		// Send times travel as later vLLM's start_times where the record has them (an
		// AIPerf import), and not at all where its source had none (a vLLM import
		// without them): the re-import knows in-flight counts exactly when the original did.
		_, origLacks := orig.Source.Lacks("in_flight")
		_, backLacks := back[0].Source.Lacks("in_flight")
		if _, has := out["start_times"]; has == origLacks || backLacks != origLacks {
			t.Errorf("%s: start_times written %v; in_flight unknown in the original %v, in the re-import %v", c.rel, has, origLacks, backLacks)
		}
		if !origLacks && (a.InFlight.Max != b.InFlight.Max || math.Abs(a.InFlight.Mean-b.InFlight.Mean) > 0.01*a.InFlight.Mean || a.InFlight.Mean <= 0) {
			t.Errorf("%s: in flight %+v, back %+v", c.rel, a.InFlight, b.InFlight)
		}
		if len(a.Errors) != len(b.Errors) {
			t.Errorf("%s: errors %v, back %v", c.rel, a.Errors, b.Errors)
		}
		for k, v := range a.Errors {
			if b.Errors[k] != v {
				t.Errorf("%s: errors %v, back %v", c.rel, a.Errors, b.Errors)
			}
		}
	}
}

// TestVLLMExportDefinitions: the export speaks vLLM's definitions: TTFT from the send
// (a native record's dispatch lag is not in it), latency to the last chunk, numpy's
// interpolated percentiles over successful requests.
func TestVLLMExportDefinitions(t *testing.T) {
	rec := &result.Record{
		Schema: result.Schema, Workload: "w", Model: "m", API: "chat",
		Window: result.Window{StartUS: 0, EndUS: 2_000_000},
		Requests: []result.Request{
			// sched 0, sent 5 ms late, first token 100 ms after the send.
			{I: 0, SchedUS: 0, SendUS: 5000, FirstUS: 105000, LastUS: 125000, EndUS: 126000, PromptTokens: 10, OutputTokens: 3, ITLUS: []int64{10000, 10000}},
			{I: 1, SchedUS: 500000, SendUS: 500000, FirstUS: 700000, LastUS: 740000, EndUS: 740000, PromptTokens: 20, OutputTokens: 2, ITLUS: []int64{40000}},
			{I: 2, SchedUS: 1000000, SendUS: 1000000, EndUS: 1001000, PromptTokens: 30, Error: "http_503", ErrorDetail: "Service Unavailable"},
		},
	}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{Window: rec.Window})
	_, out := exportVLLM(t, rec, 0)
	near := func(k string, want float64) {
		t.Helper()
		got, _ := out[k].(float64)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, out[k], want)
		}
	}
	near("mean_ttft_ms", 150) // (100 + 200) / 2: from the send
	near("median_ttft_ms", 150)
	near("p99_ttft_ms", 199)  // numpy: 100 + 0.99 × 100
	near("mean_e2el_ms", 180) // (120 + 240) / 2
	near("mean_tpot_ms", 25)  // (20 ms / 2 + 40 ms / 1) / 2
	near("mean_itl_ms", 20)   // (10 + 10 + 40) / 3
	near("completed", 2)
	near("failed", 1)
	near("request_throughput", 1)
	if out["request_rate"] != "inf" || out["backend"] != "openai-chat" {
		t.Errorf("request_rate %v backend %v", out["request_rate"], out["backend"])
	}
	errs := out["errors"].([]any)
	if errs[0] != "" || errs[2] != "http_503: Service Unavailable" {
		t.Errorf("errors %v", errs)
	}
}

func TestCSV(t *testing.T) {
	opt := testOptions(t, "slogate.yaml", "aiperf-chat")
	rec := mustImport(t, ToolAIPerf, "aiperf/candidate/profile_export.jsonl", opt)
	var buf bytes.Buffer
	if err := WriteCSV(&buf, rec, false); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(rec.Requests)+1 || len(rows[0]) != len(CSVHeader) {
		t.Fatalf("%d rows of %d columns", len(rows), len(rows[0]))
	}
	q := rec.Requests[3] // an HTTP 503 in the fixture
	want := []string{"3", "", strconv.FormatInt(q.SchedUS, 10), strconv.FormatInt(q.SendUS, 10), "", "", strconv.FormatInt(q.EndUS, 10), strconv.Itoa(q.PromptTokens), "0", "0", "http_503", "false"}
	for i, w := range want {
		if rows[4][i] != w {
			t.Errorf("row 3 column %s = %q, want %q", CSVHeader[i], rows[4][i], w)
		}
	}
	buf.Reset()
	if err := WriteCSV(&buf, rec, true); err != nil {
		t.Fatal(err)
	}
	gaps, _ := csv.NewReader(&buf).ReadAll()
	n := 0
	for _, q := range rec.Requests {
		n += len(q.ITLUS)
	}
	if len(gaps) != n+1 || gaps[1][0] != "0" || gaps[1][1] != "0" || gaps[1][2] != strconv.FormatInt(rec.Requests[0].ITLUS[0], 10) {
		t.Errorf("%d gap rows, want %d; first %v", len(gaps)-1, n, gaps[1])
	}
}

// TestVLLMRoundTripWithoutGaps: a record whose source kept no chunk gaps (a guidellm
// import) exports with one gap per request from its first token to its last, and comes
// back with the same TTFT, TPOT and E2E (not E2E equal to TTFT and TPOT 0), its ITL
// unavailable; the export writes the rate the benchmark was run at (4 req/s, not
// "inf") and counts tokens, not chunks, in max_output_tokens_per_s.
func TestVLLMRoundTripWithoutGaps(t *testing.T) {
	opt := testOptions(t, "guidellm.yaml", "guidellm-chat")
	opt.Benchmark = 1 // constant@4 req/s
	orig := mustImport(t, ToolGuideLLM, "guidellm/baseline.json", opt)
	if _, lacks := orig.Source.Lacks("itl"); !lacks {
		t.Fatal("a guidellm import has chunk gaps")
	}
	data, out := exportVLLM(t, orig, 0)
	if out["request_rate"] != 4.0 {
		t.Errorf("request_rate %v, want 4 (the benchmark's)", out["request_rate"])
	}
	// Every chunk carries its share of the request's tokens (about 30 here, in 2
	// chunks): at 4 req/s the busiest second holds far more than the 2 chunks of each
	// request that could touch it, and no more than all the tokens.
	var tokens float64
	for _, q := range orig.Requests {
		tokens += float64(q.OutputTokens)
	}
	if peak, _ := out["max_output_tokens_per_s"].(float64); !(peak > 40) || peak > tokens {
		t.Errorf("max_output_tokens_per_s %v: want tokens, not chunks (more than 40, at most %v)", out["max_output_tokens_per_s"], tokens)
	}
	back, err := Import(ToolVLLM, "export.json", data, nil, testOptions(t, "slogate.yaml", "vllm-chat"))
	if err != nil {
		t.Fatal(err)
	}
	b := back[0]
	if _, lacks := b.Source.Lacks("itl"); !lacks || b.Summary.ITLms.Count > 0 {
		t.Errorf("the re-import has ITL %+v; want it unavailable", b.Summary.ITLms)
	}
	for i, q := range orig.Requests {
		r := b.Requests[i]
		if q.Error != "" {
			continue
		}
		d := func(x, y int64) int64 { return max(x-y, y-x) }
		if d(r.FirstUS-r.SendUS, q.FirstUS-q.SendUS) > 1 || d(r.LastUS-r.SendUS, q.LastUS-q.SendUS) > 2 || r.OutputTokens != q.OutputTokens {
			t.Fatalf("request %d: ttft %d µs, last %d µs, %d tokens; back %d, %d, %d", i, q.FirstUS-q.SendUS, q.LastUS-q.SendUS, q.OutputTokens, r.FirstUS-r.SendUS, r.LastUS-r.SendUS, r.OutputTokens)
		}
	}
	if x, y := orig.Summary.TPOTms.P50, b.Summary.TPOTms.P50; !(y > 0) || math.Abs(x-y) > 0.01*x {
		t.Errorf("TPOT p50 %.3f ms, back %.3f ms", x, y)
	}
}
