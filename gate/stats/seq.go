package stats

import "math"

// A fixed-size interval is valid only when the number of observations was fixed before
// any was seen. A job that stops as soon as its answer looks known, and looks after
// every block, would with such intervals stop on a chance excursion far more often than
// the interval's confidence says. A confidence sequence holds at every look at once:
// the chance that the true value ever leaves it, however often and whenever it is
// looked at, is at most α.
//
// The sequence here is a t-type confidence sequence for the mean of independent normal
// observations of unknown variance: the scale-invariant test martingale of H. Wang and
// A. Ramdas, "Anytime-valid t-tests and confidence sequences for Gaussian means with
// unknown variance" (arXiv:2310.03722), which swaps the flat mixture over the mean in
// T. L. Lai's construction ("On confidence sequences", Annals of Statistics 4(2),
// 265–280, 1976) for a Gaussian one, and so is a true martingale in the filtration of
// the scale-invariant ratios. For a value μ0, with y_i = x_i − μ0, the
// likelihood ratio of the scale-invariant part of the data (ratios y_i/y_1) under a
// standardized effect θ = (μ − μ0)/σ against θ = 0, mixed over θ ~ N(0, τ²), is
//
//	M_n = (1 + nτ²)^(−1/2) · ( Σy² / (Σy² − (Σy)²/(n + τ⁻²)) )^(n/2)
//
// a nonnegative martingale of mean 1 when μ = μ0, so by Ville's inequality
// P(∃n: M_n ≥ 1/α) ≤ α. The sequence is every μ0 with M_n < 1/α: solved for μ0 it is
// x̄ ± h with, for SS = Σ(x − x̄)², ρ = nτ²/(1 + nτ²) and K = ((1 + nτ²)^(1/2)/α)^(2/n),
//
//	h² = (K − 1)·SS / (n·(1 − K·(1 − ρ)))
//
// and the whole line while 1 − K·(1 − ρ) ≤ 0 (too few observations to exclude
// anything). The variance needs no estimate from elsewhere: the sequence is wide while
// the observations are few, and narrows as they agree.

// SeqTau is the mixture's scale τ on the standardized effect (μ − μ0)/σ. It sets where
// the sequence is narrowest: τ = 1.5 makes it so for about 6 to 10 observations, where
// an A/B job of at most 16 to 24 blocks (8 to 12 pairs) decides (a τ of 1 or 2 widens
// it there by at most 3%).
const SeqTau = 1.5

// ConfidenceSequence is that confidence sequence for the mean of xs at level conf
// (0.95: the mean stays inside at every n with probability ≥ 95%), the observations
// assumed independent and normal with a common, unknown variance. It returns the
// sample mean and the half-width h; h is +Inf while xs cannot exclude any value (fewer
// than four observations at 95%) and 0 when they all agree exactly.
func ConfidenceSequence(xs []float64, conf float64) (mean, h float64) {
	n := float64(len(xs))
	if len(xs) == 0 {
		return math.NaN(), math.Inf(1)
	}
	for _, x := range xs {
		mean += x
	}
	mean /= n
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	alpha := 1 - conf
	t2 := SeqTau * SeqTau
	rho := n * t2 / (1 + n*t2)
	k := math.Pow(math.Sqrt(1+n*t2)/alpha, 2/n)
	den := 1 - k*(1-rho)
	if den <= 0 {
		return mean, math.Inf(1)
	}
	return mean, math.Sqrt((k - 1) * ss / (n * den))
}

// SequenceHalfWidth is the half-width of the sequence at level conf after n
// observations whose sample standard deviation is sd: what ConfidenceSequence would give
// them. +Inf while n observations cannot exclude anything.
func SequenceHalfWidth(n int, sd, conf float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	xs := make([]float64, n)
	// Two values ±a with the rest at 0 have the sample standard deviation sd when
	// 2a² = sd²·(n − 1).
	a := sd * math.Sqrt(float64(n-1)/2)
	xs[0], xs[1] = a, -a
	_, h := ConfidenceSequence(xs, conf)
	return h
}

// FixedHalfWidth is the half-width of the fixed Student's t interval at level conf for
// the mean of n observations whose sample standard deviation is sd: what a job judged
// once, at n, would give. +Inf for fewer than two.
func FixedHalfWidth(n int, sd, conf float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	return tQuantile(1-(1-conf)/2, float64(n-1)) * sd / math.Sqrt(float64(n))
}

// TQuantile is Student's t quantile of p (> 0.5) at df degrees of freedom; the normal
// one for df +Inf.
func TQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return normalQuantile(p)
	}
	return tQuantile(p, df)
}

// NormalQuantile is the standard normal quantile of p.
func NormalQuantile(p float64) float64 { return normalQuantile(p) }

// Decision is what a look at a sequence of observations can say about one rule.
type Decision string

// Decisions of Decide.
const (
	// Undecided: the sequence still reaches more than one of the verdicts' regions.
	Undecided Decision = ""
	// DecidedFail: the whole sequence is worse than the tolerance.
	DecidedFail Decision = "fail"
	// DecidedPass: the whole sequence lies within the tolerance on both sides: neither
	// a regression nor an improvement beyond it, at the sequence's confidence.
	DecidedPass Decision = "pass"
	// DecidedImproved: the whole sequence is better than the tolerance.
	DecidedImproved Decision = "improved"
)

// Decide is a look at a rule's confidence sequence for a ratio, [lo, hi]: decided when
// it lies wholly within one region of the verdict rule (Judge) that the ratio's
// interval settles: beyond the tolerance on the worse side (fail), within it on both
// sides (pass), or beyond it on the better side (improved). A sequence that reaches two
// regions is undecided, since more observations could still change the verdict: a
// faster candidate is not decided pass while an improvement is within its sequence,
// lest a job that stops early say "pass" where the same job at its maximum says
// "improved". (The rule's warn, a point estimate beyond the tolerance with an interval
// that reaches within it, is a verdict no interval settles.)
func Decide(d Direction, tolerance, lo, hi float64) Decision {
	worse, better := lo > 1+tolerance, hi < 1-tolerance
	if d == HigherIsBetter {
		worse, better = hi < 1-tolerance, lo > 1+tolerance
	}
	switch {
	case worse:
		return DecidedFail
	case better:
		return DecidedImproved
	case lo >= 1-tolerance && hi <= 1+tolerance:
		return DecidedPass
	}
	return Undecided
}

// PairLogRatios are the observations the sequence of an A/B job is built on: the
// log-ratio candidate/baseline of each complete pair of consecutive blocks (blocks 1–2,
// 3–4, ...: AB, BA, AB, BA in the ABBA layout). Each pair meets one moment of the job,
// so a drift slow against two blocks cancels within it, and a linear drift adds +γ to
// the AB pairs and −γ to the BA pairs: nothing to their mean over an even number of
// pairs, γ/n over an odd number n, and to their spread, which widens the sequence (the
// safe side). Values must be positive; ok is false when one is not or a pair holds two
// blocks of one side.
func PairLogRatios(blocks []Block) (d []float64, ok bool) {
	for i := 0; i+1 < len(blocks); i += 2 {
		a, b := blocks[i], blocks[i+1]
		if a.Candidate == b.Candidate {
			return nil, false
		}
		if a.Candidate {
			a, b = b, a
		}
		va, vb := Value(a.Metric), Value(b.Metric)
		if !(va > 0) || !(vb > 0) || math.IsInf(va, 0) || math.IsInf(vb, 0) {
			return nil, false
		}
		d = append(d, math.Log(vb/va))
	}
	return d, true
}

// SequentialBlocks is the confidence sequence of an A/B job's ratio candidate/baseline
// after the blocks seen so far: the geometric mean of the pairs' ratios and its
// sequence at pol's confidence, with the decision it allows at pol's tolerance. ok is
// false when the blocks give no pairs of positive values.
func SequentialBlocks(blocks []Block, pol Policy) (point, lo, hi float64, dec Decision, ok bool) {
	return SequentialBlocksShared(blocks, pol, Shared{})
}

// Shared is a part of an A/B job's log-ratio that every block of the job shares, so that
// the blocks' spread cannot see it however many there are: the difference between the
// offsets that two engines, each started once for the whole job and swapped between
// blocks, drew at their start. Var is its variance (on the log scale), from elsewhere (a
// calibration's spread between engine starts); DF the degrees of freedom of that
// estimate (0: taken as known).
type Shared struct {
	Var, DF float64
}

// quantile is the two-sided quantile of the shared part at level 1 − a: Student's t on
// DF degrees of freedom, the normal one when DF is 0.
func (s Shared) quantile(a float64) float64 {
	if s.DF > 0 {
		return tQuantile(1-a/2, s.DF)
	}
	return normalQuantile(1 - a/2)
}

// HalfWidth is the half-width at level conf of an interval for a ratio whose pairs
// share the part s, where own(level) is the pairs' own half-width at a level: the two
// added, each at half of the error rate (a union bound); own(conf) alone when s holds
// no variance.
func (s Shared) HalfWidth(conf float64, own func(level float64) float64) float64 {
	if s.Var <= 0 {
		return own(conf)
	}
	a := (1 - conf) / 2
	return own(1-a) + s.quantile(a)*math.Sqrt(s.Var)
}

// SequentialBlocksShared is SequentialBlocks for a job whose pairs share a part sh. The
// pairs' mean then estimates the ratio plus the shared part, and their sequence covers
// that sum at every look. The shared part is drawn once, before the first block, so a
// fixed interval for it holds at every look as well; the interval for the ratio is the
// sum of the two half-widths, each at half of the error rate (1 − confidence): the
// chance that either misses is at most their sum (a union bound), however often the
// job looks. With sh.Var 0 it is SequentialBlocks.
func SequentialBlocksShared(blocks []Block, pol Policy, sh Shared) (point, lo, hi float64, dec Decision, ok bool) {
	pol, _, errs := pol.effective()
	if len(errs) > 0 {
		return 0, 0, 0, Undecided, false
	}
	d, ok := PairLogRatios(blocks)
	if !ok || len(d) == 0 {
		return 0, 0, 0, Undecided, false
	}
	var m float64
	h := sh.HalfWidth(pol.Confidence, func(level float64) (h float64) {
		m, h = ConfidenceSequence(d, level)
		return h
	})
	point, lo, hi = math.Exp(m), math.Exp(m-h), math.Exp(m+h)
	return point, lo, hi, Decide(pol.Direction, pol.Tolerance, lo, hi), true
}

// KnownSDSequence is the half-width of a confidence sequence for the mean of n
// independent normal observations whose standard deviation sd is known, at level conf:
// Robbins' normal mixture (the likelihood ratio of a mean shift, mixed over a
// standardized shift θ ~ N(0, SeqTau²), is the nonnegative martingale
// (ρ/(n+ρ))^½·exp(S²/(2σ²(n+ρ))) with ρ = SeqTau⁻² and S the sum of the deviations;
// S. R. Howard, A. Ramdas, J. McAuliffe and J. Sekhon, "Time-uniform, nonparametric,
// nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021, the normal
// mixture boundary), so that by Ville's inequality the mean leaves
//
//	x̄ ± (σ/n)·√((n + ρ)·(2·ln(1/α) + ln((n + ρ)/ρ)))
//
// at some n with probability at most α. Unlike ConfidenceSequence it excludes values
// from the first observation on: the variance is not estimated from the observations.
func KnownSDSequence(n int, sd, conf float64) float64 {
	if n < 1 {
		return math.Inf(1)
	}
	rho := 1 / (SeqTau * SeqTau)
	nf := float64(n)
	return sd / nf * math.Sqrt((nf+rho)*(2*math.Log(1/(1-conf))+math.Log((nf+rho)/rho)))
}

// RepeatsSequence is the confidence sequence of a candidate's repeated runs against a
// committed baseline whose between-run spread sp a calibration measured: after the
// runs so far (candLogs, the log value of each), the ratio of the candidate's mean to
// the baseline's, its sequence at pol's confidence, and the decision it allows at pol's
// tolerance. ok is false when a value is not finite or the spread is unknown.
//
// A run's log value is its system's level plus the run's offset and sampling noise, of
// standard deviation σ = sp.RunSD (the calibration's spread of whole runs, their
// sampling noise included), taken as known. The baseline side's mean was fixed before
// the first candidate run; its error e_b, of variance v = (the between-run part)/runs
// plus its sampling variance, is shared by every look. For a ratio δ0, the deviations
// y_i = x_i − m_b − δ0 of the candidate's runs are then, under δ0, jointly normal with
// covariance σ²·I + v·J (J all ones): a fully specified law. Its likelihood ratio
// against the same law with a mean θ ~ N(0, τ²σ²) added to every run (τ = SeqTau),
//
//	M_n = ((σ² + n·v)/(σ² + n·w))^½ · exp(S²/(2σ²) · (w/(σ² + n·w) − v/(σ² + n·v)))
//
// with w = v + τ²σ² and S = Σy_i, is a nonnegative martingale of mean 1 under δ0, so by
// Ville's inequality δ0 leaves {M_n < 1/α} at some look with probability at most α.
// With v = 0 it is KnownSDSequence; unlike ConfidenceSequence it excludes values from
// the first run on, since the variance is not estimated from the runs.
//
// The part of the spread that runs of one engine start share (Spread.SharedSD) is
// counted once per baseline start in v, and, when the candidate's runs did not each
// have their own start (candStarts < their number), moved from σ² into v: every look
// then shares one start offset, which more runs do not average out. (Runs spread over
// a few starts are so taken as one: the safe side.)
func RepeatsSequence(base Side, candLogs []float64, candStarts int, sp Spread, pol Policy) (point, lo, hi float64, dec Decision, ok bool) {
	pol, _, errs := pol.effective()
	if len(errs) > 0 || !sp.Known() || len(candLogs) == 0 || base.Runs == 0 {
		return 0, 0, 0, Undecided, false
	}
	var m float64
	for _, x := range candLogs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, 0, 0, Undecided, false
		}
		m += x
	}
	m /= float64(len(candLogs))
	own, shared := sp.parts()
	v := own/float64(base.Runs) + shared/base.starts() + base.Within
	s2 := sp.RunSD * sp.RunSD
	if candStarts < len(candLogs) {
		v += shared
		s2 -= shared
	}
	h := SharedSequenceHalfWidth(len(candLogs), math.Sqrt(s2), v, pol.Confidence)
	d := m - base.LogMean
	point, lo, hi = math.Exp(d), math.Exp(d-h), math.Exp(d+h)
	return point, lo, hi, Decide(pol.Direction, pol.Tolerance, lo, hi), true
}

// SharedSequenceHalfWidth is the half-width of RepeatsSequence's sequence after n runs
// of known standard deviation sd whose deviations share a part of variance v, at level
// conf: the δ0 with M_n = 1/α. With sd 0 the runs carry only the shared part, drawn
// once, and its fixed normal interval holds at every look.
func SharedSequenceHalfWidth(n int, sd, v, conf float64) float64 {
	if n < 1 {
		return math.Inf(1)
	}
	alpha := 1 - conf
	s2, nf := sd*sd, float64(n)
	if s2 == 0 {
		return normalQuantile(1-alpha/2) * math.Sqrt(v)
	}
	w := v + SeqTau*SeqTau*s2
	gain := w/(s2+nf*w) - v/(s2+nf*v)
	bound := 2 * s2 * (math.Log(1/alpha) + 0.5*math.Log((s2+nf*w)/(s2+nf*v))) / gain
	return math.Sqrt(bound) / nf
}

// FutilityPower is the chance of a verdict beyond the tolerance at the maximum below
// which a futility look gives up on a rule (Futile): one in ten, the usual threshold
// of stochastic curtailment on conditional power (K. K. G. Lan, R. Simon and M.
// Halperin, "Stochastically curtailed tests in long-term clinical trials",
// Communications in Statistics C 1(3), 207–219, 1982).
const FutilityPower = 0.1

// Futile says whether a rule is unlikely to be shown beyond its tolerance, worse (a
// fail) or better (an improvement), by maxPairs pairs if the pairs go on as they have:
// the chance that the interval at the maximum lies wholly beyond the tolerance on
// either side (ConditionalPower, its half-width that of maxPairs pairs of the spread
// seen so far, the shared part sh added by Shared.HalfWidth, as SequentialBlocksShared
// adds it) is below FutilityPower. With final > 0 the job is judged at its maximum by
// a fixed interval at that level, and the half-width forecast is a fixed one (Student's
// t on the pairs) instead of the sequence's.
//
// Further blocks of an engine against itself on a host noisier than its tolerance
// could at best turn a pass undecided into a pass decided: not worth their GPU time. A
// regression (or an improvement) whose first pairs understate it is kept while its
// verdict is still within reach; a forecast from the present mean alone (is the edge
// within the maximum's half-width of it?) gives up whenever that chance is below about
// a half, and so on such a regression as often as not. Its answer is a forecast, not a
// decision: stopping on it never makes a fail more likely, since the sequence that
// judges the job holds at every look. hwMax is that half-width on the log scale and
// power that chance; ok is false when the blocks give fewer than three pairs of
// positive values.
func Futile(blocks []Block, pol Policy, sh Shared, maxPairs int, final float64) (futile bool, hwMax, power float64, ok bool) {
	pol, _, errs := pol.effective()
	if len(errs) > 0 {
		return false, 0, 0, false
	}
	d, ok := PairLogRatios(blocks)
	if !ok || len(d) < 3 {
		return false, 0, 0, false
	}
	var m float64
	for _, x := range d {
		m += x
	}
	m /= float64(len(d))
	sd := sampleSD(d)
	if final > 0 {
		hwMax = sh.HalfWidth(final, func(level float64) float64 { return FixedHalfWidth(maxPairs, sd, level) })
	} else {
		hwMax = sh.HalfWidth(pol.Confidence, func(level float64) float64 { return SequenceHalfWidth(maxPairs, sd, level) })
	}
	power = ConditionalPower(pol.Tolerance, m, sd, len(d), maxPairs, hwMax)
	return power < FutilityPower, hwMax, power, true
}

// ConditionalPower is the chance that a rule of tolerance tol is shown beyond it at
// the maximum of maxPairs pairs, an interval of half-width hwMax about the pairs' mean
// log-ratio lying wholly above ln(1 + tol) or wholly below ln(1 − tol) (a fail on one
// side, an improvement on the other, whichever the direction), when n pairs of mean m
// and sample standard deviation sd have been seen and the rest are drawn about m with
// that spread: the mean at the maximum is then normal about m with standard deviation
// sd·√(maxPairs − n)/maxPairs. The half-width is taken as forecast, its own spread
// ignored.
func ConditionalPower(tol, m, sd float64, n, maxPairs int, hwMax float64) float64 {
	// The margins by which the mean at the maximum must pass each edge.
	up, down := hwMax+math.Log1p(tol)-m, hwMax+m-math.Log1p(-tol)
	sdM := sd * math.Sqrt(max(float64(maxPairs-n), 0)) / float64(maxPairs)
	if !(sdM > 0) {
		if up < 0 || down < 0 {
			return 1
		}
		return 0
	}
	return normalCDF(-up/sdM) + normalCDF(-down/sdM)
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
