// Package statstest holds what the statistical tests of gate and gate/stats share: the
// noise models their many-trial simulations draw runs from.
package statstest

import (
	"math"
	"math/rand/v2"
)

// NoiseModel draws values of mean 0 and variance 1.
type NoiseModel struct {
	Name string
	Draw func(r *rand.Rand) float64
}

// NoiseModels are the three shapes every decision rule is proven under: normal;
// Student's t on 3 degrees of freedom scaled to unit variance (heavy tails); a stall
// mixture (one run in twenty 3 standard deviations slow).
var NoiseModels = []NoiseModel{
	{"normal", func(r *rand.Rand) float64 { return r.NormFloat64() }},
	{"t3", func(r *rand.Rand) float64 {
		// Student's t on 3 degrees of freedom (variance 3), scaled to variance 1.
		var c float64
		for range 3 {
			z := r.NormFloat64()
			c += z * z
		}
		return r.NormFloat64() / math.Sqrt(c/3) / math.Sqrt(3)
	}},
	{"stall", func(r *rand.Rand) float64 {
		// A run that stalls (one in twenty) is 3 standard deviations slow; the rest are
		// normal, narrower, so that the whole has mean 0 and variance 1.
		const p, s = 0.05, 3.0
		x := r.NormFloat64() * math.Sqrt(1-p*(1-p)*s*s)
		if r.Float64() < p {
			x += s
		}
		return x - p*s
	}},
}
