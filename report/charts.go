package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/slogate/slogate/result"
)

// ErrNoData is returned (wrapped) by a chart function when neither record holds anything
// to draw; the page then says so instead of showing an empty frame.
var ErrNoData = errors.New("nothing to chart")

// Legend labels of the two runs.
const (
	LabelBaseline  = "baseline"
	LabelCandidate = "candidate"
)

// Keys of result.Series.Engine that are charted. kv_usage is a fraction of the KV cache
// in use, 0 to 1 (vLLM kv_cache_usage_perc, SGLang token_usage); it is drawn in percent.
const (
	SeriesQueueDepth = "queue_depth"
	SeriesRunning    = "running"
	SeriesKVUsage    = "kv_usage"
)

// MaxLinePoints bounds the points drawn per line: a CDF of two million gaps or a gauge
// sampled for an hour would otherwise make an SVG of tens of megabytes that shows
// nothing more than 2,000 points do at this size.
const MaxLinePoints = 2000

// Chart geometry. The page scales the SVG to its column (it keeps its viewBox).
const (
	chartW = 7.5 * vg.Inch
	chartH = 3.2 * vg.Inch
	// markSize is the side of one scatter mark; marks are snapped to a grid of this
	// size, so that coincident marks are drawn once.
	markSize = vg.Length(2.5)
)

// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
var (
	colBaseline  = color.RGBA{0x00, 0x72, 0xB2, 0xff} // blue
	colCandidate = color.RGBA{0xD5, 0x5E, 0x00, 0xff} // vermillion
	colTTFT      = color.RGBA{0x00, 0x72, 0xB2, 0xff} // blue
	colE2E       = color.RGBA{0x00, 0x9E, 0x73, 0xff} // bluish green
	colError     = color.RGBA{0x00, 0x00, 0x00, 0xff} // black crosses
	colGrid      = color.Gray{0xd0}
)

// run is one record as charted: its label and colour.
type run struct {
	label string
	rec   *result.Record
	color color.Color
}

// runsOf lists the runs to draw, baseline first so that the candidate is drawn on top.
func runsOf(cand, base *result.Record) ([]run, error) {
	if cand == nil {
		return nil, errors.New("report: no candidate record")
	}
	var rs []run
	if base != nil {
		rs = append(rs, run{LabelBaseline, base, colBaseline})
	}
	return append(rs, run{LabelCandidate, cand, colCandidate}), nil
}

// TTFTChart draws the empirical CDF of per-request TTFT (first − sched, ms, successful
// requests with content) of the candidate, and of the baseline when base is not nil.
// Markers on each line are the p50 and p99 of the record's summary. The x axis is
// logarithmic when the values span more than two decades. It returns ErrNoData when
// there is no TTFT at all.
func TTFTChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ss []cdfSeries
	for _, r := range rs {
		var v []int64
		for i := range r.rec.Requests {
			q := &r.rec.Requests[i]
			if t, ok := q.TTFTUS(); ok && q.OK() {
				v = append(v, t)
			}
		}
		ss = append(ss, cdfSeries{run: r, values: v, marks: r.rec.Summary.TTFTms})
	}
	b, err := cdfChart("Time to first token (from scheduled send)", "TTFT (ms)", "requests", ss)
	if err != nil {
		return nil, fmt.Errorf("TTFT chart: %w", err)
	}
	return b, nil
}

// ITLChart draws the empirical CDF of every inter-token gap (itl_us) of the successful
// requests, pooled, as the summary pools them. Lines are down-sampled to MaxLinePoints
// (the tail is kept to the maximum). It returns ErrNoData when there is no gap at all.
func ITLChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ss []cdfSeries
	for _, r := range rs {
		n := 0
		for i := range r.rec.Requests {
			if r.rec.Requests[i].OK() {
				n += len(r.rec.Requests[i].ITLUS)
			}
		}
		v := make([]int64, 0, n)
		for i := range r.rec.Requests {
			if q := &r.rec.Requests[i]; q.OK() {
				v = append(v, q.ITLUS...)
			}
		}
		ss = append(ss, cdfSeries{run: r, values: v, marks: r.rec.Summary.ITLms})
	}
	b, err := cdfChart("Inter-token latency (every gap, pooled)", "gap between content chunks (ms)", "gaps", ss)
	if err != nil {
		return nil, fmt.Errorf("ITL chart: %w", err)
	}
	return b, nil
}

// InFlightChart draws the client-side in-flight count (record.Series.InFlight) against
// seconds from the start of each record's measured window. It returns ErrNoData when
// neither record has the series.
func InFlightChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ss []timeSeries
	for _, r := range rs {
		ss = append(ss, timeSeries{label: r.label, color: r.color, samples: r.rec.Series.InFlight, origin: originUS(r.rec), scale: 1})
	}
	b, err := timeChart("Requests in flight (client side)", "requests", ss, false)
	if err != nil {
		return nil, fmt.Errorf("in-flight chart: %w", err)
	}
	return b, nil
}

// EngineQueueChart draws the engine's waiting (queue_depth, solid) and running (running,
// dashed) requests over time. It returns ErrNoData when neither record has either series.
func EngineQueueChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ss []timeSeries
	for _, r := range rs {
		o := originUS(r.rec)
		ss = append(ss,
			timeSeries{label: r.label + " waiting", color: r.color, samples: r.rec.Series.Engine[SeriesQueueDepth], origin: o, scale: 1},
			timeSeries{label: r.label + " running", color: r.color, samples: r.rec.Series.Engine[SeriesRunning], origin: o, scale: 1, dashed: true},
		)
	}
	b, err := timeChart("Engine queue: waiting and running requests", "requests", ss, false)
	if err != nil {
		return nil, fmt.Errorf("engine queue chart: %w", err)
	}
	return b, nil
}

// KVChart draws the engine's KV cache occupancy (kv_usage, a fraction) in percent over
// time. It returns ErrNoData when neither record has the series.
func KVChart(cand, base *result.Record) ([]byte, error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, err
	}
	var ss []timeSeries
	for _, r := range rs {
		ss = append(ss, timeSeries{label: r.label, color: r.color, samples: r.rec.Series.Engine[SeriesKVUsage], origin: originUS(r.rec), scale: 100})
	}
	b, err := timeChart("KV cache occupancy (engine)", "KV cache in use (%)", ss, true)
	if err != nil {
		return nil, fmt.Errorf("KV chart: %w", err)
	}
	return b, nil
}

// LatencyScatter draws, for each run, every request's TTFT and E2E (ms) against its
// scheduled time (s from the start of the window), and each failed request as a cross at
// end − sched, so that timeouts stand out as a row at the timeout. The two charts share
// their axes so they can be compared by eye; baseSVG is nil when base is nil. Coincident
// marks (closer than a mark's size) are drawn once.
func LatencyScatter(cand, base *result.Record) (candSVG, baseSVG []byte, err error) {
	rs, err := runsOf(cand, base)
	if err != nil {
		return nil, nil, err
	}
	pts := make([]latencyPoints, len(rs))
	lo, hi, xhi := math.Inf(1), math.Inf(-1), 0.0
	for i, r := range rs {
		pts[i] = latencyPointsOf(r.rec)
		for _, s := range [][]plotter.XY{pts[i].ttft, pts[i].e2e, pts[i].errs} {
			for _, p := range s {
				if p.Y > 0 {
					lo = min(lo, p.Y)
				}
				hi, xhi = max(hi, p.Y), max(xhi, p.X)
			}
		}
		if w := windowS(r.rec); w > xhi {
			xhi = w
		}
	}
	if math.IsInf(hi, -1) {
		return nil, nil, fmt.Errorf("latency scatter: %w", ErrNoData)
	}
	if math.IsInf(lo, 1) { // every value is 0
		lo = 1
	}
	ax := yAxis{lo: lo, hi: max(hi, lo), log: spansDecades(lo, hi)}
	for i, r := range rs {
		b, err := scatterChart(r.label, pts[i], ax, xhi)
		if err != nil {
			return nil, nil, fmt.Errorf("latency scatter: %w", err)
		}
		if r.label == LabelCandidate {
			candSVG = b
		} else {
			baseSVG = b
		}
	}
	return candSVG, baseSVG, nil
}

// cdfSeries is one line of a CDF chart.
type cdfSeries struct {
	run
	values []int64 // µs, unsorted; sorted in place
	marks  result.Percentiles
}

// cdfChart draws ss in milliseconds. Values are sorted as integers (two million gaps
// sort several times faster than as floats).
func cdfChart(title, xlabel, what string, ss []cdfSeries) ([]byte, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		if len(s.values) == 0 {
			continue
		}
		slices.Sort(s.values)
		if i, _ := slices.BinarySearch(s.values, 1); i < len(s.values) {
			lo = min(lo, float64(s.values[i])/1000)
		}
		hi = max(hi, float64(s.values[len(s.values)-1])/1000)
	}
	if math.IsInf(hi, -1) {
		return nil, ErrNoData
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	logX := spansDecades(lo, hi) || tailCrushes(ss, hi)
	// A log axis cannot show 0: such values (a sub-microsecond gap rounded down) are
	// drawn at the smallest positive one.
	fix := func(v float64) float64 {
		if logX && v <= 0 {
			return lo
		}
		return v
	}
	ch := newChart(title, xlabel, "% of "+what+" ≤ x")
	p := ch.p
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	marked := false
	for _, s := range ss {
		if len(s.values) == 0 {
			ch.legend(s.label+" (none)", nil)
			continue
		}
		pts := cdfPoints(s.values, MaxLinePoints)
		for i := range pts {
			pts[i].X = fix(pts[i].X)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: s.color, Width: 1.5}
		p.Add(l)
		ch.legend(s.label, l)
		if s.marks.Count > 0 {
			marked = true
			m, err := plotter.NewScatter(plotter.XYs{{X: fix(s.marks.P50), Y: 50}, {X: fix(s.marks.P99), Y: 99}})
			if err != nil {
				return nil, err
			}
			m.GlyphStyle = draw.GlyphStyle{Color: s.color, Radius: 3.5, Shape: draw.CircleGlyph{}}
			p.Add(m)
		}
	}
	if marked {
		m, _ := plotter.NewScatter(plotter.XYs{{}})
		m.GlyphStyle = draw.GlyphStyle{Color: color.Gray{0x60}, Radius: 3.5, Shape: draw.CircleGlyph{}}
		ch.legend("p50 and p99 of the summary", m)
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 90, Label: "90"}, {Value: 100, Label: "100"}}
	return ch.render()
}

// tailCrushes reports whether the largest value is more than ten times the median of some
// series: on a linear axis that series' body would be squeezed into the first tenth of
// the width, whatever the number of decades. Values are sorted.
func tailCrushes(ss []cdfSeries, hi float64) bool {
	for _, s := range ss {
		if len(s.values) == 0 {
			continue
		}
		if med := float64(s.values[len(s.values)/2]) / 1000; med > 0 && hi/med > 10 {
			return true
		}
	}
	return false
}

// cdfPoints returns the empirical CDF of sorted values (µs) as (value in ms, percent of
// values ≤ value), drawn with post-steps from (min, 0), in at most maxPts points.
func cdfPoints(sorted []int64, maxPts int) plotter.XYs {
	n := len(sorted)
	ranks := cdfRanks(n, maxPts-1)
	pts := make(plotter.XYs, 0, len(ranks)+1)
	pts = append(pts, plotter.XY{X: float64(sorted[0]) / 1000, Y: 0})
	for _, i := range ranks {
		pts = append(pts, plotter.XY{X: float64(sorted[i]) / 1000, Y: 100 * float64(i+1) / float64(n)})
	}
	return pts
}

// cdfRanks picks the 0-based ranks to draw among n: all when they fit in maxPts;
// otherwise half evenly spaced (the body) and half log-spaced from the top (the tail, down
// to the maximum), because a reader of a latency CDF looks at p99 and beyond, where even
// spacing would leave a handful of points. The ranks are ascending and include 0 and n−1.
func cdfRanks(n, maxPts int) []int {
	out := make([]int, 0, min(n, maxPts))
	if n <= maxPts {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	even := maxPts / 2
	tail := maxPts - even
	for k := range even {
		out = append(out, int(int64(k)*int64(n-1)/int64(even-1)))
	}
	for k := range tail {
		d := int(math.Round(math.Pow(float64(n), float64(k)/float64(tail-1))))
		out = append(out, n-min(max(d, 1), n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// timeSeries is one line of a chart over time.
type timeSeries struct {
	label   string
	color   color.Color
	dashed  bool
	samples []result.Sample
	origin  int64   // µs from the record's epoch drawn as 0 s
	scale   float64 // value multiplier (fraction → percent)
}

func timeChart(title, ylabel string, ss []timeSeries, percent bool) ([]byte, error) {
	ch := newChart(title, "time from the start of the measured window (s)", ylabel)
	p := ch.p
	drawn := 0
	hi := 0.0
	for _, s := range ss {
		if len(s.samples) == 0 {
			continue
		}
		drawn++
		pts := make(plotter.XYs, len(s.samples))
		for i, v := range s.samples {
			pts[i] = plotter.XY{X: float64(v.TUS-s.origin) / 1e6, Y: v.V * s.scale}
			hi = max(hi, pts[i].Y)
		}
		l, err := plotter.NewLine(decimate(pts, MaxLinePoints))
		if err != nil {
			return nil, err
		}
		l.LineStyle = draw.LineStyle{Color: s.color, Width: 1.25}
		if s.dashed {
			l.LineStyle.Dashes = []vg.Length{4, 2}
		}
		p.Add(l)
		ch.legend(s.label, l)
	}
	if drawn == 0 {
		return nil, ErrNoData
	}
	p.Y.Min, p.Y.Max = 0, max(hi, 1)
	if percent {
		p.Y.Max = max(hi, 100)
	}
	return ch.render()
}

// decimate keeps at most maxPts points of a series ordered in time: in each of maxPts/2
// buckets its lowest and its highest point, in time order, so that a spike survives
// (taking every kth point would drop it).
func decimate(pts plotter.XYs, maxPts int) plotter.XYs {
	n := len(pts)
	if n <= maxPts {
		return pts
	}
	buckets := maxPts / 2
	out := make(plotter.XYs, 0, maxPts)
	for b := range buckets {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if pts[i].Y < pts[iMin].Y {
				iMin = i
			}
			if pts[i].Y > pts[iMax].Y {
				iMax = i
			}
		}
		first, second := min(iMin, iMax), max(iMin, iMax)
		out = append(out, pts[first])
		if second != first {
			out = append(out, pts[second])
		}
	}
	return out
}

// latencyPoints are one record's scatter points: x in seconds from the window start, y
// in ms.
type latencyPoints struct{ ttft, e2e, errs plotter.XYs }

func latencyPointsOf(rec *result.Record) latencyPoints {
	var lp latencyPoints
	o := originUS(rec)
	for i := range rec.Requests {
		q := &rec.Requests[i]
		x := float64(q.SchedUS-o) / 1e6
		if !q.OK() {
			end := q.EndUS
			if end < q.SchedUS { // never ended while measured: in flight to the window's end
				end = max(rec.Window.EndUS, q.SchedUS)
			}
			lp.errs = append(lp.errs, plotter.XY{X: x, Y: float64(end-q.SchedUS) / 1000})
			continue
		}
		if t, ok := q.TTFTUS(); ok {
			lp.ttft = append(lp.ttft, plotter.XY{X: x, Y: float64(t) / 1000})
		}
		if e, ok := q.E2EUS(); ok {
			lp.e2e = append(lp.e2e, plotter.XY{X: x, Y: float64(e) / 1000})
		}
	}
	return lp
}

// yAxis is a value axis shared between charts.
type yAxis struct {
	lo, hi float64 // lo > 0 when log
	log    bool
}

func scatterChart(label string, lp latencyPoints, ax yAxis, xhi float64) ([]byte, error) {
	ch := newChart(label+": latency of each request", "scheduled time from the start of the measured window (s)", "latency (ms)")
	p := ch.p
	fix := func(xy plotter.XYs) plotter.XYs {
		out := slices.Clone(xy)
		for i := range out {
			if ax.log && out[i].Y <= 0 {
				out[i].Y = ax.lo
			}
		}
		return out
	}
	clouds := []*pointCloud{
		{xys: fix(lp.e2e), color: colE2E},
		{xys: fix(lp.ttft), color: colTTFT},
		{xys: fix(lp.errs), color: colError, cross: true},
	}
	names := []string{"E2E (last − sched)", "TTFT (first − sched)", "error (at end − sched)"}
	n := 0
	for i, c := range clouds {
		if len(c.xys) == 0 {
			continue
		}
		n++
		p.Add(c)
		ch.legend(names[i], c)
	}
	if n == 0 {
		ch.legend("no requests", nil)
	}
	if ax.log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min = ax.lo
	} else {
		p.Y.Min = 0
	}
	p.Y.Max = ax.hi
	p.X.Min, p.X.Max = 0, max(xhi, 1e-3)
	return ch.render()
}

// pointCloud is a scatter drawn as one SVG path: a mark per occupied cell of a grid of
// the mark's size, so that ten thousand requests cost a few hundred marks of a few bytes
// each rather than ten thousand glyph elements.
type pointCloud struct {
	xys   plotter.XYs
	color color.Color
	cross bool
}

func (pc *pointCloud) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	type cell struct{ x, y int32 }
	seen := make(map[cell]bool, len(pc.xys))
	var path vg.Path
	for _, xy := range pc.xys {
		pt := vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
		if !c.Contains(pt) {
			continue
		}
		k := cell{int32(math.Floor(float64(pt.X / markSize))), int32(math.Floor(float64(pt.Y / markSize)))}
		if seen[k] {
			continue
		}
		seen[k] = true
		pc.mark(&path, vg.Point{X: (vg.Length(k.x) + 0.5) * markSize, Y: (vg.Length(k.y) + 0.5) * markSize})
	}
	if len(path) == 0 {
		return
	}
	c.SetLineStyle(pc.lineStyle())
	c.Stroke(path)
}

// mark adds one mark centred on pt: a square drawn as a stroke as wide as it is long (a
// quarter of the bytes of a filled square), or a cross.
func (pc *pointCloud) mark(path *vg.Path, pt vg.Point) {
	r := markSize / 2
	if pc.cross {
		r = markSize * 0.9
		path.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
		path.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
		path.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
		path.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
		return
	}
	path.Move(vg.Point{X: pt.X - r, Y: pt.Y})
	path.Line(vg.Point{X: pt.X + r, Y: pt.Y})
}

func (pc *pointCloud) lineStyle() draw.LineStyle {
	if pc.cross {
		return draw.LineStyle{Color: pc.color, Width: 1}
	}
	return draw.LineStyle{Color: pc.color, Width: markSize}
}

func (pc *pointCloud) DataRange() (xmin, xmax, ymin, ymax float64) {
	return plotter.XYRange(pc.xys)
}

// GlyphBoxes reserves room for the marks at the edges; only the extreme points matter.
func (pc *pointCloud) GlyphBoxes(plt *plot.Plot) []plot.GlyphBox {
	if len(pc.xys) == 0 {
		return nil
	}
	xmin, xmax, ymin, ymax := pc.DataRange()
	r := markSize
	box := vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}}
	var out []plot.GlyphBox
	for _, x := range []float64{xmin, xmax} {
		for _, y := range []float64{ymin, ymax} {
			out = append(out, plot.GlyphBox{X: plt.X.Norm(x), Y: plt.Y.Norm(y), Rectangle: box})
		}
	}
	return out
}

func (pc *pointCloud) Thumbnail(c *draw.Canvas) {
	var path vg.Path
	pc.mark(&path, c.Center())
	c.SetLineStyle(pc.lineStyle())
	c.Stroke(path)
}

// logTicks marks every 1…9 × 10^k inside the axis and labels the powers of ten, and
// also 2 and 5 times them when the axis spans under three decades (where powers of ten
// alone would give one or two labels). gonum's own would print 1e+05.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	few := hi/lo < 1000
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || few && (m == 2 || m == 5) {
				t.Label = strconv.FormatFloat(v, 'f', max(0, -int(e)), 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// spansDecades reports whether positive values from lo to hi span more than two decades,
// where a linear axis would crush the body of the distribution against zero.
func spansDecades(lo, hi float64) bool { return lo > 0 && hi/lo > 100 }

// originUS is the instant drawn as 0 s: the start of the measured window, or the first
// scheduled request when the record has no window.
func originUS(rec *result.Record) int64 {
	if rec.Window.EndUS > rec.Window.StartUS {
		return rec.Window.StartUS
	}
	if len(rec.Requests) == 0 {
		return 0
	}
	o := rec.Requests[0].SchedUS
	for _, q := range rec.Requests {
		o = min(o, q.SchedUS)
	}
	return o
}

// windowS is the length of the measured window in seconds (0 when it has none).
func windowS(rec *result.Record) float64 {
	return float64(max(rec.Window.EndUS-rec.Window.StartUS, 0)) / 1e6
}

// sans is the typeface of every chart: Liberation Sans, metrically compatible with Arial
// and Helvetica, which the page names as fallbacks (fonts are not embedded: that would
// add hundreds of kilobytes per chart).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// svgChart is a plot with its title and a one-row legend drawn above the data area
// (gonum draws its legend over the data, where it hides the very tail or spike the
// reader looks for).
type svgChart struct {
	title   string
	p       *plot.Plot
	entries []legendEntry
}

type legendEntry struct {
	label string
	thumb plot.Thumbnailer // nil: text only
}

func newChart(title, xlabel, ylabel string) *svgChart {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	return &svgChart{title: title, p: p}
}

func (ch *svgChart) legend(label string, t plot.Thumbnailer) {
	ch.entries = append(ch.entries, legendEntry{label, t})
}

// render draws the chart as a standalone SVG document. gonum panics on some inputs (a
// log axis given 0); a chart that cannot be drawn is an error, never a crash after the
// run was measured.
func (ch *svgChart) render() (_ []byte, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("drawing: %v", e)
		}
	}()
	c := vgsvg.New(chartW, chartH)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// gonum centres the last tick label on the end of the x axis: keep room for its half.
	dc = draw.Crop(dc, 2, -14, 2, -4)

	title := ch.p.Title.TextStyle // the plot's handler, centred, hanging from the top
	title.Font = font.From(sans, 12)
	dc.FillText(title, vg.Point{X: dc.Center().X, Y: dc.Max.Y}, ch.title)
	dc.Max.Y -= title.Rectangle(ch.title).Size().Y + 4

	if len(ch.entries) > 0 {
		dc.Max.Y -= ch.drawLegend(dc) + 6
	}
	ch.p.BackgroundColor = nil
	ch.p.Draw(dc)

	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// drawLegend draws the entries in one centred row at the top of dc and returns its
// height.
func (ch *svgChart) drawLegend(dc draw.Canvas) vg.Length {
	const thumbW, gap, space = vg.Length(18), vg.Length(4), vg.Length(16)
	sty := ch.p.Title.TextStyle
	sty.Font = font.From(sans, 9)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	h := sty.Rectangle("Mg").Size().Y
	width := vg.Length(0)
	for i, e := range ch.entries {
		if i > 0 {
			width += space
		}
		if e.thumb != nil {
			width += thumbW + gap
		}
		width += sty.Rectangle(e.label).Size().X
	}
	x, y := dc.Center().X-width/2, dc.Max.Y-h/2
	for _, e := range ch.entries {
		if e.thumb != nil {
			e.thumb.Thumbnail(&draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - h/2}, Max: vg.Point{X: x + thumbW, Y: y + h/2},
			}})
			x += thumbW + gap
		}
		dc.FillText(sty, vg.Point{X: x, Y: y}, e.label)
		x += sty.Rectangle(e.label).Size().X + space
	}
	return h
}
