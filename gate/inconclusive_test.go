package gate

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// TestTailRuleNeedsItsTail: a TTFT p99 over 150 requests rests on 1.5 values above it.
// Against itself its interval is as narrow as it gets, yet it is inconclusive, saying
// why and how many requests would do; a TTFT four times slower still fails (its
// interval decides it). Over 2,000 requests (20 above the p99) the same run passes.
func TestTailRuleNeedsItsTail(t *testing.T) {
	rules := []workload.Rule{{Metric: "ttft_p99", Direction: "lower", Tolerance: 0.25}}
	for _, c := range []struct {
		name     string
		requests int
		scale    float64
		want     Verdict
	}{
		{"150 requests, unchanged", 150, 1, Inconclusive},
		{"150 requests, 4x slower", 150, 4, Fail},
		{"2000 requests, unchanged", 2000, 1, Pass},
	} {
		f := testConfig(rules)
		f.Workloads[0].Requests = c.requests
		base := rec(f, 1, gatetest.Spec{Requests: c.requests, KVConcurrency: 80})
		cand := base
		if c.scale != 1 {
			cand = rec(f, 2, gatetest.Spec{Requests: c.requests, KVConcurrency: 80, TTFTScale: c.scale})
		}
		res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
		m := metric(t, res.Workloads[0], "ttft_p99")
		if m.Verdict != c.want || res.Verdict != c.want {
			t.Errorf("%s: ttft_p99 %s (ratio %v [%v, %v]), gate %s; want %s", c.name, m.Verdict, val(m.Ratio), val(m.Lo), val(m.Hi), res.Verdict, c.want)
		}
		if c.want == Inconclusive {
			if !strings.Contains(m.Undecided, "the p99 rests on 1.5 values beyond it") || !strings.Contains(m.Undecided, "1000 requests per run") {
				t.Errorf("%s: undecided %q: want the tail it rests on and the requests it needs", c.name, m.Undecided)
			}
		} else if m.Undecided != "" {
			t.Errorf("%s: a decided rule says it is undecided: %q", c.name, m.Undecided)
		}
	}
}

// TestUndecidedSaysWhatWouldDecide: a rule whose interval straddles its tolerance is
// inconclusive, never pass, and says the change the job could show against the
// tolerance it asks and what would decide it.
func TestUndecidedSaysWhatWouldDecide(t *testing.T) {
	rules := []workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.02}}
	f := testConfig(rules)
	base := rec(f, 1, gatetest.Spec{KVConcurrency: 80})
	cand := rec(f, 2, gatetest.Spec{KVConcurrency: 80})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	m := metric(t, res.Workloads[0], "itl_p99")
	if m.Verdict != Inconclusive || m.Lo == nil || m.Hi == nil || !(*m.Hi > 1.02) {
		t.Fatalf("itl_p99 %s [%v, %v]: want inconclusive, its interval across +2%%", m.Verdict, val(m.Lo), val(m.Hi))
	}
	for _, want := range []string{"this runner's noise supports ±", "at 500 requests per run; the rule asks ±2%", "requests per run (workloads[].requests) would decide an unchanged engine pass 80% of the time", "as would a tolerance of ±"} {
		if !strings.Contains(m.Undecided, want) {
			t.Errorf("undecided %q lacks %q", m.Undecided, want)
		}
	}
}

// TestNoiseFutileRegressionNeverPasses: the recommended rules (ITL p99 at 5%) against a
// candidate whose ITL is truly 10% slower, sequential jobs of at most 32 blocks with a
// futility stop from block 8 (ab --futility-from 8), 200 seeded trials: no job ends in a
// verdict that exits 0 under the default fail-on (pass, improved or warn). Before the
// inconclusive verdict a futile stop whose sequence still excluded nothing, or whose
// interval straddled the tolerance with its point inside, read "pass".
func TestNoiseFutileRegressionNeverPasses(t *testing.T) {
	waittest.ManyTrials(t)
	stop := ABStop{MinBlocks: 4, MaxBlocks: seqMax, FutilityFrom: 8}
	trials := seqJobsEach(t, seqSet{200, restarts, 1.10, gpuNoise}, onDefaultCal(stop))[0]
	by := map[Verdict]int{}
	futile := 0
	for _, x := range trials {
		v := Worst(x.verdicts...)
		by[v]++
		if strings.HasPrefix(x.stopped, "no rule is likely") {
			futile++
		}
		if v == Pass || v == Improved || v == Warn {
			t.Errorf("a job of a 10%% ITL regression ended %s (exit 0) after %d blocks (%s): verdicts %v", v, x.blocks, x.stopped, x.verdicts)
		}
	}
	t.Logf("%d trials, %d stopped futile: verdicts %v", len(trials), futile, by)
	if futile == 0 {
		t.Errorf("no job stopped futile: the test does not reach the case it guards")
	}
}

// TestUndecidedNearTheEdge: a rule whose noise supports its tolerance is undecided only
// because its change lies near the tolerance's edge (demo --regress's TTFT p95: ×1.307
// in [1.066, 1.760] against +50%); the advice is what would tell which side of the edge
// the change is on, not what an unchanged engine would need (fewer requests than it had).
func TestUndecidedNearTheEdge(t *testing.T) {
	r, lo, hi := 1.307, 1.066, 1.760
	m := MetricResult{Metric: "ttft_p95", Direction: "lower", Tolerance: 0.5, Method: MethodBootstrap, Ratio: &r, Lo: &lo, Hi: &hi, Verdict: Inconclusive}
	explainUndecided(&m, scale{358, "requests per run", "workloads[].requests"}, "", 0.95)
	for _, want := range []string{"this runner's noise supports ±28.5% at 358 requests per run; the rule asks ±50%", "the change (+30.7%) lies within that of the tolerance's edge (+50.0%): about 1187 requests per run"} {
		if !strings.Contains(m.Undecided, want) {
			t.Errorf("undecided %q lacks %q", m.Undecided, want)
		}
	}
}
