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

// TestCalibratedSpreadPoolsCandidateRepeats: against a calibration whose runs shared one
// engine start, the gate pools the candidate's own repeats into the calibrated spread
// (both measure the spread between runs of one start) and says so in the metric's noise
// (candidate_df); the interval is CompareSides' on that pooled spread. A candidate whose
// one repeat of three stalled (2.2 times as slow, the others unchanged) is therefore not
// failed on the steady calibration's narrow spread, as it was before the repeats were
// pooled: its own runs say how far apart runs can lie, and the rule is inconclusive. A
// steady regression still fails. Against a calibration whose runs each had their own
// start nothing is pooled: repeats on one start cannot see what moves between starts.
func TestCalibratedSpreadPoolsCandidateRepeats(t *testing.T) {
	rule := workload.Rule{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}
	f := testConfig([]workload.Rule{rule})
	f.Workloads[0].Repeats = 3
	scales := []float64{1, 1.01, 0.99, 1.02, 0.98, 1}
	var cal []*result.Record
	for i, s := range scales {
		cal = append(cal, rec(f, uint64(10+i), gatetest.Spec{Trial: i + 1, Requests: 300, GapScale: s}))
	}
	candidate := func(scales ...float64) []*result.Record {
		var rs []*result.Record
		for i, s := range scales {
			rs = append(rs, rec(f, uint64(40+i), gatetest.Spec{Trial: i + 1, Requests: 300, GapScale: s}))
		}
		return rs
	}
	d, err := lookupMetric(rule.Metric)
	if err != nil {
		t.Fatal(err)
	}
	pol := rulePolicy(rule, d, f.Gate)
	build := func(rs []*result.Record) []stats.Metric {
		var ms []stats.Metric
		for _, r := range rs {
			ms = append(ms, d.build(runOf(r)))
		}
		return ms
	}
	judge := func(restarts bool, cand []*result.Record) (MetricResult, *Baseline) {
		t.Helper()
		b, err := FromRecords(cal, created)
		if err != nil {
			t.Fatal(err)
		}
		if b.Noise, err = Calibrate(f, cal, restarts, created); err != nil {
			t.Fatal(err)
		}
		return metric(t, evaluate(t, f, storeWith(t, b), cand...).Workloads[0], rule.Metric), b
	}

	for _, c := range []struct {
		name   string
		scales []float64
		want   stats.Verdict
	}{
		{"a steady regression", []float64{1.3, 1.31, 1.29}, Fail},
		{"one repeat stalled", []float64{1, 1, 2.2}, Inconclusive},
	} {
		t.Run(c.name, func(t *testing.T) {
			cand := candidate(c.scales...)
			m, b := judge(false, cand)
			if m.Method != MethodCalibrated || m.Noise == nil || m.Noise.CandidateDF != 2 {
				t.Fatalf("method %s, noise %+v: want the calibration's spread with the candidate's 2 degrees of freedom pooled", m.Method, m.Noise)
			}
			bs, _ := stats.Summarise(build(cal), pol, stats.StreamBaseline)
			cs, _ := stats.Summarise(build(cand), pol, stats.StreamCandidate)
			bs.Starts, cs.Starts = 1, 1
			own, _, why := stats.MeasureSide(build(cand), pol, stats.StreamCandidate)
			if why != "" {
				t.Fatal(why)
			}
			sp := b.Noise.Lookup(rule.Metric).Spread()
			res, _ := stats.CompareSides(bs, cs, stats.Pool(sp, own), "calibration", pol, "")
			if math.Abs(*m.Lo-res.Lo) > 1e-9 || math.Abs(*m.Hi-res.Hi) > 1e-9 || m.Verdict != res.Verdict {
				t.Errorf("the gate's interval [%g, %g] %s, CompareSides' on the pooled spread [%g, %g] %s", *m.Lo, *m.Hi, m.Verdict, res.Lo, res.Hi, res.Verdict)
			}
			if m.Verdict != c.want {
				t.Errorf("verdict %s [%g, %g], want %s", m.Verdict, *m.Lo, *m.Hi, c.want)
			}
			// A stalled repeat is named where it widened the interval.
			named := strings.Contains(strings.Join(m.Warnings, "\n"), "the candidate's 3 repeats spread")
			if named != (c.want == Inconclusive) {
				t.Errorf("warnings %q: want the repeats' spread named exactly when it widened the interval", m.Warnings)
			}
			alone, _ := stats.CompareSides(bs, cs, sp, "calibration", pol, "")
			t.Logf("pooled [%.3f, %.3f] %s; the calibration's spread alone (sd %.4f) [%.3f, %.3f] %s", *m.Lo, *m.Hi, m.Verdict, sp.RunSD, alone.Lo, alone.Hi, alone.Verdict)
			if alone.Verdict != Fail {
				t.Errorf("on the calibration's spread alone %s: want fail (what this test tells apart)", alone.Verdict)
			}
		})
	}

	t.Run("a calibration on several starts", func(t *testing.T) {
		m, _ := judge(true, candidate(1, 1, 2.2))
		if m.Method != MethodCalibrated || m.Noise == nil || m.Noise.CandidateDF != 0 {
			t.Errorf("method %s, noise %+v: want the calibration's spread alone", m.Method, m.Noise)
		}
	})
}
