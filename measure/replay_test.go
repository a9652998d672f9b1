package measure

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// mooncakeTrace writes a Mooncake trace of n requests, 25 ms apart, whose chained
// hash_ids reuse prefixes of a few roots, and returns the hit rate its block structure
// implies: each request finds the longest prefix of its ids that an earlier request sent
// already cached, so it hits that many blocks of bt tokens.
func mooncakeTrace(t *testing.T, dir string, n, bt int) float64 {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 16))
	next := int64(0)
	var roots [][]int64
	for range 4 {
		var ids []int64
		for range 3 + r.IntN(3) {
			ids = append(ids, next)
			next++
		}
		roots = append(roots, ids)
	}
	seen := map[string]bool{}
	hits, total := 0, 0
	var b strings.Builder
	for i := range n {
		var ids []int64
		if r.Float64() < 0.75 {
			root := roots[r.IntN(len(roots))]
			ids = append(ids, root[:1+r.IntN(len(root))]...)
		}
		for range 1 + r.IntN(2) {
			ids = append(ids, next)
			next++
		}
		in := len(ids)*bt - 1 - r.IntN(bt/2)
		k := 0
		for k < len(ids) && seen[fmt.Sprint(ids[:k+1])] {
			k++
		}
		for j := range ids {
			seen[fmt.Sprint(ids[:j+1])] = true
		}
		hits += k * bt
		total += in
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 2, "hash_ids": %s}`+"\n",
			25*i, in, strings.ReplaceAll(fmt.Sprint(ids), " ", ","))
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return float64(hits) / float64(total)
}

// A Mooncake trace whose hash_ids share blocks gives the hit rate its block structure
// implies; an Azure trace of the same lengths, without hash ids, stays cold.
func TestMooncakeReplayHitRate(t *testing.T) {
	dir := t.TempDir()
	const bt = 64
	want := mooncakeTrace(t, dir, 60, bt)
	// A cache that holds every block of the trace (about 60 × 350 tokens), so that what
	// misses is the trace's own structure, not eviction.
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 2048}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := fmt.Sprintf(`version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: mooncake
    requests: 60
    arrival: {process: trace, format: mooncake, trace: %s, block_tokens: %d}
    max_dispatch_lag: 1s
    timeout: 20s
`, filepath.Join(dir, "trace.jsonl"), bt)
	rec := runOnce(t, testRunner(nil), cfg, srv.URL)
	pc := rec.Summary.PrefixCache
	t.Logf("mooncake: %.0f of %.0f prompt tokens hit (%.1f%%); the trace's blocks imply %.1f%%", pc.Hits, pc.Queries, 100*pc.HitRate, 100*want)
	if want < 0.3 || want > 0.8 {
		t.Fatalf("the synthesized trace implies a hit rate of %.2f: too near cold or fully shared to test", want)
	}
	if math.Abs(pc.HitRate-want) > 0.04 {
		t.Errorf("hit rate %.3f, the trace's block structure implies %.3f (want within 4 points)", pc.HitRate, want)
	}
	if rec.Summary.Completed != 60 || rec.Summary.ErrorRate != 0 {
		t.Errorf("%d of 60 requests completed, errors %v", rec.Summary.Completed, rec.Summary.Errors)
	}
	if rec.PrefixCache.Mode != result.PrefixShared || gate.Unfit(rec) != "" {
		t.Errorf("mooncake run: mode %q, unfit %q; want shared and fit", rec.PrefixCache.Mode, gate.Unfit(rec))
	}
}

// Prompts from a dataset reach the engine with the lengths its tokenizer gives them: the
// targets, measured with the simulator's /tokenize, match what its usage reports.
func TestDatasetAgainstSim(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 30 {
		words := make([]string, 5+r.IntN(60))
		for j := range words {
			words[j] = []string{"light", "prism", "a", "refraction", "of", "colours"}[r.IntN(6)]
		}
		fmt.Fprintf(&b, `{"prompt": %q, "output_len": %d}`+"\n", strings.Join(words, " "), 2+i%3)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := fmt.Sprintf(`version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: prompts
    requests: 30
    arrival: {process: poisson, rate: 50}
    dataset: {format: prompts, file: %s}
    max_dispatch_lag: 1s
    timeout: 20s
`, filepath.Join(dir, "p.jsonl"))
	rec := runOnce(t, testRunner(nil), cfg, srv.URL)
	if rec.Calibration.Method != "tokenize" {
		t.Fatalf("calibration %+v, want the simulator's tokenizer", rec.Calibration)
	}
	for _, q := range rec.Requests {
		// The entry is counted by the tokenizer, the salt before it at the calibrated
		// ratio: tokens of a concatenation are not a sum, so one token either way.
		if q.Error != "" || q.PromptTokens < q.PromptTarget-1 || q.PromptTokens > q.PromptTarget+1 {
			t.Fatalf("request %d: prompt %d tokens, target %d, error %q; want the target within a token", q.I, q.PromptTokens, q.PromptTarget, q.Error)
		}
		if q.OutputTokens != 2+q.I%3 {
			t.Fatalf("request %d: %d output tokens, the dataset says %d", q.I, q.OutputTokens, 2+q.I%3)
		}
	}
	if len(rec.Requests) != 30 {
		t.Fatalf("%d requests in the record", len(rec.Requests))
	}
}
