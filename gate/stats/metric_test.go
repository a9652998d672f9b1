package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteQuantile expands a resample into its values and takes the nearest rank: the
// definition the fast walks must reproduce exactly.
func bruteQuantile(groups [][]float64, w []int32, q float64) float64 {
	var all []float64
	for i, g := range groups {
		for range w[i] {
			for _, v := range g {
				if !math.IsNaN(v) {
					all = append(all, v)
				}
			}
		}
	}
	if len(all) == 0 {
		return math.NaN()
	}
	slices.Sort(all)
	return all[rank(q, int64(len(all)))-1]
}

func TestRank(t *testing.T) {
	for _, c := range []struct {
		q     float64
		total int64
		want  int64
		why   string
	}{
		{0.99, 100, 99, "the p99 of 100 values leaves exactly one above it"},
		{0.07, 100, 7, "0.07×100 is 7.000000000000001 in floating point; the rank is still 7"},
		{0.99, 101, 100, "a fractional rank rounds up (nearest-rank definition)"},
		{0.5, 2, 1, "the median of two is the lower one under nearest rank"},
		{0.999, 10, 10, "a p99.9 of 10 values is the max"},
		{0.01, 10, 1, "rank never drops below 1"},
		{0.95, 20, 19, "the p95 of 20 leaves exactly one value above it"},
	} {
		if got := rank(c.q, c.total); got != c.want {
			t.Errorf("rank(%v, %d) = %d, want %d (%s)", c.q, c.total, got, c.want, c.why)
		}
	}
}

func TestPercentileLabels(t *testing.T) {
	for _, c := range []struct {
		q     float64
		label string
		min   int
	}{
		{0.99, "p99", 1000},     // the headline ITL rule: 10 values above it
		{0.95, "p95", 200},      // TTFT's usual SLO
		{0.999, "p99.9", 10000}, // 0.999×100 is not exactly 99.9 in floating point
		{0.5, "p50", 20},        // the median
		{0.1, "p10", 100},       // a low percentile counts from the bottom
	} {
		if got := percentileLabel(c.q); got != c.label {
			t.Errorf("percentileLabel(%v) = %q, want %q", c.q, got, c.label)
		}
		if got := ValuesForTail(c.q); got != c.min {
			t.Errorf("ValuesForTail(%v) = %d, want %d", c.q, got, c.min)
		}
	}
}

// TestPercentileMatchesBruteForce checks the weighted walk against expanding the
// resample, for upper and lower percentiles, ties and requests without a value.
func TestPercentileMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n := 1 + r.IntN(300)
		values := make([]float64, n)
		for i := range values {
			switch {
			case r.IntN(10) == 0:
				values[i] = math.NaN() // an error: no TTFT
			case trial%2 == 0:
				values[i] = float64(r.IntN(20)) // whole milliseconds: many ties
			default:
				values[i] = r.ExpFloat64()
			}
		}
		groups := make([][]float64, n)
		for i, v := range values {
			groups[i] = []float64{v}
		}
		res := newResampler(uint64(trial), streamBase)
		w := make([]int32, n)
		for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999} {
			m := NewPercentile(values, q)
			for range 5 {
				res.draw(w)
				got, want := m.Eval(w), bruteQuantile(groups, w, q)
				if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("trial %d n=%d q=%v: Eval = %v, brute force = %v", trial, n, q, got, want)
				}
			}
		}
	}
}

// TestPooledMatchesBruteForce checks the pooled walk, its partial tail and its fallback.
func TestPooledMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 30 {
		n := 1 + r.IntN(120)
		groups := make([][]float64, n)
		for i := range groups {
			g := make([]float64, r.IntN(60)) // some requests have no gaps at all
			scale := math.Exp(r.NormFloat64())
			for j := range g {
				if trial%3 == 0 {
					g[j] = float64(r.IntN(30)) // ties
				} else {
					g[j] = scale * r.ExpFloat64()
				}
			}
			if len(g) > 0 && r.IntN(8) == 0 {
				g[0] = math.NaN() // ignored, not counted
			}
			groups[i] = g
		}
		res := newResampler(uint64(trial), streamCand)
		w := make([]int32, n)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
			m := NewPooledPercentile(groups, q)
			for range 5 {
				res.draw(w)
				got, want := m.Eval(w), bruteQuantile(groups, w, q)
				if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("trial %d n=%d q=%v: Eval = %v, brute force = %v", trial, n, q, got, want)
				}
			}
		}
	}
}

// TestPooledFallback puts all the weight on the request whose gaps are the smallest, so
// the p99 of the resample lies far below the tail ranked up front: the fallback must
// still give the exact value.
func TestPooledFallback(t *testing.T) {
	const n, gaps = 100, 50
	groups := make([][]float64, n)
	for i := range groups {
		g := make([]float64, gaps)
		for j := range g {
			g[j] = float64(1000*(i+1) + j)
		}
		groups[i] = g
	}
	for _, q := range []float64{0.99, 0.01} {
		m := NewPooledPercentile(groups, q)
		if !m.partial {
			t.Fatalf("q=%v: the tail holds every value; the test needs a partial tail", q)
		}
		w := make([]int32, n)
		far := 0 // the smallest gaps, far from a p99's tail
		if q < 0.5 {
			far = n - 1 // the largest gaps, far from a p1's tail
		}
		w[far] = n
		got, want := m.Eval(w), bruteQuantile(groups, w, q)
		if got != want {
			t.Errorf("q=%v: fallback Eval = %v, brute force = %v", q, got, want)
		}
		if len(m.fullIdx) != n*gaps {
			t.Errorf("q=%v: full ranking has %d values, want %d", q, len(m.fullIdx), n*gaps)
		}
	}
}

func TestSelectKth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 50 {
		n := 1 + r.IntN(500)
		a := make([]float64, n)
		for i := range a {
			if trial%2 == 0 {
				a[i] = float64(r.IntN(5)) // heavy ties: the three-way partition's case
			} else {
				a[i] = r.NormFloat64()
			}
		}
		if trial%5 == 0 {
			slices.Sort(a) // already sorted input must not break the pivot choice
		}
		sorted := slices.Sorted(slices.Values(a))
		k := r.IntN(n)
		if got := selectKth(slices.Clone(a), k); got != sorted[k] {
			t.Fatalf("trial %d: selectKth(k=%d) = %v, want %v", trial, k, got, sorted[k])
		}
	}
}

// TestSimpleMetrics pins the small metrics on hand-checked resamples.
func TestSimpleMetrics(t *testing.T) {
	nan := math.NaN()
	flags := []bool{true, false, true, true}
	for _, c := range []struct {
		name string
		m    Metric
		w    []int32
		want float64
	}{
		// The run itself: every request once.
		{"mean", NewMean([]float64{1, 2, nan, 6}), []int32{1, 1, 1, 1}, 3},
		// A request drawn twice counts twice; the one without a value counts nowhere.
		{"mean weighted", NewMean([]float64{1, 2, nan, 6}), []int32{2, 0, 2, 0}, 1},
		// Only requests without a value drawn: no mean.
		{"mean none", NewMean([]float64{1, 2, nan, 6}), []int32{0, 0, 4, 0}, nan},
		{"fraction", NewFraction(flags), []int32{1, 1, 1, 1}, 0.75},
		// Mostly flagged: the counter reads the unflagged list; weights still count.
		{"fraction weighted", NewFraction(flags), []int32{0, 3, 1, 0}, 0.25},
		// Mostly unflagged (errors are rare): the counter reads the flagged list.
		{"fraction rare", NewFraction([]bool{false, false, false, true}), []int32{0, 0, 1, 3}, 0.75},
		// Goodput: 3 good requests in a 2 s window.
		{"per second", NewPerSecond(flags, 2), []int32{1, 1, 1, 1}, 1.5},
		{"per second weighted", NewPerSecond(flags, 2), []int32{4, 0, 0, 0}, 2},
		// A window that is not positive gives no rate rather than an infinity.
		{"per second no window", NewPerSecond(flags, 0), []int32{1, 1, 1, 1}, nan},
		{"func", Func{N: 2, F: func(w []int32) float64 { return float64(w[0]) }}, []int32{2, 0}, 2},
	} {
		got := c.m.Eval(c.w)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s: Eval(%v) = %v, want %v", c.name, c.w, got, c.want)
		}
	}
	if v := Value(NewMean([]float64{1, 2, nan, 6})); v != 3 {
		t.Errorf("Value(mean) = %v, want 3", v)
	}
}

func TestMetricWarnings(t *testing.T) {
	many := make([]float64, 200)
	for i := range many {
		many[i] = float64(i)
	}
	for _, c := range []struct {
		name string
		m    Metric
		want []string
	}{
		// 80 TTFTs cannot stand a p99 interval: nothing lies beyond the p99.
		{"p99 of 80", NewPercentile(many[:80], 0.99), []string{"too few requests for a p99 interval: 80 < 1000 (10 values beyond it)"}},
		// 200 are enough for a p95 and for a bootstrap, not for a p99 (2 values above).
		{"p95 of 200", NewPercentile(many, 0.95), nil},
		{"p99 of 200", NewPercentile(many, 0.99), []string{"too few requests for a p99 interval: 200 < 1000 (10 values beyond it)"}},
		// Ten requests are too few for any bootstrap, and for a p95.
		{"p95 of 10", NewPercentile(many[:10], 0.95), []string{
			"too few requests for a bootstrap interval: 10 < 20",
			"too few requests for a p95 interval: 10 < 200 (10 values beyond it)"}},
		// 30 requests of 2 gaps: enough requests, too few gaps for a p99.
		{"pooled p99 of 60", NewPooledPercentile(slices.Repeat([][]float64{{1, 2}}, 30), 0.99), []string{
			"too few pooled values for a p99 interval: 60 < 1000 (10 values beyond it)"}},
		{"fraction of 5", NewFraction(make([]bool, 5)), []string{"too few requests for a bootstrap interval: 5 < 20"}},
		{"goodput without window", NewPerSecond(make([]bool, 50), 0), []string{"window of 0 s: rate undefined"}},
		// Task goodput counts tasks, and says so.
		{"goodput of 5 requests", NewPerSecond(make([]bool, 5), 1), []string{"too few requests for a bootstrap interval: 5 < 20"}},
		{"task goodput of 5 tasks", NewPerSecond(make([]bool, 5), 1).Of("tasks"), []string{"too few tasks for a bootstrap interval: 5 < 20"}},
	} {
		if got := c.m.Warnings(); !slices.Equal(got, c.want) {
			t.Errorf("%s: Warnings() = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestPooledConcurrentEval evaluates one metric from several goroutines with weights that
// force the fallback, so that -race checks the lazily built full ranking.
func TestPooledConcurrentEval(t *testing.T) {
	groups := make([][]float64, 100)
	for i := range groups {
		groups[i] = make([]float64, 50)
		for j := range groups[i] {
			groups[i][j] = float64(1000*(i+1) + j)
		}
	}
	m := NewPooledPercentile(groups, 0.99)
	w := make([]int32, len(groups))
	w[0] = int32(len(groups))
	want := bruteQuantile(groups, w, 0.99)
	got := make([]float64, 8)
	parallel(len(got), func(i int) { got[i] = m.Eval(w) })
	for i, v := range got {
		if v != want {
			t.Errorf("goroutine %d: Eval = %v, want %v", i, v, want)
		}
	}
}
