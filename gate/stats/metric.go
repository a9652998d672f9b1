package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
)

// MinRequests is the number of requests under which a bootstrap over requests says little
// about the spread of a run, whatever the metric.
const MinRequests = 20

// A Metric is a statistic of one run that can be recomputed on a resample of its requests.
//
// A resample is given as weights: w[i] is how many times request i was drawn, len(w) ==
// Len() and the weights sum to Len() (a resample has as many requests as the run).
// Every statistic here is a function of the multiset of drawn requests, so the weights
// carry everything, and they let a metric skip requests that cannot matter (a p99 only
// looks at the top of the distribution). All weights 1 give the run's own value.
//
// Eval may be called from several goroutines at once on the same Metric.
type Metric interface {
	// Len is the number of requests, the resampling units.
	Len() int
	// Eval returns the statistic of the resample with weights w; NaN when the resample
	// has no value (a percentile of a resample with no defined values).
	Eval(w []int32) float64
	// Warnings are facts about the data that limit what an interval can say (too few
	// requests for a p99); data, not failures.
	Warnings() []string
}

// Value is the statistic of the run itself (every request once).
func Value(m Metric) float64 {
	w := make([]int32, m.Len())
	for i := range w {
		w[i] = 1
	}
	return m.Eval(w)
}

// Func is a metric defined by a function, for statistics the ready-made metrics do not
// cover. F must follow Metric.Eval's contract.
type Func struct {
	N     int
	F     func(w []int32) float64
	Notes []string
}

var _ Metric = Func{}

// Len implements Metric.
func (f Func) Len() int { return f.N }

// Eval implements Metric.
func (f Func) Eval(w []int32) float64 { return f.F(w) }

// Warnings implements Metric.
func (f Func) Warnings() []string { return f.Notes }

// rank is the 1-based rank of quantile q among total values, by the one percentile rule
// of every number slogate shows (docs/metrics.md, "Percentiles"): HdrHistogram's, q·total rounded
// half up, at least 1 and at most total (result's rank is the same rule), so that the
// gate's values are the records' summaries.
func rank(q float64, total int64) int64 {
	k := int64(q*float64(total) + 0.5)
	return min(max(k, 1), total)
}

// tailFraction is the share of values beyond the percentile on the side the walk starts
// from: 1−q for upper percentiles, q for lower ones.
func tailFraction(q float64) (p float64, fromTop bool) {
	if q >= 0.5 {
		return 1 - q, true
	}
	return q, false
}

// percentileLabel writes 0.99 as "p99" and 0.999 as "p99.9".
func percentileLabel(q float64) string {
	return "p" + strconv.FormatFloat(math.Round(q*100*1e6)/1e6, 'g', -1, 64)
}

// MinTail is the number of values beyond a percentile (above a p99, below a p10) that an
// interval for it needs to stand on: with fewer, the bootstrap cannot draw the values
// that were never measured beyond the few it has, and its interval is too narrow. A rule
// on a percentile that rests on fewer cannot pass (gate: inconclusive).
const MinTail = 10

// ValuesForTail is the number of values a percentile q needs for MinTail of them to lie
// beyond it: 1,000 for a p99, 200 for a p95, 20 for the median.
func ValuesForTail(q float64) int {
	p, _ := tailFraction(q)
	return int(math.Ceil(MinTail/p - 1e-9))
}

// Beyond is the number of values beyond quantile q among n: n·(1−q) above an upper
// percentile, n·q below a lower one.
func Beyond(q float64, n int) float64 {
	p, _ := tailFraction(q)
	return p * float64(n)
}

func checkQuantile(q float64) {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("stats: percentile %v outside (0, 1)", q))
	}
}

// Percentile is a percentile over requests of a per-request scalar (TTFT, TPOT, E2E).
// A request with no value (NaN: an error has no TTFT, a one-token reply no TPOT) is still
// a resampling unit: it is drawn, and contributes nothing, so the number of values in a
// resample varies as it does between runs.
type Percentile struct {
	q       float64
	n       int
	fromTop bool
	vals    []float64 // defined values in walk order (descending from the top for q ≥ 0.5)
	idx     []int32   // request of each value
	undef   []int32   // requests without a value
}

var _ Metric = (*Percentile)(nil)

// NewPercentile is quantile q (0.95 for p95) of values, one per request, NaN for none.
func NewPercentile(values []float64, q float64) *Percentile {
	checkQuantile(q)
	p := &Percentile{q: q, n: len(values)}
	_, p.fromTop = tailFraction(q)
	type pair struct {
		v float64
		i int32
	}
	pairs := make([]pair, 0, len(values))
	for i, v := range values {
		if math.IsNaN(v) {
			p.undef = append(p.undef, int32(i))
			continue
		}
		pairs = append(pairs, pair{v, int32(i)})
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if p.fromTop {
			return cmp.Compare(b.v, a.v)
		}
		return cmp.Compare(a.v, b.v)
	})
	p.vals = make([]float64, len(pairs))
	p.idx = make([]int32, len(pairs))
	for j, x := range pairs {
		p.vals[j], p.idx[j] = x.v, x.i
	}
	return p
}

// Len implements Metric.
func (p *Percentile) Len() int { return p.n }

// Eval implements Metric. It walks the values from the near end of the distribution,
// adding the weights of their requests until the rank is reached: exact, and for a p95
// it reads about 5% of the values.
func (p *Percentile) Eval(w []int32) float64 {
	total := int64(p.n) - sumAt(p.undef, w)
	if total <= 0 {
		return math.NaN()
	}
	k := rank(p.q, total)
	need := k
	if p.fromTop {
		need = total - k + 1
	}
	v, _ := walk(p.vals, p.idx, w, need) // always found when the weights sum to Len()
	return v
}

// Warnings implements Metric.
func (p *Percentile) Warnings() []string {
	var ws []string
	if p.n < MinRequests {
		ws = append(ws, fmt.Sprintf("too few requests for a bootstrap interval: %d < %d", p.n, MinRequests))
	}
	if need := ValuesForTail(p.q); len(p.vals) < need {
		ws = append(ws, fmt.Sprintf("too few requests for a %s interval: %d < %d (%d values beyond it)", percentileLabel(p.q), len(p.vals), need, MinTail))
	}
	return ws
}

// PooledPercentile is a percentile of per-request vectors pooled over requests (ITL: all
// gaps of the drawn requests pooled, the percentile recomputed on each resample; a
// request drawn twice contributes its gaps twice).
//
// The result is exact, not a histogram approximation. All values are ranked once, at
// construction; a resample changes only the weight of each request, so the percentile of
// a resample is found by walking the globally sorted values from the near end and adding
// the weight of each value's request until the rank is reached. For a p99 that walk reads
// about 1% of the values. Only the few percent nearest that end are sorted up front
// (found by selection in linear time); a resample whose percentile lies deeper, which
// needs weights far from a resample's, falls back to a full ranking built once.
type PooledPercentile struct {
	q       float64
	fromTop bool
	counts  []int32 // values per request
	total   int64
	groups  [][]float64

	tailVals []float64 // the values nearest the walk's end, in walk order
	tailIdx  []int32
	partial  bool // the tail does not hold every value

	fullOnce sync.Once
	fullVals []float64
	fullIdx  []int32
}

var _ Metric = (*PooledPercentile)(nil)

// NewPooledPercentile is quantile q of the values of all requests pooled; groups[i] holds
// request i's values (NaN entries are ignored). groups must not change afterwards.
func NewPooledPercentile(groups [][]float64, q float64) *PooledPercentile {
	checkQuantile(q)
	m := &PooledPercentile{q: q, groups: groups, counts: make([]int32, len(groups))}
	p, fromTop := tailFraction(q)
	m.fromTop = fromTop
	for i, g := range groups {
		c := 0
		for _, v := range g {
			if !math.IsNaN(v) {
				c++
			}
		}
		m.counts[i] = int32(c)
		m.total += int64(c)
	}
	if m.total == 0 {
		return m
	}
	// Four times the expected depth of the walk, plus a margin for small runs, keeps the
	// fallback for resamples that are nothing like the run.
	keep := min(m.total, int64(math.Ceil(4*p*float64(m.total)))+256)
	var inTail func(v float64) bool
	if keep < m.total {
		m.partial = true
		all := make([]float64, 0, m.total)
		for _, g := range groups {
			for _, v := range g {
				if !math.IsNaN(v) {
					all = append(all, v)
				}
			}
		}
		if fromTop {
			cut := selectKth(all, int(m.total-keep))
			inTail = func(v float64) bool { return v >= cut }
		} else {
			cut := selectKth(all, int(keep-1))
			inTail = func(v float64) bool { return v <= cut }
		}
	}
	m.tailVals, m.tailIdx = m.rankValues(inTail)
	if !m.partial {
		m.fullVals, m.fullIdx = m.tailVals, m.tailIdx
		m.fullOnce.Do(func() {})
	}
	return m
}

// rankValues sorts the values that keep accepts (all when keep is nil) in walk order.
func (m *PooledPercentile) rankValues(keep func(float64) bool) ([]float64, []int32) {
	type pair struct {
		v float64
		i int32
	}
	var pairs []pair
	for i, g := range m.groups {
		for _, v := range g {
			if !math.IsNaN(v) && (keep == nil || keep(v)) {
				pairs = append(pairs, pair{v, int32(i)})
			}
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if m.fromTop {
			return cmp.Compare(b.v, a.v)
		}
		return cmp.Compare(a.v, b.v)
	})
	vals := make([]float64, len(pairs))
	idx := make([]int32, len(pairs))
	for j, x := range pairs {
		vals[j], idx[j] = x.v, x.i
	}
	return vals, idx
}

// Len implements Metric.
func (m *PooledPercentile) Len() int { return len(m.counts) }

// Eval implements Metric.
func (m *PooledPercentile) Eval(w []int32) float64 {
	total := weightedTotal(m.counts, w)
	if total <= 0 {
		return math.NaN()
	}
	k := rank(m.q, total)
	need := k
	if m.fromTop {
		need = total - k + 1
	}
	if v, ok := walk(m.tailVals, m.tailIdx, w, need); ok {
		return v
	}
	m.fullOnce.Do(func() { m.fullVals, m.fullIdx = m.rankValues(nil) })
	v, _ := walk(m.fullVals, m.fullIdx, w, need)
	return v
}

// Warnings implements Metric.
func (m *PooledPercentile) Warnings() []string {
	var ws []string
	if len(m.counts) < MinRequests {
		ws = append(ws, fmt.Sprintf("too few requests for a bootstrap interval: %d < %d", len(m.counts), MinRequests))
	}
	if need := ValuesForTail(m.q); m.total < int64(need) {
		ws = append(ws, fmt.Sprintf("too few pooled values for a %s interval: %d < %d (%d values beyond it)", percentileLabel(m.q), m.total, need, MinTail))
	}
	return ws
}

// selectKth returns the value that would stand at index k if a were sorted ascending,
// reordering a. Three-way partitioning keeps it linear when values repeat (latencies in
// whole microseconds repeat a lot); the pivot comes from a fixed pseudo-random sequence
// so that sorted or patterned input costs no more than any other.
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	s := uint64(0x9E3779B97F4A7C15)
	for lo < hi {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		p := a[lo+int(s%uint64(hi-lo+1))]
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case a[i] < p:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case a[i] > p:
				a[i], a[gt] = a[gt], a[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return a[k]
}

// Mean is the mean over requests of a per-request scalar; NaN means the request has none.
type Mean struct {
	vals []float64 // NaN replaced by 0, with has[i] false
	has  []bool
}

var _ Metric = (*Mean)(nil)

// NewMean is the mean of values, one per request, NaN for none.
func NewMean(values []float64) *Mean {
	m := &Mean{vals: make([]float64, len(values)), has: make([]bool, len(values))}
	for i, v := range values {
		if !math.IsNaN(v) {
			m.vals[i], m.has[i] = v, true
		}
	}
	return m
}

// Len implements Metric.
func (m *Mean) Len() int { return len(m.vals) }

// Eval implements Metric.
func (m *Mean) Eval(w []int32) float64 {
	sum, n := weightedSum(m.vals, m.has, w)
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Warnings implements Metric.
func (m *Mean) Warnings() []string {
	if len(m.vals) < MinRequests {
		return []string{fmt.Sprintf("too few requests for a bootstrap interval: %d < %d", len(m.vals), MinRequests)}
	}
	return nil
}

// counter counts flagged requests in a resample, reading whichever of the flagged and the
// unflagged requests is the shorter list (errors are few, successes many).
type counter struct {
	n          int
	list       []int32
	complement bool // list holds the unflagged requests
}

func newCounter(flags []bool) counter {
	var on, off []int32
	for i, f := range flags {
		if f {
			on = append(on, int32(i))
		} else {
			off = append(off, int32(i))
		}
	}
	if len(on) <= len(off) {
		return counter{n: len(flags), list: on}
	}
	return counter{n: len(flags), list: off, complement: true}
}

func (c counter) count(w []int32) int64 {
	s := sumAt(c.list, w)
	if c.complement {
		return int64(c.n) - s
	}
	return s
}

// Fraction is the share of requests with a flag set: error rate, SLO attainment.
type Fraction struct{ c counter }

var _ Metric = (*Fraction)(nil)

// NewFraction is the share of flags that are true, one flag per request.
func NewFraction(flags []bool) *Fraction { return &Fraction{c: newCounter(flags)} }

// Len implements Metric.
func (f *Fraction) Len() int { return f.c.n }

// Eval implements Metric.
func (f *Fraction) Eval(w []int32) float64 {
	if f.c.n == 0 {
		return math.NaN()
	}
	return float64(f.c.count(w)) / float64(f.c.n)
}

// Warnings implements Metric.
func (f *Fraction) Warnings() []string {
	if f.c.n < MinRequests {
		return []string{fmt.Sprintf("too few requests for a bootstrap interval: %d < %d", f.c.n, MinRequests)}
	}
	return nil
}

// PerSecond is the number of flagged requests per second of a fixed window: goodput is
// the requests that succeeded and met every SLO per measured second.
//
// The window is held fixed across resamples. That is right for a pinned, seeded workload:
// the schedule, and so the window, is the same in every run, and what varies between runs
// is which requests succeed. (Were arrivals random from run to run, the window's own
// spread, about 1/√N of it for Poisson arrivals, would be missing from the interval.)
type PerSecond struct {
	c      counter
	window float64
	units  string // what a flag counts, in warnings: "requests" unless Of says
}

var _ Metric = (*PerSecond)(nil)

// NewPerSecond counts true flags (one per request) per second of windowSeconds.
func NewPerSecond(flags []bool, windowSeconds float64) *PerSecond {
	return &PerSecond{c: newCounter(flags), window: windowSeconds, units: "requests"}
}

// Of names what the flags count (one per task: "tasks"), for the warnings.
func (r *PerSecond) Of(units string) *PerSecond {
	r.units = units
	return r
}

// Len implements Metric.
func (r *PerSecond) Len() int { return r.c.n }

// Eval implements Metric.
func (r *PerSecond) Eval(w []int32) float64 {
	if !(r.window > 0) || math.IsInf(r.window, 0) {
		return math.NaN()
	}
	return float64(r.c.count(w)) / r.window
}

// Warnings implements Metric.
func (r *PerSecond) Warnings() []string {
	var ws []string
	if r.c.n < MinRequests {
		ws = append(ws, fmt.Sprintf("too few %s for a bootstrap interval: %d < %d", r.units, r.c.n, MinRequests))
	}
	if !(r.window > 0) || math.IsInf(r.window, 0) {
		ws = append(ws, fmt.Sprintf("window of %v s: rate undefined", r.window))
	}
	return ws
}
