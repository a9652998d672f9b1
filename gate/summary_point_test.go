package gate

import (
	"math"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// One percentile, one number: the values the gate shows for the baseline and the
// candidate are the records' summaries (which the comment's details, the HTML report and
// the terminal show), for every latency statistic. Before, TTFT p95 read 158.4 ms in the
// gate table and 148.7 ms in the details.
func TestGateValuesAreTheRecordsSummaries(t *testing.T) {
	var rules []workload.Rule
	names := []string{"ttft_p50", "ttft_p95", "ttft_p99", "tpot_p95", "tpot_mean", "itl_p50", "itl_p99", "itl_p999", "itl_mean", "itl_max", "e2e_p90", "e2e_max"}
	for _, n := range names {
		rules = append(rules, workload.Rule{Metric: n, Direction: "lower", Tolerance: 0.5})
	}
	f := testConfig(rules)
	// Few requests, so that rank rules and histogram buckets would show if they differed.
	base := rec(f, 1, gatetest.Spec{Requests: 37})
	cand := rec(f, 2, gatetest.Spec{Requests: 41, GapScale: 1.07, TTFTScale: 1.1})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	summary := func(s *result.Summary, name string) float64 {
		var p result.Percentiles
		switch name[:3] {
		case "ttf":
			p = s.TTFTms
		case "tpo":
			p = s.TPOTms
		case "itl":
			p = s.ITLms
		case "e2e":
			p = s.E2Ems
		}
		switch name[len(name)-4:] {
		case "_p50":
			return p.P50
		case "_p90":
			return p.P90
		case "_p95":
			return p.P95
		case "_p99":
			return p.P99
		case "p999":
			return p.P999
		case "mean":
			return p.Mean
		case "_max":
			return p.Max
		}
		t.Fatalf("no summary field for %s", name)
		return 0
	}
	for _, n := range names {
		m := metric(t, res.Workloads[0], n)
		b, c := summary(&base.Summary, n), summary(&cand.Summary, n)
		// Equal up to the float rounding of ms → µs → ms.
		same := func(x *float64, y float64) bool { return x != nil && math.Abs(*x-y) <= 1e-12*math.Abs(y) }
		if !same(m.Baseline, b) || !same(m.Candidate, c) {
			t.Errorf("%s: gate shows baseline %v candidate %v, the records' summaries %v and %v", n, deref(m.Baseline), deref(m.Candidate), b, c)
			continue
		}
		if !same(m.Ratio, c/b) {
			t.Errorf("%s: ratio %v, want %v", n, deref(m.Ratio), c/b)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
