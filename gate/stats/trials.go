package stats

import (
	"fmt"
	"math"
	"slices"
)

// TrialsResult compares repeated trials (`repeats: N`) of a baseline and a candidate on
// one metric.
type TrialsResult struct {
	// Policy is the policy applied, defaults filled in (Resamples is unused).
	Policy Policy
	// Baseline and Candidate are the per-trial values, in the order given.
	Baseline, Candidate []float64
	// BaselineMedian and CandidateMedian are the medians of the per-trial values.
	BaselineMedian, CandidateMedian float64
	// Point is CandidateMedian/BaselineMedian.
	Point float64
	// Lo and Hi are the smallest and the largest ratio of a candidate trial to a baseline
	// trial: the trial spread as a ratio (min candidate/max baseline, max candidate/min
	// baseline).
	Lo, Hi float64
	// Chance is the probability that every candidate trial lands beyond every baseline
	// trial, in one given direction, when nothing changed: 1/C(n+m, n).
	Chance  float64
	Verdict Verdict
	// Warnings are data, not failures.
	Warnings []string
}

// CompareTrials compares per-trial values of repeated runs by their spread.
//
// The rule: the candidate fails only when every candidate trial is worse than every
// baseline trial by more than the tolerance (for lower-is-better, Lo = min cand / max
// base > 1+t); improved is the mirror; warn when only the ratio of medians is beyond the
// tolerance; pass otherwise. That is Compare's rule with the interval replaced by the
// range of pairwise trial ratios, so it reads the same way.
//
// Why this rule: trials differ by more than their requests do (a GPU's clocks, the
// neighbours on a host, the engine's warm state), so the spread between trials is the
// noise to beat, and a few trials cannot estimate that spread's shape. Complete
// separation needs no shape: when nothing changed and the trials are exchangeable, it
// happens by chance with probability 1/C(n+m, n) (1 in 20 for 3 against 3, 1 in 252 for
// 5 against 5), and the tolerance only makes it rarer. When that chance is above
// 1−Confidence, a separation proves nothing: fail is lowered to warn and improved to
// pass, with a warning.
func CompareTrials(base, cand []Metric, pol Policy) TrialsResult {
	pol, _, errs := pol.effective()
	pol.Resamples, pol.AllowFewResamples = 0, false
	res := TrialsResult{Policy: pol}
	if len(errs) > 0 {
		res.Verdict = Incomparable
		res.Warnings = append(res.Warnings, errs...)
		return res
	}
	res.Baseline = trialValues(base)
	res.Candidate = trialValues(cand)
	if len(base) == 0 || len(cand) == 0 {
		return res.incomparable(fmt.Sprintf("%d baseline and %d candidate trials: nothing to compare", len(base), len(cand)))
	}
	for i, v := range res.Baseline {
		if why := undefinedRatio(v, 1); why != "" {
			return res.incomparable(fmt.Sprintf("baseline trial %d: %s", i+1, why))
		}
	}
	for i, v := range res.Candidate {
		if why := undefinedRatio(1, v); why != "" {
			return res.incomparable(fmt.Sprintf("candidate trial %d: %s", i+1, why))
		}
	}
	res.BaselineMedian, res.CandidateMedian = median(res.Baseline), median(res.Candidate)
	res.Point = res.CandidateMedian / res.BaselineMedian
	res.Lo = slices.Min(res.Candidate) / slices.Max(res.Baseline)
	res.Hi = slices.Max(res.Candidate) / slices.Min(res.Baseline)
	res.Verdict = judge(pol.Direction, pol.Tolerance, res.Point, res.Lo, res.Hi)

	n, m := len(base), len(cand)
	res.Chance = 1 / binomial(n+m, n)
	alpha := 1 - pol.Confidence
	if res.Chance > alpha {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"with %d baseline and %d candidate trials, every candidate trial lands beyond every baseline trial by chance 1 time in %.0f: too few trials to fail or improve at %s confidence (%d per side needed)",
			n, m, 1/res.Chance, fmtPct(pol.Confidence), trialsNeeded(alpha)))
		switch res.Verdict {
		case Fail:
			res.Verdict = Inconclusive
		case Improved:
			res.Verdict = Pass
		}
	}
	return res
}

func trialValues(ms []Metric) []float64 {
	vs := make([]float64, len(ms))
	for i, m := range ms {
		vs[i] = Value(m)
	}
	return vs
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// binomial is C(n, k) as a float (exact for the trial counts a gate runs).
func binomial(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// trialsNeeded is the smallest equal number of trials per side whose chance of complete
// separation is at most alpha.
func trialsNeeded(alpha float64) int {
	n := 1
	for 1/binomial(2*n, n) > alpha {
		n++
	}
	return n
}

func (r TrialsResult) incomparable(why string) TrialsResult {
	r.Verdict = Incomparable
	r.Point, r.Lo, r.Hi, r.Chance = 0, 0, 0, 0
	r.BaselineMedian, r.CandidateMedian = 0, 0
	for i := range r.Baseline {
		r.Baseline[i] = finiteOr0(r.Baseline[i])
	}
	for i := range r.Candidate {
		r.Candidate[i] = finiteOr0(r.Candidate[i])
	}
	r.Warnings = append(r.Warnings, why)
	return r
}
