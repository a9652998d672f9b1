package stats

import (
	"fmt"
	"math"
	"sync"
)

// Two kinds of noise move a metric. Sampling noise inside a run: which requests happened
// to be slow; the bootstrap over requests measures it. Between-run noise: how much a
// whole run of an unchanged system moves from one run to the next (a GPU's clocks and
// thermals, the neighbours on a host, the engine's warm state); only repeated runs
// measure it. On real engines the second is often the larger, and an interval that
// leaves it out makes a gate that flaps.
//
// The model, on the log scale where a ratio is a difference: the value of run j is
//
//	ln x_j = μ + β_j + ε_j
//
// with β_j the run's between-run offset (variance σ²) and ε_j its sampling noise
// (variance w_j, from the run's bootstrap). A side of n runs is summarised by the mean of
// its ln x_j (its geometric mean), so
//
//	Var(ln ratio) = σ²·(1/n_b + 1/n_c) + mean(w_b)/n_b + mean(w_c)/n_c
//
// where the part of σ² that runs of one engine start share (Spread.SharedSD: between
// starts and between days, measured by a calibration spread over starts) divides by each
// side's distinct starts s_b, s_c instead of its runs: repeats on one start are one
// start.
//
// σ² is estimated from runs of the same system (a calibration, or the trials of either
// side): their sample variance s² includes their own sampling noise, so σ² = max(s² −
// mean w, 0). The interval is ln ratio ± q·sd, with q Student's t quantile at the
// Welch–Satterthwaite degrees of freedom of that sum (the sampling terms count as known,
// the between-run term has the degrees of freedom of s²): with few runs, a wide q says
// how little they tell. The variance is never taken below s²·(1/n_b + 1/n_c), what the
// measured runs' own spread gives, so that those degrees of freedom never fall below
// s²'s (CompareSides); a part shared by the runs of one start, itself a difference of
// two estimates, is taken on its own degrees of freedom, or replaced by the whole
// spread it was taken out of where that gives the narrower interval.

// Spread is the between-run spread of one metric, as measured on repeated runs of one
// system.
type Spread struct {
	// RunSD is the standard deviation of ln(value) between the runs: their whole
	// run-to-run spread, their own sampling noise included.
	RunSD float64 `json:"run_sd"`
	// WithinSD is the root mean square of the runs' own sampling standard deviations of
	// ln(value) (each from its bootstrap over requests).
	WithinSD float64 `json:"within_sd"`
	// DF is the degrees of freedom of RunSD: the number of runs minus one (minus the
	// number of groups when several are pooled). 0: no spread is known.
	DF int `json:"df"`
	// SharedSD is the part of the between-run spread that runs served by one engine
	// start share (what moves between engine starts and between days), as a standard
	// deviation of ln(value): a side's runs count it once per distinct start
	// (Side.Starts), not once per run. 0 where the runs that measured the spread did not
	// sample engine starts.
	SharedSD float64 `json:"shared_sd,omitempty"`
	// SharedBelow is the variance the levels below put into the mean square the shared
	// part was taken out of (for engine starts, what a start's runs put into its mean:
	// their noise over their count), so that SharedSD² + SharedBelow is that mean
	// square's expectation. 0: unknown, taken as the runs' whole own spread.
	SharedBelow float64 `json:"shared_below,omitempty"`
}

// parts splits the between-run variance into what each run draws afresh and what the
// runs of one engine start share.
func (s Spread) parts() (own, shared float64) {
	x := s.Between()
	sh := min(s.SharedSD, x)
	return x*x - sh*sh, sh * sh
}

// Known says whether the spread was measured.
func (s Spread) Known() bool { return s.DF > 0 }

// Between is the between-run standard deviation of ln(value) once the runs' own sampling
// noise is taken out: √max(RunSD² − WithinSD², 0).
func (s Spread) Between() float64 {
	return math.Sqrt(max(s.RunSD*s.RunSD-s.WithinSD*s.WithinSD, 0))
}

// Pool combines spreads measured on separate groups of runs of the same system (the
// baseline's trials and the candidate's): variances weighted by their degrees of freedom.
func Pool(ss ...Spread) Spread {
	var df int
	var run, within float64
	for _, s := range ss {
		if !s.Known() {
			continue
		}
		df += s.DF
		run += float64(s.DF) * s.RunSD * s.RunSD
		within += float64(s.DF) * s.WithinSD * s.WithinSD
	}
	if df == 0 {
		return Spread{}
	}
	return Spread{RunSD: math.Sqrt(run / float64(df)), WithinSD: math.Sqrt(within / float64(df)), DF: df}
}

// MeasureSpread measures the spread of a metric over runs of one system (A/A trials):
// the sample standard deviation of ln(value) and the runs' own sampling noise. Fewer than
// two runs, or a run without a positive value, give an unknown Spread and a reason.
func MeasureSpread(runs []Metric, pol Policy) (Spread, string) {
	sp, _, why := MeasureSide(runs, pol, streamBase)
	return sp, why
}

// MeasureSide is MeasureSpread and Summarise of the same runs in one pass (the same
// resamples: stream as Summarise's).
func MeasureSide(runs []Metric, pol Policy, stream uint64) (Spread, Side, string) {
	pol, _, errs := pol.effective()
	if len(errs) > 0 {
		return Spread{}, Side{}, errs[0]
	}
	if len(runs) < 2 {
		return Spread{}, Side{}, fmt.Sprintf("%d run: a spread needs at least 2", len(runs))
	}
	logs := make([]float64, len(runs))
	sd := Side{Runs: len(runs)}
	var w float64
	for i, m := range runs {
		sd.Warnings = append(sd.Warnings, m.Warnings()...)
		v, x, why := logWithin(m, pol, stream+uint64(i))
		if why != "" {
			return Spread{}, Side{}, fmt.Sprintf("run %d: %s", i+1, why)
		}
		logs[i] = math.Log(v)
		sd.LogMean += logs[i]
		w += x * x
	}
	n := float64(len(runs))
	sd.LogMean /= n
	sd.Within = w / n / n
	return Spread{RunSD: sampleSD(logs), WithinSD: math.Sqrt(w / n), DF: len(runs) - 1}, sd, ""
}

// Noise says what the interval of a comparison is made of, on the log scale of the
// ratio.
type Noise struct {
	// Within is the sampling part of the ratio's standard deviation (the bootstrap over
	// requests of both sides); Between the between-run part; Total combines them.
	Within, Between, Total float64
	// DF are the degrees of freedom of the interval's quantile; 0 means a normal one.
	DF float64
	// Quantile is the multiple of Total the interval spans on each side.
	Quantile float64
	// Source says where the between-run spread came from ("calibration", "trials",
	// "blocks"); "" when none is known.
	Source string
	// BaselineStarts and CandidateStarts are the distinct engine starts the sides'
	// runs were counted on (Side.Starts); 0 when no between-run spread is known.
	BaselineStarts, CandidateStarts int
}

// Side is one side of a comparison summarised for CompareSides: the mean of its runs'
// log values and the sampling variance of that mean. Summarise makes one; a side that
// is compared many times (a committed baseline) need be summarised once.
type Side struct {
	Runs int
	// Starts is how many distinct engine starts served the runs (repeats on one start
	// share its offset); 0: each run had its own.
	Starts   int
	LogMean  float64
	Within   float64 // sampling variance of LogMean
	Warnings []string
}

// starts is the number of distinct engine starts the side's between-run spread is
// averaged over: Starts, or every run its own when that is unknown.
func (s Side) starts() float64 {
	if s.Starts > 0 && s.Starts <= s.Runs {
		return float64(s.Starts)
	}
	return float64(s.Runs)
}

// Summarise bootstraps each run of a side (the requests of each run resampled) and
// summarises the side; stream separates the resamples of one side from another's
// (StreamBaseline, StreamCandidate). A run without a positive value gives a reason.
func Summarise(ms []Metric, pol Policy, stream uint64) (Side, string) {
	pol, _, errs := pol.effective()
	if len(errs) > 0 {
		return Side{}, errs[0]
	}
	sd := Side{Runs: len(ms)}
	if len(ms) == 0 {
		return sd, "no runs"
	}
	for i, m := range ms {
		sd.Warnings = append(sd.Warnings, m.Warnings()...)
		v, w, why := logWithin(m, pol, stream+uint64(i))
		if why != "" {
			if len(ms) > 1 {
				why = fmt.Sprintf("trial %d: %s", i+1, why)
			}
			return Side{}, why
		}
		sd.LogMean += math.Log(v)
		sd.Within += w * w
	}
	n := float64(len(ms))
	sd.LogMean /= n
	sd.Within /= n * n
	return sd, ""
}

// Streams of Summarise for the two sides of a comparison.
const (
	StreamBaseline  uint64 = streamBase
	StreamCandidate uint64 = streamCand
)

// CompareSpread compares the runs of a candidate with those of a baseline on one
// metric, with an interval that combines the sampling noise of each run (its bootstrap
// over requests) with the between-run spread sp (see the model above). One candidate
// run against a baseline of known spread can so fail a regression larger than the noise,
// which comparing trials by their range alone never can with few trials.
//
// Point is the ratio of the sides' geometric means of their runs' values; Lo and Hi are
// Point·exp(∓q·sd). Baseline and Candidate are the sides' geometric means. The verdict
// follows Compare's rule. source names where sp was measured. bStarts and cStarts are
// the distinct engine starts that served each side's runs (Side.Starts; 0: each run its
// own).
func CompareSpread(base, cand []Metric, bStarts, cStarts int, sp Spread, source string, pol Policy) (Result, Noise) {
	b, whyB := Summarise(base, pol, StreamBaseline)
	c, whyC := Summarise(cand, pol, StreamCandidate)
	switch {
	case whyB != "":
		return CompareSides(Side{}, Side{}, sp, source, pol, "baseline "+whyB)
	case whyC != "":
		return CompareSides(Side{}, Side{}, sp, source, pol, "candidate "+whyC)
	}
	b.Starts, c.Starts = bStarts, cStarts
	return CompareSides(b, c, sp, source, pol, "")
}

// CompareSides is CompareSpread on summarised sides; a non-empty why makes the result
// incomparable for that reason.
func CompareSides(b, c Side, sp Spread, source string, pol Policy, why string) (Result, Noise) {
	pol, notes, errs := pol.effective()
	res := Result{Policy: pol, Warnings: notes}
	nz := Noise{Source: source}
	if len(errs) > 0 {
		res.Warnings = append(res.Warnings, errs[:len(errs)-1]...)
		return res.incomparable(errs[len(errs)-1]), nz
	}
	for _, w := range b.Warnings {
		res.Warnings = append(res.Warnings, "baseline: "+w)
	}
	for _, w := range c.Warnings {
		res.Warnings = append(res.Warnings, "candidate: "+w)
	}
	if why != "" {
		return res.incomparable(why), nz
	}
	if b.Runs == 0 || c.Runs == 0 {
		return res.incomparable(fmt.Sprintf("%d baseline and %d candidate runs: nothing to compare", b.Runs, c.Runs)), nz
	}
	res.Baseline, res.Candidate = math.Exp(b.LogMean), math.Exp(c.LogMean)
	between, run, whole := 0.0, 0.0, 0.0
	if sp.Known() {
		// Each run's own part averages over its side's runs, the part one engine start
		// shares over its side's distinct starts: repeats on one start are one start.
		own, shared := sp.parts()
		k := 1/float64(b.Runs) + 1/float64(c.Runs)
		ks := 1/b.starts() + 1/c.starts()
		between = own*k + shared*ks
		run = (sp.RunSD*sp.RunSD-shared)*k + shared*ks
		// What the calibration's mean squares put into the variance: the spread of the
		// level the shared part was taken out of (everything below it included) counts
		// once per start.
		// It is run when nothing is shared, nor could be: a calibration that did not
		// sample engine starts.
		whole = run
		if shared > 0 || sp.SharedBelow > 0 {
			below := sp.RunSD*sp.RunSD - own - shared
			if sp.SharedBelow > 0 {
				below = min(sp.SharedBelow, below)
			}
			whole = own*k + (shared+below)*ks
		}
		nz.BaselineStarts, nz.CandidateStarts = int(b.starts()), int(c.starts())
	}
	within := b.Within + c.Within
	df := math.Inf(1)
	if whole > run*(1+1e-12) {
		// A shared part is a difference of two estimates (the spread of the starts'
		// means less what the runs' own noise puts into them), and measured less surely
		// than either: taken on the calibration's degrees of freedom it made intervals
		// too narrow (committed candidates on one start failed at the tolerance's edge
		// 55–90 times in 2,000 where the part was about half the runs' spread;
		// gate/edge_components_test.go). So the sum is taken on its Welch–Satterthwaite
		// degrees of freedom, the random part being whole, unless the whole itself on
		// the calibration's degrees of freedom gives the narrower interval: a shared
		// part small against the noise below it is then replaced by that whole, as
		// gate.StartSpread does for a swapped job.
		v := max(within+between, run)
		dfPart := v * v / (whole * whole / float64(sp.DF))
		vWhole := max(v, whole)
		dfWhole := vWhole * vWhole / (whole * whole / float64(sp.DF))
		p := (1 + pol.Confidence) / 2
		if dfPart >= 1 && tQuantile(p, dfPart)*math.Sqrt(v) <= tQuantile(p, dfWhole)*math.Sqrt(vWhole) {
			between, df = v-within, dfPart
		} else {
			between, df = vWhole-within, dfWhole
		}
	} else if run > 0 {
		// The between-run part is s² − mean w, and its uncertainty is that of the runs'
		// variance s² on sp.DF degrees of freedom, however little of s² is left once the
		// sampling noise is taken out: when the runs moved about as much as their
		// sampling noise says, the between-run spread could still be several times its
		// estimate. Welch–Satterthwaite on that sum collapses when the sides' own
		// sampling noise is smaller than the measured runs' (a 4-run calibration gave
		// 0.24 degrees of freedom, an interval of [0, ∞], and a 7.5× regression read
		// inconclusive). So the interval is never narrower than the measured runs' own
		// spread at the sides' run counts, s²·(1/n_b + 1/n_c): the between-run part is
		// raised to make up the difference, and the degrees of freedom are then at
		// least sp.DF, the design's, never fewer.
		between = max(between, run-within)
		df = (within + between) * (within + between) / (run * run / float64(sp.DF))
	}
	nz.Within, nz.Between = math.Sqrt(within), math.Sqrt(between)
	res = combined(res, c.LogMean-b.LogMean, within, df, &nz)
	if !sp.Known() {
		res.Warnings = append(res.Warnings, "the between-run spread is unknown: the interval holds only the sampling noise of the requests; measure the spread with `slogate calibrate` or repeats")
	}
	return res, nz
}

// combined sets the point, the interval and the verdict from a log ratio d with sampling
// variance within and total degrees of freedom df (+Inf: normal), nz's parts already
// set.
func combined(res Result, d, within, df float64, nz *Noise) Result {
	pol := res.Policy
	total := math.Sqrt(within + nz.Between*nz.Between)
	nz.Total = total
	p := (1 + pol.Confidence) / 2
	q := normalQuantile(p)
	if !math.IsInf(df, 1) {
		q = tQuantile(p, df)
		nz.DF = df
	}
	nz.Quantile = q
	res.Point = math.Exp(d)
	res.Lo, res.Hi = math.Exp(d-q*total), math.Exp(d+q*total)
	res.Resolution = math.Exp(q*total) - 1
	res.Verdict = judge(pol.Direction, pol.Tolerance, res.Point, res.Lo, res.Hi)
	if pol.Tolerance < res.Resolution {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"tolerance %s is narrower than the ±%.1f%% the measured noise supports (between runs ±%.1f%%, within ±%.1f%%): "+FlapsOnNoise,
			fmtPct(pol.Tolerance), 100*res.Resolution, 100*(math.Exp(q*nz.Between)-1), 100*(math.Exp(q*math.Sqrt(within))-1)))
	}
	if total == 0 {
		res.Warnings = append(res.Warnings, "the interval has no width: neither the requests nor the runs compared moved this metric")
	}
	return res
}

// Detectable is the smallest change, as a fraction, that a comparison of this noise
// detects (fails) with probability power at tolerance t: ln(1+d) = ln(1+t) + (q + z)·sd.
func Detectable(nz Noise, tolerance, power float64) float64 {
	if nz.Total == 0 && nz.Quantile == 0 {
		return math.NaN()
	}
	return math.Exp(math.Log1p(tolerance)+(nz.Quantile+normalQuantile(power))*nz.Total) - 1
}

// logWithin is a run's value and the standard deviation of ln(value) over bootstrap
// resamples of its requests, estimated from their interquartile range (IQR/1.349), which
// a heavy tail does not inflate and which a few hundred resamples already pin down; from
// the half-width of their percentile interval where the IQR is 0 (a statistic with few
// distinct values).
func logWithin(m Metric, pol Policy, stream uint64) (v, sd float64, why string) {
	if k, ok := m.(*kept); ok {
		return k.within(pol, stream)
	}
	return resampledWithin(m, pol, stream)
}

// Keep returns m with its resampled spread kept: a statistic compared several times
// under one policy (a job judged again on the same blocks) is resampled once for each
// policy and stream. Safe for concurrent use; m must not change.
func Keep(m Metric) Metric {
	if _, ok := m.(*kept); ok {
		return m
	}
	return &kept{Metric: m, got: map[keptKey]keptWithin{}}
}

type kept struct {
	Metric
	mu  sync.Mutex
	got map[keptKey]keptWithin
}

// keptKey is everything of a policy that resampledWithin reads.
type keptKey struct {
	seed, stream uint64
	resamples    int
	confidence   float64
}

type keptWithin struct {
	v, sd float64
	why   string
}

func (k *kept) within(pol Policy, stream uint64) (float64, float64, string) {
	key := keptKey{pol.Seed, stream, pol.Resamples, pol.Confidence}
	k.mu.Lock()
	defer k.mu.Unlock()
	if w, ok := k.got[key]; ok {
		return w.v, w.sd, w.why
	}
	var w keptWithin
	w.v, w.sd, w.why = resampledWithin(k.Metric, pol, stream)
	k.got[key] = w
	return w.v, w.sd, w.why
}

func resampledWithin(m Metric, pol Policy, stream uint64) (v, sd float64, why string) {
	if m.Len() == 0 {
		return 0, 0, "has no requests"
	}
	v = Value(m)
	if why := undefinedRatio(v, 1); why != "" {
		return 0, 0, "value: " + why
	}
	if v == 0 {
		return 0, 0, "value is 0: ratio undefined"
	}
	logs := make([]float64, pol.Resamples)
	w := make([]int32, m.Len())
	r := newResampler(pol.Seed, stream)
	for i := range logs {
		r.draw(w)
		x := m.Eval(w)
		if math.IsNaN(x) {
			return 0, 0, "a resample had no value: too few requests"
		}
		// A resample of 0 (no success drawn) has no log; it counts as far below.
		logs[i] = math.Log(max(x, v*1e-6))
	}
	q1, q3 := interval(logs, 0.5)
	if q3 > q1 {
		return v, (q3 - q1) / (2 * normalQuantile(0.75)), ""
	}
	return v, halfWidth(logs, pol.Confidence) / normalQuantile((1+pol.Confidence)/2), ""
}

func sampleSD(xs []float64) float64 {
	n := float64(len(xs))
	var s float64
	for _, x := range xs {
		s += x
	}
	mean := s / n
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / (n - 1))
}

// normalQuantile is the standard normal quantile of p.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// tQuantile is the quantile of p (> 0.5) of Student's t with df degrees of freedom (not
// necessarily whole), by bisection on its distribution function.
func tQuantile(p, df float64) float64 {
	if df > 1e6 {
		return normalQuantile(p)
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t distribution function at t ≥ 0: 1 − I_x(df/2, 1/2)/2 with
// x = df/(df + t²).
func tCDF(t, df float64) float64 {
	return 1 - 0.5*regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its continued
// fraction (Lentz's method).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, 1-x)
	}
	const tiny = 1e-300
	f, c, d := 1.0, 1.0, 0.0
	for i := 0; i <= 300; i++ {
		m := float64(i / 2)
		var num float64
		switch {
		case i == 0:
			num = 1
		case i%2 == 0:
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		default:
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		cd := c * d
		f *= cd
		if math.Abs(1-cd) < 1e-12 {
			break
		}
	}
	return front * (f - 1) / a
}
