package measure

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// The same workload cold and warm against one engine: the warm run's priming pass fills
// the prefix cache with the prompts the window then sends, so the window's hit rate is
// far above the cold run's; the priming requests are reported apart and are in neither
// the requests nor the window's figures; and the gate judges the warm run (the refusal
// of a cold run that hits does not apply).
func TestWarmPrimesTheWindow(t *testing.T) {
	t.Parallel()
	simURL := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 1024}})
	r := testRunner(nil)
	cold := runOnce(t, r, prefixConfig("cold"), simURL)
	warm := runOnce(t, r, prefixConfig("warm"), simURL)
	cpc, wpc := cold.Summary.PrefixCache, warm.Summary.PrefixCache
	t.Logf("cold: %.0f of %.0f prompt tokens hit (%.1f%%); warm: %.0f of %.0f (%.1f%%); priming %+v",
		cpc.Hits, cpc.Queries, 100*cpc.HitRate, wpc.Hits, wpc.Queries, 100*wpc.HitRate, *warm.Priming)
	if cpc.HitRate > 0.05 || wpc.HitRate < 0.6 || wpc.HitRate < cpc.HitRate+0.5 {
		t.Errorf("window hit rate cold %.1f%%, warm %.1f%%: want warm far above cold", 100*cpc.HitRate, 100*wpc.HitRate)
	}
	if cold.Priming != nil {
		t.Errorf("a cold run primed: %+v", cold.Priming)
	}
	p := warm.Priming
	if p == nil || p.Requests != 24 || len(p.Errors) != 0 || p.Concurrency != PrimeConcurrency || p.PromptTokens < 24*80 || p.DurationS <= 0 {
		t.Fatalf("priming %+v: want 24 requests of at least 80 prompt tokens each, no error", p)
	}
	// The measured requests are the schedule's 24, none of the priming pass; the window's
	// prefix-cache queries count the measured prompts only (the priming pass sent as
	// many tokens again before the window opened).
	if len(warm.Requests) != 24 || warm.Summary.Requests != 24 {
		t.Errorf("warm run has %d requests (summary %d), want the 24 measured", len(warm.Requests), warm.Summary.Requests)
	}
	sent := 0
	for _, q := range warm.Requests {
		sent += q.PromptTokens
	}
	if wpc.Queries > 1.2*float64(sent) {
		t.Errorf("window queried %.0f prompt tokens, the measured requests sent %d: the priming pass leaked into the window", wpc.Queries, sent)
	}
	if warm.PrefixCache.Mode != result.PrefixWarm {
		t.Errorf("record mode %q, want warm", warm.PrefixCache.Mode)
	}
	if why := warm.Unfit(); why != "" {
		t.Errorf("the gate refuses a warm run: %s", why)
	}
	if cold.WorkloadHash == warm.WorkloadHash {
		t.Error("cold and warm share a workload hash: a warm baseline would judge a cold run")
	}
	for _, n := range warm.Notes {
		if strings.Contains(n, "priming") || strings.Contains(n, "a cold run found") {
			t.Errorf("unexpected note: %s", n)
		}
	}
}
