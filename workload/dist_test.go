package workload

import (
	"math"
	"slices"
	"testing"
)

// quantile is the nearest-rank q-quantile of sorted xs.
func quantile(sorted []int, q float64) float64 {
	return float64(sorted[int(math.Ceil(q*float64(len(sorted))))-1])
}

func drawN(t *testing.T, d LengthDist, n int) []int {
	t.Helper()
	s, err := newSampler(d)
	if err != nil {
		t.Fatalf("newSampler(%+v): %v", d, err)
	}
	out := make([]int, n)
	for i := range out {
		r := newRNG(11, streamPromptLength, phaseMeasured, uint64(i))
		out[i] = s.sample(&r)
	}
	return out
}

func TestLognormalQuantiles(t *testing.T) {
	cases := []struct {
		name string
		d    LengthDist
	}{
		// The chat-style shape of the design document's example: max far above p95.
		{"chat", LengthDist{Dist: DistLognormal, P50: 800, P95: 3000, Max: 8000}},
		// A narrow distribution: sigma small, rounding to integers must not bias it.
		{"narrow", LengthDist{Dist: DistLognormal, P50: 200, P95: 260, Max: 1000}},
		// No max: the upper tail is unclipped.
		{"unclipped", LengthDist{Dist: DistLognormal, P50: 50, P95: 400}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := drawN(t, c.d, 50000)
			slices.Sort(xs)
			p50, p95 := quantile(xs, 0.50), quantile(xs, 0.95)
			if math.Abs(p50/float64(c.d.P50)-1) > 0.03 {
				t.Errorf("p50 = %v, want %d ± 3%%", p50, c.d.P50)
			}
			if math.Abs(p95/float64(c.d.P95)-1) > 0.03 {
				t.Errorf("p95 = %v, want %d ± 3%%", p95, c.d.P95)
			}
			if c.d.Max > 0 && xs[len(xs)-1] > c.d.Max {
				t.Errorf("max draw %d above max %d", xs[len(xs)-1], c.d.Max)
			}
			if xs[0] < 1 {
				t.Errorf("min draw %d below 1", xs[0])
			}
		})
	}
}

func TestLognormalClips(t *testing.T) {
	// A max below the natural tail and a min above the natural head: both must bind.
	d := LengthDist{Dist: DistLognormal, P50: 100, P95: 1000, Min: 40, Max: 300}
	xs := drawN(t, d, 20000)
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo != 40 || hi != 300 {
		t.Errorf("draws span [%d, %d], want exactly the clip [40, 300]", lo, hi)
	}
}

func TestUniformBounds(t *testing.T) {
	d := LengthDist{Dist: DistUniform, Min: 10, Max: 20}
	seen := map[int]int{}
	for _, x := range drawN(t, d, 11000) {
		if x < 10 || x > 20 {
			t.Fatalf("draw %d outside [10, 20]", x)
		}
		seen[x]++
	}
	for v := 10; v <= 20; v++ {
		// 1000 expected each; inclusive bounds must be hit as often as the middle.
		if seen[v] < 850 || seen[v] > 1150 {
			t.Errorf("value %d drawn %d times, want about 1000", v, seen[v])
		}
	}
}

func TestEmpiricalDrawsListedValues(t *testing.T) {
	d := LengthDist{Dist: DistEmpirical, Values: []int{3, 17, 900}, Max: 500}
	seen := map[int]int{}
	for _, x := range drawN(t, d, 3000) {
		seen[x]++
	}
	// 900 is clipped to the max; nothing else may appear.
	for v, n := range seen {
		if v != 3 && v != 17 && v != 500 {
			t.Errorf("drew unlisted value %d (%d times)", v, n)
		}
		if n < 800 {
			t.Errorf("value %d drawn only %d of 3000 times", v, n)
		}
	}
	if len(seen) != 3 {
		t.Errorf("drew %v, want 3, 17 and 500", seen)
	}
}

func TestFixedAndUnsetKind(t *testing.T) {
	for _, d := range []LengthDist{{Dist: DistFixed, Value: 64}, {Value: 64}} {
		for _, x := range drawN(t, d, 100) {
			if x != 64 {
				t.Fatalf("%+v drew %d, want 64", d, x)
			}
		}
	}
}

func TestNewSamplerRejects(t *testing.T) {
	cases := []struct {
		why string
		d   LengthDist
	}{
		{"nothing set: no length at all", LengthDist{}},
		{"fixed zero would send empty prompts", LengthDist{Dist: DistFixed, Value: 0}},
		{"uniform with max below min", LengthDist{Dist: DistUniform, Min: 10, Max: 5}},
		{"uniform from zero", LengthDist{Dist: DistUniform, Min: 0, Max: 5}},
		{"lognormal p95 below p50 gives a negative sigma", LengthDist{Dist: DistLognormal, P50: 100, P95: 50}},
		{"lognormal without a median", LengthDist{Dist: DistLognormal, P95: 50}},
		{"lognormal clip inverted", LengthDist{Dist: DistLognormal, P50: 10, P95: 20, Min: 50, Max: 40}},
		{"empirical without values", LengthDist{Dist: DistEmpirical}},
		{"unknown kind", LengthDist{Dist: "normal", Value: 3}},
	}
	for _, c := range cases {
		if _, err := newSampler(c.d); err == nil {
			t.Errorf("%s: newSampler(%+v) accepted it", c.why, c.d)
		}
	}
}

func TestGammaMoments(t *testing.T) {
	// Both branches of Marsaglia–Tsang: the k < 1 boost and the plain squeeze.
	for _, k := range []float64{0.25, 0.7, 1, 4, 30} {
		r := newRNG(5, streamArrival)
		const n = 100000
		var sum, sum2 float64
		for range n {
			x := r.gamma(k)
			sum += x
			sum2 += x * x
		}
		mean := sum / n
		variance := sum2/n - mean*mean
		if math.Abs(mean/k-1) > 0.03 {
			t.Errorf("k=%v: mean %v, want %v ± 3%%", k, mean, k)
		}
		if math.Abs(variance/k-1) > 0.08 {
			t.Errorf("k=%v: variance %v, want %v ± 8%%", k, variance, k)
		}
	}
}

func TestIntNUniform(t *testing.T) {
	r := newRNG(1, streamClass)
	var counts [7]int
	for range 70000 {
		counts[r.intN(7)]++
	}
	for v, n := range counts {
		if n < 9500 || n > 10500 {
			t.Errorf("intN(7) gave %d %d times, want about 10000", v, n)
		}
	}
}
