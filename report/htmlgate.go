package report

import (
	"fmt"
	"strings"

	"github.com/slogate/slogate/gate"
)

// verdictRow is one rule of one workload in the HTML verdict table; every figure is
// already text.
type verdictRow struct {
	Workload, Metric, Baseline, Candidate, Delta, Interval, Tolerance, Resolution, Verdict, Class, Reason string
	// Span is the number of rows of the workload on its first row, 0 on the others.
	Span int
}

// driftRow is one environment field of one workload.
type driftRow struct {
	Workload, Field, Baseline, Candidate, Status, Policy, Verdict, Class string
	Changed                                                              bool
}

func htmlVerdictClass(v gate.Verdict) string {
	switch v {
	case gate.Pass, gate.Improved:
		return "pass"
	case gate.Warn, gate.Inconclusive, gate.Incomparable, gate.NoBaseline:
		return "warn"
	case gate.Fail, gate.Error:
		return "fail"
	}
	return "neutral"
}

// verdictRows lists every rule of every workload of the gate; a workload that was not
// compared rule by rule (no baseline, refused, workload changed) gets a row saying why.
func verdictRows(g *gate.Result) []verdictRow {
	var out []verdictRow
	for _, w := range byAttention(g.Workloads) {
		name := w.Name + " on " + w.Hardware
		first := len(out)
		if w.Reason != "" {
			out = append(out, verdictRow{Workload: name, Metric: "(workload)", Baseline: w.BaselinePath, Candidate: "", Delta: "—", Interval: "—", Tolerance: "—", Resolution: "—",
				Verdict: verdictWords(w.Verdict), Class: htmlVerdictClass(w.Verdict), Reason: w.Reason})
		}
		for _, m := range w.Metrics {
			out = append(out, verdictRow{
				Workload: name, Metric: m.Metric,
				Baseline: val(m.Baseline, m.Unit), Candidate: val(m.Candidate, m.Unit),
				Delta: delta(m.Ratio), Interval: interval(m), Tolerance: tolerance(m), Resolution: resolutionText(m),
				Verdict: verdictWords(m.Verdict), Class: htmlVerdictClass(m.Verdict), Reason: metricReason(m),
			})
		}
		if len(out) == first {
			out = append(out, verdictRow{Workload: name, Metric: "(workload)", Delta: "—", Interval: "—", Tolerance: "—", Resolution: "—",
				Verdict: verdictWords(w.Verdict), Class: htmlVerdictClass(w.Verdict), Reason: "no rule was judged"})
		}
		out[first].Span = len(out) - first
	}
	return out
}

func resolutionText(m gate.MetricResult) string {
	if m.Resolution <= 0 {
		return "—"
	}
	return fmt.Sprintf("±%.1f%%", 100*m.Resolution)
}

// metricReason says why a rule got its verdict, from the gate's own outcome and
// warnings: the reader should not have to know the decision rule to read the row.
func metricReason(m gate.MetricResult) string {
	var why string
	switch {
	case m.Method == gate.MethodAbsolute:
		switch m.Verdict {
		case gate.Pass:
			why = "within its absolute limit (no baseline ratio for this rule)"
		default:
			why = "outside its absolute limit"
		}
	case m.Method == gate.MethodExact:
		switch m.Verdict {
		case gate.Pass:
			why = "a deterministic figure: within the tolerance"
		case gate.Fail:
			why = "a deterministic figure: beyond the tolerance"
		case gate.Improved:
			why = "a deterministic figure: better than the tolerance"
		}
	default:
		switch m.Verdict {
		case gate.Pass:
			why = "the whole interval lies within the tolerance"
		case gate.Inconclusive:
			why = "the interval straddles the tolerance's edge, or excludes nothing: not decided"
		case gate.Fail:
			why = "the whole interval is beyond the tolerance"
		case gate.Improved:
			why = "the whole interval is better than the tolerance: refresh the baseline"
		case gate.Incomparable:
			why = "no ratio could be compared"
		}
		if m.Method == gate.MethodTrials && why != "" {
			why += " (interval: the spread of the trials)"
		}
	}
	parts := []string{}
	if why != "" {
		parts = append(parts, why)
	}
	if m.Undecided != "" {
		parts = append(parts, m.Undecided)
	}
	parts = append(parts, m.Warnings...)
	return strings.Join(parts, "; ")
}

// driftRows lists every environment field of every workload that has a baseline.
func driftRows(g *gate.Result) []driftRow {
	var out []driftRow
	for _, w := range g.Workloads {
		for _, d := range w.Drift {
			out = append(out, driftRow{
				Workload: w.Name + " on " + w.Hardware, Field: d.Field, Baseline: orDash(d.Baseline), Candidate: orDash(d.Candidate),
				Status: string(d.Status), Policy: string(d.Policy), Verdict: string(d.Verdict), Class: htmlVerdictClass(d.Verdict),
				Changed: d.Status == gate.DriftChanged && d.Policy != gate.PolicyIgnore,
			})
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// plainHeadline is the comment's headline without its Markdown emphasis.
func plainHeadline(g *gate.Result) string {
	return strings.ReplaceAll(headline(g), "**", "")
}
