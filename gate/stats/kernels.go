package stats

import "math"

// The kernels: the loops every resample runs, over the caller's weights and the
// metric's data, which is never written after construction.
//
// They are marked //go:norace. The race detector multiplies their cost by ten to twenty,
// which would push this package's statistical tests (hundreds of bootstrap comparisons at
// 2000 resamples) past what CI can run under -race; they touch no memory shared with
// another goroutine while it writes, so the detector has nothing to find in them.
// Everything around them stays instrumented.

// draw fills w with a resample of len(w) requests drawn with replacement: w[i] is how many
// times request i was drawn. Each 64-bit output gives two indices, each uniform on
// [0, n) without bias by Lemire's multiply-shift (the top half of x·n for a 32-bit x).
//
//go:norace
func (r *resampler) draw(w []int32) {
	clear(w)
	n := uint32(len(w))
	i := 0
	for ; i+1 < len(w); i += 2 {
		x := r.src.Uint64()
		m0 := uint64(uint32(x)) * uint64(n)
		m1 := (x >> 32) * uint64(n)
		if uint32(m0) < n {
			m0 = r.reject(m0, n)
		}
		if uint32(m1) < n {
			m1 = r.reject(m1, n)
		}
		w[m0>>32]++
		w[m1>>32]++
	}
	if i < len(w) {
		m := uint64(uint32(r.src.Uint64())) * uint64(n)
		if uint32(m) < n {
			m = r.reject(m, n)
		}
		w[m>>32]++
	}
}

// walk adds the weights of the values' requests, in the values' order, until they reach
// need, and returns the value where they did.
//
//go:norace
func walk(vals []float64, idx []int32, w []int32, need int64) (float64, bool) {
	var cum int64
	for j, i := range idx {
		cum += int64(w[i])
		if cum >= need {
			return vals[j], true
		}
	}
	return math.NaN(), false
}

// weightedTotal is Σ w[i]·counts[i]: the number of pooled values in a resample.
//
//go:norace
func weightedTotal(counts, w []int32) int64 {
	w = w[:len(counts)]
	var t int64
	for i, c := range counts {
		t += int64(w[i]) * int64(c)
	}
	return t
}

// sumAt is Σ w[i] over the requests in list.
//
//go:norace
func sumAt(list, w []int32) int64 {
	var s int64
	for _, i := range list {
		s += int64(w[i])
	}
	return s
}

// weightedSum is Σ w[i]·vals[i] and Σ w[i] over the requests that have a value.
//
//go:norace
func weightedSum(vals []float64, has []bool, w []int32) (float64, int64) {
	w = w[:len(vals)]
	has = has[:len(vals)]
	var sum float64
	var n int64
	for i, v := range vals {
		if has[i] {
			sum += float64(w[i]) * v
			n += int64(w[i])
		}
	}
	return sum, n
}
