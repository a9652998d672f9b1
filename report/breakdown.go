package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slogate/slogate/result"
)

// The breakdowns of a summary (by_class, by_turn, by_history) as tables of text: one
// builder per kind, shared by the terminal, the comment and the HTML page. Every figure
// is read from the summary; a row whose requests all failed shows its latencies as "—".

// bdTable is one breakdown of one summary.
type bdTable struct {
	Heading string
	Head    []string // the key's column first
	Rows    []bdRow
}

type bdRow struct {
	Key   string
	Cells []string // one per Head after the first
}

// lat is a latency of a row with `completed` successful requests: "—" when none.
func lat(v float64, completed int) string {
	if completed == 0 {
		return "—"
	}
	return num(v)
}

func classTable(s *result.Summary) *bdTable {
	if len(s.ByClass) == 0 {
		return nil
	}
	t := &bdTable{Heading: "By class", Head: []string{"class", "requests", "errors", "SLO attainment", "goodput share",
		"TTFT p50 ms", "TTFT p95 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p99 ms"}}
	for _, c := range s.ByClass {
		t.Rows = append(t.Rows, bdRow{Key: className(c.Class), Cells: []string{
			strconv.Itoa(c.Requests), strconv.Itoa(c.Errors), pctStr(c.SLOAttainment), pctStr(c.GoodputShare),
			lat(c.TTFTP50ms, c.Completed), lat(c.TTFTP95ms, c.Completed), lat(c.TTFTP99ms, c.Completed),
			lat(c.TPOTP50ms, c.Completed), lat(c.ITLP99ms, c.Completed),
		}})
	}
	return t
}

func className(c string) string {
	if c == "" {
		return "(no class)"
	}
	return c
}

func turnTable(s *result.Summary) *bdTable {
	if len(s.ByTurn) == 0 {
		return nil
	}
	t := &bdTable{Heading: "By turn", Head: []string{"turn", "requests", "errors", "history tokens p50", "history tokens mean",
		"TTFT p50 ms", "TTFT p95 ms", "ITL p99 ms"}}
	for _, x := range s.ByTurn {
		t.Rows = append(t.Rows, bdRow{Key: strconv.Itoa(x.Turn), Cells: []string{
			strconv.Itoa(x.Requests), strconv.Itoa(x.Errors), strconv.Itoa(x.HistoryTokensP50), num(x.HistoryTokensMean),
			lat(x.TTFTP50ms, x.Completed), lat(x.TTFTP95ms, x.Completed), lat(x.ITLP99ms, x.Completed),
		}})
	}
	return t
}

func historyLabel(h result.HistoryStats) string {
	if h.MinTokens == h.MaxTokens {
		return strconv.Itoa(h.MinTokens)
	}
	return fmt.Sprintf("%d–%d", h.MinTokens, h.MaxTokens)
}

func historyTable(s *result.Summary) *bdTable {
	if len(s.ByHistory) == 0 {
		return nil
	}
	t := &bdTable{Heading: "By history length", Head: []string{"history tokens", "requests", "errors", "TTFT p50 ms", "TTFT p95 ms"}}
	for _, h := range s.ByHistory {
		t.Rows = append(t.Rows, bdRow{Key: historyLabel(h), Cells: []string{
			strconv.Itoa(h.Requests), strconv.Itoa(h.Errors), lat(h.TTFTP50ms, h.Completed), lat(h.TTFTP95ms, h.Completed),
		}})
	}
	return t
}

// breakdownTables are a summary's breakdowns that it has, in order.
func breakdownTables(s *result.Summary) []*bdTable {
	var out []*bdTable
	for _, t := range []*bdTable{classTable(s), turnTable(s), historyTable(s)} {
		if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// terminalBreakdowns prints the breakdowns under the run table.
func terminalBreakdowns(w io.Writer, s *result.Summary) {
	for _, t := range breakdownTables(s) {
		fmt.Fprintf(w, "%s:\n", strings.ToLower(t.Heading))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(t.Head, "\t")+"\t")
		for _, r := range t.Rows {
			fmt.Fprintln(tw, r.Key+"\t"+strings.Join(r.Cells, "\t")+"\t")
		}
		tw.Flush()
	}
}

// mdBreakdowns writes the candidate's breakdowns as Markdown tables (the comment's
// details). Class names come from the config, but are escaped like any other text.
func mdBreakdowns(b *strings.Builder, s *result.Summary) {
	for _, t := range breakdownTables(s) {
		fmt.Fprintf(b, "**%s**\n\n|", t.Heading)
		for _, h := range t.Head {
			b.WriteString(" " + h + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("--:|", len(t.Head)-1) + "\n")
		for _, r := range t.Rows {
			fmt.Fprintf(b, "| %s | %s |\n", esc(r.Key), strings.Join(r.Cells, " | "))
		}
		b.WriteString("\n")
	}
}

// MaxComparedTurns bounds the turns the comment compares side by side: the HTML report
// and the details have every one.
const MaxComparedTurns = 12

// mdCompareBreakdowns writes, where both the baseline and the candidate have a
// breakdown, one compact table per kind with "baseline → candidate" in each cell, so that
// a reviewer sees which class or turn moved.
func mdCompareBreakdowns(b *strings.Builder, base, cand *result.Summary) {
	if base == nil || cand == nil {
		return
	}
	arrow := func(bv float64, bc int, cv float64, cc int) string {
		return lat(bv, bc) + " → " + lat(cv, cc)
	}
	if len(base.ByClass) > 0 && len(cand.ByClass) > 0 {
		b.WriteString("| class (baseline → candidate) | TTFT p95 ms | ITL p99 ms | TPOT p50 ms | SLO attainment | errors |\n|---|--:|--:|--:|--:|--:|\n")
		var keys []string
		for _, c := range append(slices.Clone(base.ByClass), cand.ByClass...) {
			if !slices.Contains(keys, c.Class) {
				keys = append(keys, c.Class)
			}
		}
		slices.Sort(keys)
		find := func(cs []result.ClassStats, k string) result.ClassStats {
			for _, c := range cs {
				if c.Class == k {
					return c
				}
			}
			return result.ClassStats{Class: k}
		}
		for _, k := range keys {
			x, y := find(base.ByClass, k), find(cand.ByClass, k)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s → %s | %d → %d |\n", esc(className(k)),
				arrow(x.TTFTP95ms, x.Completed, y.TTFTP95ms, y.Completed), arrow(x.ITLP99ms, x.Completed, y.ITLP99ms, y.Completed),
				arrow(x.TPOTP50ms, x.Completed, y.TPOTP50ms, y.Completed),
				pctStr(x.SLOAttainment), pctStr(y.SLOAttainment), x.Errors, y.Errors)
		}
		b.WriteString("\n")
	}
	if len(base.ByTurn) > 0 && len(cand.ByTurn) > 0 {
		b.WriteString("| turn (baseline → candidate) | TTFT p50 ms | TTFT p95 ms | ITL p99 ms | history tokens p50 | errors |\n|---|--:|--:|--:|--:|--:|\n")
		find := func(ts []result.TurnStats, k int) result.TurnStats {
			for _, t := range ts {
				if t.Turn == k {
					return t
				}
			}
			return result.TurnStats{Turn: k}
		}
		var keys []int
		for _, t := range append(slices.Clone(base.ByTurn), cand.ByTurn...) {
			if !slices.Contains(keys, t.Turn) {
				keys = append(keys, t.Turn)
			}
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i == MaxComparedTurns {
				fmt.Fprintf(b, "| … %d more turns in the details and the HTML report | | | | | |\n", len(keys)-i)
				break
			}
			x, y := find(base.ByTurn, k), find(cand.ByTurn, k)
			fmt.Fprintf(b, "| %d | %s | %s | %s | %d → %d | %d → %d |\n", k,
				arrow(x.TTFTP50ms, x.Completed, y.TTFTP50ms, y.Completed), arrow(x.TTFTP95ms, x.Completed, y.TTFTP95ms, y.Completed),
				arrow(x.ITLP99ms, x.Completed, y.ITLP99ms, y.Completed), x.HistoryTokensP50, y.HistoryTokensP50, x.Errors, y.Errors)
		}
		b.WriteString("\n")
	}
}

// htmlBreakdown is one breakdown of the HTML page: a row per key and run.
type htmlBreakdown struct {
	Heading string
	Head    []string
	Rows    []htmlBdRow
	Note    string
}

type htmlBdRow struct {
	Key, Run string
	First    bool // first row of its key
	Span     int
	Cells    []string
}

// htmlBreakdowns lays the runs' breakdowns out key by key, baseline above candidate.
func htmlBreakdowns(rs []run) []htmlBreakdown {
	kinds := []struct {
		heading, note string
		get           func(*result.Summary) *bdTable
	}{
		{"By class", "Each class's requests alone, by the summary's rules: latencies over its successful requests, errors count as SLO misses; goodput share is its part of the run's good requests.", classTable},
		{"By turn", "Each turn index of the sessions; history tokens are the prompt tokens the turn carried from earlier turns.", turnTable},
		{"By history length", "Turns by the history they carried, in power-of-two buckets of tokens (0 is no history).", historyTable},
	}
	var out []htmlBreakdown
	for _, k := range kinds {
		tables := make([]*bdTable, len(rs))
		var keys []string
		for i, x := range rs {
			tables[i] = k.get(&x.rec.Summary)
			if tables[i] == nil {
				continue
			}
			for _, r := range tables[i].Rows {
				if !slices.Contains(keys, r.Key) {
					keys = append(keys, r.Key)
				}
			}
		}
		var head []string
		for _, t := range tables {
			if t != nil {
				head = t.Head
			}
		}
		if head == nil {
			continue
		}
		// Turns and history buckets in numeric order (by their first number), classes
		// by name.
		slices.SortFunc(keys, func(a, b string) int {
			if x, y := leadingInt(a), leadingInt(b); x != y {
				return x - y
			}
			return strings.Compare(a, b)
		})
		bd := htmlBreakdown{Heading: k.heading, Head: head, Note: k.note}
		for _, key := range keys {
			first := true
			for i, x := range rs {
				cells := make([]string, len(head)-1)
				for j := range cells {
					cells[j] = "—"
				}
				if t := tables[i]; t != nil {
					for _, r := range t.Rows {
						if r.Key == key {
							cells = r.Cells
						}
					}
				}
				bd.Rows = append(bd.Rows, htmlBdRow{Key: key, Run: x.label, First: first, Span: len(rs), Cells: cells})
				first = false
			}
		}
		out = append(out, bd)
	}
	return out
}

// TurnChart draws TTFT p50 (solid) and p95 (dashed) against the turn index, from each
// record's summary.by_turn. It returns ErrNoData when neither record has turns.
func TurnChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ls []pctLine
	for _, r := range rs {
		var p50, p95 plotter.XYs
		for _, t := range r.rec.Summary.ByTurn {
			if t.Completed == 0 {
				continue
			}
			p50 = append(p50, plotter.XY{X: float64(t.Turn), Y: t.TTFTP50ms})
			p95 = append(p95, plotter.XY{X: float64(t.Turn), Y: t.TTFTP95ms})
		}
		ls = append(ls, pctLine{r, p50, false}, pctLine{r, p95, true})
	}
	b, err := pctChart("TTFT by turn: p50 (solid) and p95 (dashed)", "turn", nil, ls)
	if err != nil {
		return nil, fmt.Errorf("turn chart: %w", err)
	}
	return b, nil
}

// HistoryChart draws TTFT p50 (solid) and p95 (dashed) against the history-length bucket
// of summary.by_history, one evenly spaced position per bucket that either record has.
// It returns ErrNoData when neither record has one.
func HistoryChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var buckets []int // MinTokens, ascending
	for _, r := range rs {
		for _, h := range r.rec.Summary.ByHistory {
			if !slices.Contains(buckets, h.MinTokens) {
				buckets = append(buckets, h.MinTokens)
			}
		}
	}
	slices.Sort(buckets)
	var ticks []plot.Tick
	var ls []pctLine
	for _, r := range rs {
		var p50, p95 plotter.XYs
		for _, h := range r.rec.Summary.ByHistory {
			x := float64(slices.Index(buckets, h.MinTokens))
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == x }) {
				ticks = append(ticks, plot.Tick{Value: x, Label: historyLabel(h)})
			}
			if h.Completed == 0 {
				continue
			}
			p50 = append(p50, plotter.XY{X: x, Y: h.TTFTP50ms})
			p95 = append(p95, plotter.XY{X: x, Y: h.TTFTP95ms})
		}
		ls = append(ls, pctLine{r, p50, false}, pctLine{r, p95, true})
	}
	b, err := pctChart("TTFT by history length: p50 (solid) and p95 (dashed)", "history tokens carried by the turn", ticks, ls)
	if err != nil {
		return nil, fmt.Errorf("history chart: %w", err)
	}
	return b, nil
}

type pctLine struct {
	run    run
	pts    plotter.XYs
	dashed bool
}

// pctChart draws percentile lines with a point at each value; ticks, when given, label
// the x axis (ordinal buckets).
func pctChart(title, xlabel string, ticks []plot.Tick, ls []pctLine) ([]byte, error) {
	ch := newChart(title, xlabel, "TTFT (ms)")
	p := ch.p
	drawn := 0
	hi, xlo, xhi := 0.0, 0.0, 0.0
	for _, l := range ls {
		if len(l.pts) == 0 {
			continue
		}
		slices.SortFunc(l.pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
		line, pts, err := plotter.NewLinePoints(l.pts)
		if err != nil {
			return nil, err
		}
		line.LineStyle = draw.LineStyle{Color: l.run.color, Width: 1.25}
		if l.dashed {
			line.LineStyle.Dashes = []vg.Length{4, 2}
		}
		pts.Color, pts.Radius, pts.Shape = l.run.color, 2, draw.CircleGlyph{}
		p.Add(line, pts)
		label := l.run.label + " p50"
		if l.dashed {
			label = l.run.label + " p95"
		}
		ch.legend(label, line)
		for _, q := range l.pts {
			hi = max(hi, q.Y)
			if drawn == 0 {
				xlo, xhi = q.X, q.X
			}
			xlo, xhi = min(xlo, q.X), max(xhi, q.X)
			drawn++
		}
	}
	if drawn == 0 {
		return nil, ErrNoData
	}
	p.Y.Min, p.Y.Max = 0, max(hi*1.1, 1)
	p.X.Min, p.X.Max = xlo-0.5, xhi+0.5
	if ticks != nil {
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	} else {
		var ts []plot.Tick
		step := max(1, int(xhi-xlo+1)/12)
		for x := int(xlo); x <= int(xhi); x += step {
			ts = append(ts, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ts)
	}
	return ch.render()
}

// leadingInt is the number a key starts with ("256–511" → 256), -1 for none.
func leadingInt(s string) int {
	n, digits := 0, 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = 10*n + int(c-'0')
		digits++
	}
	if digits == 0 {
		return -1
	}
	return n
}
