package gate

import (
	"cmp"
	"fmt"
	"math"

	"github.com/slogate/slogate/gate/stats"
)

// decidePower is the chance, at a true ratio of 1, with which the advice of an
// inconclusive rule expects it to be decided pass: the interval's half-width that gives
// it is ln(1 + tolerance)/(1 + z(power)/z(confidence)), about 0.70·ln(1 + tolerance) at
// 80% power and 95% confidence.
const decidePower = 0.80

// scale is what an inconclusive rule's advice counts: the blocks of an A/B job, the
// candidate's runs against a committed baseline, or a run's requests when the interval
// holds only their sampling noise.
type scale struct {
	n    int
	unit string // "blocks"
	knob string // the flag or field that sets it ("--blocks")
}

// scaleOf is what adding to would narrow m's interval.
func scaleOf(m *MetricResult, blocks, runs, requests int) scale {
	switch m.Method {
	case MethodBlocks:
		return scale{blocks, "blocks", "ab --blocks"}
	case MethodBootstrap:
		return scale{requests, "requests per run", "workloads[].requests"}
	}
	return scale{runs, "candidate runs", "run --repeats"}
}

// explainUndecided fills m.Undecided for an inconclusive rule, in one line: why (how the
// job ended, when that is the reason: a futile stop), the smallest change this job could
// have shown (its interval's half-width) against the tolerance the rule asks, and what
// would decide it (the interval narrows as 1/√n): when the noise is too wide for the
// tolerance, about how many of sc an unchanged engine needs to pass with decidePower, or
// the tolerance the noise supports; when it is not, the change lies near the
// tolerance's edge, and about how many of sc would put the interval on one side of it.
// conf is the gate's confidence.
func explainUndecided(m *MetricResult, sc scale, why string, conf float64) {
	if m.Verdict != Inconclusive || m.Undecided != "" {
		return
	}
	var s string
	if why != "" {
		s = why + "; "
	}
	h := 0.0 // the half-width, in logs
	if m.Lo != nil && m.Hi != nil && *m.Lo > 0 && !math.IsInf(*m.Hi, 0) && *m.Hi >= *m.Lo {
		h = math.Log(*m.Hi / *m.Lo) / 2
	}
	if h <= 0 || m.Tolerance <= 0 {
		m.Undecided = s + fmt.Sprintf("the interval excludes no ratio at %d %s: nothing was shown either way; more %s (%s), or a calibration of the baseline's noise (slogate calibrate), would decide it", sc.n, sc.unit, sc.unit, sc.knob)
		return
	}
	conf = cmp.Or(conf, stats.DefaultConfidence)
	zc, zp := stats.NormalQuantile((1+conf)/2), stats.NormalQuantile(decidePower)
	edge := 1 + m.Tolerance // the worse side's edge of the tolerance
	if m.Direction == "higher" {
		edge = 1 - m.Tolerance
	}
	le := math.Abs(math.Log(edge))
	s += fmt.Sprintf("this runner's noise supports ±%.1f%% at %d %s; the rule asks ±%s", 100*math.Expm1(h), sc.n, sc.unit, pctText(m.Tolerance))
	switch {
	case sc.n <= 0 || !(le > 0):
	case h*(1+zp/zc) > le:
		// The noise is too wide for the tolerance: what an unchanged engine needs.
		k := int(math.Ceil(float64(sc.n) * (h * (1 + zp/zc) / le) * (h * (1 + zp/zc) / le)))
		s += fmt.Sprintf("; about %d %s (%s) would decide an unchanged engine pass %.0f%% of the time, as would a tolerance of ±%.0f%%", k, sc.unit, sc.knob, 100*decidePower, math.Ceil(100*math.Expm1(h*(1+zp/zc))))
	case m.Ratio != nil && *m.Ratio > 0:
		// The noise supports the tolerance, but the change lies near its edge: what
		// tells which side of the edge it is on.
		dist := math.Abs(math.Log(*m.Ratio) - math.Log(edge))
		k := int(math.Ceil(float64(sc.n) * (h / max(dist, 1e-3)) * (h / max(dist, 1e-3))))
		s += fmt.Sprintf("; the change (%+.1f%%) lies within that of the tolerance's edge (%+.1f%%): about %d %s (%s) would tell which side of it the change is on", 100*(*m.Ratio-1), 100*(edge-1), k, sc.unit, sc.knob)
	}
	m.Undecided = s
}
