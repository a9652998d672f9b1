package result

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// SLO metric names (SLOTarget.Metric).
const (
	MetricTTFT = "ttft"
	MetricTPOT = "tpot"
	MetricITL  = "itl"
	MetricE2E  = "e2e"
)

// DefaultMaxDispatchLag is the dispatch-lag p99 above which an open-loop run is
// client-saturated when no bound is given (DESIGN §3).
const DefaultMaxDispatchLag = time.Millisecond

// OK reports whether the request succeeded.
func (r *Request) OK() bool { return r.Error == "" }

// HasContent reports whether any generated text arrived.
func (r *Request) HasContent() bool { return r.FirstUS > 0 }

// TTFTUS is the time to first token, first − sched, in microseconds: measured from the
// scheduled time, so that queueing in the client or the server cannot hide. False when no
// content arrived.
func (r *Request) TTFTUS() (int64, bool) {
	if !r.HasContent() {
		return 0, false
	}
	return r.FirstUS - r.SchedUS, true
}

// E2EUS is the end-to-end latency, last − sched, in microseconds (to the last content
// chunk: a trailing usage chunk is not latency the user sees). False when no content
// arrived.
func (r *Request) E2EUS() (int64, bool) {
	if !r.HasContent() {
		return 0, false
	}
	return r.LastUS - r.SchedUS, true
}

// TPOTUS is the time per output token after the first chunk, (last − first) / (the
// tokens that came after it), in microseconds: the mean of the request's per-token
// intervals (TokenGaps). With one token a chunk that is (output_tokens − 1), the usual
// definition; a first chunk of k tokens (speculative decoding, chunked streaming) arrived
// at first, and (output_tokens − 1) would count k − 1 of them as generated after it. A
// request with no token after its first chunk has none (false): its tokens are TTFT's.
func (r *Request) TPOTUS() (float64, bool) {
	if !r.HasContent() || r.OutputTokens < 2 {
		return 0, false
	}
	after := r.OutputTokens - r.firstChunkTokens()
	if after < 1 {
		return 0, false
	}
	return float64(r.LastUS-r.FirstUS) / float64(after), true
}

// firstChunkTokens is how many tokens r's first chunk carried, as tokenGaps counts them
// (chunking): the server's count, else output_tokens / chunks, else 1.
func (r *Request) firstChunkTokens() int {
	switch how, k := r.chunking(); how {
	case tokensKnown:
		return max(r.ChunkTokens[0], 1)
	case tokensInferred:
		return max(int(math.Round(k)), 1)
	}
	return 1
}

// Judge sets r.SLOMet: whether r succeeded and met every target in slo, each judged on the
// request's own value (DESIGN §4):
//
//   - ttft: first − sched ≤ limit;
//   - tpot: (last − first) / (the tokens after the first chunk: output_tokens − 1 with one
//     token a chunk) ≤ limit; a request with no token after its first chunk has no TPOT
//     and passes this target;
//   - e2e: last − sched ≤ limit;
//   - itl: the request's own pNN of its inter-chunk gaps (the nearest rank, as
//     HdrHistogram computes it) ≤ limit; a request with no gaps passes this target.
//
// A failed request (Error != "") never meets an SLO. A successful request that produced
// no content misses ttft and e2e targets (it has no first token to measure, and a
// latency that cannot be measured is not a latency that was met). A target with an
// unknown metric is missed, never silently passed.
func Judge(r *Request, slo []SLOTarget) {
	var scratch []int64
	r.SLOMet = meets(r, slo, &scratch)
}

// meets is Judge without the side effect; scratch is reused between requests.
func meets(r *Request, slo []SLOTarget, scratch *[]int64) bool {
	if !r.OK() {
		return false
	}
	for _, t := range slo {
		limitUS := t.LimitMS * 1000
		switch t.Metric {
		case MetricTTFT:
			v, ok := r.TTFTUS()
			if !ok || float64(v) > limitUS {
				return false
			}
		case MetricE2E:
			v, ok := r.E2EUS()
			if !ok || float64(v) > limitUS {
				return false
			}
		case MetricTPOT:
			if v, ok := r.TPOTUS(); ok && v > limitUS {
				return false
			}
		case MetricITL:
			if len(r.ITLUS) == 0 {
				continue
			}
			s := append((*scratch)[:0], r.ITLUS...)
			slices.Sort(s)
			*scratch = s
			if float64(percentileSorted(s, t.Percentile)) > limitUS {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// SLOFor is the targets a request of class is judged against: its class's own where
// classSLO has them, else the run's.
func SLOFor(class string, slo []SLOTarget, classSLO map[string][]SLOTarget) []SLOTarget {
	if ts, ok := classSLO[class]; ok && class != "" {
		return ts
	}
	return slo
}

// SummaryInput is what Summarize needs besides the requests.
type SummaryInput struct {
	// Window is the measured window. A zero or inverted window falls back to the span of
	// the requests (earliest sched to latest end).
	Window Window
	// SLO are the targets requests are judged against, and the run-level checks.
	SLO []SLOTarget
	// ClassSLO are the targets of the classes whose SLO differs from SLO (the record's
	// class_slo): a request of such a class is judged against its class's targets.
	ClassSLO map[string][]SLOTarget
	// AttainmentTarget is carried for callers that hold the input; the summary reports the
	// attainment, and the gate compares it with the target.
	AttainmentTarget float64
	// MaxDispatchLag is the dispatch-lag p99 bound of an open loop (0: 1 ms).
	MaxDispatchLag time.Duration
	// OpenLoop: requests were sent on a schedule. Only then can dispatch lag mark the run
	// client-saturated; a closed loop waits for responses by design.
	OpenLoop bool
	// Tasks groups the requests into tasks (Record.Tasks); nil: no task summary.
	Tasks *TaskRule
}

// Summarize computes a run's metrics from its measured requests (DESIGN §4). It is a
// pure function of reqs and in: merging shards is summarizing their requests together.
//
// Latency percentiles (ttft, ttft_send, tpot, itl, e2e) are over successful requests
// only, from HdrHistogram at 3 significant figures with exact mean and max; itl pools
// every gap of every successful request. requests counts every measured request,
// completed the successful ones; error_rate = errors / requests; slo_attainment = requests
// that succeeded and met every SLO (see Judge; the SLOs are re-judged here from in.SLO,
// not read from Request.SLOMet) / requests, so errors count as misses; goodput_rps the
// same numerator / arrival_span_s (the span of scheduled arrivals, so that the drain
// does not count; / duration_s where there is no span), goodput_window_rps the same
// numerator / duration_s; throughput_rps = completed / duration_s;
// output_tokens_per_s = output tokens of completed requests / duration_s. Dispatch lag
// (send − sched) is over every measured request that was sent. In-flight counts requests
// between sched and end, exactly: the mean is the integral over the window divided by
// its length, the max the peak. Zero requests or a zero window give zeros, never NaN.
func Summarize(reqs []Request, in SummaryInput) Summary {
	win := effectiveWindow(reqs, in.Window)
	s := Summary{
		Requests:  len(reqs),
		Errors:    map[string]int{},
		DurationS: float64(win.EndUS-win.StartUS) / 1e6,
	}
	ttft, ttftSend, tpot, itl, e2e := NewDistribution(), NewDistribution(), NewDistribution(), NewDistribution(), NewDistribution()
	itlTok := NewDistribution()
	var tpc TokensPerChunk
	chunks := 0
	lag := NewDistribution()
	var (
		met, outputTokens           int
		promptT, prompt, outT, outA []int
		scratch, dials              []int64
		retried                     int
	)
	metFlags := make([]bool, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		// A request the run never got to send (interrupted first) has no dispatch lag.
		if r.SendUS != 0 || r.SchedUS == 0 {
			lag.Record(r.SendUS - r.SchedUS)
		}
		if r.UsageFlag != "" {
			s.UsageFlagged++
		}
		if r.DialUS > 0 {
			dials = append(dials, r.DialUS)
		}
		if r.Retries > 0 {
			retried++
		}
		if !r.OK() {
			s.Errors[r.Error]++
			continue
		}
		s.Completed++
		if meets(r, SLOFor(r.Class, in.SLO, in.ClassSLO), &scratch) {
			met++
			metFlags[i] = true
		}
		outputTokens += r.OutputTokens
		promptT, prompt = append(promptT, r.PromptTarget), append(prompt, r.PromptTokens)
		outT, outA = append(outT, r.OutputTarget), append(outA, r.OutputTokens)
		if !r.NoUsage && r.UsageFlag == "" && r.OutputTokens < r.OutputTarget {
			s.EarlyStops++
		}
		if v, ok := r.TTFTUS(); ok {
			ttft.Record(v)
			ttftSend.Record(r.FirstUS - r.SendUS)
		}
		if v, ok := r.E2EUS(); ok {
			e2e.Record(v)
		}
		if v, ok := r.TPOTUS(); ok {
			tpot.Record(int64(math.Round(v)))
		}
		for _, g := range r.ITLUS {
			itl.Record(g)
		}
		switch perTokenITL(r, itlTok) {
		case tokensKnown:
			tpc.Known++
		case tokensInferred:
			tpc.Inferred++
		}
		chunks += r.Chunks
	}

	s.TTFTms, s.TTFTSendms, s.TPOTms = ttft.Percentiles(), ttftSend.Percentiles(), tpot.Percentiles()
	s.ITLms, s.E2Ems = itl.Percentiles(), e2e.Percentiles()
	s.ITLTokenms = itlTok.Percentiles()
	if tpc.Known+tpc.Inferred > 0 && chunks > 0 {
		tpc.Mean = float64(outputTokens) / float64(chunks)
		s.TokensPerChunk = &tpc
	}
	s.ErrorRate = ratio(s.Requests-s.Completed, s.Requests)
	s.SLOAttainment = ratio(met, s.Requests)
	s.ArrivalSpanS = ArrivalSpanS(reqs)
	if s.DurationS > 0 {
		s.GoodputWindowRPS = float64(met) / s.DurationS
		s.GoodputRPS = s.GoodputWindowRPS
		s.ThroughputRPS = float64(s.Completed) / s.DurationS
		s.OutputTokensPS = float64(outputTokens) / s.DurationS
	}
	goodputDen := s.DurationS
	if s.ArrivalSpanS > 0 {
		s.GoodputRPS = float64(met) / s.ArrivalSpanS
		goodputDen = s.ArrivalSpanS
	}
	breakdowns(&s, reqs, metFlags, goodputDen, met)
	if in.Tasks != nil {
		s.Tasks = summarizeTasks(Tasks(reqs, metFlags, in.Tasks), in.Tasks, goodputDen)
	}

	s.DispatchLagms = LagSummary{P50: usToMS(lag.ValueAtUS(50)), P99: usToMS(lag.ValueAtUS(99)), Max: usToMS(lag.max)}
	bound := in.MaxDispatchLag
	if bound <= 0 {
		bound = DefaultMaxDispatchLag
	}
	s.ClientSaturated = in.OpenLoop && lag.Count() > 0 && time.Duration(lag.ValueAtUS(99))*time.Microsecond > bound
	s.InFlight = inFlight(reqs, win)
	if len(dials) > 0 || retried > 0 {
		s.Connections = &Connections{Dials: len(dials), Retried: retried}
		if len(dials) > 0 {
			slices.Sort(dials)
			s.Connections.DialP50ms = usToMS(percentileSorted(dials, 50))
			s.Connections.DialMaxms = usToMS(dials[len(dials)-1])
		}
	}
	s.Lengths = Lengths{
		PromptTarget: lengthStats(promptT), Prompt: lengthStats(prompt),
		OutputTarget: lengthStats(outT), Output: lengthStats(outA),
	}

	byMetric := map[string]*Distribution{MetricTTFT: ttft, MetricTPOT: tpot, MetricITL: itl, MetricE2E: e2e}
	for _, t := range in.SLO {
		c := SLOCheck{Metric: t.Metric, Percentile: t.Percentile, LimitMS: t.LimitMS}
		if d, known := byMetric[t.Metric]; known {
			c.ValueMS = usToMS(d.ValueAtUS(t.Percentile))
			switch {
			case d.Count() > 0:
				c.Met = c.ValueMS <= t.LimitMS
			case t.Metric == MetricTPOT || t.Metric == MetricITL:
				// One-token requests have neither: as in Judge, nothing to exceed the
				// limit, provided something succeeded at all.
				c.Met = s.Completed > 0
			}
		}
		s.SLOChecks = append(s.SLOChecks, c)
	}
	return s
}

// ArrivalSpanS is the span of the requests' scheduled arrivals in seconds: (last −
// first) × n/(n − 1), the time n arrivals take at their mean rate. 0 with fewer than two
// requests or when all are scheduled at one instant (arrival times unknown).
func ArrivalSpanS(reqs []Request) float64 {
	if len(reqs) < 2 {
		return 0
	}
	lo, hi := reqs[0].SchedUS, reqs[0].SchedUS
	for _, r := range reqs[1:] {
		lo, hi = min(lo, r.SchedUS), max(hi, r.SchedUS)
	}
	n := float64(len(reqs))
	return float64(hi-lo) / 1e6 * n / (n - 1)
}

// InferTokensPerChunk is the mean tokens per content chunk (usage over chunks) from
// which chunks are taken to carry several tokens when the server does not count them.
const InferTokensPerChunk = 1.5

// How perTokenITL knew the tokens of each chunk.
const (
	tokensOne      = iota // one per chunk: per-token ITL is the chunk ITL
	tokensKnown           // the server's per-chunk counts
	tokensInferred        // output_tokens / chunks
)

// perTokenITL records r's per-token intervals in d: the gap before a chunk of k tokens
// counts k times as gap / k. k comes from r.ChunkTokens where the server gave it, else
// it is inferred as output_tokens / chunks (the count of intervals rounded) when the
// usage says chunks carried at least 1.5 tokens on average (InferTokensPerChunk); a
// smaller surplus is taken for tokens that carried no text (a stop token, an empty last
// chunk), and k is 1.
func perTokenITL(r *Request, d *Distribution) int {
	return tokenGaps(r, func(gap, n int64) { d.RecordN(gap, n) })
}

// chunking says how the tokens of r's chunks are known (perTokenITL's rule): the
// server's per-chunk counts (tokensKnown), output_tokens / chunks = k (tokensInferred),
// or one a chunk (tokensOne).
func (r *Request) chunking() (how int, k float64) {
	switch {
	case len(r.ChunkTokens) == r.Chunks && r.Chunks > 0:
		return tokensKnown, 0
	case r.NoUsage || r.UsageFlag != "" || r.Chunks == 0 || float64(r.OutputTokens) < InferTokensPerChunk*float64(r.Chunks):
		return tokensOne, 1
	}
	return tokensInferred, float64(r.OutputTokens) / float64(r.Chunks)
}

// oneTokenAChunk says whether every chunk of r carried one token (by chunking), so that
// its per-token intervals are its chunk gaps.
func (r *Request) oneTokenAChunk() bool {
	switch how, _ := r.chunking(); how {
	case tokensKnown:
		for _, k := range r.ChunkTokens {
			if k > 1 {
				return false
			}
		}
		return true
	case tokensOne:
		return true
	}
	return false
}

// tokenGaps gives each of r's per-token intervals to emit as (gap, n): n tokens of gap
// µs each (perTokenITL's rule), and says how it knew the tokens of each chunk.
func tokenGaps(r *Request, emit func(gap, n int64)) int {
	how, k := r.chunking()
	switch how {
	case tokensKnown:
		for i, g := range r.ITLUS {
			k := max(int64(r.ChunkTokens[i+1]), 1)
			emit((g+k/2)/k, k)
		}
		if r.oneTokenAChunk() {
			return tokensOne
		}
		return tokensKnown
	case tokensOne:
		for _, g := range r.ITLUS {
			emit(g, 1)
		}
		return tokensOne
	}
	n := max(int64(math.Round(k)), 1)
	for _, g := range r.ITLUS {
		emit(int64(math.Round(float64(g)/k)), n)
	}
	return tokensInferred
}

// TokenGaps are r's per-token intervals in µs, one per token after the first chunk: the
// gap before a chunk of k tokens, k times, as gap / k (Summary.ITLTokenms pools them).
// Where every chunk carried one token they are the chunk gaps, and TokenGaps returns
// r.ITLUS itself with same true: a caller that keeps both keeps them once.
func TokenGaps(r *Request) (gaps []int64, same bool) {
	if r.oneTokenAChunk() {
		return r.ITLUS, true
	}
	tokenGaps(r, func(gap, n int64) {
		for range n {
			gaps = append(gaps, gap)
		}
	})
	return gaps, false
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// effectiveWindow is w, or the span of the requests when w is empty.
func effectiveWindow(reqs []Request, w Window) Window {
	if w.EndUS > w.StartUS || len(reqs) == 0 {
		if w.EndUS < w.StartUS {
			return Window{}
		}
		return w
	}
	span := Window{StartUS: reqs[0].SchedUS, EndUS: reqs[0].EndUS}
	for _, r := range reqs {
		span.StartUS = min(span.StartUS, r.SchedUS)
		span.EndUS = max(span.EndUS, r.EndUS, r.SchedUS)
	}
	return span
}

// inFlight computes the client-side in-flight count exactly: each request is in flight
// over [sched, end), clipped to the window (half-open, so a request that ends when
// another is scheduled does not overlap it). A request with no end (end before sched) is
// taken to be in flight until the window ends: it never finished while measured.
func inFlight(reqs []Request, win Window) InFlight {
	length := win.EndUS - win.StartUS
	if length <= 0 {
		return InFlight{}
	}
	type event struct {
		t int64
		d int
	}
	events := make([]event, 0, 2*len(reqs))
	var integral float64
	for _, r := range reqs {
		end := r.EndUS
		if end < r.SchedUS {
			end = win.EndUS
		}
		a, b := max(r.SchedUS, win.StartUS), min(end, win.EndUS)
		if b <= a {
			continue
		}
		integral += float64(b - a)
		events = append(events, event{a, +1}, event{b, -1})
	}
	// Ends sort before starts at the same instant (half-open intervals).
	slices.SortFunc(events, func(x, y event) int {
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.d, y.d))
	})
	out := InFlight{Mean: integral / float64(length)}
	n := 0
	for _, e := range events {
		n += e.d
		out.Max = max(out.Max, n)
	}
	return out
}

// lengthStats summarizes token counts exactly (they are few and small).
func lengthStats(v []int) LengthStats {
	if len(v) == 0 {
		return LengthStats{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0
	for _, x := range s {
		sum += x
	}
	return LengthStats{
		P50:  float64(percentileSorted(s, 50)),
		P95:  float64(percentileSorted(s, 95)),
		Max:  float64(s[len(s)-1]),
		Mean: float64(sum) / float64(len(s)),
	}
}

// WarmupSummaryOf summarizes the warm-up requests, which are excluded from the measured
// summary: their count and errors, the cold TTFT (that of the lowest-index warm-up
// request that produced content: the first the engine served with cold caches), TTFT
// percentiles over the successful ones, and their duration (earliest sched to latest
// end). Nil when there were none.
func WarmupSummaryOf(reqs []Request) *WarmupSummary {
	if len(reqs) == 0 {
		return nil
	}
	w := &WarmupSummary{Requests: len(reqs)}
	ttft := NewDistribution()
	cold := -1
	start, end := reqs[0].SchedUS, reqs[0].EndUS
	for i := range reqs {
		r := &reqs[i]
		start, end = min(start, r.SchedUS), max(end, r.EndUS)
		if v, ok := r.TTFTUS(); ok && (cold < 0 || r.I < reqs[cold].I) {
			cold = i
			w.ColdTTFTms = usToMS(v)
		}
		if !r.OK() {
			if w.Errors == nil {
				w.Errors = map[string]int{}
			}
			w.Errors[r.Error]++
			continue
		}
		if v, ok := r.TTFTUS(); ok {
			ttft.Record(v)
		}
	}
	w.TTFTms = ttft.Percentiles()
	w.DurationS = float64(max(end-start, 0)) / 1e6
	return w
}
