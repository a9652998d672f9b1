package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// TestToDecide: the smallest sequential job that decides an unchanged engine is the
// first maximum at which Costs expects it to stop before the maximum; a noisier rule
// needs more blocks; a swapped job whose spread between starts dwarfs the tolerance
// finds none.
func TestToDecide(t *testing.T) {
	j := Job{Run: time.Minute, Warmup: 10 * time.Second, Start: 90 * time.Second, Wake: 3 * time.Second, Confidence: 0.95}
	quiet, noisy := Rule{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.02}, Rule{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.04}
	rq, ok := ToDecide(j, quiet, ModeABRestarts, MaxDecideBlocks)
	if !ok || rq.Blocks >= rq.MaxBlocks {
		t.Fatalf("quiet rule: %+v %v", rq, ok)
	}
	if rq.MaxBlocks > 8 {
		jj := j
		jj.MinBlocks, jj.MaxBlocks = 4, rq.MaxBlocks-4
		if c := Costs(jj, []Rule{quiet})[1]; c.Blocks < c.MaxBlocks {
			t.Errorf("at most %d blocks already decides (%+v): ToDecide's %d is not the smallest", jj.MaxBlocks, c, rq.MaxBlocks)
		}
	}
	rn, ok := ToDecide(j, noisy, ModeABRestarts, MaxDecideBlocks)
	if !ok || rn.MaxBlocks <= rq.MaxBlocks {
		t.Errorf("twice the noise: %+v (%v), want more than the quiet rule's %d blocks", rn, ok, rq.MaxBlocks)
	}
	starts := quiet
	starts.StartsSD, starts.StartsDF = 0.2, 3
	if rc, ok := ToDecide(j, starts, ModeABSwaps, MaxDecideBlocks); ok {
		t.Errorf("a spread between starts of 0.2 against 5%%: decided by %+v", rc)
	}
}

// TestAdviseAB: an inconclusive rule of an A/B job is told what slogate plan says would
// decide it; a decided rule is left alone.
func TestAdviseAB(t *testing.T) {
	wr := gate.WorkloadResult{BlocksRun: 8, Metrics: []gate.MetricResult{
		{Metric: "itl_p99", Tolerance: 0.05, Method: gate.MethodBlocks, Verdict: gate.Inconclusive, Undecided: "this runner's noise supports ±9.0% at 8 blocks; the rule asks ±5%",
			Noise: &gate.NoiseResult{TotalSD: 0.03}},
		{Metric: "goodput", Tolerance: 0.05, Method: gate.MethodBlocks, Verdict: gate.Pass, Noise: &gate.NoiseResult{TotalSD: 0.01}},
	}}
	AdviseAB(&wr, Job{Run: time.Minute, Start: 90 * time.Second, Confidence: 0.95})
	u := wr.Metrics[0].Undecided
	for _, want := range []string{"the rule asks ±5%; slogate plan, at this job's noise (0.042 between runs): a sequential job of at most", "(ab --min-blocks 4 --blocks", "A/B, restarts) is expected to decide an unchanged engine after about"} {
		if !strings.Contains(u, want) {
			t.Errorf("undecided %q lacks %q", u, want)
		}
	}
	if wr.Metrics[1].Undecided != "" {
		t.Errorf("a decided rule was advised: %q", wr.Metrics[1].Undecided)
	}
	// Swapped engines (two starts for eight blocks) are advised as swaps.
	wr.Metrics[0].Undecided = ""
	wr.Swap = &result.ABSwap{Mode: "sleep", Starts: 2, Wakes: 6, WakeS: 18}
	AdviseAB(&wr, Job{Run: time.Minute, Start: 90 * time.Second, Confidence: 0.95})
	if u := wr.Metrics[0].Undecided; !strings.Contains(u, "A/B, swaps") {
		t.Errorf("swapped job advised %q", u)
	}
}
