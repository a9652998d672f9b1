package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slogate/slogate/gate"
)

// TrendPoint is one entry of a baseline's history: its label on the x axis (a short
// commit or a date) and the metric's value.
type TrendPoint struct {
	Label    string
	V        float64
	Baseline bool // a baseline refresh; a main-branch run otherwise
}

// TrendChart draws a metric over the history, oldest first, and the candidate as a
// distinct mark after it, as github-action-benchmark's charts do. It returns ErrNoData
// when there is no history point.
func TrendChart(title, ylabel string, pts []TrendPoint, candidate float64) ([]byte, error) {
	if len(pts) == 0 {
		return nil, fmt.Errorf("trend chart: %w", ErrNoData)
	}
	ch := newChart(title, "history, oldest first (last: this candidate)", ylabel)
	p := ch.p
	xy := make(plotter.XYs, len(pts))
	hi := candidate
	for i, t := range pts {
		xy[i] = plotter.XY{X: float64(i + 1), Y: t.V}
		hi = max(hi, t.V)
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.LineStyle = draw.LineStyle{Color: colBaseline, Width: 1.25}
	p.Add(l)
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: colBaseline, Radius: vg.Length(2.5), Shape: draw.CircleGlyph{}}
	p.Add(s)
	ch.legend("history", l)
	c, err := plotter.NewScatter(plotter.XYs{{X: float64(len(pts) + 1), Y: candidate}})
	if err != nil {
		return nil, err
	}
	c.GlyphStyle = draw.GlyphStyle{Color: colCandidate, Radius: vg.Length(4.5), Shape: draw.BoxGlyph{}}
	p.Add(c)
	ch.legend(LabelCandidate, c)

	labels := make([]string, len(pts)+1)
	for i, t := range pts {
		labels[i] = t.Label
	}
	labels[len(pts)] = LabelCandidate
	p.X.Tick.Marker = indexTicks(labels)
	p.X.Min, p.X.Max = 0.5, float64(len(pts))+1.5
	p.Y.Min, p.Y.Max = 0, max(hi*1.1, 1e-9)
	return ch.render()
}

// indexTicks labels the integer positions 1..n, thinned to about a dozen labels.
type indexTicks []string

func (t indexTicks) Ticks(lo, hi float64) []plot.Tick {
	step := max(1, (len(t)+11)/12)
	var out []plot.Tick
	for i, s := range t {
		tk := plot.Tick{Value: float64(i + 1)}
		if i%step == 0 || i == len(t)-1 {
			tk.Label = s
		}
		out = append(out, tk)
	}
	return out
}

// trendCharts draws one trend per gated metric of the candidate's workload that the
// history holds.
func trendCharts(r HTMLReport) []chart {
	if r.Gate == nil {
		return nil
	}
	var w *gate.WorkloadResult
	for i := range r.Gate.Workloads {
		if x := &r.Gate.Workloads[i]; x.Name == r.Candidate.Workload && x.Hardware == hardwareOf(r) {
			w = x
			break
		}
	}
	if w == nil {
		return nil
	}
	where := "the history file beside the baseline"
	if r.HistoryPath != "" {
		where = r.HistoryPath
	}
	if len(r.History) == 0 {
		return []chart{{Title: "History", Missing: fmt.Sprintf("No history yet (%s): a line is added on every baseline refresh and every run of the main branch.", where)}}
	}
	var out []chart
	for _, m := range w.Metrics {
		if m.Candidate == nil {
			continue
		}
		var pts []TrendPoint
		for _, e := range r.History {
			v, ok := e.Metrics[m.Metric]
			if !ok {
				continue
			}
			label := e.Date.UTC().Format("01-02")
			if len(e.Commit) >= 7 {
				label = e.Commit[:7]
			}
			pts = append(pts, TrendPoint{Label: label, V: v, Baseline: e.Kind == gate.HistoryBaseline})
		}
		unit := m.Unit
		if unit == gate.UnitFraction {
			unit = "fraction"
		}
		svg, err := TrendChart("History of "+m.Metric, m.Metric+" ("+unit+")", pts, *m.Candidate)
		out = append(out, chartOf("History of "+m.Metric,
			fmt.Sprintf("The value at each baseline refresh and main-branch run recorded in %s, oldest first; the square is this candidate.", where),
			"The history has no value of this metric.", svg, err))
	}
	return out
}

func hardwareOf(r HTMLReport) string {
	if r.Candidate.Hardware == "" {
		return "cpu"
	}
	return r.Candidate.Hardware
}
