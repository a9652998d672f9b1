package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// sweepSides is what the max_sustainable_rps rule of one workload on one hardware
// compares: the candidate's sweep and the sweep baseline, either possibly absent.
type sweepSides struct {
	cfg      *workload.File
	w        *workload.Workload
	hw       string
	cand     *result.Sweep
	base     *result.Sweep
	basePath string
	// hashNow is the hash a sweep like cand would have if made from cfg now; "" when not
	// known.
	hashNow string
}

// sweepSidesOf looks up the sweep baseline when a rule needs it. A sweep baseline that
// cannot be used is a *FileError, as a run baseline is.
func sweepSidesOf(cfg *workload.File, w *workload.Workload, hw string, sw *result.Sweep, in Input, defs []metricDef) (sweepSides, error) {
	s := sweepSides{cfg: cfg, w: w, hw: hw, cand: sw, basePath: in.Store.SweepPath(w.Name, hw)}
	needed := false
	for _, d := range defs {
		needed = needed || d.kind == kindSweep
	}
	if !needed {
		return s, nil
	}
	base, _, err := in.Store.LookupSweep(w.Name, hw)
	if err != nil {
		return s, err
	}
	s.base = base
	if sw != nil && in.SweepHash != nil {
		s.hashNow = in.SweepHash(w, sw)
	}
	return s, nil
}

// evalSweep judges max_sustainable_rps: the candidate sweep's highest rate within the
// SLO against the sweep baseline's, by the tolerance alone (a deterministic comparison,
// as kv_concurrency), then honest about resolution. Bisection stops once the bracket is
// within the sweep's precision, so each value sits up to that fraction below the true
// capacity: a regression no larger than the two precisions together may be the brackets,
// not the engine, and warns instead of failing. Absolute limits (min, max) apply to the
// candidate's value on their own.
func evalSweep(rule workload.Rule, def metricDef, s sweepSides) MetricResult {
	m, absolute, relative := ruleStart(rule, def)
	dir := ruleDirection(rule, def)
	cand, base := s.cand, s.base
	if cand == nil {
		m.Verdict = Warn
		m.Warnings = append(m.Warnings, fmt.Sprintf("no sweep of %q on %s among the results: run `slogate sweep -c %s -w %s -o RESULTS_DIR` to measure max_sustainable_rps",
			s.w.Name, s.hw, s.cfg.Path, s.w.Name))
		return m
	}
	if why := UnfitSweep(cand); why != "" {
		m.Verdict = Error
		m.Warnings = append(m.Warnings, "the gate refuses to judge this sweep: "+why)
		return m
	}
	if s.hashNow != "" && cand.WorkloadHash != s.hashNow {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the sweep was made from another definition of %q than %s has now (sweep hash %s, file hash %s): rerun it",
			s.w.Name, s.cfg.Path, cand.WorkloadHash, s.hashNow))
	}
	// Without a number, a sweep whose steps all failed still bounds its capacity from
	// above: below the first failing rate.
	candVal, below := math.NaN(), math.NaN()
	switch {
	case cand.MaxSustainableRPS != nil:
		candVal = *cand.MaxSustainableRPS
		m.Candidate = finite(candVal)
	case cand.FirstFailingRPS != nil:
		below = *cand.FirstFailingRPS
	case cand.Params.MinRPS > 0:
		below = cand.Params.MinRPS
	}
	noStep := ""
	if math.IsNaN(candVal) {
		noStep = "the sweep has no capacity to compare: no step met the SLO"
		if !math.IsNaN(below) {
			noStep = fmt.Sprintf("no step of the sweep met the SLO: its capacity is below %s req/s; lower --min-rate to measure it", fmtRPS(below))
		}
	}

	var verdicts []Verdict
	if relative {
		pol := stats.Policy{Direction: dir, Tolerance: rule.Tolerance}
		switch {
		case base == nil:
			verdicts = append(verdicts, Warn)
			m.Warnings = append(m.Warnings, fmt.Sprintf("no baseline sweep at %s: create it with `slogate baseline update -c %s -r RESULTS_DIR` from a sweep on %s hardware and commit it",
				s.basePath, s.cfg.Path, s.hw))
		case base.WorkloadHash != cand.WorkloadHash:
			verdicts = append(verdicts, Incomparable)
			m.Warnings = append(m.Warnings, fmt.Sprintf("workload changed: baseline sweep hash %s, sweep hash %s (another definition, or another step size); refresh the baseline sweep with `slogate baseline update`",
				base.WorkloadHash, cand.WorkloadHash))
		case base.MaxSustainableRPS == nil || !(*base.MaxSustainableRPS > 0):
			verdicts = append(verdicts, Warn)
			m.Warnings = append(m.Warnings, fmt.Sprintf("the baseline sweep at %s has no capacity to compare with: refresh it with `slogate baseline update`", s.basePath))
		default:
			baseVal := *base.MaxSustainableRPS
			m.Baseline = finite(baseVal)
			if math.IsNaN(candVal) {
				verdicts = append(verdicts, belowVerdict(&m, dir, rule.Tolerance, below, baseVal, noStep))
				break
			}
			verdicts = append(verdicts, compareSweeps(&m, pol, cand, base, baseVal, candVal))
		}
	}
	if absolute {
		if m.Method == MethodNone {
			m.Method = MethodAbsolute
		}
		switch {
		case !math.IsNaN(candVal):
			verdicts = append(verdicts, absoluteVerdict(&m, rule, candVal))
		case rule.Min != nil && !math.IsNaN(below) && below <= *rule.Min:
			verdicts = append(verdicts, Fail)
			m.Warnings = append(m.Warnings, fmt.Sprintf("absolute limit: the capacity is below %s req/s, under the minimum %g", fmtRPS(below), *rule.Min))
		default:
			verdicts = append(verdicts, Warn)
		}
	}
	if noStep != "" {
		m.Warnings = append(m.Warnings, noStep)
	}
	m.Verdict = Worst(verdicts...)
	return m
}

// compareSweeps compares two capacities by the tolerance, then tempers the verdict by
// what a sweep can tell: its precision, and a bound that is only a lower bound.
func compareSweeps(m *MetricResult, pol stats.Policy, cand, base *result.Sweep, baseVal, candVal float64) Verdict {
	r := stats.CompareExact(baseVal, candVal, pol)
	m.Method = MethodExact
	m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
	m.Warnings = append(m.Warnings, r.Warnings...)
	cp, bp := cand.Params.Precision, base.Params.Precision
	prec := max(cp, 0) + max(bp, 0)
	m.Resolution = prec
	v := r.Verdict
	if v == Incomparable {
		return v
	}
	// Each value is the highest passing rate of a bracket whose top failed, at most its
	// precision apart: the true capacities lie up to that much above the values.
	within := math.Abs(r.Point-1) <= prec
	diff := fmt.Sprintf("%+.1f%%", 100*(r.Point-1))
	switch {
	case v == Fail && within:
		v = Warn
		m.Warnings = append(m.Warnings, fmt.Sprintf("the difference (%s) is within the sweeps' bisection precision (±%s: %s here, %s in the baseline): it may be where the brackets stopped, not the engine; rerun both sweeps with a finer --precision to tell",
			diff, pctText(prec), pctText(cp), pctText(bp)))
	case v == Improved && within:
		v = Pass
		m.Warnings = append(m.Warnings, fmt.Sprintf("the improvement (%s) is within the sweeps' bisection precision (±%s): not shown", diff, pctText(prec)))
	}
	switch {
	case v == Fail && cand.Bound == result.BoundMaxRate:
		// Every step passed up to --max-rate: the capacity is at least the value, and how
		// much more is unknown.
		v = Incomparable
		m.Warnings = append(m.Warnings, fmt.Sprintf("the sweep passed every step up to its --max-rate %s req/s: the capacity is at least that, which says nothing against the baseline's %s req/s; rerun it with a higher --max-rate",
			fmtRPS(candVal), fmtRPS(baseVal)))
	case v == Improved && base.Bound == result.BoundMaxRate:
		v = Pass
		m.Warnings = append(m.Warnings, fmt.Sprintf("the baseline sweep stopped at its --max-rate %s req/s, so its capacity is only a lower bound: refresh it with a higher --max-rate to measure an improvement",
			fmtRPS(baseVal)))
	}
	return v
}

// belowVerdict judges a candidate sweep with no passing step against a baseline: its
// capacity is below the first failing rate, so the ratio is at most below/base (the
// baseline's true capacity is at least its value). That fails when even the bound is
// beyond the tolerance, and is not shown otherwise.
func belowVerdict(m *MetricResult, dir stats.Direction, tol, below, baseVal float64, why string) Verdict {
	if math.IsNaN(below) || dir != stats.HigherIsBetter {
		return Warn
	}
	if bound := below / baseVal; bound < 1-tol {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the capacity is below %s req/s, %s of the baseline's %s req/s at most", fmtRPS(below), pctText(bound), fmtRPS(baseVal)))
		return Fail
	}
	return Warn
}

// refuseSweep says, in the workload's reason, why a sweep metric is an error: a reader of
// a workload in error sees its reason, not its rows.
func refuseSweep(wr *WorkloadResult, ms []MetricResult, judged []bool) {
	for i, m := range ms {
		if !judged[i] || m.Verdict != Error {
			continue
		}
		for _, w := range m.Warnings {
			if strings.HasPrefix(w, "the gate refuses") {
				wr.Reason = strings.TrimPrefix(strings.Join([]string{wr.Reason, m.Metric + ": " + w}, "; "), "; ")
			}
		}
	}
}

// judgeSweepOnly judges a workload of which the results hold a sweep and no run record:
// only the rules on sweeps, and the drift between the sweep and the sweep baseline.
// WorkloadHash and BaselineHash are then the sweeps'.
func judgeSweepOnly(cfg *workload.File, w *workload.Workload, hw string, sw *result.Sweep, in Input, rules []workload.Rule, defs []metricDef) (*WorkloadResult, error) {
	wr := &WorkloadResult{
		Name: w.Name, Hardware: hw, WorkloadHash: sw.WorkloadHash,
		BaselinePath: in.Store.SweepPath(w.Name, hw),
		Metrics:      []MetricResult{},
		Warnings:     []string{fmt.Sprintf("no run record of %q on %s among the results: only its sweep was judged", w.Name, hw)},
	}
	sides, err := sweepSidesOf(cfg, w, hw, sw, in, defs)
	if err != nil {
		return nil, err
	}
	var verdicts []Verdict
	if sides.base != nil {
		wr.BaselineHash = sides.base.WorkloadHash
		wr.Drift = CompareEnv(sides.base.Environment, sw.Environment, cfg.Gate.Drift)
		for _, d := range wr.Drift {
			verdicts = append(verdicts, d.Verdict)
		}
	}
	ms := make([]MetricResult, len(rules))
	judged := make([]bool, len(rules))
	for i := range rules {
		if defs[i].kind == kindSweep {
			ms[i], judged[i] = evalSweep(rules[i], defs[i], sides), true
			wr.Metrics = append(wr.Metrics, ms[i])
			verdicts = append(verdicts, ms[i].Verdict)
		}
	}
	refuseSweep(wr, ms, judged)
	wr.Verdict = Worst(verdicts...)
	return wr, nil
}

// pctText writes 0.05 as "5%" and 0.125 as "12.5%".
func pctText(x float64) string {
	return strconv.FormatFloat(math.Round(1000*x)/10, 'f', -1, 64) + "%"
}
