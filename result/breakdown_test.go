package result

import (
	"encoding/json"
	"testing"
)

// The scenario split into two classes: every figure below is worked out by hand from the
// timelines of scenario() (metrics_test.go).
func TestByClass(t *testing.T) {
	reqs := scenario()
	for i := range reqs {
		reqs[i].Class = "chat"
		if i >= 3 {
			reqs[i].Class = "rag"
		}
	}
	s := Summarize(reqs, SummaryInput{Window: Window{StartUS: 0, EndUS: 1000000}, SLO: scenarioSLO, OpenLoop: true})
	if len(s.ByClass) != 2 {
		t.Fatalf("by_class has %d rows, want 2: %+v", len(s.ByClass), s.ByClass)
	}
	chat, rag := s.ByClass[0], s.ByClass[1]
	if chat.Class != "chat" || rag.Class != "rag" {
		t.Fatalf("classes %q, %q: want chat, rag in order", chat.Class, rag.Class)
	}
	// chat: requests 0, 1, 2 all succeed and meet every SLO. TTFT 50, 80, 60 ms: p50 is
	// the 2nd of 3 (60), p95 and p99 the 3rd (80). TPOT 10 and 30 ms (request 2 has one
	// token): p50 the 1st (10). ITL pools 10 gaps of 10 ms and 20, 40, 60: p99 is the 13th
	// of 13 (60).
	wantChat := ClassStats{Class: "chat", Requests: 3, Completed: 3, Errors: 0, Good: 3, SLOAttainment: 1,
		GoodputShare: 1, GoodputRPS: 3 / 0.6, TTFTP50ms: 60, TTFTP95ms: 80, TTFTP99ms: 80, TPOTP50ms: 10, ITLP99ms: 60}
	// rag: request 3 times out, 5 fails to connect, 4 succeeds with a TTFT of 500 ms, which
	// misses the 200 ms SLO: no good request. TPOT (950 − 900) / 2 = 25 ms, ITL 25 ms.
	wantRag := ClassStats{Class: "rag", Requests: 3, Completed: 1, Errors: 2, Good: 0, SLOAttainment: 0,
		GoodputShare: 0, GoodputRPS: 0, TTFTP50ms: 500, TTFTP95ms: 500, TTFTP99ms: 500, TPOTP50ms: 25, ITLP99ms: 25}
	for _, c := range []struct{ got, want ClassStats }{{chat, wantChat}, {rag, wantRag}} {
		g, w := c.got, c.want
		if g.Requests != w.Requests || g.Completed != w.Completed || g.Errors != w.Errors || g.Good != w.Good {
			t.Errorf("%s counts = %+v, want %+v", w.Class, g, w)
		}
		checkNear(t, w.Class+".slo_attainment", g.SLOAttainment, w.SLOAttainment)
		checkNear(t, w.Class+".goodput_share", g.GoodputShare, w.GoodputShare)
		checkNear(t, w.Class+".goodput_rps", g.GoodputRPS, w.GoodputRPS)
		checkNear(t, w.Class+".ttft_p50", g.TTFTP50ms, w.TTFTP50ms)
		checkNear(t, w.Class+".ttft_p95", g.TTFTP95ms, w.TTFTP95ms)
		checkNear(t, w.Class+".ttft_p99", g.TTFTP99ms, w.TTFTP99ms)
		checkNear(t, w.Class+".tpot_p50", g.TPOTP50ms, w.TPOTP50ms)
		checkNear(t, w.Class+".itl_p99", g.ITLP99ms, w.ITLP99ms)
	}
	// The classes' goodput adds up to the run's (same denominator).
	checkNear(t, "sum of class goodput", chat.GoodputRPS+rag.GoodputRPS, s.GoodputRPS)
	if s.ByTurn != nil || s.ByHistory != nil {
		t.Errorf("requests without turns got by_turn %+v, by_history %+v", s.ByTurn, s.ByHistory)
	}
}

// A class whose every request failed has counts and no latency (zeros the reports show as
// missing), and the other class's percentiles are the run's: the breakdown and the
// summary follow one percentile rule.
func TestByClassFailedClassAndOneRule(t *testing.T) {
	var reqs []Request
	for i := range 200 {
		ttft := int64(20000 + 997*i%150000) // spread over many histogram buckets
		reqs = append(reqs, Request{I: i, Class: "chat", SchedUS: int64(i) * 5000, SendUS: int64(i)*5000 + 10,
			FirstUS: int64(i)*5000 + ttft, LastUS: int64(i)*5000 + ttft + 30000 + int64(i*13), EndUS: int64(i)*5000 + ttft + 40000 + int64(i*13),
			OutputTarget: 4, OutputTokens: 4, Chunks: 4, ITLUS: []int64{10000, 10000 + int64(i*13), 10000 + int64(i*29)}})
	}
	for i := 200; i < 210; i++ {
		reqs = append(reqs, Request{I: i, Class: "batch", SchedUS: int64(i) * 5000, SendUS: int64(i) * 5000, EndUS: int64(i)*5000 + 100, Error: "http_500"})
	}
	s := Summarize(reqs, SummaryInput{SLO: scenarioSLO})
	if len(s.ByClass) != 2 {
		t.Fatalf("by_class %+v, want batch and chat", s.ByClass)
	}
	batch, chat := s.ByClass[0], s.ByClass[1]
	if batch.Class != "batch" || batch.Requests != 10 || batch.Completed != 0 || batch.Errors != 10 || batch.SLOAttainment != 0 ||
		batch.TTFTP50ms != 0 || batch.ITLP99ms != 0 || batch.GoodputShare != 0 {
		t.Errorf("failed class = %+v, want 10 requests, 10 errors, no latency", batch)
	}
	if chat.TTFTP50ms != s.TTFTms.P50 || chat.TTFTP95ms != s.TTFTms.P95 || chat.TTFTP99ms != s.TTFTms.P99 ||
		chat.TPOTP50ms != s.TPOTms.P50 || chat.ITLP99ms != s.ITLms.P99 {
		t.Errorf("chat holds every latency of the run, so its percentiles are the summary's: chat %+v, summary ttft %+v tpot p50 %v itl p99 %v",
			chat, s.TTFTms, s.TPOTms.P50, s.ITLms.P99)
	}
	if chat.GoodputShare != 1 && chat.Good > 0 {
		t.Errorf("chat holds every good request: share %v", chat.GoodputShare)
	}

	// One class, or none: no breakdown.
	one := Summarize(reqs[:200], SummaryInput{})
	none := Summarize(scenario(), SummaryInput{})
	if one.ByClass != nil || none.ByClass != nil {
		t.Errorf("a single class got by_class %+v; no class got %+v", one.ByClass, none.ByClass)
	}
}

// sessions builds three sessions of three turns: turn k's TTFT is 100·k ms (+ the
// session's index in ms), its history 0, 300 and 700 tokens; session 3's third turn fails.
func sessions() []Request {
	var reqs []Request
	i := 0
	history := []int{0, 300, 700}
	for s := 1; s <= 3; s++ {
		for turn := 1; turn <= 3; turn++ {
			sched := int64(i) * 1000000
			ttft := int64(turn)*100000 + int64(s)*1000
			r := Request{I: i, Session: s, Turn: turn, HistoryTokens: history[turn-1], SchedUS: sched, SendUS: sched,
				FirstUS: sched + ttft, LastUS: sched + ttft + 20000*int64(turn), EndUS: sched + ttft + 20000*int64(turn) + 100,
				OutputTarget: 3, OutputTokens: 3, Chunks: 3, ITLUS: []int64{10000 * int64(turn), 10000 * int64(turn)}}
			if s == 3 && turn == 3 {
				r.FirstUS, r.LastUS, r.ITLUS, r.Chunks, r.OutputTokens, r.Error = 0, 0, nil, 0, 0, "timeout"
			}
			reqs = append(reqs, r)
			i++
		}
	}
	return reqs
}

func TestByTurnAndHistory(t *testing.T) {
	s := Summarize(sessions(), SummaryInput{})
	if s.ByClass != nil {
		t.Errorf("no classes, yet by_class %+v", s.ByClass)
	}
	want := []TurnStats{
		// TTFT 101, 102, 103 ms: p50 the 2nd (102), p95 the 3rd (103).
		{Turn: 1, Requests: 3, Completed: 3, Errors: 0, TTFTP50ms: 102, TTFTP95ms: 103, ITLP99ms: 10, HistoryTokensMean: 0, HistoryTokensP50: 0},
		{Turn: 2, Requests: 3, Completed: 3, Errors: 0, TTFTP50ms: 202, TTFTP95ms: 203, ITLP99ms: 20, HistoryTokensMean: 300, HistoryTokensP50: 300},
		// Session 3's turn failed: two TTFTs, 301 and 302; p50 the 1st of 2, p95 the 2nd.
		// Its history was sent all the same and counts.
		{Turn: 3, Requests: 3, Completed: 2, Errors: 1, TTFTP50ms: 301, TTFTP95ms: 302, ITLP99ms: 30, HistoryTokensMean: 700, HistoryTokensP50: 700},
	}
	if len(s.ByTurn) != len(want) {
		t.Fatalf("by_turn %+v, want %d turns", s.ByTurn, len(want))
	}
	for k, w := range want {
		g := s.ByTurn[k]
		if g.Turn != w.Turn || g.Requests != w.Requests || g.Completed != w.Completed || g.Errors != w.Errors || g.HistoryTokensP50 != w.HistoryTokensP50 {
			t.Errorf("turn %d = %+v, want %+v", w.Turn, g, w)
		}
		checkNear(t, "ttft_p50", g.TTFTP50ms, w.TTFTP50ms)
		checkNear(t, "ttft_p95", g.TTFTP95ms, w.TTFTP95ms)
		checkNear(t, "itl_p99", g.ITLP99ms, w.ITLP99ms)
		checkNear(t, "history_tokens_mean", g.HistoryTokensMean, w.HistoryTokensMean)
	}
	// Histories of 0, 300 and 700 tokens fall in the buckets 0, 256–511 and 512–1023.
	wantH := []HistoryStats{
		{MinTokens: 0, MaxTokens: 0, Requests: 3, Completed: 3, TTFTP50ms: 102, TTFTP95ms: 103},
		{MinTokens: 256, MaxTokens: 511, Requests: 3, Completed: 3, TTFTP50ms: 202, TTFTP95ms: 203},
		{MinTokens: 512, MaxTokens: 1023, Requests: 3, Completed: 2, Errors: 1, TTFTP50ms: 301, TTFTP95ms: 302},
	}
	if len(s.ByHistory) != len(wantH) {
		t.Fatalf("by_history %+v, want %d buckets", s.ByHistory, len(wantH))
	}
	for k, w := range wantH {
		g := s.ByHistory[k]
		if g.MinTokens != w.MinTokens || g.MaxTokens != w.MaxTokens || g.Requests != w.Requests || g.Completed != w.Completed || g.Errors != w.Errors {
			t.Errorf("bucket %d = %+v, want %+v", k, g, w)
		}
		checkNear(t, "ttft_p50", g.TTFTP50ms, w.TTFTP50ms)
		checkNear(t, "ttft_p95", g.TTFTP95ms, w.TTFTP95ms)
	}
}

func TestHistoryBuckets(t *testing.T) {
	for _, c := range []struct{ h, lo, hi int }{
		{0, 0, 0},       // no history: its own bucket
		{1, 1, 1},       // the smallest power of two
		{2, 2, 3},       // [2, 3]
		{255, 128, 255}, // the top of a bucket
		{256, 256, 511}, // the bottom of the next
		{100000, 65536, 131071},
	} {
		lo, hi := historyBounds(historyBucket(c.h))
		if lo != c.lo || hi != c.hi {
			t.Errorf("history %d in bucket [%d, %d], want [%d, %d]", c.h, lo, hi, c.lo, c.hi)
		}
	}
}

// A merged record's breakdowns are those of its requests together: merging shards is
// summarizing their requests again.
func TestBreakdownsSurviveMerge(t *testing.T) {
	reqs := sessions()
	var a, b []Request
	for _, r := range reqs {
		if r.I%2 == 0 {
			a = append(a, r)
		} else {
			b = append(b, r)
		}
	}
	mk := func(shard string, rs []Request) *Record {
		return &Record{Schema: Schema, Workload: "w", WorkloadHash: "sha256:x", Mode: "open", Shard: shard,
			Window: Window{StartUS: 0, EndUS: 9000000}, Requests: rs, Summary: Summarize(rs, SummaryInput{}),
			Priming: &PrimingSummary{Requests: len(rs), PromptTokens: 10 * len(rs), Concurrency: 4, DurationS: float64(len(rs))}}
	}
	m, err := Merge(mk("1/2", a), mk("2/2", b))
	if err != nil {
		t.Fatal(err)
	}
	whole := Summarize(reqs, SummaryInput{})
	ga, _ := json.Marshal([]any{m.Summary.ByTurn, m.Summary.ByHistory})
	gw, _ := json.Marshal([]any{whole.ByTurn, whole.ByHistory})
	if string(ga) != string(gw) {
		t.Errorf("merged breakdowns %s, want %s", ga, gw)
	}
	if p := m.Priming; p == nil || p.Requests != 9 || p.PromptTokens != 90 || p.DurationS != 5 {
		t.Errorf("merged priming %+v, want 9 requests, 90 tokens, the longest shard's 5 s", p)
	}
}

// No request makes a breakdown unwritable: empty groups give zeros, never NaN.
func TestBreakdownsFinite(t *testing.T) {
	reqs := []Request{
		{I: 0, Class: "a", Turn: 1, Error: "connect"},
		{I: 1, Class: "b", Turn: 2, HistoryTokens: 1 << 40, Error: "timeout"},
	}
	rec := &Record{Summary: Summarize(reqs, SummaryInput{})}
	if nf := ReplaceNonFinite(rec); len(nf) > 0 {
		t.Errorf("non-finite values %v", nf)
	}
	if _, err := json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Summary.ByClass) != 2 || len(rec.Summary.ByTurn) != 2 || len(rec.Summary.ByHistory) != 2 {
		t.Errorf("two failed requests: by_class %+v, by_turn %+v, by_history %+v", rec.Summary.ByClass, rec.Summary.ByTurn, rec.Summary.ByHistory)
	}
}
