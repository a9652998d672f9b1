package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Defaults of a Policy.
const (
	DefaultResamples  = 2000
	MinResamples      = 2000
	DefaultConfidence = 0.95
)

// Direction says which way a metric gets better.
type Direction int

// The zero Direction is unset, so that a rule that forgot its direction is refused rather
// than read as one of the two.
const (
	LowerIsBetter Direction = iota + 1
	HigherIsBetter
)

func (d Direction) String() string {
	switch d {
	case LowerIsBetter:
		return "lower"
	case HigherIsBetter:
		return "higher"
	}
	return "unset"
}

// FlapsOnNoise ends the warning about a tolerance narrower than the resolution of its
// comparison: a caller that judges by another interval replaces it by its own.
const FlapsOnNoise = "it will flap on noise"

// Verdict is the outcome of one comparison or check.
type Verdict string

// Verdicts, DESIGN §5.
const (
	// Pass: shown to be within the tolerance: the whole interval lies on the good side
	// of the tolerance's edge. A rule without a finite interval never passes.
	Pass Verdict = "pass"
	// Warn: something about the data limits what the rule says (a value missing on one
	// side, too few trials); never a rule left undecided, which is Inconclusive.
	Warn Verdict = "warn"
	// Inconclusive: the rule was not decided: its interval straddles the tolerance's
	// edge (or is unbounded), so neither a pass nor a fail was shown.
	Inconclusive Verdict = "inconclusive"
	// Fail: the whole interval is worse than the tolerance.
	Fail Verdict = "fail"
	// Improved: the whole interval is better than the tolerance; a hint to refresh the
	// baseline.
	Improved Verdict = "improved"
	// Incomparable: the ratio is undefined (a zero or missing baseline value) or the
	// policy is invalid; Warnings say why.
	Incomparable Verdict = "incomparable"
)

// Policy is how one metric is compared. New knobs go here, not into new arguments.
type Policy struct {
	Direction Direction
	// Tolerance is a fraction: 0.10 lets a lower-is-better metric grow by 10% before it
	// counts as worse.
	Tolerance float64
	// Resamples is the number of bootstrap resamples; 0 means DefaultResamples. Fewer
	// than MinResamples are raised to it unless AllowFewResamples is set.
	Resamples int
	// AllowFewResamples lets tests trade precision of the interval's ends for speed.
	// The gate never sets it.
	AllowFewResamples bool
	// Confidence of the interval; 0 means DefaultConfidence.
	Confidence float64
	// Seed makes the resamples, and so the Result, reproducible. Zero is a seed like any
	// other.
	Seed uint64
}

// effective fills in defaults and checks the policy: notes say what was changed, errs
// what is wrong (all of it at once).
func (p Policy) effective() (_ Policy, notes, errs []string) {
	if p.Direction != LowerIsBetter && p.Direction != HigherIsBetter {
		errs = append(errs, fmt.Sprintf("policy: direction is %s, want lower or higher", p.Direction))
	}
	if !(p.Tolerance >= 0) || math.IsInf(p.Tolerance, 0) {
		errs = append(errs, fmt.Sprintf("policy: tolerance %v is not a fraction ≥ 0", p.Tolerance))
	}
	switch {
	case p.Resamples < 0:
		errs = append(errs, fmt.Sprintf("policy: resamples %d < 0", p.Resamples))
	case p.Resamples == 0:
		p.Resamples = DefaultResamples
	case p.Resamples < MinResamples && !p.AllowFewResamples:
		notes = append(notes, fmt.Sprintf("resamples raised from %d to the minimum %d", p.Resamples, MinResamples))
		p.Resamples = MinResamples
	}
	if p.Confidence == 0 {
		p.Confidence = DefaultConfidence
	}
	if !(p.Confidence > 0 && p.Confidence < 1) {
		errs = append(errs, fmt.Sprintf("policy: confidence %v outside (0, 1)", p.Confidence))
	}
	return p, notes, errs
}

// Result is the comparison of one metric between a baseline run and a candidate run.
type Result struct {
	// Policy is the policy applied, defaults filled in.
	Policy Policy
	// Baseline and Candidate are the metric's values on the two runs.
	Baseline, Candidate float64
	// Point is Candidate/Baseline; Lo and Hi bound its bootstrap interval (equal to Point
	// for exact comparisons).
	Point, Lo, Hi float64
	// Resolution is the interval's expected half-width as a fraction (0.061: ±6.1%): how
	// small a change these sample sizes can tell from noise; √(b² + c²) where b and c are
	// the half-widths of each run's own bootstrap interval relative to its value. 0 for
	// exact comparisons.
	Resolution float64
	// Verdict; when Incomparable, whatever is undefined is 0 (a Result never holds NaN
	// or an infinity, so it encodes as JSON) and Warnings say why.
	Verdict Verdict
	// Warnings are data, not failures: too few requests, a tolerance narrower than the
	// resolution, why a ratio is undefined.
	Warnings []string
}

// Compare compares a candidate run with a baseline on one metric (DESIGN §5).
//
// Point is the ratio of the two runs' values. The interval is the percentile bootstrap of
// that ratio: each resample draws the baseline's requests and, independently, the
// candidate's, with replacement, recomputes the metric on both and takes the ratio. The
// verdict, for a lower-is-better metric with tolerance t (mirrored for higher-is-better):
// fail when Lo > 1+t, warn when only Point > 1+t, improved when Hi < 1−t, pass otherwise.
//
// Same inputs and seed give an identical Result.
func Compare(base, cand Metric, pol Policy) Result {
	pol, notes, errs := pol.effective()
	res := Result{Policy: pol, Warnings: notes}
	if len(errs) > 0 {
		res.Warnings = append(res.Warnings, errs[:len(errs)-1]...)
		return res.incomparable(errs[len(errs)-1])
	}
	for _, w := range base.Warnings() {
		res.Warnings = append(res.Warnings, "baseline: "+w)
	}
	for _, w := range cand.Warnings() {
		res.Warnings = append(res.Warnings, "candidate: "+w)
	}
	if base.Len() == 0 || cand.Len() == 0 {
		return res.incomparable(emptyReason(base.Len(), cand.Len()))
	}
	res.Baseline, res.Candidate = Value(base), Value(cand)
	if why := undefinedRatio(res.Baseline, res.Candidate); why != "" {
		return res.incomparable(why)
	}
	res.Point = res.Candidate / res.Baseline

	b := pol.Resamples
	ratios := make([]float64, b)
	selfBase := make([]float64, b) // resampled baseline / baseline
	selfCand := make([]float64, b)
	wb, wc := make([]int32, base.Len()), make([]int32, cand.Len())
	rb, rc := newResampler(pol.Seed, streamBase), newResampler(pol.Seed, streamCand)
	var noValue, zeroBase int
	for i := range b {
		rb.draw(wb)
		rc.draw(wc)
		x, y := base.Eval(wb), cand.Eval(wc)
		selfBase[i], selfCand[i] = x/res.Baseline, y/res.Candidate
		switch {
		case math.IsNaN(x) || math.IsNaN(y):
			noValue++
			ratios[i] = math.NaN()
		case x == 0 && y == 0:
			// Both sides resampled to nothing (no errors on either side): no change.
			zeroBase++
			ratios[i] = 1
		case x == 0:
			zeroBase++
			ratios[i] = math.Inf(1)
		default:
			ratios[i] = y / x
		}
	}
	if noValue > 0 {
		return res.incomparable(fmt.Sprintf("%d of %d resamples had no value: too few requests", noValue, b))
	}
	if zeroBase > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("baseline resampled to 0 in %d of %d resamples", zeroBase, b))
	}
	res.Lo, res.Hi = interval(ratios, pol.Confidence)
	if math.IsInf(res.Hi, 0) {
		return res.incomparable("the interval's upper end is undefined: too few non-zero baseline requests")
	}
	// Each side's own relative spread, combined as for independent samples. A candidate
	// value of 0 (no errors at all) has no relative spread; take it to be the baseline's.
	hb := halfWidth(selfBase, pol.Confidence)
	hc := hb
	if res.Candidate != 0 {
		hc = halfWidth(selfCand, pol.Confidence)
	}
	res.Resolution = math.Hypot(hb, hc)
	res.Verdict = judge(pol.Direction, pol.Tolerance, res.Point, res.Lo, res.Hi)
	if pol.Tolerance < res.Resolution {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"tolerance %s is narrower than this comparison's resolution ±%.1f%%: "+FlapsOnNoise,
			fmtPct(pol.Tolerance), 100*res.Resolution))
	}
	return res
}

// CompareExact compares a deterministic metric (KV-limited concurrency), which has no
// sampling noise, by the tolerance alone: fail when the ratio is worse than the
// tolerance, improved when it is better beyond it, pass otherwise.
func CompareExact(base, cand float64, pol Policy) Result {
	pol, _, errs := pol.effective()
	pol.Resamples, pol.AllowFewResamples = 0, false
	res := Result{Policy: pol, Baseline: base, Candidate: cand}
	if len(errs) > 0 {
		res.Warnings = append(res.Warnings, errs[:len(errs)-1]...)
		return res.incomparable(errs[len(errs)-1])
	}
	if why := undefinedRatio(base, cand); why != "" {
		return res.incomparable(why)
	}
	res.Point = cand / base
	res.Lo, res.Hi = res.Point, res.Point
	res.Verdict = judge(pol.Direction, pol.Tolerance, res.Point, res.Lo, res.Hi)
	return res
}

// Check is an absolute check of one value against bounds (SLO attainment ≥ target, error
// rate ≤ max); it applies on its own, whatever the baseline says.
type Check struct {
	Value    float64
	Min, Max *float64
	Verdict  Verdict // Pass, Fail or Incomparable
	Warnings []string
}

// CheckAbsolute passes when min ≤ value ≤ max (a nil bound is absent; the bounds
// themselves pass, since "error rate ≤ 0.5%" admits 0.5%).
func CheckAbsolute(value float64, min, max *float64) Check {
	c := Check{Value: value, Min: min, Max: max, Verdict: Pass}
	switch {
	case min == nil && max == nil:
		c.Verdict = Incomparable
		c.Warnings = append(c.Warnings, "no bound to check against")
	case min != nil && max != nil && *min > *max:
		c.Verdict = Incomparable
		c.Warnings = append(c.Warnings, fmt.Sprintf("min %v > max %v", *min, *max))
	case math.IsNaN(value):
		c.Value = 0
		c.Verdict = Incomparable
		c.Warnings = append(c.Warnings, "no value to check")
	case min != nil && value < *min, max != nil && value > *max:
		c.Verdict = Fail
	}
	return c
}

// Resolution is the expected half-width, as a fraction, of the ratio's interval when m's
// run is compared with another run of the same size and spread: what the gate can tell
// from noise before anything is compared ("with 500 requests the p99 is about ±6%").
//
// It bootstraps m's own relative spread, m*/m, takes the half-width h of that interval
// and returns √2·h: for two independent runs the variances of the log values add, and
// for the small spreads that matter here the log of a ratio is close to the ratio minus
// one. It assumes the other run resembles this one; Compare measures both sides instead.
// NaN when m has no value or a resample has none.
func Resolution(m Metric, resamples int, conf float64, seed uint64) float64 {
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	if conf == 0 {
		conf = DefaultConfidence
	}
	v := Value(m)
	if m.Len() == 0 || math.IsNaN(v) || v == 0 {
		return math.NaN()
	}
	self := make([]float64, resamples)
	w := make([]int32, m.Len())
	r := newResampler(seed, streamBase)
	for i := range self {
		r.draw(w)
		self[i] = m.Eval(w) / v
		if math.IsNaN(self[i]) {
			return math.NaN()
		}
	}
	return math.Sqrt2 * halfWidth(self, conf)
}

// Judge applies DESIGN §5's verdict rule to a ratio and its interval.
func Judge(d Direction, t, point, lo, hi float64) Verdict { return judge(d, t, point, lo, hi) }

// judge applies DESIGN §5's verdict rule to a ratio and its interval [lo, hi]: fail when
// the whole interval is worse than the tolerance, improved when it is wholly better than
// the tolerance the other way, pass when it lies wholly within the worse side's edge, and
// inconclusive otherwise: an interval that straddles the edge, or an unbounded or
// undefined one (a sequence that excludes nothing), decided nothing, wherever its point
// lies. (Comparisons with NaN are false: an undefined bound never decides.)
func judge(d Direction, t, point, lo, hi float64) Verdict {
	if d == HigherIsBetter {
		switch {
		case hi < 1-t:
			return Fail
		case lo > 1+t:
			return Improved
		case lo >= 1-t:
			return Pass
		}
		return Inconclusive
	}
	switch {
	case lo > 1+t:
		return Fail
	case hi < 1-t:
		return Improved
	case hi <= 1+t:
		return Pass
	}
	return Inconclusive
}

// interval is the percentile interval of xs at confidence conf: as many resamples lie
// below Lo as above Hi. xs is sorted in place.
func interval(xs []float64, conf float64) (lo, hi float64) {
	slices.Sort(xs)
	k := int(math.Floor((1 - conf) / 2 * float64(len(xs))))
	k = min(k, (len(xs)-1)/2)
	return xs[k], xs[len(xs)-1-k]
}

// halfWidth is half the width of the percentile interval of xs.
func halfWidth(xs []float64, conf float64) float64 {
	lo, hi := interval(xs, conf)
	return (hi - lo) / 2
}

func undefinedRatio(base, cand float64) string {
	switch {
	case math.IsNaN(base):
		return "baseline has no value: ratio undefined"
	case math.IsNaN(cand):
		return "candidate has no value: ratio undefined"
	case math.IsInf(base, 0) || math.IsInf(cand, 0):
		return "infinite value: ratio undefined"
	case base == 0:
		return "baseline value is 0: ratio undefined"
	case base < 0 || cand < 0:
		return "negative value: ratio undefined"
	}
	return ""
}

func emptyReason(nb, nc int) string {
	if nb == 0 {
		return "baseline has no requests"
	}
	return "candidate has no requests"
}

// incomparable zeroes what is undefined, so that a Result is always free of NaN and
// infinities (which encoding/json refuses); the warning says why.
func (r Result) incomparable(why string) Result {
	r.Verdict = Incomparable
	r.Point, r.Lo, r.Hi, r.Resolution = 0, 0, 0, 0
	r.Baseline, r.Candidate = finiteOr0(r.Baseline), finiteOr0(r.Candidate)
	r.Warnings = append(r.Warnings, why)
	return r
}

func finiteOr0(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// fmtPct writes 0.02 as "2%" and 0.025 as "2.5%".
func fmtPct(x float64) string {
	return strconv.FormatFloat(math.Round(x*100*1e6)/1e6, 'g', -1, 64) + "%"
}
