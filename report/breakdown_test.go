package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// sessionRecord is a record of sessions in two classes: `sessions` sessions of `turns`
// turns, turn k carrying 200·(k−1) history tokens and a TTFT of ttftMS + slope·(k−1) ms
// (plus a little per session); class "agent" is every third session, and its last turn
// of the first session fails. Its summary is computed by the result package.
func sessionRecord(sessions, turns int, ttftMS, slope float64) *result.Record {
	rec := &result.Record{Schema: result.Schema, Workload: "sessions", WorkloadHash: "sha256:ab", Mode: "open",
		Start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), ToolVersion: "test",
		SLO: []result.SLOTarget{{Metric: result.MetricTTFT, Percentile: 95, LimitMS: 400}}, SLOAttainmentTarget: 0.9}
	i := 0
	for s := 1; s <= sessions; s++ {
		class := "chat"
		if s%3 == 0 {
			class = "agent"
		}
		for k := 1; k <= turns; k++ {
			sched := int64(i) * 100_000
			ttft := int64(1000 * (ttftMS + slope*float64(k-1) + float64(s%7)))
			q := result.Request{I: i, Class: class, Session: s, Turn: k, HistoryTokens: 200 * (k - 1), SchedUS: sched, SendUS: sched + 20,
				FirstUS: sched + ttft, LastUS: sched + ttft + 40_000, EndUS: sched + ttft + 40_100,
				PromptTarget: 100, PromptTokens: 100 + 200*(k-1), OutputTarget: 5, OutputTokens: 5, Chunks: 5,
				ITLUS: []int64{10_000, 10_000, 10_000, 10_000 + int64(100*k)}}
			if class == "agent" && s == 3 && k == turns {
				q.FirstUS, q.LastUS, q.ITLUS, q.Chunks, q.OutputTokens, q.Error = 0, 0, nil, 0, 0, "timeout"
			}
			rec.Requests = append(rec.Requests, q)
			i++
		}
	}
	for k := range rec.Requests {
		result.Judge(&rec.Requests[k], rec.SLO)
	}
	rec.Window = result.Window{StartUS: 0, EndUS: int64(i)*100_000 + 1_000_000}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{Window: rec.Window, SLO: rec.SLO, OpenLoop: true})
	return rec
}

func TestRunTableBreakdownsGolden(t *testing.T) {
	rec := sessionRecord(6, 4, 50, 30)
	rec.Priming = &result.PrimingSummary{Requests: 24, PromptTokens: 9600, Concurrency: 8, DurationS: 1.5, Errors: map[string]int{"timeout": 1}}
	rec.Summary.PrefixCache = &result.PrefixCacheStats{Queries: 9600, Hits: 9000, HitRate: 0.9375, Source: "vllm:prefix_cache_hits_total"}
	var b bytes.Buffer
	RunTable(&b, rec, "")
	checkGolden(t, filepath.Join("testdata", "breakdown", "run.golden"), b.Bytes())
	out := b.String()
	for _, want := range []string{"by class:", "by turn:", "by history length:", "priming (prefix_cache: warm): 24 requests", "prefix cache over the window: 93.8% hit"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal table lacks %q", want)
		}
	}
}

// gateWith is a gate result of one workload with the two summaries.
func gateWith(base, cand *result.Summary) *gate.Result {
	return &gate.Result{Verdict: gate.Pass, Resamples: 2000, Confidence: 0.95, Seed: 1, Workloads: []gate.WorkloadResult{{
		Name: "sessions", Hardware: "sim", Verdict: gate.Pass,
		Metrics:           []gate.MetricResult{{Metric: "goodput", Unit: "req/s", Direction: "higher", Tolerance: 0.05, Method: gate.MethodBootstrap, Baseline: fp(9), Candidate: fp(9), Ratio: fp(1), Lo: fp(0.99), Hi: fp(1.01), Verdict: gate.Pass}},
		BaselineSummaries: []result.Summary{*base}, CandidateSummaries: []result.Summary{*cand},
	}}}
}

// The comment compares the breakdowns side by side, so that the turn whose TTFT grew
// shows; the candidate's own tables are in the details.
func TestCommentBreakdownsGolden(t *testing.T) {
	base := sessionRecord(6, 4, 50, 0) // flat TTFT across turns: the cache held the history
	cand := sessionRecord(6, 4, 50, 60)
	c := Comment{Marker: "<!-- slogate:sticky -->", Gate: gateWith(&base.Summary, &cand.Summary),
		Runs: map[string][]*result.Record{"sessions": {cand}}, Generated: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	got := Markdown(c)
	checkGolden(t, filepath.Join("testdata", "breakdown", "comment.golden.md"), []byte(got))
	main, _, _ := strings.Cut(got, "<details>")
	// Turn 4: baseline p50 is flat, the candidate's 180 ms higher.
	var t4 result.TurnStats
	var b4 result.TurnStats
	for k := range cand.Summary.ByTurn {
		if cand.Summary.ByTurn[k].Turn == 4 {
			t4, b4 = cand.Summary.ByTurn[k], base.Summary.ByTurn[k]
		}
	}
	row := fmt.Sprintf("| 4 | %s → %s |", num(b4.TTFTP50ms), num(t4.TTFTP50ms))
	if !strings.Contains(main, row) || !strings.Contains(main, "| class (baseline → candidate) |") || !strings.Contains(main, "| agent |") {
		t.Errorf("the main part lacks the side-by-side breakdowns (want %q):\n%s", row, main)
	}
	if !strings.Contains(got, "**By turn**") || !strings.Contains(got, "**By history length**") || !strings.Contains(got, "| 512–1023 |") {
		t.Errorf("the details lack the candidate's tables:\n%s", got)
	}
}

// Many turns keep the comment's main part small: the side-by-side table stops at
// MaxComparedTurns, and a comment of 200 turns stays within GitHub's limit.
func TestCommentBreakdownsBounded(t *testing.T) {
	base, cand := sessionRecord(3, 200, 50, 0), sessionRecord(3, 200, 50, 5)
	c := Comment{Gate: gateWith(&base.Summary, &cand.Summary), Runs: map[string][]*result.Record{"sessions": {cand}}}
	got := Markdown(c)
	if len(got) > MaxCommentChars {
		t.Fatalf("comment of %d chars, over %d", len(got), MaxCommentChars)
	}
	main, _, _ := strings.Cut(got, "<details>")
	if !strings.Contains(main, fmt.Sprintf("… %d more turns", 200-MaxComparedTurns)) || strings.Contains(main, "| 13 |") {
		t.Errorf("main part does not stop at %d turns:\n%s", MaxComparedTurns, main)
	}
	small := Markdown(Comment{Gate: c.Gate, Runs: c.Runs, Limit: 6000})
	if len(small) > 6000 || !strings.Contains(small, "| turn (baseline → candidate) |") {
		t.Errorf("with a 6000-character limit: %d chars, side-by-side kept: %v", len(small), strings.Contains(small, "| turn (baseline → candidate) |"))
	}
}

// A baseline without breakdowns (a single-class workload of old) gives no side-by-side
// table; the candidate's own still shows in the details.
func TestCommentBreakdownsCandidateOnly(t *testing.T) {
	cand := sessionRecord(6, 3, 50, 10)
	var base result.Summary
	got := Markdown(Comment{Gate: gateWith(&base, &cand.Summary), Runs: map[string][]*result.Record{"sessions": {cand}}})
	if strings.Contains(got, "baseline → candidate") || !strings.Contains(got, "**By class**") {
		t.Errorf("candidate-only breakdowns:\n%s", got)
	}
}

// The HTML page has the breakdown tables and, for sessions, the two charts, drawn from
// the summaries; a run without sessions has neither chart.
func TestHTMLBreakdowns(t *testing.T) {
	base, cand := sessionRecord(6, 4, 50, 0), sessionRecord(6, 4, 50, 60)
	cand.Priming = &result.PrimingSummary{Requests: 24, PromptTokens: 7200, Concurrency: 8, DurationS: 0.5}
	cand.PrefixCache = &result.PrefixCacheRun{Mode: result.PrefixWarm}
	cand.Summary.PrefixCache = &result.PrefixCacheStats{Queries: 7200, Hits: 6600, HitRate: 6600.0 / 7200, Source: "vllm:prefix_cache_hits_total"}
	page := writePage(t, HTMLReport{Candidate: cand, Baseline: base, Generated: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	_, text := parsePage(t, page)
	for _, want := range []string{"By class", "By turn", "By history length", "TTFT by turn.", "TTFT by history length.", "512–1023", "agent",
		"priming pass (excluded)", "24 requests, 7200 prompt tokens", "91.67 % (warm)"} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	s := string(page)
	for _, title := range []string{"TTFT by turn", "TTFT by history length"} {
		i := strings.Index(s, "<b>"+title+".</b>")
		if i < 0 {
			t.Fatalf("no figure %q", title)
		}
		fig := s[i:]
		fig = fig[:strings.Index(fig, "</figure>")]
		if !strings.Contains(fig, "<svg") || strings.Contains(fig, `class="missing"`) {
			t.Errorf("figure %q is not drawn:\n%.400s", title, fig)
		}
	}
	plain := buildRecord(candidateSpec())
	p2 := string(writePage(t, HTMLReport{Candidate: plain}))
	if strings.Contains(p2, "TTFT by turn") || strings.Contains(p2, "By class") {
		t.Error("a run without classes or sessions got breakdowns")
	}
}

// The charts read the summaries: a turn without a successful request has no point, and
// no session at all is ErrNoData.
func TestTurnChartData(t *testing.T) {
	rec := sessionRecord(3, 3, 50, 20)
	b, err := TurnChart(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two lines (p50, p95) of three points each, each point a circle.
	if n := bytes.Count(b, []byte("<path")); n < 6 {
		t.Errorf("turn chart has %d paths, want the points of two lines", n)
	}
	if _, err := TurnChart(buildRecord(candidateSpec()), nil); err == nil {
		t.Error("a record without turns gave a turn chart")
	}
	if _, err := HistoryChart(buildRecord(candidateSpec()), nil); err == nil {
		t.Error("a record without sessions gave a history chart")
	}
}
