package measure

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// prefixConfig is a workload whose prompts span several KV blocks of the tiny profile, so
// that a prefix-cache hit shows in whole blocks.
func prefixConfig(prefix string) string {
	return `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: p
    seed: 3
    requests: 24
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 40}
    prompt_tokens: {dist: uniform, min: 80, max: 160}
    output_tokens: {dist: fixed, value: 4}
    prefix_cache: ` + prefix + `
    max_dispatch_lag: 1s
    timeout: 20s
`
}

func testRunner(runID func() string) *Runner {
	return &Runner{
		Getenv: func(string) string { return "" },
		EnvOptions: func() envinfo.Options {
			return envinfo.Options{GOOS: "linux", GOARCH: "amd64", NumCPU: 2, Now: time.Now, ToolVersion: "test"}
		},
		ToolVersion: "test",
		NewRunID:    runID,
	}
}

// startSim serves the simulator for the test and returns its URL.
func startSim(t *testing.T, o sim.Options) string {
	t.Helper()
	srv, err := sim.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv.URL
}

// runOnce runs the one workload of src against url and returns its record.
func runOnce(t *testing.T, r *Runner, src, url string) *result.Record {
	t.Helper()
	f, err := workload.Parse("slogate.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f.Target.Metrics.Interval = 50 * time.Millisecond
	ctx := context.Background()
	tg, err := r.Prepare(ctx, f, url)
	if err != nil {
		t.Fatal(err)
	}
	rec := r.Run(ctx, f, &f.Workloads[0], tg, Trial{})
	if rec.Incomplete {
		t.Fatalf("run incomplete: %s", rec.IncompleteReason)
	}
	if rec.Summary.PrefixCache == nil {
		t.Fatalf("no prefix-cache figures in the record; notes %q", rec.Notes)
	}
	return rec
}

// Two cold runs against one engine: the second must be as cold as the first. Before the
// run id was part of the salt, the second run sent byte-identical prompts and the
// simulator's prefix cache served most of their tokens.
func TestColdStaysColdAcrossRuns(t *testing.T) {
	t.Parallel()
	// A cache that holds every prompt of a run (16,384 tokens), so that nothing a
	// rerun could hit has been evicted.
	simURL := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 1024}})
	r := testRunner(nil)
	first := runOnce(t, r, prefixConfig("cold"), simURL)
	second := runOnce(t, r, prefixConfig("cold"), simURL)
	if first.RunID == "" || first.RunID == second.RunID {
		t.Fatalf("run ids %q and %q: want two different ids", first.RunID, second.RunID)
	}
	if first.WorkloadHash != second.WorkloadHash {
		t.Errorf("the run id changed the workload hash: %s vs %s", first.WorkloadHash, second.WorkloadHash)
	}
	for i, rec := range []*result.Record{first, second} {
		pc := rec.Summary.PrefixCache
		t.Logf("run %d (%s): %.0f of %.0f prompt tokens hit", i+1, rec.RunID, pc.Hits, pc.Queries)
		if pc.Queries < 24*80 || pc.HitRate > 0.01 {
			t.Errorf("cold run %d: %.0f of %.0f prompt tokens hit the prefix cache (%.1f%%), want about none",
				i+1, pc.Hits, pc.Queries, 100*pc.HitRate)
		}
		if why := rec.Unfit(); why != "" {
			t.Errorf("cold run %d refused: %s", i+1, why)
		}
	}
	if first.Summary.Lengths.PromptTarget != second.Summary.Lengths.PromptTarget {
		t.Errorf("prompt length targets differ between runs: %+v vs %+v", first.Summary.Lengths.PromptTarget, second.Summary.Lengths.PromptTarget)
	}

	// A rerun that sends the same prompts (the same run id, as before the fix) meets a
	// warm cache: the gate refuses it, with the figure; a reset before it makes it cold.
	same := testRunner(func() string { return "fixed" })
	runOnce(t, same, prefixConfig("cold"), simURL)
	warm := runOnce(t, same, prefixConfig("cold"), simURL)
	why := warm.Unfit()
	t.Logf("warm rerun: %s", why)
	if warm.Summary.PrefixCache.HitRate < 0.5 || !strings.Contains(why, "a cold run found") || !strings.Contains(why, "prompt tokens") {
		t.Errorf("a rerun with the same prompts: hit rate %.2f, unfit %q; want most tokens hit and the gate refusing it with the figure",
			warm.Summary.PrefixCache.HitRate, why)
	}
	if _, err := gate.FromRecords([]*result.Record{warm}, time.Now()); err == nil {
		t.Error("a warm cold run became a baseline")
	}
	reset := runOnce(t, same, prefixConfig("{mode: cold, reset: true}"), simURL)
	if reset.PrefixCache.Reset == nil || !reset.PrefixCache.Reset.Done || reset.PrefixCache.Reset.Endpoint != "POST /reset_prefix_cache" {
		t.Fatalf("reset asked for: record says %+v", reset.PrefixCache.Reset)
	}
	if pc := reset.Summary.PrefixCache; pc.HitRate > 0.01 {
		t.Errorf("after a reset the same prompts hit %.1f%%, want about none", 100*pc.HitRate)
	}
}

// A shared-prefix workload does hit: the figures measure the cache, not a constant.
func TestSharedPrefixHits(t *testing.T) {
	t.Parallel()
	simURL := startSim(t, sim.Options{Seed: 1})
	rec := runOnce(t, testRunner(nil), prefixConfig("{mode: shared, tokens: 64, groups: 2}"), simURL)
	pc := rec.Summary.PrefixCache
	t.Logf("shared: %.0f of %.0f prompt tokens hit", pc.Hits, pc.Queries)
	// 64 shared tokens are 4 full blocks of 16 in each prompt of 80 to 160 tokens.
	if pc.HitRate < 0.25 || pc.Hits < 24*48 {
		t.Errorf("shared prefix: %.0f of %.0f tokens hit (%.1f%%), want at least 3 blocks a request", pc.Hits, pc.Queries, 100*pc.HitRate)
	}
	if rec.PrefixCache.Mode != result.PrefixShared || rec.Unfit() != "" {
		t.Errorf("shared run: mode %q, unfit %q", rec.PrefixCache.Mode, rec.Unfit())
	}
}

// A fresh engine under KV pressure: sequences preempted and re-admitted find their own
// blocks still cached, and the simulator, like vLLM before 0.11, counts those lookups
// in its prefix-cache counters. Those hits are the run's own; the cold run must not be
// refused for them, whether the engine reports each request's cached tokens or not.
// Before the hits were attributed, this run was refused as warm (about 10% hit).
func TestColdUnderKVPressureIsNotWarm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills the KV cache of a slowed simulator for about 15 s: runs without -short")
	}
	const src = `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: p
    seed: 7
    requests: 90
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 15}
    prompt_tokens: {dist: lognormal, p50: 100, p95: 300, max: 500}
    output_tokens: {dist: lognormal, p50: 100, p95: 250, max: 400}
    prefix_cache: cold
    max_dispatch_lag: 1s
    timeout: 60s
`
	for _, details := range []bool{true, false} {
		name := map[bool]string{true: "per-request cached tokens", false: "counters only"}[details]
		t.Run(name, func(t *testing.T) {
			simURL := startSim(t, sim.Options{Seed: 1, NoPromptTokensDetails: !details})
			rec := runOnce(t, testRunner(nil), src, simURL)
			pc := rec.Summary.PrefixCache
			if rec.Summary.Preemptions == nil || *rec.Summary.Preemptions == 0 {
				t.Fatalf("no preemption: the tiny profile's 64 blocks were meant to be short (preemptions %v)", rec.Summary.Preemptions)
			}
			t.Logf("%.0f preemptions, %.0f of %.0f prompt tokens hit; own %+v, foreign %v", *rec.Summary.Preemptions, pc.Hits, pc.Queries, pc.Own, pc.Foreign)
			if pc.Hits == 0 || pc.Own == nil || pc.Foreign == nil || pc.ForeignRate == nil {
				t.Fatalf("hits %.0f, own %+v, foreign %v: want re-admission hits, attributed", pc.Hits, pc.Own, pc.Foreign)
			}
			wantMethod := map[bool]string{true: result.OwnPerRequest, false: result.OwnBound}[details]
			if pc.Own.Method != wantMethod || pc.Own.Readmitted != pc.Hits || *pc.Foreign != 0 {
				t.Errorf("own %+v, foreign %v: want every hit a re-admission, told apart %s", pc.Own, *pc.Foreign, wantMethod)
			}
			if details {
				for _, q := range rec.Requests {
					if q.CachedTokens == nil || *q.CachedTokens != 0 {
						t.Fatalf("request %d: cached tokens %v at its first scheduling, want 0 (every prompt is unique)", q.I, q.CachedTokens)
					}
				}
			}
			if why := rec.Unfit(); why != "" {
				t.Errorf("cold run refused: %s", why)
			}
			if _, err := gate.FromRecords([]*result.Record{rec}, time.Now()); err != nil {
				t.Errorf("no baseline from an honest cold run: %v", err)
			}
		})
	}
}

// A warm cache is still refused when the hits are attributed: its hits come at the first
// scheduling (per-request counts) or, without those, beyond anything preemption or
// declared history explains.
func TestWarmRerunRefusedWithAttribution(t *testing.T) {
	t.Parallel()
	for _, details := range []bool{true, false} {
		simURL := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 1024}, NoPromptTokensDetails: !details})
		same := testRunner(func() string { return "fixed" })
		runOnce(t, same, prefixConfig("cold"), simURL)
		warm := runOnce(t, same, prefixConfig("cold"), simURL)
		pc := warm.Summary.PrefixCache
		why := warm.Unfit()
		t.Logf("details %v: own %+v foreign %v: %s", details, pc.Own, pc.Foreign, why)
		if pc.Foreign == nil || *pc.Foreign < 0.5*pc.Hits || !strings.Contains(why, "that its own requests did not compute") {
			t.Errorf("details %v: warm rerun with foreign %v of %.0f hits, unfit %q: want most hits foreign and the run refused", details, pc.Foreign, pc.Hits, why)
		}
	}
}

// A chat template that opens every conversation with the same system header (Llama
// 3.1's is about 25 tokens) puts a whole KV block before each prompt's salt, which the
// prefix cache serves from the second request on. A cold run of short chat prompts on a
// fresh engine found 16 of about 90 prompt tokens cached a request and was refused as
// warm. The opening is measured before the run and excluded, whether the engine reports
// each request's cached tokens or only its counters; a rerun of the same prompts is
// still refused.
func TestColdChatOpeningIsNotWarm(t *testing.T) {
	t.Parallel()
	src := strings.NewReplacer("api: completions", "api: chat",
		"prompt_tokens: {dist: uniform, min: 80, max: 160}", "prompt_tokens: {dist: uniform, min: 40, max: 80}").Replace(prefixConfig("cold"))
	for _, details := range []bool{true, false} {
		name := map[bool]string{true: "per-request cached tokens", false: "counters only"}[details]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			simURL := startSim(t, sim.Options{Seed: 1, ChatSystemHeader: 25, NoPromptTokensDetails: !details, Faults: sim.Faults{KVBlocks: 1024}})
			same := testRunner(func() string { return "fixed" })
			rec := runOnce(t, same, src, simURL)
			pc, o := rec.Summary.PrefixCache, rec.PrefixCache.Opening
			if pc.Foreign == nil {
				t.Fatalf("hits not attributed: %+v", pc)
			}
			t.Logf("opening %+v; %.0f of %.0f prompt tokens hit; own %+v, foreign %.0f", o, pc.Hits, pc.Queries, pc.Own, *pc.Foreign)
			// 25 header tokens, then the user message's 3-token header; the salt's first
			// four bytes are a token of their own, different in each prompt.
			if o == nil || o.Method != result.OpeningTokenize || o.Common != 28 || o.BlockSize != 16 || o.Tokens != 16 {
				t.Fatalf("opening %+v: want 28 common tokens, one block of 16, measured by tokenize", o)
			}
			// Every request after the first found the header's block cached.
			if pc.Hits < 16*20 || pc.HitRate <= result.ColdHitRateMax {
				t.Fatalf("%.0f of %.0f prompt tokens hit: the header was meant to be served from the cache", pc.Hits, pc.Queries)
			}
			wantMethod := map[bool]string{true: result.OwnPerRequest, false: result.OwnBound}[details]
			if pc.Own == nil || pc.Own.Method != wantMethod || pc.Own.Opening != pc.Hits || *pc.Foreign != 0 {
				t.Errorf("own %+v, foreign %v: want every hit the opening's, told apart %s", pc.Own, pc.Foreign, wantMethod)
			}
			if why := rec.Unfit(); why != "" {
				t.Errorf("a cold run on a fresh engine refused: %s", why)
			}
			warm := runOnce(t, same, src, simURL)
			why := warm.Unfit()
			t.Logf("the same prompts again: %s", why)
			if !strings.Contains(why, "a cold run found") || !strings.Contains(why, "the opening every prompt shares") {
				t.Errorf("a rerun of the same prompts: unfit %q, want it refused as warm, the opening's part stated", why)
			}
		})
	}
}
