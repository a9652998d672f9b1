package stats

import "math/rand/v2"

// Streams that separate the baseline's resamples from the candidate's under one seed, so
// that each side's resamples do not depend on the other's size.
const (
	streamBase = 0x62617365 // "base"
	streamCand = 0x63616e64 // "cand"
)

// resampler draws bootstrap resamples as weights. It is the hot loop of the gate (10,000
// draws per resample, thousands of resamples), so it uses PCG directly and takes two
// indices from each 64-bit output.
type resampler struct{ src rand.PCG }

func newResampler(seed, stream uint64) *resampler {
	r := &resampler{}
	r.src.Seed(seed, stream)
	return r
}

// reject is the rare step of Lemire's multiply-shift (probability n/2³² per index): the
// product m = x·n fell in the short remainder that would bias the index, so x is drawn
// again.
//
//go:norace
func (r *resampler) reject(m uint64, n uint32) uint64 {
	t := -n % n
	for uint32(m) < t {
		m = uint64(uint32(r.src.Uint64())) * uint64(n)
	}
	return m
}
