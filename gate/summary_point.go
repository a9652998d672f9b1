package gate

import (
	"math"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
)

// summaryPoint is a latency metric whose point estimate is the value the run's record
// summary holds, so that the gate table, the comment's details, the HTML report and the
// terminal show one number for one percentile (docs/metrics.md, "Percentiles"). The resamples
// are the metric's own: the same rank rule over the requests' values (for ITL, over the
// baseline's 1% gap sketches), so the interval is centred within the sketch's
// resolution of the point.
type summaryPoint struct {
	stats.Metric
	point float64 // µs
}

// Eval implements stats.Metric: the summary's value for the run as it is (every weight
// 1), the metric's for a resample.
func (s summaryPoint) Eval(w []int32) float64 {
	for _, x := range w {
		if x != 1 {
			return s.Metric.Eval(w)
		}
	}
	return s.point
}

// withSummary pins m's point estimate to the summary's value of metric (ttft, tpot, itl
// or e2e) and stat (p50 … p999, mean, max), where the run has a summary that holds one.
func withSummary(r *run, metric, stat string, m stats.Metric) stats.Metric {
	if r.summary == nil {
		return m
	}
	var p result.Percentiles
	switch metric {
	case "ttft":
		p = r.summary.TTFTms
	case "tpot":
		p = r.summary.TPOTms
	case "itl":
		p = r.summary.ITLms
	case "itl_token":
		p = r.summary.ITLTokenms
	case "e2e":
		p = r.summary.E2Ems
	}
	if p.Count == 0 {
		return m // no value in the summary (or an old one without counts): the metric's own
	}
	var v float64
	switch stat {
	case "p50":
		v = p.P50
	case "p90":
		v = p.P90
	case "p95":
		v = p.P95
	case "p99":
		v = p.P99
	case "p999":
		v = p.P999
	case "mean":
		v = p.Mean
	case "max":
		v = p.Max
	default:
		return m
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return m
	}
	return summaryPoint{Metric: m, point: v * 1000}
}
