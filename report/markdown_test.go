package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

func fp(v float64) *float64 { return &v }

// commentFixture is a gate result with one failing and one passing workload, drift of
// every kind, and engine strings that try to inject Markdown, HTML and mentions.
func commentFixture() Comment {
	hostile := "0.9.1 <img src=x onerror=alert(1)> @everyone [click](http://evil) | `x` # h1\n* item"
	sum := result.Summary{
		TTFTms:   result.Percentiles{P50: 40, P90: 90, P95: 120, P99: 200, P999: 260, Max: 270, Mean: 52, Count: 200},
		TPOTms:   result.Percentiles{P50: 7.6, P90: 9, P95: 9.5, P99: 11, P999: 14, Max: 14, Mean: 7.8, Count: 200},
		ITLms:    result.Percentiles{P50: 6.6, P90: 9.3, P95: 16, P99: 48, P999: 135, Max: 210, Mean: 8, Count: 50000},
		E2Ems:    result.Percentiles{P50: 1500, P90: 3700, P95: 5100, P99: 7400, P999: 8500, Max: 8500, Mean: 2000, Count: 200},
		Requests: 201, Completed: 200, Errors: map[string]int{"http_500": 1}, ErrorRate: 1.0 / 201, SLOAttainment: 0.975,
		GoodputRPS: 4.9, ThroughputRPS: 5, OutputTokensPS: 1300, DurationS: 40,
		DispatchLagms: result.LagSummary{P50: 0.05, P99: 0.4, Max: 1.2}, InFlight: result.InFlight{Mean: 10.5, Max: 23},
		SLOChecks:     []result.SLOCheck{{Metric: "itl", Percentile: 99, LimitMS: 100, ValueMS: 48, Met: true}},
		KVConcurrency: &result.KVConcurrency{Value: 125, CapacityTokens: 427200, PerRequestTokens: 3408, Source: "engine: vllm:cache_config_info num_gpu_blocks 26700 × block_size 16"},
		LittleLaw:     &result.LittleLaw{ArrivalRPS: 5, MeanE2ES: 2, PredictedInFlight: 10, MeasuredInFlight: 10.5, Deviation: 0.05},
		QueueDepth:    &result.Gauge{P50: 0, P95: 1, Max: 3}, KVUsage: &result.Gauge{P50: 0.02, P95: 0.05, Max: 0.08}, Running: &result.Gauge{P50: 10, P95: 18, Max: 23},
	}
	base := sum
	base.ITLms.P99 = 40
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	g := &gate.Result{
		Verdict: gate.Fail, Resamples: 2000, Confidence: 0.95, Seed: 1,
		Workloads: []gate.WorkloadResult{
			{
				Name: "chat-demo", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/chat-demo/h100-80gb-hbm3-x1.json", BaselineCreated: &created,
				Verdict: gate.Fail,
				Metrics: []gate.MetricResult{
					{Metric: "goodput", Unit: "req/s", Direction: "higher", Tolerance: 0.05, Method: gate.MethodBootstrap, Baseline: fp(4.95), Candidate: fp(4.9), Ratio: fp(0.99), Lo: fp(0.97), Hi: fp(1.01), Resolution: 0.02, Verdict: gate.Pass},
					{Metric: "itl_p99", Unit: "ms", Direction: "lower", Tolerance: 0.10, Method: gate.MethodBootstrap, Baseline: fp(40), Candidate: fp(48), Ratio: fp(1.2), Lo: fp(1.14), Hi: fp(1.27), Resolution: 0.04, Verdict: gate.Fail},
					{Metric: "kv_concurrency", Unit: "requests", Direction: "higher", Tolerance: 0.01, Method: gate.MethodExact, Baseline: fp(125), Candidate: fp(125), Ratio: fp(1), Lo: fp(1), Hi: fp(1), Verdict: gate.Pass},
					{Metric: "error_rate", Unit: "fraction", Max: fp(0.005), Method: gate.MethodAbsolute, Candidate: fp(1.0 / 201), Verdict: gate.Pass},
				},
				Drift: []gate.DriftResult{
					{Field: "engine.version", Baseline: "0.9.0", Candidate: hostile, Status: gate.DriftChanged, Policy: gate.PolicyExpected, Verdict: gate.Pass},
					{Field: "gpu.driver", Baseline: "550.54.15", Candidate: "555.42.02", Status: gate.DriftChanged, Policy: gate.PolicyWarn, Verdict: gate.Warn},
					{Field: "gpu.name", Baseline: "NVIDIA H100 80GB HBM3", Candidate: "NVIDIA H100 80GB HBM3", Status: gate.DriftSame, Policy: gate.PolicyFail, Verdict: gate.Pass},
					{Field: "tool.version", Baseline: "v0.1.0", Candidate: "v0.2.0", Status: gate.DriftChanged, Policy: gate.PolicyIgnore, Verdict: gate.Pass},
				},
				Trials:             gate.TrialCounts{Baseline: 1, Candidate: 1},
				BaselineSummaries:  []result.Summary{base},
				CandidateSummaries: []result.Summary{sum},
			},
			{
				Name: "batch", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/batch/h100-80gb-hbm3-x1.json", Verdict: gate.Warn,
				Reason: "no baseline at baselines/batch/h100-80gb-hbm3-x1.json: create it with `slogate baseline update`",
			},
		},
	}
	rec := &result.Record{Workload: "chat-demo", Mode: "open", Model: "meta-llama/Llama-3.1-8B-Instruct", Summary: sum,
		Environment: map[string]string{"engine.name": "vllm", "engine.version": hostile},
		Warmup:      &result.WarmupSummary{Requests: 8, ColdTTFTms: 42, TTFTms: result.Percentiles{P50: 38}},
		Notes:       []string{"the server said: <script>alert('x')</script> @here"}}
	bw, _ := capacity.Compute(capacity.Traffic{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5}, capacity.Operating{SustainableRPS: 5, MeanE2ES: 2, KVConcurrency: 125})
	cw, _ := capacity.Compute(capacity.Traffic{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5}, capacity.Operating{SustainableRPS: 4, MeanE2ES: 2.4, KVConcurrency: 125})
	return Comment{
		Marker: "<!-- slogate:sticky:slogate.yaml -->", Gate: g,
		Runs:   map[string][]*result.Record{"chat-demo": {rec}},
		Fleet:  &FleetSection{Workload: "chat-demo", PeakRPS: 50, Baseline: bw, Candidate: cw, Delta: capacity.Compare(bw, cw)},
		RunURL: "https://github.com/o/r/actions/runs/1", Generated: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC),
	}
}

func TestMarkdownGolden(t *testing.T) {
	got := Markdown(commentFixture())
	path := filepath.Join("testdata", "comment.golden.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("comment differs from %s (run with -update to accept):\n%s", path, got)
	}
}

func TestMarkdownEscapesEngineText(t *testing.T) {
	got := Markdown(commentFixture())
	for _, bad := range []string{"<img", "<script", "@everyone", "@here", "](http://evil)", "\n* item", "\n# h1"} {
		if strings.Contains(got, bad) {
			t.Errorf("comment contains %q unescaped", bad)
		}
	}
	if !strings.HasPrefix(got, "<!-- slogate:sticky:slogate.yaml -->\n") {
		t.Error("the hidden marker does not start the comment")
	}
	// Drift under "expected" is shown but not flagged; "warn" is flagged; "ignore" is not shown
	// in the changes table.
	changes := got[strings.Index(got, "**Environment changes**"):]
	changes = changes[:strings.Index(changes, "|\n\n")]
	if !strings.Contains(changes, "gpu.driver **unexpected**") || strings.Contains(changes, "engine.version **unexpected**") || strings.Contains(changes, "tool.version") {
		t.Errorf("drift table:\n%s", changes)
	}
}

func TestMarkdownTruncatesDetails(t *testing.T) {
	c := commentFixture()
	// 400 long notes blow the details far past the limit.
	rec := c.Runs["chat-demo"][0]
	for i := 0; i < 400; i++ {
		rec.Notes = append(rec.Notes, strings.Repeat("n", 300))
	}
	full := Markdown(Comment{Marker: c.Marker, Gate: c.Gate, Runs: c.Runs, Limit: 1 << 30})
	if len(full) <= MaxCommentChars {
		t.Fatalf("fixture too small: %d chars", len(full))
	}
	got := Markdown(c)
	if len(got) > MaxCommentChars {
		t.Fatalf("comment is %d chars, over %d", len(got), MaxCommentChars)
	}
	if !strings.Contains(got, "details were cut") || !strings.Contains(got, "itl_p99") || !strings.HasSuffix(got, "</sub>\n") {
		t.Error("truncated comment lost its verdict table, its note or its footer")
	}
	if strings.Count(got, "<details>") != strings.Count(got, "</details>") {
		t.Error("a <details> block is left open")
	}
	// A tiny limit still yields a bounded body.
	if small := Markdown(Comment{Gate: c.Gate, Runs: c.Runs, Limit: 2000}); len(small) > 2000 {
		t.Errorf("limit 2000: %d chars", len(small))
	}
}

// TestMarkdownSaysHowRepeatsStopped: a candidate whose sequential repeats stopped early
// has a line that says how many ran of at most how many, and why.
func TestMarkdownSaysHowRepeatsStopped(t *testing.T) {
	c := commentFixture()
	c.Gate.Workloads[0].Repeats = &result.RepeatStop{MinRepeats: 2, Repeats: 6, Run: 2, Reason: result.RepeatsDecided, Why: "itl_p99 decided fail"}
	got := Markdown(c)
	if want := `> repeats: stopped after 2 of at most 6 runs: itl\_p99 decided fail`; !strings.Contains(got, want) {
		t.Errorf("the comment does not say %q:\n%s", want, got)
	}
}

// TestWarningsOnePerCause: the same warning from several rules, or from the baseline
// and the candidate, is one line naming them all; how the job ran is a folded note, not
// a warning. The comment listed each copy (nine bullets on one A/B job).
func TestWarningsOnePerCause(t *testing.T) {
	cal := "the calibration stopped early: its spread may be low"
	w := gate.WorkloadResult{
		Name: "chat", Hardware: "sim", Verdict: gate.Pass, BlocksRun: 4,
		Metrics: []gate.MetricResult{
			{Metric: "goodput", Verdict: gate.Pass, Warnings: []string{cal}},
			{Metric: "itl_p99", Verdict: gate.Pass, Warnings: []string{cal, "baseline: too few pooled values for a p99 interval", "candidate: too few pooled values for a p99 interval"}},
		},
		Warnings: []string{"the engines were not restarted"},
		Notes:    []string{"A/B in one job: 4 blocks laid out ABBA (A: baseline, B: candidate)"},
	}
	want := []string{
		"goodput, itl_p99: " + cal,
		"itl_p99: baseline and candidate: too few pooled values for a p99 interval",
		"the engines were not restarted",
	}
	if got := warningLines(w); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	md := Markdown(Comment{Gate: &gate.Result{Verdict: gate.Pass, Workloads: []gate.WorkloadResult{w}}, Limit: 1 << 20})
	if n := strings.Count(md, "- ⚠️ "); n != 3 {
		t.Errorf("%d warning bullets, want 3:\n%s", n, md)
	}
	if !strings.Contains(md, "<details><summary>How this job ran</summary>") || !strings.Contains(md, "laid out ABBA") {
		t.Errorf("the note is not folded away:\n%s", md)
	}
}
