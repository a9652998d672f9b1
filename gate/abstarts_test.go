package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// TestABSwapWarnsOfAZeroStartSpread: a swapped job (no restart per block) against a
// calibration whose spread between engine starts came out 0 does not pass the 0 off as
// a measured absence: its interval adds the calibration runs' whole spread (0.03) in
// its place for each engine's one start, and each rule says so. A spread that is not 0
// is added as measured, without the warning.
func TestABSwapWarnsOfAZeroStartSpread(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	h := workload.Hash(f, &f.Workloads[0])
	layout := Layout(4)
	var blocks []*result.Record
	for i, side := range layout {
		r := gatetest.Record(uint64(40+i), gatetest.Spec{Hash: h, Requests: 200, Trial: i + 1})
		r.AB = &result.ABBlock{Side: map[rune]string{'A': result.SideBaseline, 'B': result.SideCandidate}[side], Block: i + 1, Blocks: len(layout), Layout: layout}
		blocks = append(blocks, r)
	}
	calWithStarts := func(sd float64) CalibrationOf {
		return func(string, string) (*Calibration, string) {
			return &Calibration{Source: "calibrate", Runs: 10, Restarts: true, Metrics: []MetricSpread{{Metric: "itl_p99", RunSD: 0.03, WithinSD: 0.02, DF: 9,
				Components: &Components{WithinSD: 0.02, StartsSD: &sd, DF: 9, StartsDF: 9}}}}, "baselines/chat/x.json"
		}
	}
	for _, c := range []struct {
		sd   float64
		warn bool
	}{{0, true}, {0.02, false}} {
		res, err := EvaluateAB(f, blocks, calWithStarts(c.sd))
		if err != nil {
			t.Fatal(err)
		}
		var m *MetricResult
		for i := range res.Workloads[0].Metrics {
			if res.Workloads[0].Metrics[i].Metric == "itl_p99" {
				m = &res.Workloads[0].Metrics[i]
			}
		}
		if m == nil {
			t.Fatalf("no itl_p99 rule: %+v", res.Workloads[0])
		}
		warned := strings.Contains(strings.Join(m.Warnings, "\n"), "spread between engine starts came out 0")
		if warned != c.warn {
			t.Errorf("start spread %v: warned %v, want %v: %q", c.sd, warned, c.warn, m.Warnings)
		}
		want := c.sd
		if c.sd == 0 {
			want = 0.03 // the runs' whole spread
		}
		// Both sides kept their engine: twice the variance of one start.
		if want = math.Round(math.Sqrt(2)*want*1e6) / 1e6; m.Noise == nil || m.Noise.StartsSD != want {
			t.Errorf("start spread %v: added %+v, want starts_sd %v", c.sd, m.Noise, want)
		}
	}
}

// TestStartSpreadBoundsAZeroByTheStartsMeans: a calibration of several runs per engine
// start whose part between starts came out 0 is bounded by the spread of its starts'
// means, which averages the runs' noise out, not by the spread of single runs; a
// calibration without that figure (older, or one run per start) keeps the runs'.
func TestStartSpreadBoundsAZeroByTheStartsMeans(t *testing.T) {
	zero, means := 0.0, 0.012
	for _, c := range []struct {
		name  string
		means *float64
		want  float64
	}{{"the starts' means", &means, 0.012}, {"no such figure", nil, 0.03}} {
		cal := &Calibration{Source: "calibrate", Runs: 40, Restarts: true, Metrics: []MetricSpread{{Metric: "itl_p99", RunSD: 0.03, WithinSD: 0.028, DF: 9,
			Components: &Components{WithinSD: 0.028, StartsSD: &zero, StartMeansSD: c.means, DF: 9, StartsDF: 9}}}}
		sd, df, ok, bound := StartSpread(cal, "itl_p99")
		if !ok || !bound || sd != c.want || df != 9 {
			t.Errorf("%s: StartSpread = %v on %v (ok %v, bound %v), want %v on 9, a bound", c.name, sd, df, ok, bound, c.want)
		}
	}
}

// TestComponentsStartMeans: the spread of the starts' means is what the part between
// starts is taken out of, so it holds the part and what the runs put into a mean of
// theirs.
func TestComponentsStartMeans(t *testing.T) {
	// Two starts on one day, two runs each: start means e^0.0 and e^0.1 (log).
	vals := []float64{math.Exp(-0.01), math.Exp(0.01), math.Exp(0.09), math.Exp(0.11)}
	info := []CalRun{{0, "d"}, {0, "d"}, {1, "d"}, {1, "d"}}
	c := componentsOf(vals, 0.005, info)
	if c == nil || c.StartMeansSD == nil || c.StartsSD == nil {
		t.Fatalf("components %+v: want the starts' means and part", c)
	}
	// The two means 0 and 0.1: sd 0.1/√2.
	if want := math.Round(0.1/math.Sqrt2*1e6) / 1e6; *c.StartMeansSD != want {
		t.Errorf("start_means_sd %v, want %v", *c.StartMeansSD, want)
	}
	if *c.StartsSD >= *c.StartMeansSD {
		t.Errorf("between_starts_sd %v not below start_means_sd %v", *c.StartsSD, *c.StartMeansSD)
	}
}
