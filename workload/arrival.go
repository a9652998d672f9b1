package workload

import (
	"fmt"
	"math"
	"time"
)

// Rate profile kinds and think-time distributions, as spelled in slogate.yaml. Unexported:
// the loader owns the public vocabulary.
const (
	profileSteps     = "steps"
	profileRamp      = "ramp"
	profileDiurnal   = "diurnal"
	thinkExponential = "exponential"
)

// rateCurve is an open-loop rate λ(t) >= 0 (requests/s, t in seconds from the start of the
// measured window) through its integral Λ(t) = ∫₀ᵗ λ.
//
// Arrivals are drawn by time rescaling: a renewal process with mean gap 1 is drawn on the
// Λ axis and each point s is mapped back to t = Λ⁻¹(s). For Poisson this is exact (an
// inhomogeneous Poisson process with intensity λ); for constant and gamma it keeps the
// shape of the gaps while the mean rate follows the profile. Drawing gaps at the
// instantaneous rate instead would carry a slow rate across a step for a whole gap.
type rateCurve interface {
	cumulative(t float64) float64
	// invert returns the t with Λ(t) = s, or +Inf when the rate falls to zero for good
	// before Λ reaches s.
	invert(s float64) float64
}

// flatRate is a constant rate.
type flatRate struct{ rate float64 }

func (f flatRate) cumulative(t float64) float64 { return f.rate * t }
func (f flatRate) invert(s float64) float64     { return s / f.rate }

// stepRate holds each step's rate for its duration; the last one holds to the end.
type stepRate struct {
	start []float64 // seconds
	cum   []float64 // Λ at start
	rate  []float64
}

func newStepRate(steps []RateStep) (*stepRate, error) {
	if len(steps) == 0 {
		return nil, fmt.Errorf("steps profile: no steps")
	}
	sr := &stepRate{}
	t, c := 0.0, 0.0
	for i, st := range steps {
		if st.Rate < 0 || math.IsNaN(st.Rate) || math.IsInf(st.Rate, 0) {
			return nil, fmt.Errorf("steps profile: step %d rate %v: must be finite and >= 0", i+1, st.Rate)
		}
		if st.Duration <= 0 && i < len(steps)-1 {
			return nil, fmt.Errorf("steps profile: step %d duration %v: must be > 0", i+1, st.Duration)
		}
		sr.start = append(sr.start, t)
		sr.cum = append(sr.cum, c)
		sr.rate = append(sr.rate, st.Rate)
		d := st.Duration.Seconds()
		t += d
		c += st.Rate * d
	}
	return sr, nil
}

func (sr *stepRate) segment(t float64) int {
	j := 0
	for j+1 < len(sr.start) && t >= sr.start[j+1] {
		j++
	}
	return j
}

func (sr *stepRate) cumulative(t float64) float64 {
	j := sr.segment(t)
	return sr.cum[j] + sr.rate[j]*(t-sr.start[j])
}

func (sr *stepRate) invert(s float64) float64 {
	last := len(sr.start) - 1
	for j := 0; j < last; j++ {
		if s < sr.cum[j+1] {
			return sr.start[j] + (s-sr.cum[j])/sr.rate[j]
		}
	}
	if sr.rate[last] == 0 {
		return math.Inf(1)
	}
	return sr.start[last] + (s-sr.cum[last])/sr.rate[last]
}

// rampRate goes linearly from `from` to `to` over `over` seconds, then holds `to`.
type rampRate struct{ from, to, over float64 }

func (r rampRate) cumulative(t float64) float64 {
	if t <= r.over {
		return r.from*t + (r.to-r.from)*t*t/(2*r.over)
	}
	return r.cumulative(r.over) + r.to*(t-r.over)
}

func (r rampRate) invert(s float64) float64 {
	end := r.cumulative(r.over)
	if s >= end {
		if r.to == 0 {
			return math.Inf(1)
		}
		return r.over + (s-end)/r.to
	}
	// Λ(t) = a t² + b t with a = (to-from)/(2 over), b = from. The root is written as
	// 2s / (b + √(b² + 4as)), which stays accurate when a is near zero or negative.
	a := (r.to - r.from) / (2 * r.over)
	b := r.from
	den := b + math.Sqrt(math.Max(b*b+4*a*s, 0))
	if den <= 0 {
		return 0
	}
	return 2 * s / den
}

// diurnalRate is a sine between trough and peak with the given period, starting at the
// trough: λ(t) = m − A cos(2πt/P), m the mean, A the half range.
type diurnalRate struct{ mean, amp, period float64 }

func (d diurnalRate) rate(t float64) float64 {
	return d.mean - d.amp*math.Cos(2*math.Pi*t/d.period)
}

func (d diurnalRate) cumulative(t float64) float64 {
	return d.mean*t - d.amp*d.period/(2*math.Pi)*math.Sin(2*math.Pi*t/d.period)
}

func (d diurnalRate) invert(s float64) float64 {
	if d.mean == 0 {
		return math.Inf(1)
	}
	// Whole periods are exact; the rest is solved on one period by Newton's method kept
	// inside a bisection bracket (λ may touch zero at the trough).
	perPeriod := d.mean * d.period
	q := math.Floor(s / perPeriod)
	rem := s - q*perPeriod
	lo, hi := 0.0, d.period
	x := rem / d.mean
	for range 100 {
		f := d.cumulative(x) - rem
		if f > 0 {
			hi = x
		} else {
			lo = x
		}
		if hi-lo < 1e-12*d.period || math.Abs(f) < 1e-12*math.Max(1, rem) {
			break
		}
		next := x - f/d.rate(x)
		if d.rate(x) <= 0 || next <= lo || next >= hi || math.IsNaN(next) {
			next = (lo + hi) / 2
		}
		x = next
	}
	return q*d.period + x
}

// newRateCurve builds the rate of an open-loop workload: its profile, else the flat Rate.
func newRateCurve(a Arrival) (rateCurve, error) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	p := a.Profile
	if p == nil {
		if !(a.Rate > 0) || !finite(a.Rate) {
			return nil, fmt.Errorf("arrival rate %v: must be > 0", a.Rate)
		}
		return flatRate{a.Rate}, nil
	}
	switch p.Kind {
	case profileSteps:
		return newStepRate(p.Steps)
	case profileRamp:
		if p.From < 0 || p.To < 0 || !finite(p.From) || !finite(p.To) || p.From+p.To == 0 {
			return nil, fmt.Errorf("ramp profile %v -> %v: rates must be >= 0 and not both 0", p.From, p.To)
		}
		if p.Over <= 0 {
			return flatRate{p.To}, nil
		}
		return rampRate{p.From, p.To, p.Over.Seconds()}, nil
	case profileDiurnal:
		if p.Trough < 0 || p.Peak < p.Trough || !(p.Peak > 0) || !finite(p.Peak) {
			return nil, fmt.Errorf("diurnal profile trough %v, peak %v: need 0 <= trough <= peak, peak > 0", p.Trough, p.Peak)
		}
		if p.Period <= 0 {
			return nil, fmt.Errorf("diurnal profile period %v: must be > 0", p.Period)
		}
		return diurnalRate{(p.Peak + p.Trough) / 2, (p.Peak - p.Trough) / 2, p.Period.Seconds()}, nil
	}
	return nil, fmt.Errorf("rate profile %q: expected one of %q, %q, %q", p.Kind, profileSteps, profileRamp, profileDiurnal)
}

// unitGap draws the next gap of the arrival process on the Λ axis (mean 1).
func (g *Generator) unitGap(r *rng) float64 {
	switch g.w.Arrival.Process {
	case ArrivalPoisson:
		return r.exp()
	case ArrivalGamma:
		k := g.impl.shape
		return r.gamma(k) / k
	}
	return 1
}

func (g *Generator) arrivals() []time.Duration {
	w := g.w
	if w.Sessions != nil {
		// Sessions arrive by the process, Count of them.
		cw := *w
		cw.Requests, cw.Duration = w.Sessions.Count, 0
		w = &cw
	}
	switch w.Arrival.Process {
	case ArrivalClosed:
		return nil
	case ArrivalTrace:
		return traceArrivals(w)
	}
	curve := g.impl.curve
	var out []time.Duration
	switch {
	case w.Duration > 0:
		// Pre-size from the expected count; the slice grows if chance runs over.
		want := curve.cumulative(w.Duration.Seconds())
		out = make([]time.Duration, 0, int(math.Min(want*1.05+16, 1<<24)))
	case w.Requests > 0:
		out = make([]time.Duration, 0, w.Requests)
	default:
		return []time.Duration{}
	}
	r := newRNG(w.Seed, streamArrival)
	s := 0.0
	// A constant process sends its first request at the window's start; the random
	// ones wait one gap, as a process already running would.
	if w.Arrival.Process != ArrivalConstant {
		s = g.unitGap(&r)
	}
	for w.Duration > 0 || len(out) < w.Requests {
		t := curve.invert(s)
		if math.IsInf(t, 1) || math.IsNaN(t) {
			break // the rate fell to zero for good
		}
		d := time.Duration(math.Round(t * 1e9))
		if w.Duration > 0 && d >= w.Duration {
			break
		}
		out = append(out, d)
		s += g.unitGap(&r)
	}
	return out
}

// traceArrivals replays the loaded offsets, cut to Requests or to the Duration window.
func traceArrivals(w *Workload) []time.Duration {
	n := len(w.Arrival.Offsets)
	if w.Requests > 0 && w.Requests < n {
		n = w.Requests
	}
	out := make([]time.Duration, 0, n)
	for _, d := range w.Arrival.Offsets[:n] {
		if w.Duration > 0 && d >= w.Duration {
			break
		}
		out = append(out, d)
	}
	return out
}

// think is the closed-loop pause of user u before its n-th request.
func (g *Generator) think(u, n int) time.Duration {
	a := g.w.Arrival
	if a.Think <= 0 {
		return 0
	}
	if a.ThinkDist != thinkExponential {
		return a.Think
	}
	r := newRNG(g.w.Seed, streamThink, uint64(u), uint64(n))
	return time.Duration(math.Round(r.exp() * float64(a.Think)))
}
