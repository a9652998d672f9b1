package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slogate/slogate/gate"
)

// GateTable prints the gate's verdict for a terminal: the overall verdict, then per
// workload the baseline it was compared with, one aligned row per rule, the drift that
// matters and every warning.
func GateTable(w io.Writer, r *gate.Result) {
	fmt.Fprintf(w, "slogate gate: %s (%s; %d resamples, %s intervals)\n", gateVerdict(r.Verdict), gatePlural(len(r.Workloads), "workload"), r.Resamples, gatePct(r.Confidence))
	for i := range r.Workloads {
		fmt.Fprintln(w)
		gateWorkload(w, &r.Workloads[i], r.Confidence)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w)
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "warning: %s\n", gateClean(s))
		}
	}
}

func gateWorkload(w io.Writer, wr *gate.WorkloadResult, conf float64) {
	fmt.Fprintf(w, "%s on %s: %s\n", wr.Name, wr.Hardware, gateVerdict(wr.Verdict))
	if wr.BaselineCreated != nil {
		fmt.Fprintf(w, "  baseline %s (created %s), %s against %s\n", wr.BaselinePath, wr.BaselineCreated.UTC().Format("2006-01-02 15:04 MST"),
			gatePlural(wr.Trials.Candidate, "trial"), gatePlural(wr.Trials.Baseline, "baseline trial"))
	}
	if wr.Reason != "" {
		fmt.Fprintf(w, "  %s\n", gateClean(wr.Reason))
	}
	for _, p := range wr.Provenance {
		fmt.Fprintf(w, "  provenance: %s\n", gateClean(p))
	}
	if wr.Verdict == gate.Error {
		return
	}
	if len(wr.Metrics) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  metric\trule\tbaseline\tcandidate\tratio\t%s interval\tresolution\tverdict\n", gatePct(conf))
		for _, m := range wr.Metrics {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Metric, gateRule(&m), gateValue(m.Baseline, m.Unit), gateValue(m.Candidate, m.Unit),
				gateRatio(m.Ratio), gateInterval(&m), gateResolution(m.Resolution), gateVerdict(m.Verdict))
		}
		tw.Flush()
	}
	gateDrift(w, wr.Drift)
	for _, m := range wr.Metrics {
		if m.Undecided != "" {
			fmt.Fprintf(w, "  %s inconclusive: %s\n", m.Metric, gateClean(m.Undecided))
		}
	}
	for _, s := range wr.Notes {
		fmt.Fprintf(w, "  note: %s\n", gateClean(s))
	}
	warns := warningLines(*wr)
	if len(warns) > 0 {
		fmt.Fprintln(w, "  warnings:")
		for _, s := range warns {
			fmt.Fprintf(w, "    - %s\n", gateClean(s))
		}
	}
}

// driftLines shows the fields that changed (except those whose policy is ignore) and
// names those known on one side only.
func gateDrift(w io.Writer, drift []gate.DriftResult) {
	var changed []gate.DriftResult
	var unknown []string
	for _, d := range drift {
		switch {
		case d.Status == gate.DriftChanged && d.Policy != gate.PolicyIgnore:
			changed = append(changed, d)
		case d.Status == gate.DriftUnknown:
			unknown = append(unknown, d.Field)
		}
	}
	if len(changed) > 0 {
		fmt.Fprintln(w, "  environment changes:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, d := range changed {
			fmt.Fprintf(tw, "    %s\t%s -> %s\t%s\n", d.Field, gateClean(d.Baseline), gateClean(d.Candidate), gatePolicy(d))
		}
		tw.Flush()
	}
	if len(unknown) > 0 {
		fmt.Fprintf(w, "  not compared (known on one side only): %s\n", strings.Join(unknown, ", "))
	}
}

func gatePolicy(d gate.DriftResult) string {
	switch d.Policy {
	case gate.PolicyExpected:
		return "expected"
	case gate.PolicyFail:
		return "FAIL (drift policy fail)"
	}
	return "WARN (not declared expected)"
}

// verdictText puts what needs attention in capitals, so it stands out in a log.
func gateVerdict(v gate.Verdict) string {
	switch v {
	case gate.Pass, gate.Improved:
		return string(v)
	}
	return strings.ToUpper(string(v))
}

func gateRule(m *gate.MetricResult) string {
	var parts []string
	if m.Direction != "" {
		sign := "+"
		if m.Direction == "higher" {
			sign = "-"
		}
		parts = append(parts, fmt.Sprintf("%s, %s%s", m.Direction, sign, gatePct(m.Tolerance)))
	}
	if m.Max != nil {
		parts = append(parts, "max "+gateValue(m.Max, m.Unit))
	}
	if m.Min != nil {
		parts = append(parts, "min "+gateValue(m.Min, m.Unit))
	}
	return strings.Join(parts, "; ")
}

func gateValue(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	switch unit {
	case gate.UnitMS:
		return num(*v) + " ms"
	case gate.UnitRPS:
		return num(*v) + "/s"
	case gate.UnitTokensPS:
		return num(*v) + " tok/s"
	case gate.UnitTasksPS:
		return num(*v) + " tasks/s"
	case gate.UnitFraction:
		return fmt.Sprintf("%.2f%%", 100**v)
	case gate.UnitRequests:
		return fmt.Sprintf("%.0f", *v)
	}
	return num(*v)
}

func gateRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *r)
}

func gateInterval(m *gate.MetricResult) string {
	switch {
	case m.Method == gate.MethodExact && m.Ratio != nil:
		return "exact"
	case m.Lo == nil || m.Hi == nil:
		return "-"
	case m.Method == gate.MethodTrials:
		return fmt.Sprintf("[%.3f, %.3f] trials", *m.Lo, *m.Hi)
	}
	return fmt.Sprintf("[%.3f, %.3f]", *m.Lo, *m.Hi)
}

func gateResolution(r float64) string {
	if r <= 0 {
		return "-"
	}
	return fmt.Sprintf("±%.1f%%", 100*r)
}

// pctText writes 0.95 as "95%" and 0.005 as "0.5%".
func gatePct(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", 100*x), "0"), ".") + "%"
}

func gatePlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clean keeps text that came from a server or a file from moving the terminal: control
// characters become '?'.
func gateClean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// AuditTable prints an audit of the committed baselines: each baseline's versions and
// age, and its drift from the reference environment.
func AuditTable(w io.Writer, a *gate.Audit) {
	limit := "no age limit"
	if a.MaxAge > 0 {
		limit = "max age " + gateAge(a.MaxAge)
	}
	verdict := gateVerdict(a.Verdict)
	if a.Compared == 0 {
		verdict = "NOTHING COMPARED"
	}
	fmt.Fprintf(w, "slogate audit: %s (%d of %s compared with %s on %s; %s)\n", verdict, a.Compared, gatePlural(len(a.Entries), "baseline"), gateClean(a.Reference), a.Hardware, limit)
	if a.Compared == 0 {
		fmt.Fprintf(w, "no baseline of these workloads is on hardware %s, so no drift was checked: audit on the hardware the baselines were made on, or pass -r with a run record made there\n", a.Hardware)
	}
	for _, e := range a.Entries {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%s on %s: %s  %s\n", e.Workload, e.Hardware, gateVerdict(e.Verdict), e.Path)
		age := fmt.Sprintf("created %s, %s old", e.Created.UTC().Format("2006-01-02 15:04 MST"), gateAge(e.Age))
		if e.TooOld {
			age += fmt.Sprintf(": OLDER THAN %s (gate.max_baseline_age); refresh it with `slogate baseline update`", gateAge(a.MaxAge))
		}
		fmt.Fprintf(w, "  %s\n", age)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		env := e.Environment
		for _, f := range []struct{ label, v string }{
			{"engine", gateJoin(env["engine.name"], env["engine.version"])},
			{"model", gateJoin(env["model.id"], gateRevision(env["model.revision"]))},
			{"GPU", gateJoin(env["gpu.name"], gateCount(env["gpu.count"]))},
			{"driver", env["gpu.driver"]},
			{"CUDA", env["gpu.cuda"]},
			{"tool", gateFirst(env["tool.version"], e.ToolVersion)},
		} {
			fmt.Fprintf(tw, "  %s\t%s\n", f.label, gateClean(gateFirst(f.v, "unknown")))
		}
		tw.Flush()
		if e.Stale {
			fmt.Fprintln(w, "  STALE: the workload's definition changed since this baseline was made; every gate against it is incomparable until it is refreshed")
		}
		if !e.Compared {
			fmt.Fprintf(w, "  drift: not compared (hardware %s; the reference is %s)\n", e.Hardware, a.Hardware)
			continue
		}
		var changed bool
		var fields []string
		for _, d := range e.Drift {
			changed = changed || (d.Status == gate.DriftChanged && d.Policy != gate.PolicyIgnore)
			if d.Status != gate.DriftUnknown {
				fields = append(fields, d.Field)
			}
		}
		fmt.Fprintf(w, "  compared %s: %s\n", gatePlural(len(fields), "field"), strings.Join(fields, ", "))
		if !changed {
			fmt.Fprintln(w, "  drift: none")
		}
		gateDrift(w, e.Drift)
	}
	if len(a.Missing) > 0 {
		fmt.Fprintf(w, "\nno baseline: %s\n", strings.Join(a.Missing, ", "))
	}
}

func gateJoin(a, b string) string { return strings.TrimSpace(a + " " + b) }

func gateFirst(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func gateRevision(r string) string {
	if r == "" {
		return ""
	}
	return "@" + r
}

func gateCount(n string) string {
	if n == "" {
		return ""
	}
	return "x" + n
}

// ageText writes an age in days past two days, else in hours.
func gateAge(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(math.Floor(d.Hours()/24)))
	}
	return fmt.Sprintf("%.0f hours", math.Floor(d.Hours()))
}
