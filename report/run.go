// Package report renders results for people: the terminal tables of the CLI, the pull
// request comment and job summary in Markdown, and the self-contained HTML report.
//
// It renders only: every number it prints was computed elsewhere.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/slogate/slogate/result"
)

// RunTable prints a readable summary of one run record to a terminal.
func RunTable(w io.Writer, rec *result.Record, path string) {
	s := &rec.Summary
	trial := ""
	if rec.Trial > 0 {
		trial = fmt.Sprintf(" trial %d", rec.Trial)
	}
	fmt.Fprintf(w, "%s%s: %s loop, %d requests in %.1f s", rec.Workload, trial, rec.Mode, s.Requests, s.DurationS)
	if path != "" {
		fmt.Fprintf(w, " -> %s", path)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tp50\tp90\tp95\tp99\tp99.9\tmax\tmean\tcount\t")
	row := func(name string, p result.Percentiles) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", name, num(p.P50), num(p.P90), num(p.P95), num(p.P99), num(p.P999), num(p.Max), num(p.Mean), p.Count)
	}
	row("TTFT", s.TTFTms)
	row("TPOT", s.TPOTms)
	row("ITL", s.ITLms)
	if s.TokensPerChunk != nil {
		// Chunks carried several tokens: ITL above is per chunk, this is per token.
		row("ITL/token", s.ITLTokenms)
	}
	row("E2E", s.E2Ems)
	tw.Flush()
	if t := s.TokensPerChunk; t != nil {
		fmt.Fprintf(w, "chunks carried %s tokens on average (per-chunk counts from the server for %d requests, inferred from usage for %d): ITL is per chunk, ITL/token per token\n",
			num(t.Mean), t.Known, t.Inferred)
	}
	fmt.Fprintf(w, "completed %d/%d, error rate %.2f%%%s\n", s.Completed, s.Requests, 100*s.ErrorRate, errorList(s.Errors))
	fmt.Fprintf(w, "SLO attainment %.2f%% (target %.2f%%), goodput %s req/s (over the window, drain included: %s), throughput %s req/s, %s output tok/s\n",
		100*s.SLOAttainment, 100*rec.SLOAttainmentTarget, num(s.GoodputRPS), num(s.GoodputWindowRPS), num(s.ThroughputRPS), num(s.OutputTokensPS))
	if t := s.Tasks; t != nil {
		fmt.Fprintf(w, "%s\n", TasksText(t))
	}
	for _, c := range s.SLOChecks {
		mark := "met"
		if !c.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "  SLO %s p%s <= %s ms: %s ms, %s\n", c.Metric, pct(c.Percentile), num(c.LimitMS), num(c.ValueMS), mark)
	}
	sat := ""
	if s.ClientSaturated {
		sat = "  CLIENT-SATURATED"
	}
	fmt.Fprintf(w, "dispatch lag p50 %s ms, p99 %s ms, max %s ms; in flight mean %s, max %d%s\n",
		num(s.DispatchLagms.P50), num(s.DispatchLagms.P99), num(s.DispatchLagms.Max), num(s.InFlight.Mean), s.InFlight.Max, sat)
	if l := s.ReaderLagms; l != nil {
		fmt.Fprintf(w, "client goroutines ran late p50 %s ms, p99 %s ms (bound %s ms)%s\n", num(l.P50), num(l.P99), boundText(rec.MaxReaderLagMS), map[bool]string{true: "  READER-SATURATED"}[s.ReaderSaturated])
	}
	l := s.Lengths
	fmt.Fprintf(w, "prompt tokens p50/p95 target %s/%s achieved %s/%s; output tokens target %s/%s achieved %s/%s; early stops %d\n",
		num(l.PromptTarget.P50), num(l.PromptTarget.P95), num(l.Prompt.P50), num(l.Prompt.P95),
		num(l.OutputTarget.P50), num(l.OutputTarget.P95), num(l.Output.P50), num(l.Output.P95), s.EarlyStops)
	if st := rec.Startup; st != nil {
		fmt.Fprintf(w, "engine start: %s\n", startupText(st))
	}
	if wu := rec.Warmup; wu != nil {
		fmt.Fprintf(w, "warm-up: %d requests, cold TTFT %s ms (excluded from the metrics above)\n", wu.Requests, num(wu.ColdTTFTms))
	}
	if p := rec.Priming; p != nil {
		fmt.Fprintf(w, "priming (prefix_cache: warm): %d requests, %d prompt tokens, in %s s at concurrency %d%s (excluded from the metrics above)\n",
			p.Requests, p.PromptTokens, num(p.DurationS), p.Concurrency, errorList(p.Errors))
	}
	if pc := s.PrefixCache; pc != nil {
		fmt.Fprintf(w, "prefix cache over the window: %s hit (%s)%s\n", pctStr(pc.HitRate), pc.Source, prefixSplit(pc))
	}
	terminalBreakdowns(w, s)
	if rec.Incomplete {
		fmt.Fprintf(w, "INCOMPLETE: %s\n", rec.IncompleteReason)
	}
	for _, n := range rec.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
}

// TasksText is a run's tasks in one line.
func TasksText(t *result.TaskSummary) string {
	by := "sessions"
	if t.By == result.TasksByTaskID {
		by = "task ids"
	}
	retries := ""
	if t.Retries > 0 {
		retries = fmt.Sprintf(", %d retries", t.Retries)
	}
	return fmt.Sprintf("tasks (%s, success: %s): %d of %d completed (%s), %d within the SLO; %s tasks/s, task goodput %s tasks/s; %s requests per completed task%s",
		by, t.Success, t.Completed, t.Tasks, pctStr(t.SuccessRate), t.Met, num(t.TasksPS), num(t.TaskGoodput), num(t.RequestsPerCompleted), retries)
}

func errorList(errs map[string]int) string {
	if len(errs) == 0 {
		return ""
	}
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, errs[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// num formats a number with about four significant figures.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.1f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// pct formats a percentile label: 99.9 -> "99.9", 95 -> "95".
func pct(p float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", p), "0"), ".")
}

// boundText is a bound in ms, or "none" when it is not judged.
func boundText(ms float64) string {
	if ms <= 0 {
		return "none"
	}
	return num(ms)
}

// prefixSplit says how a cold run's prefix-cache hits divide between the run's own and
// those from before the window (result.AttributePrefixHits); "" when they were not split.
func prefixSplit(pc *result.PrefixCacheStats) string {
	if pc.Own == nil || pc.Foreign == nil || pc.ForeignRate == nil {
		return ""
	}
	return fmt.Sprintf("; of the hits, %.0f tokens the run's own requests had computed (%.0f re-admitted after preemption, %.0f declared shared history, %.0f the opening every prompt shares; told apart %s) and %.0f they had not (%s of the prompts: the figure a cold run is judged by)",
		pc.Own.Hits, pc.Own.Readmitted, pc.Own.Declared, pc.Own.Opening, pc.Own.Method, *pc.Foreign, pctStr(*pc.ForeignRate))
}
