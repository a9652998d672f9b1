package result

import (
	"maps"
	"math"
	"math/bits"
	"slices"
)

// Breakdowns split the summary's latencies by class, by turn of a session and by the
// history a turn carried. They are computed from the requests alone (Summarize), so that a
// merged or an imported record has them too, with the summary's own rules: latencies over
// successful requests, percentiles from the record's HdrHistogram (Distribution), errors
// counting as SLO misses.

// ClassStats is one class of a workload's mix (Summary.ByClass).
type ClassStats struct {
	Class     string `json:"class"`
	Requests  int    `json:"requests"`
	Completed int    `json:"completed"`
	Errors    int    `json:"errors"`
	// SLOAttainment is the class's requests that succeeded and met every SLO / its
	// requests; Good is that numerator.
	SLOAttainment float64 `json:"slo_attainment"`
	Good          int     `json:"good"`
	// GoodputRPS is Good over the run's goodput denominator (Summary.GoodputRPS's), so the
	// classes' figures add up to the run's; GoodputShare is Good / the run's good requests.
	GoodputRPS   float64 `json:"goodput_rps"`
	GoodputShare float64 `json:"goodput_share"`
	TTFTP50ms    float64 `json:"ttft_p50_ms"`
	TTFTP95ms    float64 `json:"ttft_p95_ms"`
	TTFTP99ms    float64 `json:"ttft_p99_ms"`
	TPOTP50ms    float64 `json:"tpot_p50_ms"`
	ITLP99ms     float64 `json:"itl_p99_ms"`
}

// TurnStats is one turn index of a multi-turn workload (Summary.ByTurn).
type TurnStats struct {
	Turn      int     `json:"turn"`
	Requests  int     `json:"requests"`
	Completed int     `json:"completed"`
	Errors    int     `json:"errors"`
	TTFTP50ms float64 `json:"ttft_p50_ms"`
	TTFTP95ms float64 `json:"ttft_p95_ms"`
	ITLP99ms  float64 `json:"itl_p99_ms"`
	// HistoryTokensMean and HistoryTokensP50 are over every request of the turn (the
	// history is what was sent, whatever came back).
	HistoryTokensMean float64 `json:"history_tokens_mean"`
	HistoryTokensP50  int     `json:"history_tokens_p50"`
}

// HistoryStats is one bucket of history length (Summary.ByHistory): the turns whose
// HistoryTokens is in [MinTokens, MaxTokens]. Buckets are powers of two: 0 (no history),
// then [2^k, 2^(k+1) − 1]; only buckets that hold a request are listed.
type HistoryStats struct {
	MinTokens int     `json:"min_tokens"`
	MaxTokens int     `json:"max_tokens"`
	Requests  int     `json:"requests"`
	Completed int     `json:"completed"`
	Errors    int     `json:"errors"`
	TTFTP50ms float64 `json:"ttft_p50_ms"`
	TTFTP95ms float64 `json:"ttft_p95_ms"`
}

// group accumulates one row of a breakdown.
type group struct {
	requests, completed, good int
	ttft, tpot, itl           *Distribution
	history                   []int
}

func newGroup() *group {
	return &group{ttft: NewDistribution(), tpot: NewDistribution(), itl: NewDistribution()}
}

// add counts r in g; met says whether it succeeded and met every SLO.
func (g *group) add(r *Request, met bool) {
	g.requests++
	g.history = append(g.history, r.HistoryTokens)
	if met {
		g.good++
	}
	if !r.OK() {
		return
	}
	g.completed++
	if v, ok := r.TTFTUS(); ok {
		g.ttft.Record(v)
	}
	if v, ok := r.TPOTUS(); ok {
		g.tpot.Record(int64(math.Round(v)))
	}
	for _, gap := range r.ITLUS {
		g.itl.Record(gap)
	}
}

func (g *group) at(d *Distribution, p float64) float64 { return usToMS(d.ValueAtUS(p)) }

// historyBucket is the bucket of h tokens: 0 for none, else k+1 for [2^k, 2^(k+1)).
func historyBucket(h int) int {
	if h <= 0 {
		return 0
	}
	return bits.Len(uint(h))
}

// historyBounds are the inclusive token bounds of bucket b.
func historyBounds(b int) (lo, hi int) {
	if b == 0 {
		return 0, 0
	}
	return 1 << (b - 1), 1<<b - 1
}

// breakdowns fills s.ByClass (when the requests carry more than one class), s.ByTurn and
// s.ByHistory (when any request is a turn of a session). metFlags[i] says whether reqs[i]
// succeeded and met every SLO, as Summarize judged it; goodputDen is the denominator of
// the run's goodput (0: none).
func breakdowns(s *Summary, reqs []Request, metFlags []bool, goodputDen float64, totalGood int) {
	classes := map[string]*group{}
	turns := map[int]*group{}
	hist := map[int]*group{}
	sessions := false
	for i := range reqs {
		r := &reqs[i]
		get := func(m map[string]*group, k string) *group {
			if m[k] == nil {
				m[k] = newGroup()
			}
			return m[k]
		}
		get(classes, r.Class).add(r, metFlags[i])
		if r.Turn > 0 {
			sessions = true
		}
	}
	if sessions {
		for i := range reqs {
			r := &reqs[i]
			if r.Turn <= 0 {
				continue
			}
			if turns[r.Turn] == nil {
				turns[r.Turn] = newGroup()
			}
			turns[r.Turn].add(r, metFlags[i])
			b := historyBucket(r.HistoryTokens)
			if hist[b] == nil {
				hist[b] = newGroup()
			}
			hist[b].add(r, metFlags[i])
		}
	}
	if len(classes) > 1 {
		for _, name := range slices.Sorted(maps.Keys(classes)) {
			g := classes[name]
			c := ClassStats{
				Class: name, Requests: g.requests, Completed: g.completed, Errors: g.requests - g.completed,
				Good: g.good, SLOAttainment: ratio(g.good, g.requests), GoodputShare: ratio(g.good, totalGood),
				TTFTP50ms: g.at(g.ttft, 50), TTFTP95ms: g.at(g.ttft, 95), TTFTP99ms: g.at(g.ttft, 99),
				TPOTP50ms: g.at(g.tpot, 50), ITLP99ms: g.at(g.itl, 99),
			}
			if goodputDen > 0 {
				c.GoodputRPS = float64(g.good) / goodputDen
			}
			s.ByClass = append(s.ByClass, c)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(turns)) {
		g := turns[t]
		h := slices.Clone(g.history)
		slices.Sort(h)
		sum := 0
		for _, x := range h {
			sum += x
		}
		s.ByTurn = append(s.ByTurn, TurnStats{
			Turn: t, Requests: g.requests, Completed: g.completed, Errors: g.requests - g.completed,
			TTFTP50ms: g.at(g.ttft, 50), TTFTP95ms: g.at(g.ttft, 95), ITLP99ms: g.at(g.itl, 99),
			HistoryTokensMean: float64(sum) / float64(len(h)), HistoryTokensP50: percentileSorted(h, 50),
		})
	}
	for _, b := range slices.Sorted(maps.Keys(hist)) {
		g := hist[b]
		lo, hi := historyBounds(b)
		s.ByHistory = append(s.ByHistory, HistoryStats{
			MinTokens: lo, MaxTokens: hi, Requests: g.requests, Completed: g.completed, Errors: g.requests - g.completed,
			TTFTP50ms: g.at(g.ttft, 50), TTFTP95ms: g.at(g.ttft, 95),
		})
	}
}
