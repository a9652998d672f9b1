package stats

import (
	"math"
	"math/rand/v2"
	"testing"
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

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		dir    Direction
		lo, hi float64
		want   Decision
	}{
		{LowerIsBetter, 1.06, 1.3, DecidedFail},    // wholly beyond +5%
		{LowerIsBetter, 0.97, 1.04, DecidedPass},   // wholly within
		{LowerIsBetter, 0.80, 0.90, DecidedPass},   // wholly better: decided too
		{LowerIsBetter, 0.99, 1.06, Undecided},     // reaches past the edge
		{LowerIsBetter, 1.05, 1.2, Undecided},      // the edge itself is not beyond it
		{HigherIsBetter, 0.8, 0.94, DecidedFail},   // mirrored
		{HigherIsBetter, 0.95, 1.1, DecidedPass},   // the edge admits
		{HigherIsBetter, 0.9, 1.1, Undecided},      // both sides
		{LowerIsBetter, 0, math.Inf(1), Undecided}, // too few observations
	} {
		if got := Decide(c.dir, 0.05, c.lo, c.hi); got != c.want {
			t.Errorf("%s [%v, %v]: %q, want %q", c.dir, c.lo, c.hi, got, c.want)
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
