package gate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/workload"
)

// TestSpreadInterval: the χ² interval of a standard deviation is the table's: 10 runs
// (9 degrees of freedom) at 95% give [0.69, 1.83] times the estimate, as docs/noise.md
// states, and more runs narrow it.
func TestSpreadInterval(t *testing.T) {
	lo, hi := SpreadInterval(1, 9, 0.95)
	if math.Abs(lo-0.688) > 0.001 || math.Abs(hi-1.826) > 0.001 {
		t.Errorf("9 df: [%.4f, %.4f], want [0.688, 1.826]", lo, hi)
	}
	lo2, hi2 := SpreadInterval(1, 29, 0.95)
	if !(lo2 > lo && hi2 < hi) {
		t.Errorf("29 df [%.3f, %.3f] not within 9 df's [%.3f, %.3f]", lo2, hi2, lo, hi)
	}
	if lo, hi := SpreadInterval(0.05, 0, 0.95); lo != 0 || !math.IsInf(hi, 1) {
		t.Errorf("no degrees of freedom: [%v, %v]", lo, hi)
	}
}

// calWith is a calibration of runs runs whose itl_p99 spread of one run is sd.
func calWith(runs int, sd float64) *Calibration {
	return &Calibration{Source: "calibrate", Runs: runs, Metrics: []MetricSpread{{Metric: "itl_p99", RunSD: sd, DF: runs - 1}}}
}

// TestLookCalibrationDecides: a spread far below the tolerance is decided supported at
// the first look; one far above it too narrow, whatever the runs to come; one near it
// goes on; the maximum ends the runs whatever was decided, and says what was not.
func TestLookCalibrationDecides(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	w := &f.Workloads[0]
	w.Repeats = 3
	st, err := LookCalibration(f, w, calWith(5, 0.005), 5, 5, 20)
	if err != nil || st == nil || st.Reason != CalStopDecided || st.Rules[0].Decided != CalSupported || !strings.Contains(st.Why, "itl_p99 supports ±10%") {
		t.Fatalf("tiny spread after 5 of at most 20: %+v (%v), want decided supported", st, err)
	}
	// After three runs the spread's interval at this look's level reaches 26.8 times the
	// estimate: even a tiny one is not decided.
	if st, _ := LookCalibration(f, w, calWith(3, 0.005), 3, 3, 20); st != nil {
		t.Errorf("3 runs decided: %+v", st)
	}
	if st, _ := LookCalibration(f, w, calWith(4, 0.005), 4, 5, 20); st != nil {
		t.Errorf("a look before the minimum stopped: %+v", st)
	}
	st, err = LookCalibration(f, w, calWith(5, 0.5), 5, 3, 20)
	if err != nil || st == nil || st.Reason != CalStopDecided || st.Rules[0].Decided != CalTooNarrow || !strings.Contains(st.Why, "cannot support ±10%") {
		t.Fatalf("huge spread: %+v (%v), want decided too narrow", st, err)
	}
	// ±10% with 3 candidate runs: a run-to-run spread of about 0.09 is the edge.
	st, err = LookCalibration(f, w, calWith(4, 0.09), 4, 3, 20)
	if err != nil || st != nil {
		t.Fatalf("a spread at the edge stopped after 4 of 20: %+v (%v)", st, err)
	}
	st, err = LookCalibration(f, w, calWith(20, 0.09), 20, 3, 20)
	if err != nil || st == nil || st.Reason != CalStopMaxRuns || !strings.Contains(st.Why, "every one of the 20 runs ran") {
		t.Fatalf("at the maximum: %+v (%v)", st, err)
	}
	// Absolute rules and rules of exact metrics have no spread to decide.
	g := testConfig([]workload.Rule{{Metric: "error_rate", Max: ptr(0.01)}, {Metric: "kv_concurrency", Direction: "higher", Tolerance: 0.01}})
	if st, err := LookCalibration(g, &g.Workloads[0], calWith(3, 0.01), 3, 3, 10); err != nil || st != nil {
		t.Errorf("no rule to decide stopped: %+v (%v)", st, err)
	}
}

func ptr(x float64) *float64 { return &x }

// TestLookCalibrationErrorRate: looked at after every run from 3 to 20, the decisions
// hold their 5% error rate. At a true spread whose 20-run calibration supports exactly
// the tolerance, "supported" before 20 runs is wrong (fewer runs support less), and at a
// true spread just under it "too narrow" is wrong; over 2,000 simulated calibrations of
// normal runs each wrong decision stays under 5%.
func TestLookCalibrationErrorRate(t *testing.T) {
	waittest.ManyTrials(t)
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	w := &f.Workloads[0]
	w.Repeats = 3
	const minRuns, maxRuns, trials = 3, 20, 2000
	// The true spread at which 20 runs support exactly ±10%, by bisection.
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if SupportedTolerance(mid, maxRuns, 3, 0.95) > 0.10 {
			hi = mid
		} else {
			lo = mid
		}
	}
	edge := lo
	for _, c := range []struct {
		name  string
		sd    float64
		wrong string
	}{
		{"at the edge", edge * 1.001, CalSupported},
		{"just under it", edge * 0.999, CalTooNarrow},
	} {
		r := rand.New(rand.NewPCG(7, 11))
		wrong, early := 0, 0
		for range trials {
			var xs []float64
			for n := 1; n <= maxRuns; n++ {
				xs = append(xs, c.sd*r.NormFloat64())
				if n < 2 {
					continue
				}
				st, err := LookCalibration(f, w, calWith(n, sampleSDOf(xs)), n, minRuns, maxRuns)
				if err != nil {
					t.Fatal(err)
				}
				if st == nil {
					continue
				}
				if st.Reason == CalStopDecided {
					early++
					if st.Rules[0].Decided == c.wrong {
						wrong++
					}
				}
				break
			}
		}
		t.Logf("%s (sd %.4f): %d of %d stopped early, %d wrongly %s", c.name, c.sd, early, trials, wrong, c.wrong)
		if wrong > trials*5/100 {
			t.Errorf("%s: %d of %d decided %s, above the 5%% error rate", c.name, wrong, trials, c.wrong)
		}
	}
}

func sampleSDOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

// TestLookCalibrationRuns: how many runs a sequential calibration of 3 to 20 runs makes
// at docs/gate.md's recipe (±10%, candidate repeats 3), over 1,000 simulated calibrations
// of normal runs per spread: the smaller the spread against the tolerance, the sooner it
// is decided supported; a spread far above a tight tolerance is decided too narrow.
func TestLookCalibrationRuns(t *testing.T) {
	waittest.ManyTrials(t)
	mean := func(tol, sd float64) (float64, map[string]int) {
		f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: tol}})
		w := &f.Workloads[0]
		w.Repeats = 3
		r := rand.New(rand.NewPCG(1, 2))
		total, dec := 0, map[string]int{}
		for range 1000 {
			var xs []float64
			for n := 1; n <= 20; n++ {
				xs = append(xs, sd*r.NormFloat64())
				if n < 2 {
					continue
				}
				st, err := LookCalibration(f, w, calWith(n, sampleSDOf(xs)), n, 3, 20)
				if err != nil {
					t.Fatal(err)
				}
				if st != nil {
					total += n
					dec[st.Reason+" "+st.Rules[0].Decided]++
					break
				}
			}
		}
		m := float64(total) / 1000
		t.Logf("±%.0f%%, run-to-run sd %.2f: %.1f runs on average; %v", 100*tol, sd, m, dec)
		return m, dec
	}
	m2, d2 := mean(0.10, 0.02)
	m3, _ := mean(0.10, 0.03)
	m4, _ := mean(0.10, 0.04)
	if d2["decided supported"] < 990 || !(m2 < m3 && m3 < m4) {
		t.Errorf("at ±10%%: sd 0.02 decided supported %d of 1000 in %.1f runs, 0.03 in %.1f, 0.04 in %.1f: want sooner for less noise", d2["decided supported"], m2, m3, m4)
	}
	if _, d := mean(0.05, 0.08); d["decided too_narrow"] < 900 {
		t.Errorf("sd 0.08 against ±5%%: too narrow decided %d of 1000", d["decided too_narrow"])
	}
}

// TestApplyStop: a calibration stopped because its rule was decided supported stores
// its spread corrected for the stop (a factor above 1, which Spread applies); one that
// ran to its maximum, or whose rule was decided too narrow, is left as measured.
func TestApplyStop(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	w := &f.Workloads[0]
	w.Repeats = 3
	// The largest spread that 8 runs decide supported (by bisection): a calibration
	// that stops there stopped when its runs had just spread little enough.
	lo, hi := 0.0, 1.0
	for range 50 {
		mid := (lo + hi) / 2
		if st, _ := LookCalibration(f, w, calWith(8, mid), 8, 3, 20); st != nil && st.Rules[0].Decided == CalSupported {
			lo = mid
		} else {
			hi = mid
		}
	}
	for _, c := range []struct {
		name    string
		cal     *Calibration
		n, max  int
		correct bool
	}{
		{"decided supported at 8 of 20", calWith(8, 0.95*lo), 8, 20, true},
		{"ran to its maximum", calWith(20, 0.07), 20, 20, false},
		{"decided too narrow", calWith(5, 0.5), 5, 20, false},
	} {
		st, err := LookCalibration(f, w, c.cal, c.n, 3, c.max)
		if err != nil || st == nil {
			t.Fatalf("%s: no stop (%v)", c.name, err)
		}
		ApplyStop(f, w, c.cal, st)
		ms := c.cal.Metrics[0]
		if c.cal.Stop != st {
			t.Errorf("%s: the stop was not recorded", c.name)
		}
		got := ms.Spread().RunSD / ms.RunSD
		if c.correct != (ms.StopFactor > 1) || math.Abs(got-max(ms.StopFactor, 1)) > 1e-12 {
			t.Errorf("%s (%s): stop factor %v, spread %v of the measured; want a correction %v", c.name, st.Why, ms.StopFactor, got, c.correct)
		}
	}
	// The factor grows as the stop selects harder: a spread that only just passed its
	// look at 8 runs was selected more than one far inside it.
	near := StopFactor(0.95*lo, 0, 8, 3, 20, 3, 0.10, 0.95)
	far := StopFactor(0.5*lo, 0, 8, 3, 20, 3, 0.10, 0.95)
	t.Logf("8 runs decide ±10%% supported up to a spread of %.4f; stop factor %.3f at 0.95 of it, %.3f at half", lo, near, far)
	if !(near > far && far >= 1) {
		t.Errorf("stop factors %v near the look's threshold, %v far inside it", near, far)
	}
}
