package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// mixture is the martingale M_n at μ0, computed directly from its definition: the
// closed-form half-width must put M_n exactly at 1/α on the sequence's ends.
func mixture(xs []float64, mu0 float64) float64 {
	n := float64(len(xs))
	var sy, syy float64
	for _, x := range xs {
		sy += x - mu0
		syy += (x - mu0) * (x - mu0)
	}
	t2 := SeqTau * SeqTau
	return math.Pow(1+n*t2, -0.5) * math.Pow(syy/(syy-sy*sy/(n+1/t2)), n/2)
}

func TestConfidenceSequenceEndsAreTheMartingaleBound(t *testing.T) {
	xs := []float64{0.12, 0.31, 0.05, 0.22, 0.18, 0.27}
	m, h := ConfidenceSequence(xs, 0.95)
	for _, mu := range []float64{m - h, m + h} {
		if got := mixture(xs, mu); math.Abs(got-20) > 1e-6 {
			t.Errorf("M at the end %v = %v, want 1/α = 20", mu, got)
		}
	}
	if got := mixture(xs, m); got >= 20 {
		t.Errorf("M at the mean = %v, want < 20", got)
	}
	// Three observations cannot exclude anything at 95%; four can.
	if _, h := ConfidenceSequence(xs[:3], 0.95); !math.IsInf(h, 1) {
		t.Errorf("three observations: half-width %v, want +Inf", h)
	}
	if _, h := ConfidenceSequence(xs[:4], 0.95); math.IsInf(h, 1) {
		t.Errorf("four observations: no finite half-width")
	}
}

// TestConfidenceSequenceHoldsAtEveryLook: over 4000 seeded sequences of 24 normal
// observations, the true mean leaves the sequence at some look in at most 5% of them;
// a 95% t interval looked at after every observation from the third on, as a job that
// stops on the first decision would, loses it far more often. That is why the A/B job
// stops on the sequence and not on its fixed-size interval.
func TestConfidenceSequenceHoldsAtEveryLook(t *testing.T) {
	waittest.ManyTrials(t)
	const trials, n = 4000, 24
	var seqMiss, tMiss int
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		sd := 0.02 + 0.1*r.Float64()
		xs := make([]float64, 0, n)
		var seqOut, tOut bool
		for range n {
			xs = append(xs, 0.3+sd*r.NormFloat64())
			m, h := ConfidenceSequence(xs, 0.95)
			seqOut = seqOut || math.Abs(m-0.3) > h
			if len(xs) >= 3 {
				s := sampleSD(xs)
				tOut = tOut || math.Abs(m-0.3) > tQuantile(0.975, float64(len(xs)-1))*s/math.Sqrt(float64(len(xs)))
			}
		}
		if seqOut {
			seqMiss++
		}
		if tOut {
			tMiss++
		}
	}
	t.Logf("mean left the sequence in %d of %d; the repeated t interval in %d", seqMiss, trials, tMiss)
	if seqMiss*20 > trials {
		t.Errorf("confidence sequence missed in %d of %d sequences, want ≤ 5%%", seqMiss, trials)
	}
	if tMiss*10 < trials {
		t.Errorf("repeated t interval missed in only %d of %d sequences: the test cannot tell a sequence from a fixed interval", tMiss, trials)
	}
}

// TestDecide: a sequence is decided when it lies within one of the verdicts' regions,
// and each decision is the verdict Judge gives that interval about its middle.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		dir    Direction
		lo, hi float64
		want   Decision
	}{
		{LowerIsBetter, 1.06, 1.3, DecidedFail},      // wholly beyond +5%
		{LowerIsBetter, 0.97, 1.04, DecidedPass},     // wholly within
		{LowerIsBetter, 0.95, 1.05, DecidedPass},     // the edges admit
		{LowerIsBetter, 0.80, 0.94, DecidedImproved}, // wholly better than −5%
		{LowerIsBetter, 0.80, 0.99, Undecided},       // pass or improved: not yet known
		{LowerIsBetter, 0.99, 1.06, Undecided},       // reaches past the edge
		{LowerIsBetter, 1.05, 1.2, Undecided},        // the edge itself is not beyond it
		{HigherIsBetter, 0.8, 0.94, DecidedFail},     // mirrored
		{HigherIsBetter, 0.95, 1.05, DecidedPass},    // the edges admit
		{HigherIsBetter, 1.06, 1.3, DecidedImproved}, // wholly better than +5%
		{HigherIsBetter, 1.01, 1.3, Undecided},       // pass or improved
		{HigherIsBetter, 0.9, 1.1, Undecided},        // both sides
		{LowerIsBetter, 0, math.Inf(1), Undecided},   // too few observations
	} {
		if got := Decide(c.dir, 0.05, c.lo, c.hi); got != c.want {
			t.Errorf("%s [%v, %v]: %q, want %q", c.dir, c.lo, c.hi, got, c.want)
		}
		if c.want != Undecided {
			if v := Judge(c.dir, 0.05, (c.lo+c.hi)/2, c.lo, c.hi); string(v) != string(c.want) {
				t.Errorf("%s [%v, %v]: decided %q, but the verdict rule says %q", c.dir, c.lo, c.hi, c.want, v)
			}
		}
	}
}

// TestPairLogRatiosCancelDrift: a linear drift over ABBA blocks adds ±γ to the pairs,
// nothing to their mean over whole ABBA groups.
func TestPairLogRatiosCancelDrift(t *testing.T) {
	layout := "ABBAABBA"
	var blocks []Block
	for i, s := range layout {
		v := 100 * math.Exp(0.01*float64(i))
		if s == 'B' {
			v *= 1.1
		}
		blocks = append(blocks, Block{Candidate: s == 'B', At: float64(i), Metric: constant(v)})
	}
	d, ok := PairLogRatios(blocks)
	if !ok || len(d) != 4 {
		t.Fatalf("pairs %v, %v", d, ok)
	}
	var m float64
	for _, x := range d {
		m += x / 4
	}
	if math.Abs(m-math.Log(1.1)) > 1e-12 {
		t.Errorf("mean log ratio %v, want ln 1.1 = %v", m, math.Log(1.1))
	}
	if _, ok := PairLogRatios([]Block{{Metric: constant(1)}, {Metric: constant(2)}}); ok {
		t.Errorf("a pair of two baseline blocks was accepted")
	}
}

// pairBlocks lays the log-ratios ds out as an ABBA job's blocks: each pair a baseline
// block of value 1 and a candidate block of value exp(d), AB or BA.
func pairBlocks(ds []float64) []Block {
	var out []Block
	for i, d := range ds {
		a := Block{Metric: scalar(1)}
		b := Block{Candidate: true, Metric: scalar(math.Exp(d))}
		if i%2 == 1 {
			a, b = b, a
		}
		out = append(out, a, b)
	}
	return out
}

// TestSequenceWithSharedPartHoldsAtEveryLook: 2000 seeded jobs of 16 pairs whose pairs
// all carry one shared draw (two engines' start offsets, sd 0.045, against a pair's
// own spread of 0.07): without the shared part the true ratio leaves the sequence at
// some look in far more than 5% of the jobs; with it, known or estimated on 9 degrees
// of freedom, in at most 5%.
func TestSequenceWithSharedPartHoldsAtEveryLook(t *testing.T) {
	waittest.ManyTrials(t)
	const trials, n, shared, own = 2000, 16, 0.045, 0.07
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05, Confidence: 0.95, Resamples: 1, AllowFewResamples: true}
	var plain, known, estimated int
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		off := shared * r.NormFloat64()
		// A calibration's estimate of the shared variance on 9 degrees of freedom.
		var ss float64
		for range 9 {
			z := r.NormFloat64()
			ss += z * z
		}
		est := shared * shared * ss / 9
		ds := make([]float64, n)
		var outPlain, outKnown, outEst bool
		for k := range ds {
			ds[k] = off + own*r.NormFloat64()
			if k < 3 {
				continue
			}
			b := pairBlocks(ds[:k+1])
			miss := func(sh Shared) bool {
				_, lo, hi, _, ok := SequentialBlocksShared(b, pol, sh)
				return !ok || lo > 1 || hi < 1
			}
			outPlain = outPlain || miss(Shared{})
			outKnown = outKnown || miss(Shared{Var: shared * shared})
			outEst = outEst || miss(Shared{Var: est, DF: 9})
		}
		for _, x := range []struct {
			out bool
			n   *int
		}{{outPlain, &plain}, {outKnown, &known}, {outEst, &estimated}} {
			if x.out {
				*x.n++
			}
		}
	}
	t.Logf("true ratio left the sequence at some look: %d without the shared part, %d with it known, %d estimated (of %d)", plain, known, estimated, trials)
	if plain*100 < 15*trials {
		t.Errorf("without the shared part %d of %d missed: want the test to show the need (≥ 15%%)", plain, trials)
	}
	if known*100 > 5*trials || estimated*100 > 5*trials {
		t.Errorf("with the shared part %d (known) and %d (estimated) of %d missed, want ≤ 5%%", known, estimated, trials)
	}
}

// TestCompareBlocksSharedWidens: the fixed job's interval adds the shared variance to
// the blocks' own, on Welch–Satterthwaite degrees of freedom below the blocks' plus the
// shared part's.
func TestCompareBlocksSharedWidens(t *testing.T) {
	ds := []float64{0.03, -0.02, 0.05, 0.01, 0.00, 0.04, -0.01, 0.02}
	b := pairBlocks(ds)
	for i := range b {
		b[i].At = float64(i)
	}
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05, Confidence: 0.95, Resamples: 200, AllowFewResamples: true}
	spread := func(c float64) Metric {
		xs := make([]float64, 200)
		for i := range xs {
			xs[i] = c * (1 + 0.3*math.Sin(float64(i)))
		}
		return NewMean(xs)
	}
	base, cand := spread(1), spread(math.Exp(0.015))
	r0, n0 := CompareBlocks(b, base, cand, pol)
	r1, n1 := CompareBlocksShared(b, base, cand, pol, Shared{Var: 0.04 * 0.04, DF: 9})
	if r0.Point != r1.Point {
		t.Errorf("point %v with the shared part, %v without: want the same", r1.Point, r0.Point)
	}
	if want := math.Sqrt(n0.Total*n0.Total + 0.04*0.04); math.Abs(n1.Total-want) > 1e-12 {
		t.Errorf("total sd %v, want %v", n1.Total, want)
	}
	if !(r1.Lo < r0.Lo && r1.Hi > r0.Hi) {
		t.Errorf("interval [%v, %v] with the shared part, [%v, %v] without: want it wider on both ends", r1.Lo, r1.Hi, r0.Lo, r0.Hi)
	}
	if n0.DF > 0 && !(n1.DF > 0 && n1.DF < n0.DF+9) {
		t.Errorf("degrees of freedom %v (blocks alone %v): want Welch–Satterthwaite's, below their sum", n1.DF, n0.DF)
	}
}

// scalar is a metric of value v (every request v).
func scalar(v float64) Metric { return NewMean([]float64{v, v, v, v}) }

// TestKnownSDSequenceHoldsAtEveryLook: over 4000 seeded sequences of 10 normal
// observations of known sd, the mean leaves the known-variance sequence at some look in
// at most 5%; and the sequence is finite from the first observation.
func TestKnownSDSequenceHoldsAtEveryLook(t *testing.T) {
	const trials, n, sd = 4000, 10, 0.1
	miss := 0
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(i), 13))
		var s float64
		out := false
		for k := 1; k <= n; k++ {
			s += sd * r.NormFloat64()
			out = out || math.Abs(s/float64(k)) > KnownSDSequence(k, sd, 0.95)
		}
		if out {
			miss++
		}
	}
	t.Logf("the mean left the sequence in %d of %d", miss, trials)
	if miss*100 > 5*trials {
		t.Errorf("the mean left the sequence in %d of %d, want ≤ 5%%", miss, trials)
	}
	if h := KnownSDSequence(1, sd, 0.95); math.IsInf(h, 1) || h <= 0 {
		t.Errorf("one observation: half-width %v, want finite", h)
	}
	if !(KnownSDSequence(3, sd, 0.95) < KnownSDSequence(2, sd, 0.95)) {
		t.Errorf("the sequence does not narrow with observations")
	}
}

// TestSharedSequence: without a shared part the sequence is KnownSDSequence; with one,
// over 4000 seeded sequences of 6 runs whose deviations share one draw (variance a
// tenth of a run's, a baseline of 10 runs), the true ratio leaves it at some look in at
// most 5%; it is wider than without the shared part.
func TestSharedSequence(t *testing.T) {
	for n := 1; n <= 8; n++ {
		if a, b := SharedSequenceHalfWidth(n, 0.1, 0, 0.95), KnownSDSequence(n, 0.1, 0.95); math.Abs(a-b) > 1e-12*b {
			t.Errorf("n %d: %v without a shared part, KnownSDSequence %v", n, a, b)
		}
		if !(SharedSequenceHalfWidth(n, 0.1, 0.001, 0.95) > KnownSDSequence(n, 0.1, 0.95)) {
			t.Errorf("n %d: not wider with a shared part", n)
		}
	}
	const trials, n, sd, v = 4000, 6, 0.1, 0.001
	miss := 0
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(i), 17))
		eb := math.Sqrt(v) * r.NormFloat64()
		var s float64
		out := false
		for k := 1; k <= n; k++ {
			s += sd*r.NormFloat64() - eb
			out = out || math.Abs(s/float64(k)) > SharedSequenceHalfWidth(k, sd, v, 0.95)
		}
		if out {
			miss++
		}
	}
	t.Logf("the ratio left the sequence in %d of %d", miss, trials)
	if miss*100 > 5*trials {
		t.Errorf("the ratio left the sequence in %d of %d, want ≤ 5%%", miss, trials)
	}
}

// TestFutile: four pairs that move ±30% about no change cannot bring a ±5% rule's
// sequence beyond its tolerance by 16 pairs: futile. Pairs that agree within ±1% about
// no change are futile too (the maximum could decide them pass, not fail or improved),
// and so are ones a few percent beyond the edge whose spread a shared part widens past
// what the maximum's mean can leave; a ×2 regression four times the pairs' spread
// beyond the edge will be decided fail, and one of 10% with a spread that the maximum
// narrows past the edge may be: neither is futile. Fewer than three pairs forecast
// nothing.
func TestFutile(t *testing.T) {
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05, Confidence: 0.95}
	noisy := pairBlocks([]float64{0.3, -0.3, 0.25, -0.2})
	if f, hw, _, ok := Futile(noisy, pol, Shared{}, 16, 0); !ok || !f || !(hw > math.Log1p(0.05)) {
		t.Errorf("noisy A/A: futile %v, half-width at 16 pairs %.3f, ok %v; want futile", f, hw, ok)
	}
	quiet := pairBlocks([]float64{0.01, -0.01, 0.005, -0.008})
	if f, _, _, ok := Futile(quiet, pol, Shared{}, 16, 0); !ok || !f {
		t.Errorf("quiet A/A: futile %v, ok %v; want futile (neither side within reach)", f, ok)
	}
	if f, _, _, ok := Futile(pairBlocks([]float64{0.14, 0.06, 0.12, 0.08}), pol, Shared{}, 16, 0); !ok || f {
		t.Errorf("×1.1 of spread 0.037: futile %v, ok %v; want a fail within reach", f, ok)
	}
	slow := pairBlocks([]float64{0.7, 0.66, 0.72, 0.69})
	if f, _, _, ok := Futile(slow, pol, Shared{}, 16, 0); !ok || f {
		t.Errorf("×2 regression: futile %v, ok %v; want decidable", f, ok)
	}
	if _, _, _, ok := Futile(pairBlocks([]float64{0.3, -0.3}), pol, Shared{}, 16, 0); ok {
		t.Error("two pairs gave a forecast")
	}
	near := pairBlocks([]float64{0.12, 0.08, 0.11, 0.09})
	_, hw0, _, _ := Futile(near, pol, Shared{}, 16, 0)
	f, hw1, _, _ := Futile(near, pol, Shared{Var: 0.05 * 0.05}, 16, 0)
	if !(hw1 > hw0) || !f {
		t.Errorf("×1.1 with a shared part of sd 0.05: half-width %.4f against %.4f without, futile %v; want wider and futile", hw1, hw0, f)
	}
	// Judged at the maximum by a fixed interval (a final share), 16 pairs of the noisy
	// spread reach less far than the sequence there: the forecast is the fixed one.
	_, hwSeq, _, _ := Futile(noisy, pol, Shared{}, 16, 0)
	_, hwFixed, _, _ := Futile(noisy, pol, Shared{}, 16, 0.975)
	if want := FixedHalfWidth(16, sampleSD([]float64{0.3, -0.3, 0.25, -0.2}), 0.975); !(hwFixed < hwSeq) || math.Abs(hwFixed-want) > 1e-12 {
		t.Errorf("noisy, fixed at the maximum: half-width %.4f (sequence %.4f); want %.4f", hwFixed, hwSeq, want)
	}
}

// TestFutileKeepsAnUnderstatedRegression: a job of at most 8 pairs judged there by the
// fixed interval at 97.5% (--final-share 0.5), four pairs seen. A regression of ×1.4
// whose first pairs came out at ×1.28 (mean 0.25, spread 0.234, as -t 2 against -t 1
// on a busy llama.cpp host) has the edge within the maximum's half-width of its mean,
// and a forecast from that mean alone gave up on it; but its mean at the maximum lies
// beyond edge + half-width more than a quarter of the time, so it is not futile, and
// nor is the mirror image, a faster engine whose improvement is within reach. An
// unchanged engine of that spread whose pairs came out at ×1.1 is (a chance of a
// verdict beyond ±5% under 1 in 1000).
func TestFutileKeepsAnUnderstatedRegression(t *testing.T) {
	pol := Policy{Direction: LowerIsBetter, Tolerance: 0.05, Confidence: 0.95}
	spread := func(m float64) []float64 {
		// Four pairs of mean m and sample standard deviation 0.234.
		a := 0.234 * math.Sqrt(3.0/2)
		return []float64{m + a, m - a, m, m}
	}
	reg := spread(0.25)
	f, hw, power, ok := Futile(pairBlocks(reg), pol, Shared{}, 8, 0.975)
	edge := math.Log1p(0.05)
	if !ok || f || !(math.Abs(0.25-edge) < hw) {
		t.Errorf("×1.28 over four pairs: futile %v, half-width %.3f at 8 pairs (edge %.3f from the mean), ok %v; want not futile with the edge within reach", f, hw, 0.25-edge, ok)
	}
	// The mean at 8 pairs is normal about m with sd 0.234·√4/8: a fail needs it beyond
	// edge + hw, an improvement below ln(0.95) − hw.
	chance := func(m float64) float64 {
		sdM := 0.234 * 2 / 8
		above := 0.5 * math.Erfc((edge+hw-m)/sdM/math.Sqrt2)
		below := 0.5 * math.Erfc((m+hw-math.Log1p(-0.05))/sdM/math.Sqrt2)
		return above + below
	}
	if want := chance(0.25); math.Abs(power-want) > 1e-3 || !(power > 0.25) {
		t.Errorf("conditional power %.4f, want %.4f (above 0.25)", power, want)
	}
	if f, _, power, _ := Futile(pairBlocks(spread(-0.25)), pol, Shared{}, 8, 0.975); f || math.Abs(power-chance(-0.25)) > 1e-3 {
		t.Errorf("×0.78 over four pairs: futile %v, power %.4f (want %.4f); want an improvement within reach", f, power, chance(-0.25))
	}
	if f, _, _, _ := Futile(pairBlocks(spread(0.1)), pol, Shared{}, 8, 0.975); !f {
		t.Error("×1.1 over four pairs of spread 0.234: not futile")
	}
	// At the maximum the mean is known: beyond a tolerance or not.
	if ConditionalPower(0.05, 0.3, 0.2, 8, 8, 0.2) != 1 || ConditionalPower(0.05, -0.3, 0.2, 8, 8, 0.2) != 1 || ConditionalPower(0.05, 0.2, 0.2, 8, 8, 0.2) != 0 {
		t.Error("the chance of a verdict beyond the tolerance at the maximum is not 1 or 0 there")
	}
	// The chance does not depend on the rule's direction: a fail on one side is an
	// improvement on the other. A higher-is-better rule that came out at ×0.78 is
	// kept as the lower-is-better one is.
	hp := Policy{Direction: HigherIsBetter, Tolerance: 0.05, Confidence: 0.95}
	if f, _, _, _ := Futile(pairBlocks(spread(-0.25)), hp, Shared{}, 8, 0.975); f {
		t.Error("higher is better, ×0.78 over four pairs: futile, want a fail within reach")
	}
}

// TestFixedHalfWidth: Student's t half-width, against the t table: t(0.975, 5) =
// 2.5706 for six observations of sd 1 gives 2.5706/√6; one observation has none.
func TestFixedHalfWidth(t *testing.T) {
	if got, want := FixedHalfWidth(6, 1, 0.95), 2.5706/math.Sqrt(6); math.Abs(got-want) > 1e-4 {
		t.Errorf("FixedHalfWidth(6, 1, 0.95) = %.5f, want %.5f", got, want)
	}
	if got, want := FixedHalfWidth(11, 0.2, 0.99), 3.1693*0.2/math.Sqrt(11); math.Abs(got-want) > 1e-4 {
		t.Errorf("FixedHalfWidth(11, 0.2, 0.99) = %.5f, want %.5f", got, want)
	}
	if !math.IsInf(FixedHalfWidth(1, 1, 0.95), 1) {
		t.Error("one observation gave a finite half-width")
	}
	// The sequence pays for its looks: at 6 observations it is wider than the fixed
	// interval at the same level.
	if !(SequenceHalfWidth(6, 1, 0.95) > FixedHalfWidth(6, 1, 0.95)) {
		t.Error("the sequence is no wider than the fixed interval")
	}
}
