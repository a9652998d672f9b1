package workload

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Stream constants: each purpose draws from its own PCG stream so that changing one
// aspect of a workload (say the class weights) leaves the others (arrivals, prompt
// positions) byte for byte the same.
const (
	streamArrival      uint64 = 0x9e3779b97f4a7c15
	streamPromptLength uint64 = 0xbf58476d1ce4e5b9
	streamOutputLength uint64 = 0x94d049bb133111eb
	streamClass        uint64 = 0xd6e8feb86659fd93
	streamPromptText   uint64 = 0xa0761d6478bd642f
	streamSalt         uint64 = 0xe7037ed1a0b428db
	streamGroupPrefix  uint64 = 0x8ebc6af09c88c6e3
	streamThink        uint64 = 0x589965cc75374cc3
	streamBlock        uint64 = 0x1d8e4e27c47d124f
	streamRunSalt      uint64 = 0x6a09e667f3bcc909
	streamRAG          uint64 = 0xbb67ae8584caa73b
	streamDoc          uint64 = 0x3c6ef372fe94f82b
)

// Phases keep warm-up requests apart from measured ones: warm-up item i and measured
// item i share nothing.
const (
	phaseMeasured uint64 = 0
	phaseWarmup   uint64 = 1
)

// mix64 is the splitmix64 finalizer: adjacent inputs (index i and i+1) give unrelated
// outputs, which a PCG seeded with adjacent states would not guarantee.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rng is a math/rand/v2 PCG held by value with the few draws the generator needs. A
// *rand.Rand would put the PCG behind an interface and on the heap; per-request streams
// are created by the thousand, so they stay on the stack.
type rng struct{ pcg rand.PCG }

// newRNG seeds a stream from the workload seed, the purpose and any further keys (phase,
// index, user, ...). The result depends on nothing else, so per-request values can be
// computed in any order.
func newRNG(seed int64, stream uint64, keys ...uint64) rng {
	h := mix64(uint64(seed) ^ stream)
	for _, k := range keys {
		h = mix64(h ^ k)
	}
	var r rng
	r.pcg.Seed(uint64(seed), h)
	return r
}

func (r *rng) uint64() uint64 { return r.pcg.Uint64() }

// float64 is uniform in [0, 1).
func (r *rng) float64() float64 { return float64(r.pcg.Uint64()>>11) * 0x1p-53 }

// openFloat64 is uniform in (0, 1], safe under a logarithm.
func (r *rng) openFloat64() float64 { return 1 - r.float64() }

// intN is uniform in [0, n) without modulo bias (Lemire's multiply-and-reject).
func (r *rng) intN(n int) int {
	if n <= 0 {
		panic("workload: intN of a non-positive bound")
	}
	un := uint64(n)
	hi, lo := bits.Mul64(r.pcg.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), un)
		}
	}
	return int(hi)
}

// norm is a standard normal draw (Box–Muller; one of the pair is discarded so that the
// number of uniforms consumed per draw is fixed).
func (r *rng) norm() float64 {
	u1 := r.openFloat64()
	u2 := r.float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// exp is an exponential draw with mean 1.
func (r *rng) exp() float64 { return -math.Log(r.openFloat64()) }

// gamma is a Gamma(k, 1) draw by Marsaglia and Tsang (2000). For k < 1 it draws
// Gamma(k+1) and scales by U^(1/k), their boost, since the squeeze needs k >= 1.
func (r *rng) gamma(k float64) float64 {
	if k < 1 {
		return r.gamma(k+1) * math.Pow(r.openFloat64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.norm()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.openFloat64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// z95 is the standard normal 95th percentile: a lognormal's p95 is exp(mu + z95*sigma).
const z95 = 1.6448536269514722

// sampler draws token counts from one LengthDist.
type sampler struct {
	kind    string
	value   int     // fixed
	lo, hi  int     // uniform bounds; lognormal clip (hi 0: no upper clip); empirical clip (hi)
	mu, sig float64 // lognormal
	values  []int   // empirical
}

// newSampler checks just what sampling needs to be safe; the validator gives the
// file:line:col messages users see.
func newSampler(d LengthDist) (sampler, error) {
	s := sampler{kind: d.Dist}
	switch d.Dist {
	case DistFixed, "":
		// An unset kind with a value is a fixed length (Go-built workloads rarely say so).
		s.kind = DistFixed
		if d.Value < 1 {
			return s, fmt.Errorf("fixed length %d: must be at least 1", d.Value)
		}
		s.value = d.Value
	case DistUniform:
		if d.Min < 1 || d.Max < d.Min {
			return s, fmt.Errorf("uniform length [%d, %d]: need 1 <= min <= max", d.Min, d.Max)
		}
		s.lo, s.hi = d.Min, d.Max
	case DistLognormal:
		if d.P50 < 1 || d.P95 < d.P50 {
			return s, fmt.Errorf("lognormal length p50 %d, p95 %d: need 1 <= p50 <= p95", d.P50, d.P95)
		}
		s.mu = math.Log(float64(d.P50))
		s.sig = (math.Log(float64(d.P95)) - s.mu) / z95
		s.lo = max(d.Min, 1)
		s.hi = d.Max
		if s.hi > 0 && s.hi < s.lo {
			return s, fmt.Errorf("lognormal length clip [%d, %d]: max below min", s.lo, s.hi)
		}
	case DistEmpirical:
		if len(d.Values) == 0 {
			return s, fmt.Errorf("empirical length: no values")
		}
		s.values = d.Values
		s.hi = d.Max
	default:
		return s, fmt.Errorf("length dist %q: expected one of %q, %q, %q, %q",
			d.Dist, DistFixed, DistUniform, DistLognormal, DistEmpirical)
	}
	return s, nil
}

// sample draws one length: rounded to an integer and at least 1.
func (s *sampler) sample(r *rng) int {
	var n int
	switch s.kind {
	case DistFixed:
		n = s.value
	case DistUniform:
		n = s.lo + r.intN(s.hi-s.lo+1)
	case DistLognormal:
		x := math.Exp(s.mu + s.sig*r.norm())
		if x < float64(s.lo) {
			x = float64(s.lo)
		}
		if s.hi > 0 && x > float64(s.hi) {
			x = float64(s.hi)
		}
		n = int(math.Round(x))
	case DistEmpirical:
		n = s.values[r.intN(len(s.values))]
		if s.hi > 0 && n > s.hi {
			n = s.hi
		}
	}
	return max(n, 1)
}
