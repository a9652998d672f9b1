package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// TestABSwapWarnsOfAZeroStartSpread: a swapped job (no restart per block) against a
// calibration whose spread between engine starts came out 0, or small against the runs'
// whole spread, does not pass it off as measured: its interval adds the calibration
// runs' whole spread (0.03) in its place for each engine's one start, and each rule
// says so. A part that is nearly all of that spread is added as measured, without the
// warning.
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
	}{{0, true}, {0.02, true}, {0.0298, false}} {
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
		warned := strings.Contains(strings.Join(m.Warnings, "\n"), StartBoundWhy)
		if warned != c.warn {
			t.Errorf("start spread %v: warned %v, want %v: %q", c.sd, warned, c.warn, m.Warnings)
		}
		want := c.sd
		if c.warn {
			want = 0.03 // the runs' whole spread
		}
		// Both sides kept their engine: twice the variance of one start.
		if want = math.Round(math.Sqrt(2)*want*1e6) / 1e6; m.Noise == nil || m.Noise.StartsSD != want {
			t.Errorf("start spread %v: added %+v, want starts_sd %v", c.sd, m.Noise, want)
		}
		// The whole on the starts' 9 degrees of freedom; the part on its own, fewer.
		if m.Noise != nil && (c.warn && m.Noise.StartsDF != 9 || !c.warn && !(m.Noise.StartsDF > 8 && m.Noise.StartsDF < 9)) {
			t.Errorf("start spread %v: starts_df %v, want 9 for the whole, between 8 and 9 for the part", c.sd, m.Noise.StartsDF)
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
		sd, df, ok, bound := StartSpread(cal, "itl_p99", 0.95)
		if !ok || !bound || sd != c.want || df != 9 {
			t.Errorf("%s: StartSpread = %v on %v (ok %v, bound %v), want %v on 9, a bound", c.name, sd, df, ok, bound, c.want)
		}
	}
}

// TestStartSpreadTakesAPartOnItsOwnDegreesOfFreedom: the part between starts is the
// spread of the starts' means less the runs' noise below it, a difference, taken on its
// Welch–Satterthwaite degrees of freedom (9·(v/MS)² with the noise below known); where
// that half-width would be wider than the whole spread of the means on the starts' 9, the
// whole is taken, so that a part that shrinks to 0 meets the whole without a jump. The old
// rule took any positive part on the starts' 9 degrees of freedom, which failed swapped
// jobs at their edge (TestNoiseEdgeComponents).
func TestStartSpreadTakesAPartOnItsOwnDegreesOfFreedom(t *testing.T) {
	const whole = 0.05
	cal := func(part float64) *Calibration {
		w := whole
		return &Calibration{Source: "calibrate", Runs: 10, Restarts: true, Metrics: []MetricSpread{{Metric: "itl_p99", RunSD: whole, WithinSD: math.Sqrt(whole*whole - part*part), DF: 9,
			Components: &Components{WithinSD: math.Sqrt(whole*whole - part*part), StartsSD: &part, StartMeansSD: &w, DF: 9, StartsDF: 9}}}}
	}
	// A part that is nearly all of the means' spread: its own, on fewer degrees of
	// freedom than 9.
	v, m := 0.048*0.048, whole*whole
	sd, df, ok, bound := StartSpread(cal(0.048), "itl_p99", 0.95)
	if want := 9 * (v / m) * (v / m); !ok || bound || sd != 0.048 || math.Abs(df-want) > 1e-9 {
		t.Errorf("dominant part: StartSpread = %v on %v (bound %v), want 0.048 on %.3f, not a bound", sd, df, bound, want)
	}
	// A part of half the means' variance: 9/4 degrees of freedom make its half-width
	// wider than the whole's on 9, so the whole is taken.
	sd, df, ok, bound = StartSpread(cal(whole/math.Sqrt2), "itl_p99", 0.95)
	if !ok || !bound || sd != whole || df != 9 {
		t.Errorf("half the variance: StartSpread = %v on %v (bound %v), want the whole %v on 9", sd, df, bound, whole)
	}
	// Continuity: as the part shrinks, the half-width t(df)·sd taken never falls below
	// the whole's once the whole is taken, and never rises above it.
	// At 95% a job's start part takes half the error rate: t's quantile at 1 − 0.025/2.
	hwWhole := stats.TQuantile(1-0.025/2, 9) * whole
	for part := 0.0; part <= whole; part += whole / 50 {
		sd, df, _, _ := StartSpread(cal(part), "itl_p99", 0.95)
		if hw := stats.TQuantile(1-0.025/2, df) * sd; hw > hwWhole*(1+1e-9) {
			t.Errorf("part %.4f: half-width %.4f over the whole's %.4f", part, hw, hwWhole)
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
