package measure

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
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
	t.Parallel()
	dir := t.TempDir()
	const bt = 64
	want := mooncakeTrace(t, dir, 60, bt)
	// A cache that holds every block of the trace (about 60 × 350 tokens), so that what
	// misses is the trace's own structure, not eviction.
	simURL := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 2048}})
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
	rec := runOnce(t, testRunner(nil), cfg, simURL)
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
	if rec.PrefixCache.Mode != result.PrefixShared || rec.Unfit() != "" {
		t.Errorf("mooncake run: mode %q, unfit %q; want shared and fit", rec.PrefixCache.Mode, rec.Unfit())
	}
}

// Prompts from a dataset reach the engine with the lengths its tokenizer gives them: the
// targets, measured with the simulator's /tokenize, match what its usage reports.
func TestDatasetAgainstSim(t *testing.T) {
	t.Parallel()
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
	simURL := startSim(t, sim.Options{Seed: 1})
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
	rec := runOnce(t, testRunner(nil), cfg, simURL)
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

// ragExpected is the hit rate a rag pool implies, by Monte Carlo over many runs of n
// requests drawing k distinct documents of docTokens from d with weights 1/(j+1)^s,
// sorted: request r hits the longest run of leading documents an earlier request sent.
// It returns the mean and the standard deviation of one run's rate.
func ragExpected(n, d, k, docTokens, promptTokens int, s float64) (mean, sd float64) {
	r := rand.New(rand.NewPCG(11, 12))
	w := make([]float64, d)
	for j := range w {
		w[j] = math.Pow(float64(j+1), -s)
	}
	const reps = 400
	var sum, sum2 float64
	for range reps {
		seen := map[string]bool{}
		hits := 0
		for range n {
			var docs []int
			for len(docs) < k {
				x := r.Float64()
				total := 0.0
				for _, v := range w {
					total += v
				}
				x *= total
				j := 0
				for j < d-1 && x >= w[j] {
					x -= w[j]
					j++
				}
				if !slices.Contains(docs, j) {
					docs = append(docs, j)
				}
			}
			slices.Sort(docs)
			m := 0
			for m < k && seen[fmt.Sprint(docs[:m+1])] {
				m++
			}
			for j := range docs {
				seen[fmt.Sprint(docs[:j+1])] = true
			}
			hits += m * docTokens
		}
		rate := float64(hits) / float64(n*promptTokens)
		sum += rate
		sum2 += rate * rate
	}
	mean = sum / reps
	return mean, math.Sqrt(math.Max(sum2/reps-mean*mean, 0))
}

// A rag pool lands the hit rate where its popularity puts it: between cold and fully
// shared, at what the draws imply.
func TestRAGHitRate(t *testing.T) {
	t.Parallel()
	const n, d, k, docTokens, prompt = 80, 10, 2, 128, 300
	simURL := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{KVBlocks: 2048}})
	for _, s := range []float64{1.2, 0} {
		cfg := fmt.Sprintf(`version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: rag
    requests: %d
    arrival: {process: constant, rate: 40}
    prompt_tokens: %d
    output_tokens: 2
    prefix_cache: {mode: rag, documents: %d, docs_per_request: %d, doc_tokens: %d, zipf: %v}
    max_dispatch_lag: 1s
    timeout: 20s
`, n, prompt, d, k, docTokens, s)
		rec := runOnce(t, testRunner(nil), cfg, simURL)
		pc := rec.Summary.PrefixCache
		mean, sd := ragExpected(n, d, k, docTokens, prompt, s)
		tol := math.Max(0.03, 3*sd)
		t.Logf("zipf %v: %.0f of %.0f prompt tokens hit (%.1f%%); the pool implies %.1f%% ± %.1f (sd of one run)", s, pc.Hits, pc.Queries, 100*pc.HitRate, 100*mean, 100*sd)
		if full := float64(k*docTokens) / prompt; mean < 0.1 || mean > full-0.05 {
			t.Fatalf("the pool implies %.2f, too near cold (0) or fully shared (%.2f) to test", mean, full)
		}
		if math.Abs(pc.HitRate-mean) > tol {
			t.Errorf("zipf %v: hit rate %.3f, the pool implies %.3f (tolerance %.3f)", s, pc.HitRate, mean, tol)
		}
		if rec.PrefixCache.Mode != result.PrefixShared || rec.Unfit() != "" {
			t.Errorf("rag run: mode %q, unfit %q", rec.PrefixCache.Mode, rec.Unfit())
		}
	}
}

// A sweep cannot rescale a trace that brings its own lengths: bad input, not a run of
// requests without lengths.
func TestSweepRefusesTraceWithLengths(t *testing.T) {
	t.Parallel()
	w := &workload.Workload{Name: "t", Arrival: workload.Arrival{Process: workload.ArrivalTrace, Format: workload.TraceAzure}}
	var bad *BadInputError
	if err := CheckSweepable(w); !errors.As(err, &bad) || !strings.Contains(err.Error(), "azure trace") {
		t.Errorf("CheckSweepable: %v, want a bad-input error naming the trace", err)
	}
	w.Arrival.Format = workload.TraceOffsets
	if err := CheckSweepable(w); err != nil {
		t.Errorf("an offsets trace: %v", err)
	}
}
