package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// MaxCommentChars is GitHub's limit on a comment body.
const MaxCommentChars = 65536

// Comment is what the pull-request comment (and the job summary) shows.
type Comment struct {
	// Marker is the hidden line that finds the sticky comment again; it starts the body.
	Marker string
	Gate   *gate.Result
	// Runs are the candidate's records by workload name, for the details (warm-up, Little's
	// law, KV capacity and its source, errors, client health, notes).
	Runs map[string][]*result.Record
	// Fleet is the capacity section; nil when the config has no capacity section.
	Fleet *FleetSection
	// RunURL links to the workflow run (artifacts: the HTML report and the records).
	RunURL    string
	Generated time.Time
	// Meta says what was compared beyond the gate result (commits, each baseline's last
	// change, the report artifact); nil when unknown.
	Meta *Meta
	// ResultsDir is the results directory as the commands in the comment name it;
	// "" means slogate-out.
	ResultsDir string
	// Limit caps the body; 0 means MaxCommentChars.
	Limit int
}

// FleetSection is the baseline-against-candidate fleet for the configured traffic.
type FleetSection struct {
	Workload             string
	PeakRPS              float64
	Baseline, Candidate  *capacity.Worksheet
	Delta                capacity.Delta
	BaselineErr, CandErr string
}

var verdictIcon = map[gate.Verdict]string{
	gate.Pass: "✅", gate.Improved: "🚀", gate.Warn: "⚠️", gate.Inconclusive: "❓", gate.Fail: "❌", gate.Incomparable: "⛔", gate.Error: "💥", gate.NoBaseline: "🆕",
}

func icon(v gate.Verdict) string {
	if s, ok := verdictIcon[v]; ok {
		return s
	}
	return "❔"
}

// Markdown renders the comment. Strings that came from the engine under test (versions,
// model ids, error messages, notes) are escaped so that they cannot inject Markdown, HTML
// or mentions. The body never exceeds the limit: the details are cut first, with a note.
func Markdown(c Comment) string {
	limit := c.Limit
	if limit <= 0 {
		limit = MaxCommentChars
	}
	head, details := c.mainPart(), c.detailsPart()
	tail := c.footer()
	body := head + details + tail
	if len(body) <= limit {
		return body
	}
	note := "\n> The details were cut to fit GitHub's comment limit; the HTML report and the run records have everything.\n\n"
	room := limit - len(head) - len(tail) - len(note)
	if room > 0 {
		cut := details[:cutAt(details, room)]
		// Close a <details> left open by the cut so the rest renders.
		if strings.Count(cut, "<details>") > strings.Count(cut, "</details>") {
			cut += "\n</details>\n"
		}
		if len(head)+len(cut)+len(note)+len(tail) <= limit {
			return head + cut + note + tail
		}
	}
	body = head + note + tail
	if len(body) > limit {
		body = body[:cutAt(body, limit-len(note)-20)] + note
	}
	return body
}

// cutAt returns the largest line boundary at or before n (never inside a line).
func cutAt(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 {
		return i + 1
	}
	return 0
}

func (c Comment) mainPart() string {
	var b strings.Builder
	if c.Marker != "" {
		b.WriteString(c.Marker + "\n")
	}
	g := c.Gate
	fmt.Fprintf(&b, "## %s slogate: %s\n\n", icon(g.Verdict), headline(g))
	c.comparedLine(&b)
	for _, w := range g.Warnings {
		fmt.Fprintf(&b, "> ⚠️ %s\n", esc(w))
	}
	if len(g.Warnings) > 0 {
		b.WriteString("\n")
	}
	for _, w := range byAttention(g.Workloads) {
		c.workloadMain(&b, w)
	}
	if c.Fleet != nil {
		fleetMarkdown(&b, c.Fleet)
	}
	return b.String()
}

func headline(g *gate.Result) string {
	counts := map[gate.Verdict]int{}
	for _, w := range g.Workloads {
		counts[w.Verdict]++
	}
	n := len(g.Workloads)
	switch g.Verdict {
	case gate.Pass, gate.Improved:
		return fmt.Sprintf("**%s** — %d of %d workloads within tolerance", g.Verdict, n-counts[gate.Warn], n)
	case gate.Warn:
		return fmt.Sprintf("**pass with warnings** — %d of %d workloads warn", counts[gate.Warn], n)
	case gate.Inconclusive:
		return fmt.Sprintf("**inconclusive** — %d of %d workloads have a rule this job could not decide either way: not a pass", counts[gate.Inconclusive], n)
	case gate.Fail:
		return fmt.Sprintf("**fail** — %d of %d workloads regressed", counts[gate.Fail], n)
	case gate.Incomparable:
		return fmt.Sprintf("**incomparable** — %d of %d workloads cannot be compared with their baseline", counts[gate.Incomparable], n)
	case gate.Error:
		return fmt.Sprintf("**error** — %d of %d workloads could not be judged", counts[gate.Error], n)
	case gate.NoBaseline:
		s := fmt.Sprintf("**no baseline** — %d of %d workloads have no baseline to compare with", counts[gate.NoBaseline], n)
		if g.AllowMissingBaseline {
			s += " (allowed while bootstrapping: gate.missing_baseline is allow)"
		}
		return s
	}
	return "**" + string(g.Verdict) + "**"
}

func (c Comment) workloadMain(b *strings.Builder, w gate.WorkloadResult) {
	fmt.Fprintf(b, "### %s %s on %s: %s\n\n", icon(w.Verdict), code(w.Name), code(w.Hardware), verdictWords(w.Verdict))
	if w.Reason != "" {
		fmt.Fprintf(b, "> %s\n\n", esc(w.Reason))
	}
	for _, p := range w.Provenance {
		fmt.Fprintf(b, "> provenance: %s\n\n", esc(p))
	}
	if s := stoppedText(w); s != "" {
		fmt.Fprintf(b, "> A/B: %s\n\n", esc(s))
	}
	if s := repeatsText(w); s != "" {
		fmt.Fprintf(b, "> repeats: %s\n\n", esc(s))
	}
	c.nextSteps(b, w)
	if len(w.Metrics) > 0 {
		b.WriteString("| metric | baseline | candidate | Δ | interval | tolerance | verdict |\n|---|--:|--:|--:|--:|--:|---|\n")
		for _, m := range w.Metrics {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s %s |\n", m.Metric, val(m.Baseline, m.Unit), val(m.Candidate, m.Unit),
				delta(m.Ratio), interval(m), tolerance(m), icon(m.Verdict), m.Verdict)
		}
		b.WriteString("\n")
	}
	for _, m := range w.Metrics {
		if m.Undecided != "" {
			fmt.Fprintf(b, "- %s **%s inconclusive**: %s\n", icon(gate.Inconclusive), m.Metric, esc(m.Undecided))
		}
	}
	warns := warningLines(w)
	for _, x := range warns {
		fmt.Fprintf(b, "- ⚠️ %s\n", esc(x))
	}
	if len(warns) > 0 {
		b.WriteString("\n")
	}
	if len(w.Notes) > 0 {
		b.WriteString("<details><summary>How this job ran</summary>\n\n")
		for _, x := range w.Notes {
			fmt.Fprintf(b, "- %s\n", esc(x))
		}
		b.WriteString("\n</details>\n\n")
	}
	// Drift is shown even when every metric passes.
	var drifted []gate.DriftResult
	for _, d := range w.Drift {
		if d.Status == gate.DriftChanged && d.Policy != gate.PolicyIgnore {
			drifted = append(drifted, d)
		}
	}
	if len(drifted) > 0 {
		b.WriteString("**Environment changes**\n\n| field | baseline | candidate | policy |\n|---|---|---|---|\n")
		for _, d := range drifted {
			mark := ""
			if d.Drifted() {
				mark = " **unexpected**"
			}
			fmt.Fprintf(b, "| %s%s | %s | %s | %s %s |\n", esc(d.Field), mark, code(d.Baseline), code(d.Candidate), icon(d.Verdict), d.Policy)
		}
		b.WriteString("\n")
	}
	if s := candidateSummary(w); s != nil {
		fmt.Fprintf(b, "SLO attainment **%s** · goodput %s req/s · error rate %s%s\n\n",
			pctStr(s.SLOAttainment), num(s.GoodputRPS), pctStr(s.ErrorRate), mdErrors(s.Errors))
		if t := s.Tasks; t != nil {
			fmt.Fprintf(b, "Tasks: **%d of %d completed** (%s) · %s tasks/s · task goodput %s tasks/s · %s requests per completed task\n\n",
				t.Completed, t.Tasks, pctStr(t.SuccessRate), num(t.TasksPS), num(t.TaskGoodput), num(t.RequestsPerCompleted))
		}
	}
	if len(w.BaselineSummaries) > 0 {
		mdCompareBreakdowns(b, &w.BaselineSummaries[0], candidateSummary(w))
	}
	c.comparedWith(b, w)
}

func candidateSummary(w gate.WorkloadResult) *result.Summary {
	if len(w.CandidateSummaries) == 0 {
		return nil
	}
	return &w.CandidateSummaries[0]
}

func (c Comment) detailsPart() string {
	var b strings.Builder
	for _, w := range c.Gate.Workloads {
		recs := c.Runs[w.Name]
		if len(recs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<details><summary>Details of <code>%s</code></summary>\n\n", escHTML(w.Name))
		for _, r := range recs {
			recordDetails(&b, r, w)
		}
		if len(w.Drift) > 0 {
			b.WriteString("**Environment**\n\n| field | baseline | candidate |\n|---|---|---|\n")
			for _, d := range w.Drift {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", esc(d.Field), code(d.Baseline), code(d.Candidate))
			}
			b.WriteString("\n")
		}
		b.WriteString("</details>\n\n")
	}
	return b.String()
}

func recordDetails(b *strings.Builder, r *result.Record, w gate.WorkloadResult) {
	s := &r.Summary
	if r.Trial > 0 {
		fmt.Fprintf(b, "**Trial %d**\n\n", r.Trial)
	}
	fmt.Fprintf(b, "%s loop, %d requests in %s s; engine %s %s, model %s\n\n", r.Mode, s.Requests, num(s.DurationS), code(envOr(r, "engine.name")), code(envOr(r, "engine.version")), code(r.Model))
	b.WriteString("| ms | p50 | p90 | p95 | p99 | p99.9 | max | mean |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range []struct {
		name string
		p    result.Percentiles
	}{{"TTFT", s.TTFTms}, {"TTFT from send", s.TTFTSendms}, {"TPOT", s.TPOTms}, {"ITL", s.ITLms}, {"E2E", s.E2Ems}} {
		p := row.p
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.name, num(p.P50), num(p.P90), num(p.P95), num(p.P99), num(p.P999), num(p.Max), num(p.Mean))
	}
	b.WriteString("\n")
	if mer := mermaidLatency(s, w); mer != "" {
		b.WriteString(mer)
	}
	for _, c := range s.SLOChecks {
		met := "✅ met"
		if !c.Met {
			met = "❌ missed"
		}
		fmt.Fprintf(b, "- SLO %s p%s ≤ %s ms: %s ms, %s\n", c.Metric, pct(c.Percentile), num(c.LimitMS), num(c.ValueMS), met)
	}
	fmt.Fprintf(b, "- Throughput %s req/s, %s output tokens/s; completed %d of %d%s\n", num(s.ThroughputRPS), num(s.OutputTokensPS), s.Completed, s.Requests, mdErrors(s.Errors))
	health := "healthy"
	switch {
	case s.ReaderSaturated:
		health = "**saturated: the load generator's goroutines ran late, stamping chunks late**"
	case s.ClientSaturated:
		health = "**saturated: the load generator could not keep the schedule**"
	}
	reader := ""
	if l := s.ReaderLagms; l != nil {
		reader = fmt.Sprintf("; goroutines ran late p99 %s ms (bound %s ms)", num(l.P99), boundText(r.MaxReaderLagMS))
	}
	fmt.Fprintf(b, "- Client: %s; dispatch lag p50 %s ms, p99 %s ms, max %s ms%s; in flight mean %s, max %d\n", health, num(s.DispatchLagms.P50), num(s.DispatchLagms.P99), num(s.DispatchLagms.Max), reader, num(s.InFlight.Mean), s.InFlight.Max)
	if wu := r.Warmup; wu != nil {
		fmt.Fprintf(b, "- Warm-up (excluded): %d requests, cold TTFT %s ms, TTFT p50 %s ms", wu.Requests, num(wu.ColdTTFTms), num(wu.TTFTms.P50))
		if wu.EngineStartS > 0 {
			fmt.Fprintf(b, ", engine start %s s", num(wu.EngineStartS))
		}
		b.WriteString("\n")
	}
	if st := r.Startup; st != nil {
		fmt.Fprintf(b, "- Engine start: %s\n", esc(startupText(st)))
	}
	if l := s.LittleLaw; l != nil {
		flag := "holds"
		if l.Flagged {
			flag = "**flagged**"
		}
		fmt.Fprintf(b, "- Little's law: %s req/s × %s s = %s predicted in flight, %s measured (%s off, %s)\n", num(l.ArrivalRPS), num(l.MeanE2ES), num(l.PredictedInFlight), num(l.MeasuredInFlight), pctStr(l.Deviation), flag)
	}
	if k := s.KVConcurrency; k != nil {
		fmt.Fprintf(b, "- KV-limited concurrency %d = ⌊%d tokens / %d tokens per request⌋; capacity source: %s\n", k.Value, k.CapacityTokens, k.PerRequestTokens, esc(k.Source))
	}
	if s.QueueDepth != nil || s.KVUsage != nil {
		fmt.Fprintf(b, "- Engine: queue depth %s, running %s, KV usage %s", gaugeStr(s.QueueDepth, false), gaugeStr(s.Running, false), gaugeStr(s.KVUsage, true))
		if s.Preemptions != nil {
			fmt.Fprintf(b, ", %s preemptions", num(*s.Preemptions))
		}
		b.WriteString("\n")
	}
	l := s.Lengths
	fmt.Fprintf(b, "- Lengths p50/p95: prompt target %s/%s achieved %s/%s; output target %s/%s achieved %s/%s; %d ended early\n",
		num(l.PromptTarget.P50), num(l.PromptTarget.P95), num(l.Prompt.P50), num(l.Prompt.P95), num(l.OutputTarget.P50), num(l.OutputTarget.P95), num(l.Output.P50), num(l.Output.P95), s.EarlyStops)
	if p := r.Priming; p != nil {
		fmt.Fprintf(b, "- Priming (prefix_cache: warm, excluded): %d requests, %d prompt tokens, %s s at concurrency %d%s\n",
			p.Requests, p.PromptTokens, num(p.DurationS), p.Concurrency, mdErrors(p.Errors))
	}
	if pc := s.PrefixCache; pc != nil {
		fmt.Fprintf(b, "- Prefix cache over the window: %s hit (%s)%s\n", pctStr(pc.HitRate), esc(pc.Source), esc(prefixSplit(pc)))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- Note: %s\n", esc(n))
	}
	b.WriteString("\n")
	mdBreakdowns(b, s)
}

// mermaidLatency charts the candidate's latency percentiles against the baseline's, which
// GitHub renders from a mermaid block.
func mermaidLatency(s *result.Summary, w gate.WorkloadResult) string {
	if len(w.BaselineSummaries) == 0 {
		return ""
	}
	bs := w.BaselineSummaries[0].ITLms
	cs := s.ITLms
	if bs.Count == 0 || cs.Count == 0 {
		return ""
	}
	top := max(bs.P99, cs.P99) * 1.1
	f := func(p result.Percentiles) string {
		return fmt.Sprintf("[%s, %s, %s, %s]", mnum(p.P50), mnum(p.P90), mnum(p.P95), mnum(p.P99))
	}
	return fmt.Sprintf("```mermaid\nxychart-beta\n  title \"ITL percentiles (ms): baseline bars, candidate line\"\n  x-axis [p50, p90, p95, p99]\n  y-axis \"ms\" 0 --> %s\n  bar %s\n  line %s\n```\n\n", mnum(top), f(bs), f(cs))
}

func mnum(v float64) string { return fmt.Sprintf("%.3g", v) }

func (c Comment) footer() string {
	var b strings.Builder
	b.WriteString("---\n<sub>")
	if c.Gate != nil {
		fmt.Fprintf(&b, "Intervals: %g%% bootstrap over whole requests, %d resamples, seed %d.", 100*c.Gate.Confidence, c.Gate.Resamples, c.Gate.Seed)
		if f := c.Gate.Family; f != nil {
			fmt.Fprintf(&b, " Each of the %d rules judged by an interval fails an engine at its tolerance's edge at most %g%% of the time; this job, failing when any does, at most %g%%.", f.Rules, 100*f.PerRule, 100*f.Bound)
		}
		if c.Gate.GPUMinutes > 0 {
			fmt.Fprintf(&b, " GPU time of this job: %.2f minutes (engine starts, warm-ups and runs).", c.Gate.GPUMinutes)
		}
	}
	if c.RunURL != "" {
		fmt.Fprintf(&b, " HTML report and run records: [workflow run](%s).", c.RunURL)
	}
	if !c.Generated.IsZero() {
		fmt.Fprintf(&b, " Generated %s by slogate.", c.Generated.UTC().Format(time.RFC3339))
	}
	b.WriteString("</sub>\n")
	return b.String()
}

func fleetMarkdown(b *strings.Builder, f *FleetSection) {
	fmt.Fprintf(b, "### Fleet for %s at %s req/s peak\n\n", code(f.Workload), num(f.PeakRPS))
	if f.BaselineErr != "" || f.CandErr != "" || f.Baseline == nil || f.Candidate == nil {
		fmt.Fprintf(b, "> not computed: %s\n\n", esc(strings.TrimSpace(f.BaselineErr+" "+f.CandErr)))
		return
	}
	bw, cw := f.Baseline, f.Candidate
	b.WriteString("| | baseline | candidate |\n|---|--:|--:|\n")
	fmt.Fprintf(b, "| GPU-seconds per request | %s | %s |\n", num(bw.GPUSecondsPerRequest), num(cw.GPUSecondsPerRequest))
	fmt.Fprintf(b, "| GPUs by throughput / by KV memory | %d / %d | %d / %d |\n", bw.ThroughputGPUs, bw.MemoryGPUs, cw.ThroughputGPUs, cw.MemoryGPUs)
	fmt.Fprintf(b, "| GPUs with headroom and redundancy (bound) | %d (%s) | %d (%s) |\n", bw.TotalGPUs, bw.Bound, cw.TotalGPUs, cw.Bound)
	if bw.MonthlyUSD > 0 {
		fmt.Fprintf(b, "| cost per month | $%.0f | $%.0f |\n", bw.MonthlyUSD, cw.MonthlyUSD)
		fmt.Fprintf(b, "| cost per completed request | $%.6f | $%.6f |\n", bw.CostPerCompletedUSD, cw.CostPerCompletedUSD)
		if bw.CostPerTaskUSD > 0 || cw.CostPerTaskUSD > 0 {
			fmt.Fprintf(b, "| cost per completed task | $%.6f | $%.6f |\n", bw.CostPerTaskUSD, cw.CostPerTaskUSD)
		}
	}
	fmt.Fprintf(b, "\nFleet change: **%+d GPUs**", f.Delta.GPUs)
	if f.Delta.MonthlyUSD != 0 || bw.MonthlyUSD > 0 {
		fmt.Fprintf(b, ", **%+.0f $/month**", f.Delta.MonthlyUSD)
	}
	b.WriteString("\n\n")
	seen := map[string]bool{}
	for _, w := range append(append([]string{}, bw.Warnings...), cw.Warnings...) {
		if !seen[w] {
			seen[w] = true
			fmt.Fprintf(b, "- ⚠️ %s\n", esc(w))
		}
	}
	if len(seen) > 0 {
		b.WriteString("\n")
	}
}

func envOr(r *result.Record, k string) string {
	if v, ok := r.Environment[k]; ok {
		return v
	}
	return "unknown"
}

func val(v *float64, unit string) string {
	if v == nil {
		return "—"
	}
	if *v == math.Trunc(*v) && math.Abs(*v) < 1e9 && unit != "fraction" {
		if unit == "" {
			return fmt.Sprintf("%.0f", *v)
		}
		return fmt.Sprintf("%.0f %s", *v, unit)
	}
	switch unit {
	case "fraction":
		return pctStr(*v)
	case "ms":
		return num(*v) + " ms"
	case "":
		return num(*v)
	}
	return num(*v) + " " + unit
}

func delta(r *float64) string {
	if r == nil {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", 100*(*r-1))
}

func interval(m gate.MetricResult) string {
	if m.Lo == nil || m.Hi == nil || m.Method == gate.MethodExact || m.Method == gate.MethodAbsolute {
		return "—"
	}
	return fmt.Sprintf("[%+.1f%%, %+.1f%%]", 100*(*m.Lo-1), 100*(*m.Hi-1))
}

func tolerance(m gate.MetricResult) string {
	var parts []string
	if m.Tolerance > 0 {
		sign := "−"
		if m.Direction == "lower" {
			sign = "+"
		}
		parts = append(parts, fmt.Sprintf("%s%s%%", sign, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*m.Tolerance), "0"), ".")))
	}
	if m.Max != nil {
		parts = append(parts, "≤ "+val(m.Max, m.Unit))
	}
	if m.Min != nil {
		parts = append(parts, "≥ "+val(m.Min, m.Unit))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

func pctStr(f float64) string {
	p := 100 * f
	switch {
	case p == 0:
		return "0%"
	case p < 1:
		return fmt.Sprintf("%.2f%%", p)
	default:
		return fmt.Sprintf("%.1f%%", p)
	}
}

func gaugeStr(g *result.Gauge, frac bool) string {
	if g == nil {
		return "n/a"
	}
	if frac {
		return fmt.Sprintf("p50 %s / p95 %s / max %s", pctStr(g.P50), pctStr(g.P95), pctStr(g.Max))
	}
	return fmt.Sprintf("p50 %s / p95 %s / max %s", num(g.P50), num(g.P95), num(g.Max))
}

// mdErrors is errorList with the reasons escaped for Markdown.
func mdErrors(errs map[string]int) string {
	esced := make(map[string]int, len(errs))
	for k, v := range errs {
		esced[esc(k)] = v
	}
	return errorList(esced)
}

// code shows a value from the engine or environment as inline text that cannot break out:
// it is escaped rather than put in backticks, which a value could close.
func code(s string) string {
	if s == "" {
		return "—"
	}
	return "<code>" + escHTML(s) + "</code>"
}

// esc makes untrusted text inert in GitHub Markdown: HTML is escaped, Markdown
// punctuation is backslash-escaped, mentions and references cannot trigger, and line
// breaks cannot start new blocks.
func esc(s string) string {
	var b strings.Builder
	for _, r := range StripBidi(s) {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '@':
			b.WriteString("&#64;")
		case '#':
			b.WriteString("&#35;")
		case '|':
			b.WriteString("&#124;")
		case '\\', '`', '*', '_', '[', ']', '(', ')', '!', '~', '{', '}', '+', '-', '=', '"', '\'', '$':
			// '$' too: GitHub renders $…$ and $$…$$ as math.
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			if r < 0x20 || r == 0x7f {
				continue
			}
			b.WriteRune(r)
		}
	}
	return noAutolink(b.String())
}

// escHTML escapes text for inside an HTML element (a <code>): mentions and pipes too.
func escHTML(s string) string {
	var b strings.Builder
	for _, r := range StripBidi(s) {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '@':
			b.WriteString("&#64;")
		case '|':
			b.WriteString("&#124;")
		case '`':
			b.WriteString("&#96;")
		case '#':
			b.WriteString("&#35;")
		case '[', ']', '(', ')', '*', '_', '~', '\\', '!', '"', '\'', '$':
			// Markdown still applies inside inline HTML: entities keep it literal.
			fmt.Fprintf(&b, "&#%d;", r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			if r < 0x20 || r == 0x7f {
				continue
			}
			b.WriteRune(r)
		}
	}
	return noAutolink(b.String())
}

// noAutolink stops GitHub from turning URLs in untrusted text into links.
func noAutolink(s string) string {
	s = strings.ReplaceAll(s, "://", ":\u200b//")
	return strings.ReplaceAll(s, "www.", "www\u200b.")
}

// stoppedText is the comment's line on a sequential A/B job's length: "stopped after 6
// of at most 16 blocks: every rule decided".
func stoppedText(w gate.WorkloadResult) string {
	if w.Stopped == nil {
		return ""
	}
	early := w.Stopped.Reason == gate.StopDecided || w.Stopped.Reason == gate.StopFutile
	return stopLine(early, w.Stopped.AtBlock, w.MaxBlocks, "blocks", w.Stopped.Why)
}

// repeatsText is the comment's line on a candidate's sequential repeats: "stopped after 2
// of at most 6 runs: itl_p99 decided fail".
func repeatsText(w gate.WorkloadResult) string {
	st := w.Repeats
	if st == nil {
		return ""
	}
	return stopLine(st.Reason == result.RepeatsDecided, st.Run, st.Repeats, "runs", st.Why)
}

// stopLine says how many of at most how many units a sequence ran, and why: "stopped
// after" when it stopped before the maximum (early), "ran" when it did not.
func stopLine(early bool, n, most int, units, why string) string {
	verb := "ran"
	if early {
		verb = "stopped after"
	}
	return fmt.Sprintf("%s %d of at most %d %s: %s", verb, n, most, units, why)
}
