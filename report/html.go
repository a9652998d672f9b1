package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// HTMLSection is a fragment the caller has already rendered (the verdict table, the
// drift table): it is inserted as is, so it must come from a template that escaped it.
type HTMLSection struct {
	Heading string
	HTML    template.HTML
}

// HTMLReport is what WriteHTML renders. Candidate is required; Baseline may be nil.
//
// Verdict is the headline; it is coloured by its first word (case-insensitive): "fail…"
// red, "warn…" or "incomparable…" amber, "pass…" or "improved…" green, anything else
// neutral.
type HTMLReport struct {
	Title     string
	Generated time.Time // printed as is (UTC); the page never reads the clock
	Verdict   string
	Sections  []HTMLSection
	Candidate *result.Record
	Baseline  *result.Record
	// Gate, when set, opens the page: the verdict of every rule of every workload, then
	// every environment field compared. Verdict defaults to its headline.
	Gate *gate.Result
	// History is the candidate's workload's baseline history, oldest first, drawn as one
	// trend per gated metric with the candidate marked; HistoryPath names its file.
	History     []gate.HistoryEntry
	HistoryPath string
}

// WriteHTML writes a self-contained HTML page: the verdict, the verdict of every rule and
// the environment drift (with Gate), the charts as inline SVG (baseline beside candidate,
// then the history's trends), the caller's sections, then the runs side by side (summary
// numbers, errors, environment, notes). It has no script, no external font, image or style sheet: it opens offline.
// Every string from a record is escaped (html/template). A chart that cannot be drawn is
// replaced by a message saying why; the page is still written. Nothing is written to w
// unless the whole page rendered.
func WriteHTML(w io.Writer, r HTMLReport) error {
	if r.Candidate == nil {
		return errors.New("report: HTML report without a candidate record")
	}
	pg := buildPage(r)
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, pg); err != nil {
		return fmt.Errorf("report: HTML: %w", err)
	}
	_, err := io.WriteString(w, StripBidi(b.String()))
	return err
}

// page is the template's view: every figure is already a string.
type page struct {
	Title, Generated, Verdict, VerdictClass string
	Sections                                []HTMLSection
	HasGate                                 bool
	Verdicts                                []verdictRow
	Drift                                   []driftRow
	Runs                                    []string // column heads: baseline first
	RunRows, FigureRows                     []row
	Latency                                 []latencyRow
	Errors                                  []errorRow
	Env                                     []row
	EnvDiffers                              bool
	Notes                                   []noteGroup
	Charts                                  []chart
	Breakdowns                              []htmlBreakdown
}

type row struct {
	Name    string
	Cells   []string
	Mono    bool
	Differs bool
}

type latencyRow struct {
	Metric, Definition, Run string
	First                   bool // first row of its metric
	Cells                   []string
}

type errorRow struct{ Run, Reason, Count, Example string }

type noteGroup struct {
	Run   string
	Notes []string
}

type chart struct {
	Title, Caption string
	SVG            template.HTML
	Missing        string // why the chart is not drawn
}

func buildPage(r HTMLReport) page {
	rs, _ := runsOf(r.Candidate, r.Baseline)
	pg := page{
		Title:        r.Title,
		Verdict:      r.Verdict,
		VerdictClass: verdictClass(r.Verdict),
		Sections:     r.Sections,
	}
	if pg.Title == "" {
		pg.Title = "slogate report: " + r.Candidate.Workload
	}
	if r.Gate != nil {
		pg.HasGate = true
		pg.Verdicts = verdictRows(r.Gate)
		pg.Drift = driftRows(r.Gate)
		if pg.Verdict == "" {
			pg.Verdict = plainHeadline(r.Gate)
		}
		pg.VerdictClass = htmlVerdictClass(r.Gate.Verdict)
	}
	if !r.Generated.IsZero() {
		pg.Generated = r.Generated.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	for _, x := range rs {
		pg.Runs = append(pg.Runs, x.label)
	}
	pg.RunRows = runRows(rs)
	pg.Latency = latencyRows(rs)
	pg.Breakdowns = htmlBreakdowns(rs)
	pg.FigureRows = figureRows(rs)
	pg.Errors = errorRows(rs)
	pg.Env, pg.EnvDiffers = envRows(rs)
	pg.Notes = notes(rs)
	pg.Charts = charts(r.Candidate, r.Baseline)
	pg.Charts = append(pg.Charts, trendCharts(r)...)
	return pg
}

func verdictClass(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	switch {
	case strings.HasPrefix(v, "fail"):
		return "fail"
	case strings.HasPrefix(v, "warn"), strings.HasPrefix(v, "inconclusive"), strings.HasPrefix(v, "incomparable"), strings.HasPrefix(v, "no baseline"), strings.HasPrefix(v, "no_baseline"):
		return "warn"
	case strings.HasPrefix(v, "pass"), strings.HasPrefix(v, "improved"):
		return "pass"
	}
	return "neutral"
}

// each builds a row with one cell per run.
func each(name string, rs []run, f func(*result.Record) string) row {
	c := make([]string, len(rs))
	for i, x := range rs {
		c[i] = f(x.rec)
	}
	return row{Name: name, Cells: c}
}

func runRows(rs []run) []row {
	mono := func(r row) row { r.Mono = true; return r }
	rows := []row{
		each("workload", rs, func(r *result.Record) string { return r.Workload }),
		mono(each("workload hash", rs, func(r *result.Record) string { return r.WorkloadHash })),
		each("mode", rs, func(r *result.Record) string { return r.Mode + " loop" }),
		each("model", rs, func(r *result.Record) string { return r.Model }),
		each("API", rs, func(r *result.Record) string { return r.API }),
		each("target", rs, func(r *result.Record) string { return r.Target }),
		each("config", rs, func(r *result.Record) string { return r.Config }),
		each("started", rs, func(r *result.Record) string {
			if r.Start.IsZero() {
				return ""
			}
			return r.Start.UTC().Format("2006-01-02 15:04:05 UTC")
		}),
		each("measured window", rs, func(r *result.Record) string { return num(r.Summary.DurationS) + " s" }),
		each("trial", rs, func(r *result.Record) string {
			if r.Trial == 0 {
				return ""
			}
			return strconv.Itoa(r.Trial)
		}),
		each("shard", rs, func(r *result.Record) string { return r.Shard }),
		each("prompt calibration", rs, func(r *result.Record) string { return r.Calibration.Method }),
		each("tool version", rs, func(r *result.Record) string { return r.ToolVersion }),
		each("complete", rs, func(r *result.Record) string {
			if r.Incomplete {
				return "INCOMPLETE: " + r.IncompleteReason
			}
			return "yes"
		}),
	}
	// Rows empty in every run say nothing.
	return slices.DeleteFunc(rows, func(r row) bool {
		return !slices.ContainsFunc(r.Cells, func(c string) bool { return c != "" })
	})
}

func latencyRows(rs []run) []latencyRow {
	metrics := []struct {
		name, def string
		get       func(*result.Summary) result.Percentiles
	}{
		{"TTFT", "first − sched", func(s *result.Summary) result.Percentiles { return s.TTFTms }},
		{"TTFT from send", "first − send", func(s *result.Summary) result.Percentiles { return s.TTFTSendms }},
		{"TPOT", "(last − first) / (tokens − 1)", func(s *result.Summary) result.Percentiles { return s.TPOTms }},
		{"ITL", "every gap, pooled", func(s *result.Summary) result.Percentiles { return s.ITLms }},
		{"E2E", "last − sched", func(s *result.Summary) result.Percentiles { return s.E2Ems }},
	}
	var out []latencyRow
	for _, m := range metrics {
		for i, x := range rs {
			p := m.get(&x.rec.Summary)
			count := strconv.FormatInt(p.Count, 10)
			if p.Clamped > 0 {
				count += fmt.Sprintf(" (%d clamped)", p.Clamped)
			}
			out = append(out, latencyRow{
				Metric: m.name, Definition: m.def, Run: x.label, First: i == 0,
				Cells: []string{num(p.P50), num(p.P90), num(p.P95), num(p.P99), num(p.P999), num(p.Max), num(p.Mean), count},
			})
		}
	}
	return out
}

func percent(f float64) string { return num(100*f) + " %" }

func figureRows(rs []run) []row {
	s := func(r *result.Record) *result.Summary { return &r.Summary }
	rows := []row{
		each("requests measured", rs, func(r *result.Record) string { return strconv.Itoa(s(r).Requests) }),
		each("completed", rs, func(r *result.Record) string { return strconv.Itoa(s(r).Completed) }),
		each("error rate", rs, func(r *result.Record) string { return percent(s(r).ErrorRate) + errorList(s(r).Errors) }),
		each("SLO attainment (target)", rs, func(r *result.Record) string {
			t := ""
			if r.SLOAttainmentTarget > 0 {
				t = " (target " + percent(r.SLOAttainmentTarget) + ")"
			}
			return percent(s(r).SLOAttainment) + t
		}),
		each("goodput", rs, func(r *result.Record) string { return num(s(r).GoodputRPS) + " req/s" }),
		each("throughput", rs, func(r *result.Record) string { return num(s(r).ThroughputRPS) + " req/s" }),
		each("output tokens", rs, func(r *result.Record) string { return num(s(r).OutputTokensPS) + " tok/s" }),
		each("dispatch lag p50 / p99 / max", rs, func(r *result.Record) string {
			l := s(r).DispatchLagms
			sat := ""
			if s(r).ClientSaturated {
				sat = " CLIENT-SATURATED"
			}
			return fmt.Sprintf("%s / %s / %s ms%s", num(l.P50), num(l.P99), num(l.Max), sat)
		}),
		each("in flight mean / max", rs, func(r *result.Record) string {
			return fmt.Sprintf("%s / %d", num(s(r).InFlight.Mean), s(r).InFlight.Max)
		}),
		each("prompt tokens p50 / p95: target, achieved", rs, func(r *result.Record) string {
			l := s(r).Lengths
			return fmt.Sprintf("%s / %s, %s / %s", num(l.PromptTarget.P50), num(l.PromptTarget.P95), num(l.Prompt.P50), num(l.Prompt.P95))
		}),
		each("output tokens p50 / p95: target, achieved", rs, func(r *result.Record) string {
			l := s(r).Lengths
			return fmt.Sprintf("%s / %s, %s / %s", num(l.OutputTarget.P50), num(l.OutputTarget.P95), num(l.Output.P50), num(l.Output.P95))
		}),
		each("early stops", rs, func(r *result.Record) string { return strconv.Itoa(s(r).EarlyStops) }),
	}
	if slices.ContainsFunc(rs, func(x run) bool { return x.rec.Summary.Tasks != nil }) {
		rows = append(rows, each("tasks completed / within the SLO; task goodput", rs, func(r *result.Record) string {
			t := s(r).Tasks
			if t == nil {
				return "-"
			}
			return fmt.Sprintf("%d of %d / %d; %s tasks/s, %s requests per completed task", t.Completed, t.Tasks, t.Met, num(t.TaskGoodput), num(t.RequestsPerCompleted))
		}))
	}
	// SLO checks, in the order the candidate lists them, then any only the baseline has.
	type key struct {
		metric   string
		pct, lim float64
	}
	var keys []key
	for i := len(rs) - 1; i >= 0; i-- {
		for _, c := range rs[i].rec.Summary.SLOChecks {
			if k := (key{c.Metric, c.Percentile, c.LimitMS}); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		rows = append(rows, each(fmt.Sprintf("SLO %s p%s ≤ %s ms", k.metric, pct(k.pct), num(k.lim)), rs, func(r *result.Record) string {
			for _, c := range r.Summary.SLOChecks {
				if (key{c.Metric, c.Percentile, c.LimitMS}) == k {
					if c.Met {
						return num(c.ValueMS) + " ms, met"
					}
					return num(c.ValueMS) + " ms, MISSED"
				}
			}
			return "not checked"
		}))
	}
	if slices.ContainsFunc(rs, func(x run) bool { return x.rec.Warmup != nil }) {
		rows = append(rows, each("warm-up (excluded)", rs, func(r *result.Record) string {
			w := r.Warmup
			if w == nil {
				return "none"
			}
			out := fmt.Sprintf("%d requests, cold TTFT %s ms, TTFT p50 %s ms", w.Requests, num(w.ColdTTFTms), num(w.TTFTms.P50))
			if w.EngineStartS > 0 {
				out += fmt.Sprintf(", engine start %s s", num(w.EngineStartS))
			}
			return out + errorList(w.Errors)
		}))
	}
	if slices.ContainsFunc(rs, func(x run) bool { return x.rec.Startup != nil }) {
		rows = append(rows, each("engine start", rs, func(r *result.Record) string {
			if r.Startup == nil {
				return "not started by slogate"
			}
			return startupText(r.Startup)
		}))
	}
	if slices.ContainsFunc(rs, func(x run) bool { return x.rec.Summary.PrefixCache != nil }) {
		rows = append(rows, each("prefix-cache hits over the window", rs, func(r *result.Record) string {
			pc := r.Summary.PrefixCache
			if pc == nil {
				return "not reported"
			}
			mode := ""
			if r.PrefixCache != nil {
				mode = " (" + r.PrefixCache.Mode + ")"
			}
			return percent(pc.HitRate) + mode + ", " + pc.Source + prefixSplit(pc)
		}))
	}
	if slices.ContainsFunc(rs, func(x run) bool { return x.rec.Priming != nil }) {
		rows = append(rows, each("priming pass (excluded)", rs, func(r *result.Record) string {
			p := r.Priming
			if p == nil {
				return "none"
			}
			return fmt.Sprintf("%d requests, %d prompt tokens, %s s at concurrency %d", p.Requests, p.PromptTokens, num(p.DurationS), p.Concurrency) + errorList(p.Errors)
		}))
	}
	return rows
}

// errorRows lists each run's error reasons with their count and, as an example, the
// detail of the first request (in index order) that failed for that reason.
func errorRows(rs []run) []errorRow {
	var out []errorRow
	for _, x := range rs {
		for _, reason := range slices.Sorted(maps.Keys(x.rec.Summary.Errors)) {
			ex := ""
			for i := range x.rec.Requests {
				if q := &x.rec.Requests[i]; q.Error == reason {
					ex = q.ErrorDetail
					break
				}
			}
			out = append(out, errorRow{Run: x.label, Reason: reason, Count: strconv.Itoa(x.rec.Summary.Errors[reason]), Example: ex})
		}
	}
	return out
}

// envRows lists the union of the runs' environment keys, sorted; a row whose values
// differ between the runs is marked (the gate's drift policy says what that means).
func envRows(rs []run) ([]row, bool) {
	keys := map[string]bool{}
	for _, x := range rs {
		for k := range x.rec.Environment {
			keys[k] = true
		}
	}
	var out []row
	anyDiff := false
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		r := each(k, rs, func(rec *result.Record) string {
			if v, ok := rec.Environment[k]; ok {
				return v
			}
			return "—"
		})
		r.Mono = true
		r.Differs = len(rs) > 1 && slices.ContainsFunc(r.Cells, func(c string) bool { return c != r.Cells[0] })
		anyDiff = anyDiff || r.Differs
		out = append(out, r)
	}
	return out, anyDiff
}

func notes(rs []run) []noteGroup {
	var out []noteGroup
	for _, x := range rs {
		var n []string
		if x.rec.Incomplete {
			n = append(n, "incomplete run: "+x.rec.IncompleteReason)
		}
		n = append(n, x.rec.Notes...)
		if len(n) > 0 {
			out = append(out, noteGroup{Run: x.label, Notes: n})
		}
	}
	return out
}

// charts draws every chart; one that cannot be drawn becomes a message.
func charts(cand, base *result.Record) []chart {
	var out []chart
	add := func(title, caption, missing string, f func(c, b *result.Record) ([]byte, error)) {
		b, err := f(cand, base)
		out = append(out, chartOf(title, caption, missing, b, err))
	}
	// A baseline rebuilt from a baseline file has distributions but no timelines (no
	// window): the charts over time show the candidate alone.
	dists := base
	if base != nil && base.Window.EndUS == 0 {
		base = nil
	}
	addDist := func(title, caption, missing string, f func(c, b *result.Record) ([]byte, error)) {
		b, err := f(cand, dists)
		out = append(out, chartOf(title, caption, missing, b, err))
	}
	addDist("TTFT distribution",
		"Empirical CDF of each successful request's time to first token, measured from its scheduled send. Dots mark the p50 and p99 of the run summary.",
		"No successful request produced a first token: there is no TTFT to draw.", TTFTChart)
	addDist("Inter-token latency distribution",
		"Empirical CDF of every gap between consecutive content chunks of the successful requests, pooled. Dots mark the p50 and p99 of the run summary.",
		"No successful request streamed two content chunks: there is no gap to draw.", ITLChart)
	add("Requests in flight",
		"Client-side count of requests scheduled and not yet finished, sampled during the measured window.",
		"The record has no in-flight series.", InFlightChart)

	hasQ := func(r *result.Record) bool {
		return r != nil && (len(r.Series.Engine[SeriesQueueDepth]) > 0 || len(r.Series.Engine[SeriesRunning]) > 0)
	}
	hasKV := func(r *result.Record) bool { return r != nil && len(r.Series.Engine[SeriesKVUsage]) > 0 }
	hasAny := func(r *result.Record) bool { return hasQ(r) || hasKV(r) }
	switch {
	case !hasAny(cand) && !hasAny(base):
		out = append(out, chart{Title: "Engine queue and KV occupancy",
			Missing: "The engine exposes no metrics (no queue depth, running requests or KV occupancy was sampled): these charts are omitted."})
	default:
		note := ""
		switch {
		case !hasAny(cand):
			note = "For the candidate, the engine exposes no metrics: this chart shows the baseline only."
		case base != nil && !hasAny(base):
			note = "For the baseline, the engine exposes no metrics: this chart shows the candidate only."
		}
		add("Engine queue",
			join("Requests waiting in the engine's queue (solid) and running in its batch (dashed), from its metrics endpoint.", note),
			"The engine exposes no queue depth or running-requests series: this chart is omitted.", EngineQueueChart)
		add("KV cache occupancy",
			join("Fraction of the engine's KV cache in use, from its metrics endpoint.", note),
			"The engine exposes no KV occupancy series: this chart is omitted.", KVChart)
	}

	// Sessions: TTFT against turn and history, from the summaries (a baseline file has
	// them too).
	if len(cand.Summary.ByTurn) > 0 || (dists != nil && len(dists.Summary.ByTurn) > 0) {
		addDist("TTFT by turn",
			"TTFT p50 and p95 of each turn index of the sessions (summary.by_turn): a growing line is a history the prefix cache did not hold.",
			"No turn had a successful request.", TurnChart)
		addDist("TTFT by history length",
			"TTFT p50 and p95 of the turns by the prompt tokens they carried from earlier turns, in power-of-two buckets (summary.by_history).",
			"No turn had a successful request.", HistoryChart)
	}

	cs, bs, err := LatencyScatter(cand, base)
	const caption = "Each request's TTFT and E2E against its scheduled time; a failed request is a cross at end − sched, so timeouts form a row at the timeout. Overlapping marks are drawn once."
	const missing = "No request to draw."
	if base != nil {
		out = append(out, chartOf("Latency of each request: baseline", caption, missing, bs, err))
	}
	out = append(out, chartOf("Latency of each request: candidate", caption, missing, cs, err))
	return out
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + " " + b
}

func chartOf(title, caption, missing string, svg []byte, err error) chart {
	c := chart{Title: title, Caption: caption}
	switch {
	case errors.Is(err, ErrNoData):
		c.Missing = missing
	case err != nil:
		c.Missing = "This chart could not be drawn: " + err.Error()
	default:
		// The SVG is gonum's output from our own labels; the record's strings never reach
		// it.
		c.SVG = template.HTML(inlineSVG(svg))
	}
	return c
}

// inlineSVG turns a standalone SVG document into an element for an HTML page: the XML
// prolog goes, and so do the namespace declarations (the HTML parser puts <svg> in the
// SVG namespace itself), which leaves the page without a single http:// address of its
// own.
func inlineSVG(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	for _, ns := range []string{
		"\n\txmlns=\"http://www.w3.org/2000/svg\"",
		"\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\"",
	} {
		b = bytes.Replace(b, []byte(ns), nil, 1)
	}
	return bytes.TrimSpace(b)
}

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// pageHTML is written as well-formed XML as well as HTML (self-closed void elements, no
// named entities), so that tests can walk it with encoding/xml.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif; color: #1b1f24; background: #fff; margin: 0 auto; padding: 1.5rem 2rem 3rem; max-width: 72rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 0 0 0.2rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.6rem; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2rem; }
.meta { color: #57606a; margin: 0 0 1rem; }
.verdict { font-size: 1.25rem; font-weight: 600; padding: 0.7rem 1rem; border-radius: 6px; border: 1px solid; white-space: pre-wrap; }
.verdict.pass { background: #dafbe1; border-color: #4ac26b; }
.verdict.warn { background: #fff8c5; border-color: #d4a72c; }
.verdict.fail { background: #ffebe9; border-color: #ff8182; }
.verdict.neutral { background: #f6f8fa; border-color: #d0d7de; }
table { border-collapse: collapse; margin: 0.4rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.85rem; word-break: break-all; }
tr.differs td { background: #fff8c5; }
.def { color: #57606a; font-weight: normal; font-size: 0.8rem; }
.missing { color: #57606a; font-style: italic; }
figure { margin: 1.2rem 0 2rem; }
figcaption { color: #57606a; font-size: 0.9rem; margin-bottom: 0.3rem; }
figcaption b { color: #1b1f24; }
figure svg { width: 100%; max-width: 56rem; height: auto; display: block; }
figure svg text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
ul.notes li { margin: 0.2rem 0; }
td.v { font-weight: 600; white-space: nowrap; }
td.v.pass { background: #dafbe1; }
td.v.warn { background: #fff8c5; }
td.v.fail { background: #ffebe9; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Generated}}<p class="meta">Generated {{.Generated}}</p>
{{end}}{{if .Verdict}}<p class="verdict {{.VerdictClass}}">{{.Verdict}}</p>
{{end}}{{if .HasGate}}<section id="verdicts">
<h2>Verdict of every rule</h2>
<table class="verdicts">
<tr><th>workload</th><th>metric</th><th>baseline</th><th>candidate</th><th>Δ</th><th>interval</th><th>tolerance</th><th>resolution</th><th>verdict</th><th>reason</th></tr>
{{range .Verdicts}}<tr>{{if .Span}}<th rowspan="{{.Span}}">{{.Workload}}</th>{{end}}<td class="mono">{{.Metric}}</td><td class="n">{{.Baseline}}</td><td class="n">{{.Candidate}}</td><td class="n">{{.Delta}}</td><td class="n">{{.Interval}}</td><td class="n">{{.Tolerance}}</td><td class="n">{{.Resolution}}</td><td class="v {{.Class}}">{{.Verdict}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>
<p class="def">Δ is candidate / baseline − 1; the interval is its bootstrap interval over whole requests (or the spread of repeated trials); resolution is the half-width these sample sizes can tell from noise.</p>
</section>
<section id="drift">
<h2>Environment drift</h2>
{{if .Drift}}<table>
<tr><th>workload</th><th>field</th><th>baseline</th><th>candidate</th><th>status</th><th>policy</th><th>verdict</th></tr>
{{range .Drift}}<tr{{if .Changed}} class="differs"{{end}}><td>{{.Workload}}</td><td class="mono">{{.Field}}</td><td class="mono">{{.Baseline}}</td><td class="mono">{{.Candidate}}</td><td>{{.Status}}</td><td>{{.Policy}}</td><td class="v {{.Class}}">{{.Verdict}}</td></tr>
{{end}}</table>
{{else}}<p class="missing">No baseline environment to compare with.</p>
{{end}}</section>
{{end}}<section>
<h2>Charts</h2>
{{range .Charts}}<figure>
<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption>
{{if .Missing}}<p class="missing">{{.Missing}}</p>
{{else}}{{.SVG}}
{{end}}</figure>
{{end}}</section>
{{range .Sections}}<section>
<h2>{{.Heading}}</h2>
{{.HTML}}
</section>
{{end}}<section>
<h2>Runs</h2>
<table>
<tr><th></th>{{range .Runs}}<th>{{.}}</th>{{end}}</tr>
{{range .RunRows}}<tr><th>{{.Name}}</th>{{$m := .Mono}}{{range .Cells}}<td{{if $m}} class="mono"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>
</section>
<section>
<h2>Latency (ms)</h2>
<table>
<tr><th>metric</th><th>run</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th><th>count</th></tr>
{{range .Latency}}<tr>{{if .First}}<th rowspan="{{len $.Runs}}">{{.Metric}} <span class="def">{{.Definition}}</span></th>{{end}}<td>{{.Run}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="def">Latency percentiles are over successful requests; TTFT and E2E are measured from the scheduled send, so queueing in the client or the engine is included.</p>
</section>
{{range .Breakdowns}}<section class="breakdown">
<h2>{{.Heading}}</h2>
<table>
<tr>{{range $i, $h := .Head}}<th>{{$h}}</th>{{if eq $i 0}}<th>run</th>{{end}}{{end}}</tr>
{{range .Rows}}<tr>{{if .First}}<th rowspan="{{.Span}}">{{.Key}}</th>{{end}}<td>{{.Run}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="def">{{.Note}}</p>
</section>
{{end}}<section>
<h2>Throughput, SLO and errors</h2>
<table>
<tr><th></th>{{range .Runs}}<th>{{.}}</th>{{end}}</tr>
{{range .FigureRows}}<tr><th>{{.Name}}</th>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .Errors}}<table>
<tr><th>run</th><th>error</th><th>count</th><th>first detail</th></tr>
{{range .Errors}}<tr><td>{{.Run}}</td><td class="mono">{{.Reason}}</td><td class="n">{{.Count}}</td><td class="mono">{{.Example}}</td></tr>
{{end}}</table>
{{end}}</section>
<section>
<h2>Environment</h2>
{{if .Env}}<table>
<tr><th></th>{{range .Runs}}<th>{{.}}</th>{{end}}</tr>
{{range .Env}}<tr{{if .Differs}} class="differs"{{end}}><th class="mono">{{.Name}}</th>{{range .Cells}}<td class="mono">{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .EnvDiffers}}<p class="def">Highlighted rows differ between the runs.</p>
{{end}}{{else}}<p class="missing">No environment was recorded.</p>
{{end}}</section>
{{if .Notes}}<section>
<h2>Notes</h2>
{{range .Notes}}<p><b>{{.Run}}</b></p>
<ul class="notes">
{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>
{{end}}</section>
{{end}}</body>
</html>
`
