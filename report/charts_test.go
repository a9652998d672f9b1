package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/slogate/slogate/result"
)

// svgDoc is what a chart test looks at: the texts drawn and the style of every path.
type svgDoc struct {
	texts  []string
	styles []string // style attribute of each <path>
	xmlns  string
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "svg":
				doc.xmlns = tok.Name.Space
			case "text":
				inText = true
				doc.texts = append(doc.texts, "")
			case "path":
				for _, a := range tok.Attr {
					if a.Name.Local == "style" {
						doc.styles = append(doc.styles, a.Value)
					}
				}
			}
		case xml.EndElement:
			if tok.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				doc.texts[len(doc.texts)-1] += string(tok)
			}
		}
	}
	return doc
}

// stroked counts the paths stroked in colour (#RRGGBB, as vgsvg writes it).
func (d svgDoc) stroked(colour string) int {
	n := 0
	for _, s := range d.styles {
		if strings.Contains(s, "stroke:"+colour+";") {
			n++
		}
	}
	return n
}

func (d svgDoc) hasText(s string) bool { return slices.Contains(d.texts, s) }

const (
	hexBaseline  = "#0072B2"
	hexCandidate = "#D55E00"
)

func TestChartsDrawBothRuns(t *testing.T) {
	cand, base := buildRecord(candidateSpec()), buildRecord(baselineSpec())
	base.Series.Engine = cand.Series.Engine // so that every chart has both runs
	cases := []struct {
		name   string
		chart  func(c, b *result.Record) ([]byte, error)
		axis   string   // the value axis, with its unit
		labels []string // legend entries, %s = run
	}{
		// The CDFs mark the summary's p50 and p99: the legend says what the dots are.
		{"TTFT", TTFTChart, "TTFT (ms)", []string{"%s", "p50 and p99 of the summary"}},
		{"ITL", ITLChart, "gap between content chunks (ms)", []string{"%s", "p50 and p99 of the summary"}},
		{"in flight", InFlightChart, "requests", []string{"%s"}},
		// Two gauges per run, told apart by dashes.
		{"engine queue", EngineQueueChart, "requests", []string{"%s waiting", "%s running"}},
		{"KV", KVChart, "KV cache in use (%)", []string{"%s"}},
	}
	for _, c := range cases {
		for _, withBase := range []bool{true, false} {
			name := c.name + " candidate only"
			b := (*result.Record)(nil)
			if withBase {
				name, b = c.name+" with baseline", base
			}
			t.Run(name, func(t *testing.T) {
				svg, err := c.chart(cand, b)
				if err != nil {
					t.Fatal(err)
				}
				doc := parseSVG(t, svg)
				if doc.xmlns != "http://www.w3.org/2000/svg" {
					t.Errorf("standalone SVG without its namespace: %q", doc.xmlns)
				}
				if !doc.hasText(c.axis) {
					t.Errorf("no axis label %q in %q", c.axis, doc.texts)
				}
				for _, l := range c.labels {
					for _, run := range []string{LabelCandidate, LabelBaseline} {
						want := strings.Replace(l, "%s", run, 1)
						if got := doc.hasText(want); got != (run == LabelCandidate || withBase || !strings.Contains(l, "%s")) {
							t.Errorf("legend %q shown = %v (baseline given: %v)", want, got, withBase)
						}
					}
				}
				// A line per series and its legend thumbnail.
				if n := doc.stroked(hexCandidate); n < 2 {
					t.Errorf("%d paths in the candidate's colour, want a line and a thumbnail", n)
				}
				if n := doc.stroked(hexBaseline); (n >= 2) != withBase {
					t.Errorf("%d paths in the baseline's colour (baseline given: %v)", n, withBase)
				}
			})
		}
	}
}

func TestLatencyScatter(t *testing.T) {
	cand, base := buildRecord(candidateSpec()), buildRecord(baselineSpec())
	cs, bs, err := LatencyScatter(cand, base)
	if err != nil {
		t.Fatal(err)
	}
	c, b := parseSVG(t, cs), parseSVG(t, bs)
	for _, want := range []string{"TTFT (first − sched)", "E2E (last − sched)", "error (at end − sched)", "latency (ms)", "candidate: latency of each request"} {
		if !c.hasText(want) {
			t.Errorf("candidate scatter lacks %q", want)
		}
	}
	// The baseline has no error: no error entry, rather than an entry for nothing.
	if b.hasText("error (at end − sched)") || !b.hasText("baseline: latency of each request") {
		t.Errorf("baseline scatter texts: %q", b.texts)
	}
	// One path per series (and one per legend thumbnail), whatever the number of requests.
	big := bigRecord(3000, 4, 3, 1)
	bcs, _, err := LatencyScatter(big, nil)
	if err != nil {
		t.Fatal(err)
	}
	bc := parseSVG(t, bcs)
	for _, col := range []string{"#0072B2", "#009E73", "#000000"} {
		if n := c.stroked(col); n == 0 {
			t.Errorf("no path in %s in the candidate scatter", col)
		}
	}
	if c.stroked("#009E73") != 2 || bc.stroked("#009E73") != 2 {
		t.Errorf("E2E paths: %d for 16 requests, %d for 3000; want 2 (marks, thumbnail)", c.stroked("#009E73"), bc.stroked("#009E73"))
	}
	if _, nb, err := LatencyScatter(cand, nil); err != nil || nb != nil {
		t.Errorf("without a baseline: baseline chart %d bytes, err %v", len(nb), err)
	}
}

func TestChartsWithoutData(t *testing.T) {
	empty := &result.Record{Window: result.Window{StartUS: 0, EndUS: 1_000_000}}
	charts := map[string]func(c, b *result.Record) ([]byte, error){
		"TTFT": TTFTChart, "ITL": ITLChart, "in flight": InFlightChart, "engine queue": EngineQueueChart, "KV": KVChart,
		"scatter": func(c, b *result.Record) ([]byte, error) { s, _, err := LatencyScatter(c, b); return s, err },
	}
	for name, f := range charts {
		// Nothing in either record: ErrNoData, which the page turns into a sentence.
		if _, err := f(empty, empty); !errors.Is(err, ErrNoData) {
			t.Errorf("%s of empty records: %v, want ErrNoData", name, err)
		}
		// No candidate is the caller's mistake, not a lack of data.
		if _, err := f(nil, empty); err == nil || errors.Is(err, ErrNoData) {
			t.Errorf("%s without a candidate: %v", name, err)
		}
	}
	// Only the baseline has data: it is drawn, and the candidate's legend says "(none)".
	b, err := TTFTChart(empty, buildRecord(baselineSpec()))
	if err != nil {
		t.Fatal(err)
	}
	if doc := parseSVG(t, b); !doc.hasText("candidate (none)") || !doc.hasText("baseline") {
		t.Errorf("legend: %q", doc.texts)
	}
}

// ttftRecord is a record whose successful requests have these TTFTs (ms).
func ttftRecord(ms ...float64) *result.Record {
	rec := &result.Record{}
	for i, v := range ms {
		sched := int64(1_000_000 + i*1000)
		first := sched + int64(v*1000)
		rec.Requests = append(rec.Requests, result.Request{I: i, SchedUS: sched, SendUS: sched, FirstUS: first, LastUS: first, EndUS: first})
	}
	rec.Window = result.Window{StartUS: 1_000_000, EndUS: 1_000_000 + int64(len(ms))*1000 + 1_000_000}
	return rec
}

func TestCDFAxisScale(t *testing.T) {
	cases := []struct {
		name   string
		ms     []float64
		labels []string // x tick labels that only a log axis gives here; nil: linear (the y axis labels 0, 25, 50, 75, 90, 100)
	}{
		// Three decades: a linear axis would crush 1–10 ms against zero.
		{"three decades", []float64{1, 2, 5, 10, 20, 50, 100, 1000}, []string{"1", "10", "100", "1000"}},
		// Within a factor of three: linear reads better.
		{"narrow", []float64{80, 90, 100, 120, 150, 200, 250}, nil},
		// Under two decades, but one stall at 20× the median would squeeze the body into
		// the first twentieth of a linear axis.
		{"tail", []float64{20, 20, 21, 22, 22, 23, 25, 400}, []string{"20", "50", "200"}},
		// A 0 ms value (a cache hit rounded down) must not crash a log axis: it is drawn
		// at the smallest positive value.
		{"zero on a log axis", []float64{0, 1, 3, 10, 500}, []string{"1", "2", "5", "10", "500"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := TTFTChart(ttftRecord(c.ms...), nil)
			if err != nil {
				t.Fatal(err)
			}
			doc := parseSVG(t, b)
			for _, l := range c.labels {
				if !doc.hasText(l) {
					t.Errorf("no log tick %q: %q", l, doc.texts)
				}
			}
			if c.labels == nil && slices.ContainsFunc([]string{"1", "2", "5", "10", "20"}, doc.hasText) {
				t.Errorf("log ticks on what should be a linear axis: %q", doc.texts)
			}
		})
	}
}

func TestSpansDecades(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   bool
	}{
		{1, 100, false},   // exactly two decades: still linear
		{1, 100.5, true},  // just over
		{0, 1000, false},  // no positive minimum: nothing to take a log of
		{50, 50, false},   // a single value
		{0.2, 4000, true}, // sub-millisecond gaps against a stall
	}
	for _, c := range cases {
		if got := spansDecades(c.lo, c.hi); got != c.want {
			t.Errorf("spansDecades(%v, %v) = %v", c.lo, c.hi, got)
		}
	}
}

func TestCDFRanks(t *testing.T) {
	cases := []struct {
		n, max int
	}{
		{1, 2000},         // a single request
		{2000, 2000},      // exactly fits: every rank
		{2001, 2000},      // one too many: sampled
		{2_000_000, 2000}, // 10,000 requests × 200 gaps
	}
	for _, c := range cases {
		r := cdfRanks(c.n, c.max)
		if c.n <= c.max && len(r) != c.n {
			t.Errorf("n=%d: %d ranks, want all", c.n, len(r))
		}
		if len(r) > c.max {
			t.Errorf("n=%d: %d ranks, over %d", c.n, len(r), c.max)
		}
		if r[0] != 0 || r[len(r)-1] != c.n-1 {
			t.Errorf("n=%d: ranks from %d to %d, want the min and the max", c.n, r[0], r[len(r)-1])
		}
		if !slices.IsSorted(r) || len(slices.Compact(slices.Clone(r))) != len(r) {
			t.Errorf("n=%d: ranks not strictly ascending", c.n)
		}
		// The tail is kept: each of the top ten values (p99.9995 and up at 2M) is drawn.
		for k := c.n - min(10, c.n); k < c.n; k++ {
			if !slices.Contains(r, k) {
				t.Errorf("n=%d: rank %d of the tail dropped", c.n, k)
			}
		}
	}
	pts := cdfPoints([]int64{1000, 2000, 2000, 3000}, MaxLinePoints)
	want := plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 25}, {X: 2, Y: 50}, {X: 2, Y: 75}, {X: 3, Y: 100}}
	if !slices.Equal(pts, want) {
		t.Errorf("cdfPoints = %v, want %v", pts, want)
	}
}

func TestDecimate(t *testing.T) {
	var pts plotter.XYs
	for i := range 10_000 {
		y := float64(i % 7)
		switch i {
		case 4321:
			y = 500 // a one-sample spike
		case 8765:
			y = -3 // a one-sample dip
		}
		pts = append(pts, plotter.XY{X: float64(i), Y: y})
	}
	out := decimate(pts, 2000)
	if len(out) > 2000 {
		t.Fatalf("%d points, over 2000", len(out))
	}
	if !slices.ContainsFunc(out, func(p plotter.XY) bool { return p.X == 4321 && p.Y == 500 }) {
		t.Error("the spike was dropped")
	}
	if !slices.ContainsFunc(out, func(p plotter.XY) bool { return p.X == 8765 && p.Y == -3 }) {
		t.Error("the dip was dropped")
	}
	if !slices.IsSortedFunc(out, func(a, b plotter.XY) int { return int(a.X - b.X) }) {
		t.Error("points out of time order")
	}
	small := pts[:50]
	if got := decimate(small, 2000); len(got) != 50 {
		t.Errorf("a short series was decimated to %d points", len(got))
	}
}

// The ITL CDF of a large record stays small: its size depends on MaxLinePoints, not on
// the number of gaps. (BenchmarkHTML reports the size at 10,000 × 200.)
func TestITLChartSizeIsBounded(t *testing.T) {
	big := bigRecord(3000, 20, 4, 1)
	b, err := ITLChart(big, big)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 150_000 {
		t.Errorf("ITL chart of 60,000 gaps × 2 is %d bytes, want ≤ 150,000", len(b))
	}
}
