package gate

import (
	"fmt"
	"math"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/workload"
)

// startValues is the metric's value of each distinct start of the engine behind the
// runs, in ms: the records measured on one start (the trials of one `slogate run`) share
// it and count once. starts counts the starts, with or without a value.
func startValues(def metricDef, runs []*run) (vals []float64, starts int) {
	seen := map[int64]bool{}
	for _, r := range runs {
		if r.start == nil || seen[r.start.StartedAt.UnixNano()] {
			continue
		}
		seen[r.start.StartedAt.UnixNano()] = true
		starts++
		if v, ok := def.start(r.start); ok {
			vals = append(vals, v)
		}
	}
	return vals, starts
}

// startMean is the mean over starts, resampled by whole starts.
func startMean(vals []float64) stats.Metric {
	m := stats.NewMean(vals)
	return stats.Func{N: m.Len(), F: m.Eval, Notes: []string{fmt.Sprintf("%d starts: a bootstrap over so few is rough; more starts (slogate ab --blocks, calibrate --runs) narrow it", len(vals))}}
}

func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

// evalStart judges a start metric (engine_start, first_token_after_start): the mean over
// each side's starts, with a bootstrap interval over starts when both sides have two or
// more, and the ratio alone (no interval, said so) when a side has one.
// It is not judged (false) when nothing applies: a relative rule without a baseline.
func evalStart(rule workload.Rule, def metricDef, base, cand []*run, g workload.GateConfig) (MetricResult, bool) {
	m, absolute, relative := ruleStart(rule, def)
	cv, cstarts := startValues(def, cand)
	if len(cv) == 0 {
		why := "slogate did not start this run's engine: " + rule.Metric + " is measured only on a start of target.start"
		if cstarts > 0 {
			why = "the first request after the start failed (the record's startup.first_token_error says why): nothing to compare"
		}
		m.Warnings = append(m.Warnings, why)
		m.Verdict = Warn
		return m, true
	}
	candVal := mean(cv)
	m.Candidate = finite(candVal)
	if len(cv) > 1 {
		m.CandidateTrials = cv
	}
	var verdicts []Verdict
	if relative && base != nil {
		bv, _ := startValues(def, base)
		pol := rulePolicy(rule, def, g)
		switch {
		case len(bv) == 0:
			verdicts = append(verdicts, Warn)
			m.Warnings = append(m.Warnings, "the baseline has no start of the engine to compare with: make it from a run with target.start (slogate baseline update)")
		case len(bv) == 1 || len(cv) == 1:
			m.Baseline = finite(mean(bv))
			if len(bv) > 1 {
				m.BaselineTrials = bv
			}
			r := stats.CompareExact(mean(bv), candVal, pol)
			m.Method = MethodExact
			m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
			m.Warnings = append(m.Warnings, r.Warnings...)
			m.Warnings = append(m.Warnings, fmt.Sprintf("%d baseline and %d candidate starts: a ratio of single starts has no interval and moves with the machine; judge starts with several on each side (slogate ab, slogate calibrate)", len(bv), len(cv)))
			verdicts = append(verdicts, r.Verdict)
		default:
			m.BaselineTrials = bv
			r := stats.Compare(startMean(bv), startMean(cv), pol)
			m.Baseline, m.Candidate = finite(r.Baseline), finite(r.Candidate)
			m.Method = MethodBootstrap
			m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
			m.Resolution = r.Resolution
			m.Warnings = append(m.Warnings, r.Warnings...)
			verdicts = append(verdicts, r.Verdict)
		}
	}
	if absolute {
		if m.Method == MethodNone {
			m.Method = MethodAbsolute
		}
		verdicts = append(verdicts, absoluteVerdict(&m, rule, candVal))
	}
	if len(verdicts) == 0 {
		return m, false
	}
	m.Verdict = Worst(verdicts...)
	return m, true
}
