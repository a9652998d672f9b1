package result

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

// near reports whether got is within HdrHistogram's 3-significant-figure resolution
// (0.1%) of want.
func near(got, want float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want) <= 0.001*math.Abs(want)
}

func checkNear(t *testing.T, name string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %v, want %v (±0.1%%)", name, got, want)
	}
}

func checkPercentiles(t *testing.T, name string, got, want Percentiles) {
	t.Helper()
	checkNear(t, name+".p50", got.P50, want.P50)
	checkNear(t, name+".p90", got.P90, want.P90)
	checkNear(t, name+".p95", got.P95, want.P95)
	checkNear(t, name+".p99", got.P99, want.P99)
	checkNear(t, name+".p999", got.P999, want.P999)
	checkNear(t, name+".max", got.Max, want.Max)
	checkNear(t, name+".mean", got.Mean, want.Mean)
	if got.Count != want.Count {
		t.Errorf("%s.count = %d, want %d", name, got.Count, want.Count)
	}
}

func gaps(n int, us int64) []int64 {
	g := make([]int64, n)
	for i := range g {
		g[i] = us
	}
	return g
}

// scenario is six hand-built requests in a 1 s window (times in µs). Every expected value
// in TestSummarizeScenario is worked out by hand from these timelines.
//
//	i  sched    send     first    last     end      out  gaps (ms)        outcome
//	0  0        100      50000    150000   151000   11   10 × 10          ok
//	1  100000   100300   180000   300000   300500   5    20, 40, 60       ok, early stop (target 8)
//	2  140000   140050   200000   200000   200200   1    none             ok, one token: no TPOT
//	3  300000   302000   400000   500000   800000   2    100              timeout
//	4  400000   400010   900000   950000   951000   3    25, 25           ok, TTFT 500 ms misses the SLO
//	5  500000   500020   -        -        500500   0    none             connect error
func scenario() []Request {
	return []Request{
		{I: 0, SchedUS: 0, SendUS: 100, FirstUS: 50000, LastUS: 150000, EndUS: 151000,
			PromptTarget: 100, PromptTokens: 98, OutputTarget: 11, OutputTokens: 11, Chunks: 11, ITLUS: gaps(10, 10000)},
		{I: 1, SchedUS: 100000, SendUS: 100300, FirstUS: 180000, LastUS: 300000, EndUS: 300500,
			PromptTarget: 200, PromptTokens: 210, OutputTarget: 8, OutputTokens: 5, Chunks: 4, ITLUS: []int64{20000, 40000, 60000}},
		{I: 2, SchedUS: 140000, SendUS: 140050, FirstUS: 200000, LastUS: 200000, EndUS: 200200,
			PromptTarget: 50, PromptTokens: 50, OutputTarget: 1, OutputTokens: 1, Chunks: 1},
		{I: 3, SchedUS: 300000, SendUS: 302000, FirstUS: 400000, LastUS: 500000, EndUS: 800000,
			PromptTarget: 100, PromptTokens: 100, OutputTarget: 50, OutputTokens: 2, Chunks: 2, ITLUS: []int64{100000}, Error: "timeout"},
		{I: 4, SchedUS: 400000, SendUS: 400010, FirstUS: 900000, LastUS: 950000, EndUS: 951000,
			PromptTarget: 100, PromptTokens: 100, OutputTarget: 3, OutputTokens: 3, Chunks: 3, ITLUS: []int64{25000, 25000}},
		{I: 5, SchedUS: 500000, SendUS: 500020, EndUS: 500500,
			PromptTarget: 100, OutputTarget: 10, Error: "connect"},
	}
}

var scenarioSLO = []SLOTarget{
	{Metric: MetricTTFT, Percentile: 95, LimitMS: 200},
	{Metric: MetricTPOT, Percentile: 95, LimitMS: 40},
	{Metric: MetricITL, Percentile: 99, LimitMS: 100},
}

func scenarioInput() SummaryInput {
	return SummaryInput{
		Window:         Window{StartUS: 0, EndUS: 1_000_000},
		SLO:            scenarioSLO,
		MaxDispatchLag: time.Millisecond,
		OpenLoop:       true,
	}
}

func TestSummarizeScenario(t *testing.T) {
	s := Summarize(scenario(), scenarioInput())

	// Successful: 0, 1, 2, 4. Ranks follow HdrHistogram: int(p/100·n + 0.5).
	// TTFT 50, 80, 60, 500 ms → sorted 50 60 80 500; p50 rank 2 = 60; p90..p99.9 rank 4.
	checkPercentiles(t, "ttft", s.TTFTms, Percentiles{P50: 60, P90: 500, P95: 500, P99: 500, P999: 500, Max: 500, Mean: 172.5, Count: 4})
	// first − send: 49.9, 79.7, 59.95, 499.99 ms.
	checkPercentiles(t, "ttft_send", s.TTFTSendms, Percentiles{P50: 59.95, P90: 499.99, P95: 499.99, P99: 499.99, P999: 499.99, Max: 499.99, Mean: 172.385, Count: 4})
	// TPOT: 100/10 = 10, 120/4 = 30, (one-token request 2 has none), 50/2 = 25 ms.
	// Sorted 10 25 30: p50 rank int(2.0) = 2 → 25; p90 rank int(3.2) = 3 → 30.
	checkPercentiles(t, "tpot", s.TPOTms, Percentiles{P50: 25, P90: 30, P95: 30, P99: 30, P999: 30, Max: 30, Mean: 65.0 / 3, Count: 3})
	// ITL pooled over successful requests: 10 × 10, 20, 40, 60, 25, 25 (request 3's 100 ms
	// gap is a timeout's, excluded). Sorted: 10 ×10, 20, 25, 25, 40, 60 (n = 15).
	// p50 rank int(8.0) = 8 → 10; p90 int(14.0) = 14 → 40; p95 int(14.75) = 14 → 40;
	// p99 int(15.35) = 15 → 60. Mean 270 / 15 = 18.
	checkPercentiles(t, "itl", s.ITLms, Percentiles{P50: 10, P90: 40, P95: 40, P99: 60, P999: 60, Max: 60, Mean: 18, Count: 15})
	// E2E: 150, 200, 60, 550 → sorted 60 150 200 550; p50 150.
	checkPercentiles(t, "e2e", s.E2Ems, Percentiles{P50: 150, P90: 550, P95: 550, P99: 550, P999: 550, Max: 550, Mean: 240, Count: 4})

	if s.Requests != 6 || s.Completed != 4 {
		t.Errorf("requests/completed = %d/%d, want 6/4", s.Requests, s.Completed)
	}
	if len(s.Errors) != 2 || s.Errors["timeout"] != 1 || s.Errors["connect"] != 1 {
		t.Errorf("errors = %v, want timeout 1, connect 1", s.Errors)
	}
	// SLO met: 0, 1, 2 (4 misses TTFT; 3 and 5 failed) → 3 of 6.
	checkNear(t, "error_rate", s.ErrorRate, 2.0/6)
	checkNear(t, "slo_attainment", s.SLOAttainment, 0.5)
	checkNear(t, "duration_s", s.DurationS, 1)
	// Arrivals span 0 … 500 ms, six of them: 0.5 s × 6/5 = 0.6 s. Goodput is 3 good
	// requests over that span, whatever the drain; the window figure (vllm bench serve's)
	// is 3 over the 1 s window.
	checkNear(t, "arrival_span_s", s.ArrivalSpanS, 0.6)
	checkNear(t, "goodput_rps", s.GoodputRPS, 5)
	checkNear(t, "goodput_window_rps", s.GoodputWindowRPS, 3)
	checkNear(t, "throughput_rps", s.ThroughputRPS, 4)
	checkNear(t, "output_tokens_per_s", s.OutputTokensPS, 11+5+1+3)

	// Lag over all six: 100, 300, 50, 2000, 10, 20 µs → sorted 10 20 50 100 300 2000;
	// p50 rank int(3.5) = 3 → 50 µs; p99 rank 6 → 2 ms.
	checkNear(t, "lag.p50", s.DispatchLagms.P50, 0.05)
	checkNear(t, "lag.p99", s.DispatchLagms.P99, 2)
	checkNear(t, "lag.max", s.DispatchLagms.Max, 2)
	if !s.ClientSaturated {
		t.Error("client_saturated = false, want true: lag p99 2 ms > 1 ms in an open loop")
	}

	// In flight over [sched, end): lengths 151000 + 200500 + 60200 + 500000 + 551000 + 500
	// = 1463200 µs in a 1 s window; requests 0, 1 and 2 overlap in [140000, 151000).
	checkNear(t, "in_flight.mean", s.InFlight.Mean, 1.4632)
	if s.InFlight.Max != 3 {
		t.Errorf("in_flight.max = %d, want 3", s.InFlight.Max)
	}

	// Lengths over the four completed requests.
	want := Lengths{
		PromptTarget: LengthStats{P50: 100, P95: 200, Max: 200, Mean: 112.5}, // 50 100 100 200
		Prompt:       LengthStats{P50: 98, P95: 210, Max: 210, Mean: 114.5},  // 50 98 100 210
		OutputTarget: LengthStats{P50: 3, P95: 11, Max: 11, Mean: 5.75},      // 1 3 8 11
		Output:       LengthStats{P50: 3, P95: 11, Max: 11, Mean: 5},         // 1 3 5 11
	}
	if s.Lengths != want {
		t.Errorf("lengths = %+v\nwant %+v", s.Lengths, want)
	}
	if s.EarlyStops != 1 {
		t.Errorf("early_stops = %d, want 1 (request 1: 5 of 8 tokens)", s.EarlyStops)
	}

	wantChecks := []SLOCheck{
		{Metric: MetricTTFT, Percentile: 95, LimitMS: 200, ValueMS: 500, Met: false},
		{Metric: MetricTPOT, Percentile: 95, LimitMS: 40, ValueMS: 30, Met: true},
		{Metric: MetricITL, Percentile: 99, LimitMS: 100, ValueMS: 60, Met: true},
	}
	if len(s.SLOChecks) != len(wantChecks) {
		t.Fatalf("slo_checks = %+v, want %+v", s.SLOChecks, wantChecks)
	}
	for i, c := range s.SLOChecks {
		w := wantChecks[i]
		if c.Metric != w.Metric || c.Percentile != w.Percentile || c.LimitMS != w.LimitMS || c.Met != w.Met || !near(c.ValueMS, w.ValueMS) {
			t.Errorf("slo_checks[%d] = %+v, want %+v", i, c, w)
		}
	}
}

func TestSummarizeSaturation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound time.Duration
		open  bool
		want  bool
	}{
		// The scenario's lag p99 is 2 ms: over the 1 ms bound.
		{"open loop over the bound", time.Millisecond, true, true},
		// A wider bound keeps the same run honest.
		{"open loop within the bound", 5 * time.Millisecond, true, false},
		// The bound is a strict "exceeds": p99 exactly at it is not saturation.
		{"open loop at the bound", 2 * time.Millisecond, true, false},
		// No bound given: DESIGN's default of 1 ms applies.
		{"default bound", 0, true, true},
		// A closed loop waits for responses by design; lag does not mark it.
		{"closed loop", time.Millisecond, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scenarioInput()
			in.MaxDispatchLag, in.OpenLoop = tc.bound, tc.open
			if got := Summarize(scenario(), in).ClientSaturated; got != tc.want {
				t.Errorf("client_saturated = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummarizeIgnoresStaleSLOMet(t *testing.T) {
	reqs := scenario()
	for i := range reqs {
		reqs[i].SLOMet = true // as if judged against looser SLOs
	}
	if got := Summarize(reqs, scenarioInput()).SLOAttainment; !near(got, 0.5) {
		t.Errorf("slo_attainment = %v, want 0.5 (re-judged from the input's SLOs)", got)
	}
}

func TestSummarizeEarlyStops(t *testing.T) {
	ok := func(out, target int, noUsage bool) Request {
		return Request{SchedUS: 0, SendUS: 1, FirstUS: 10, LastUS: 20, EndUS: 21, OutputTokens: out, OutputTarget: target, NoUsage: noUsage}
	}
	for _, tc := range []struct {
		name string
		req  Request
		want int
	}{
		// Fewer tokens than asked, counted by the server: an early stop.
		{"short", ok(5, 8, false), 1},
		// Exactly the target.
		{"exact", ok(8, 8, false), 0},
		// More than asked (a server that overshoots) is not early.
		{"long", ok(9, 8, false), 0},
		// Without usage the count is chunks, not tokens: it cannot tell.
		{"no usage", ok(5, 8, true), 0},
		// A failed request is an error, not an early stop.
		{"failed", func() Request { r := ok(5, 8, false); r.Error = "disconnect"; return r }(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize([]Request{tc.req}, SummaryInput{Window: Window{EndUS: 100}}).EarlyStops
			if got != tc.want {
				t.Errorf("early_stops = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSummarizeEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs []Request
		in   SummaryInput
	}{
		// Nothing measured at all (a run interrupted at once).
		{"no requests", nil, SummaryInput{SLO: scenarioSLO, OpenLoop: true}},
		// Requests but a zero-length window: rates would divide by zero.
		{"zero window", []Request{{SchedUS: 5, SendUS: 5, EndUS: 5, Error: "connect"}}, SummaryInput{Window: Window{StartUS: 5, EndUS: 5}, SLO: scenarioSLO}},
		// Only failures: every latency distribution is empty.
		{"all failed", []Request{{SchedUS: 0, SendUS: 1, EndUS: 10, Error: "http_500"}}, SummaryInput{Window: Window{EndUS: 100}, SLO: scenarioSLO, OpenLoop: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.reqs, tc.in)
			if _, err := json.Marshal(s); err != nil {
				t.Fatalf("summary does not encode (NaN?): %v", err)
			}
			if s.Errors == nil {
				t.Error("errors is nil; want an empty map so the record says {} not null")
			}
			if s.GoodputRPS != 0 || s.SLOAttainment != 0 || s.TTFTms != (Percentiles{}) || s.ClientSaturated {
				t.Errorf("summary of nothing is not zero: %+v", s)
			}
			for _, c := range s.SLOChecks {
				if c.Met {
					t.Errorf("SLO check %+v met with no successful request", c)
				}
			}
		})
	}
}

func TestSummarizeWindowFallback(t *testing.T) {
	// No window given: the span of the requests, 1000 … 3000 µs, is used.
	reqs := []Request{
		{SchedUS: 1000, SendUS: 1000, FirstUS: 1500, LastUS: 1500, EndUS: 2000, OutputTokens: 1},
		{SchedUS: 1500, SendUS: 1500, FirstUS: 2500, LastUS: 2500, EndUS: 3000, OutputTokens: 1},
	}
	s := Summarize(reqs, SummaryInput{})
	checkNear(t, "duration_s", s.DurationS, 0.002)
	checkNear(t, "throughput_rps", s.ThroughputRPS, 1000)
	checkNear(t, "in_flight.mean", s.InFlight.Mean, 1.25) // (1000 + 1500 µs in flight) / 2000 µs
	if s.InFlight.Max != 2 {
		t.Errorf("in_flight.max = %d, want 2", s.InFlight.Max)
	}
}

func TestInFlight(t *testing.T) {
	win := Window{StartUS: 0, EndUS: 100}
	span := func(a, b int64) Request { return Request{SchedUS: a, EndUS: b} }
	for _, tc := range []struct {
		name     string
		reqs     []Request
		mean     float64
		maxCount int
	}{
		// One request over half the window.
		{"single", []Request{span(0, 50)}, 0.5, 1},
		// Back to back: [0,50) and [50,100) touch but never overlap.
		{"back to back", []Request{span(0, 50), span(50, 100)}, 1, 1},
		// Nested intervals: 3 at once in [20, 30).
		{"nested", []Request{span(0, 100), span(10, 40), span(20, 30)}, 1.4, 3},
		// Clipped to the window: a request that started before it and one that ends after.
		{"clipped", []Request{span(-50, 10), span(90, 200)}, 0.2, 1},
		// Never ended (end before sched): in flight to the end of the window.
		{"unfinished", []Request{span(60, 0)}, 0.4, 1},
		// Entirely outside the window: not counted.
		{"outside", []Request{span(200, 300)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := inFlight(tc.reqs, win)
			if !near(got.Mean, tc.mean) || got.Max != tc.maxCount {
				t.Errorf("inFlight = %+v, want mean %v max %d", got, tc.mean, tc.maxCount)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	// base: TTFT 100 ms, E2E 400 ms, 4 tokens → TPOT 100 ms, gaps 50, 150, 100 ms.
	base := Request{SchedUS: 0, SendUS: 10, FirstUS: 100_000, LastUS: 400_000, EndUS: 400_100,
		OutputTokens: 4, ITLUS: []int64{50_000, 150_000, 100_000}}
	with := func(f func(r *Request)) Request { r := base; f(&r); return r }
	slo := func(metric string, p, ms float64) []SLOTarget {
		return []SLOTarget{{Metric: metric, Percentile: p, LimitMS: ms}}
	}
	for _, tc := range []struct {
		name string
		req  Request
		slo  []SLOTarget
		want bool
	}{
		// No SLO: success is enough.
		{"no slo", base, nil, true},
		// A failure never meets an SLO, however fast.
		{"error", with(func(r *Request) { r.Error = "stream_error" }), nil, false},
		// The limit is inclusive: TTFT exactly 100 ms meets ≤ 100 ms.
		{"ttft at limit", base, slo(MetricTTFT, 95, 100), true},
		// One microsecond over.
		{"ttft over", base, slo(MetricTTFT, 95, 99.999), false},
		// TTFT is from the scheduled time: a late send does not excuse it.
		{"ttft counts dispatch lag", with(func(r *Request) { r.SendUS = 60_000 }), slo(MetricTTFT, 95, 99), false},
		{"e2e met", base, slo(MetricE2E, 95, 400), true},
		{"e2e missed", base, slo(MetricE2E, 95, 399), false},
		// TPOT = 300 ms / 3 = 100 ms.
		{"tpot met", base, slo(MetricTPOT, 95, 100), true},
		{"tpot missed", base, slo(MetricTPOT, 95, 99.9), false},
		// One token: no TPOT, the target passes.
		{"tpot one token", with(func(r *Request) { r.OutputTokens = 1; r.LastUS = r.FirstUS; r.ITLUS = nil }), slo(MetricTPOT, 95, 1), true},
		// The request's own p50 of 50, 100, 150 is 100 (rank int(2.0) = 2).
		{"itl p50 met", base, slo(MetricITL, 50, 100), true},
		// Its p99 is the 150 ms gap.
		{"itl p99 missed", base, slo(MetricITL, 99, 149), false},
		// No gaps: nothing can exceed the limit.
		{"itl no gaps", with(func(r *Request) { r.ITLUS = nil }), slo(MetricITL, 99, 1), true},
		// Success without content has no TTFT to meet.
		{"no content ttft", with(func(r *Request) { r.FirstUS, r.LastUS, r.OutputTokens, r.ITLUS = 0, 0, 0, nil }), slo(MetricTTFT, 95, 1e9), false},
		// An unknown metric is a miss, never a silent pass.
		{"unknown metric", base, slo("ttlt", 95, 1e9), false},
		// Every target must hold: TTFT meets, TPOT misses.
		{"all targets", base, append(slo(MetricTTFT, 95, 200), slo(MetricTPOT, 95, 50)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.SLOMet = !tc.want // Judge must overwrite it
			Judge(&r, tc.slo)
			if r.SLOMet != tc.want {
				t.Errorf("SLOMet = %v, want %v", r.SLOMet, tc.want)
			}
		})
	}
}

func TestDistribution(t *testing.T) {
	d := NewDistribution()
	for _, v := range []int64{-5, 0, 7, 2 * HistHighestUS} {
		d.Record(v)
	}
	p := d.Percentiles()
	if p.Clamped != 2 || p.Count != 4 {
		t.Errorf("clamped/count = %d/%d, want 2/4", p.Clamped, p.Count)
	}
	checkNear(t, "max", p.Max, float64(HistHighestUS)/1000)
	// Values above 2.048 ms land in buckets wider than 1 µs; the reported percentile is
	// the top of the bucket, but never above the exact max.
	d = NewDistribution()
	d.Record(500_000)
	if got := d.ValueAtUS(50); got != 500_000 {
		t.Errorf("p50 of one value 500000 = %d, want exactly it (clamped to the max)", got)
	}
	// Merging is lossless.
	a, b, all := NewDistribution(), NewDistribution(), NewDistribution()
	for i := int64(1); i <= 1000; i++ {
		v := i * i * 37 % 3_000_000
		all.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	if a.Percentiles() != all.Percentiles() {
		t.Errorf("merged %+v != whole %+v", a.Percentiles(), all.Percentiles())
	}
	if h := Histogram([]int64{1, 2, 3, -1}); h.TotalCount() != 4 || h.Max() != 3 {
		t.Errorf("Histogram: count %d max %d, want 4 and 3", h.TotalCount(), h.Max())
	}
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		want int
	}{
		{50, 4, 2},     // 2.0 + 0.5 truncates to 2: HdrHistogram's rule
		{50, 5, 3},     // 2.5 + 0.5
		{99, 150, 149}, // 148.5 + 0.5
		{99.9, 1000, 999},
		{10, 14, 1}, // 1.4: nearest rank 1, where ceil would say 2
		{0, 10, 1},  // never below the first
		{100, 3, 3}, // never past the last
	} {
		if got := rank(tc.p, tc.n); got != tc.want {
			t.Errorf("rank(%v, %d) = %d, want %d", tc.p, tc.n, got, tc.want)
		}
		// The histogram agrees on the same values 1…n.
		vals := make([]int64, tc.n)
		for i := range vals {
			vals[i] = int64(i + 1)
		}
		if got := Histogram(vals).ValueAtPercentile(tc.p); tc.p > 0 && got != int64(tc.want) {
			t.Errorf("histogram p%v of 1..%d = %d, want %d", tc.p, tc.n, got, tc.want)
		}
	}
}

func TestWarmupSummaryOf(t *testing.T) {
	if WarmupSummaryOf(nil) != nil {
		t.Error("warm-up summary of nothing is not nil")
	}
	// Given out of order: the cold one is index 0 (TTFT 900 ms), not the first listed.
	reqs := []Request{
		{I: 2, SchedUS: 2_000_000, SendUS: 2_000_000, FirstUS: 2_100_000, LastUS: 2_200_000, EndUS: 2_300_000},
		{I: 0, SchedUS: 0, SendUS: 10, FirstUS: 900_000, LastUS: 1_000_000, EndUS: 1_000_100},
		{I: 1, SchedUS: 1_000_000, SendUS: 1_000_010, EndUS: 1_500_000, Error: "timeout"},
	}
	w := WarmupSummaryOf(reqs)
	if w.Requests != 3 || w.Errors["timeout"] != 1 || len(w.Errors) != 1 {
		t.Errorf("requests/errors = %d/%v, want 3 and timeout 1", w.Requests, w.Errors)
	}
	checkNear(t, "cold_ttft_ms", w.ColdTTFTms, 900)
	checkPercentiles(t, "ttft", w.TTFTms, Percentiles{P50: 100, P90: 900, P95: 900, P99: 900, P999: 900, Max: 900, Mean: 500, Count: 2})
	checkNear(t, "duration_s", w.DurationS, 2.3)
}

func BenchmarkSummarize(b *testing.B) {
	const nReq, nGaps = 10_000, 200
	reqs := make([]Request, nReq)
	for i := range reqs {
		sched := int64(i) * 10_000
		g := make([]int64, nGaps)
		var sum int64
		for k := range g {
			g[k] = 5_000 + int64((i*31+k*17)%20_000)
			sum += g[k]
		}
		first := sched + 50_000 + int64(i%7_000)
		reqs[i] = Request{I: i, SchedUS: sched, SendUS: sched + int64(i%300), FirstUS: first, LastUS: first + sum, EndUS: first + sum + 100,
			PromptTarget: 800, PromptTokens: 800 + i%5, OutputTarget: nGaps + 1, OutputTokens: nGaps + 1, Chunks: nGaps + 1, ITLUS: g}
		if i%100 == 0 {
			reqs[i].Error = fmt.Sprintf("http_%d", 500+i%3)
		}
	}
	in := SummaryInput{Window: Window{EndUS: int64(nReq) * 10_000}, SLO: scenarioSLO, OpenLoop: true}
	b.ReportAllocs()
	for b.Loop() {
		Summarize(reqs, in)
	}
}

// Goodput does not count the drain: the same schedule and the same good requests give the
// same goodput however long the last requests take to finish.
func TestGoodputIgnoresTheDrain(t *testing.T) {
	fast := scenario()
	slow := scenario()
	for i := range slow {
		if slow[i].OK() {
			slow[i].EndUS += 2_000_000 // a long tail after the last token (the SLOs ignore it)
		}
	}
	in := scenarioInput()
	a := Summarize(fast, in)
	in.Window.EndUS = 3_000_000
	b := Summarize(slow, in)
	if a.GoodputRPS != b.GoodputRPS || b.GoodputWindowRPS >= a.GoodputWindowRPS {
		t.Errorf("goodput %v vs %v (want equal); window goodput %v vs %v (want the longer window lower)",
			a.GoodputRPS, b.GoodputRPS, a.GoodputWindowRPS, b.GoodputWindowRPS)
	}
	if ArrivalSpanS(fast[:1]) != 0 {
		t.Error("one request has no arrival span")
	}
}

// TestErrorCounts: reasons with their counts, most frequent first, ties by name.
func TestErrorCounts(t *testing.T) {
	got := ErrorCounts(map[string]int{"http_503": 1, "timeout": 3, "canceled": 1})
	if want := "3 timeout, 1 canceled, 1 http_503"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := ErrorCounts(nil); got != "" {
		t.Errorf("no errors: %q", got)
	}
}
