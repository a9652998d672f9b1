package gate

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// chunked makes every chunk of rec's requests carry k tokens (the server's per-chunk
// counts), the chunk gaps unchanged: what speculative decoding or chunked streaming
// sends.
func chunked(rec *result.Record, k int) *result.Record {
	for i := range rec.Requests {
		q := &rec.Requests[i]
		if !q.OK() || q.Chunks == 0 {
			continue
		}
		q.ChunkTokens = make([]int, q.Chunks)
		for j := range q.ChunkTokens {
			q.ChunkTokens[j] = k
		}
		q.OutputTokens = k * q.Chunks
	}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{Window: rec.Window, SLO: rec.SLO, OpenLoop: true})
	return rec
}

// TestITLTokenRules: an engine whose speculative decoding accepts half as many tokens a
// step streams chunks of 2 tokens where it streamed 4, each as far apart as before. The
// chunk gaps (itl_p99) do not move; each token's interval (itl_token_p99) doubles, and
// its rule fails. A baseline recorded before the per-token intervals were kept has none
// to compare: the rule says so and asks for a refresh, and never passes.
func TestITLTokenRules(t *testing.T) {
	f := testConfig([]workload.Rule{
		{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10},
		{Metric: "itl_token_p99", Direction: "lower", Tolerance: 0.10},
		{Metric: "itl_token_mean", Direction: "lower", Tolerance: 0.10},
	})
	base := chunked(rec(f, 1, gatetest.Spec{Requests: 300}), 4)
	store := storeOf(t, []*result.Record{base})
	cand := chunked(rec(f, 2, gatetest.Spec{Requests: 300}), 2)
	w := evaluate(t, f, store, cand).Workloads[0]
	if m := metric(t, w, "itl_p99"); m.Verdict != Pass {
		t.Errorf("itl_p99: %s (ratio %v): the chunk gaps did not move", m.Verdict, m.Ratio)
	}
	for _, name := range []string{"itl_token_p99", "itl_token_mean"} {
		m := metric(t, w, name)
		if m.Verdict != Fail || m.Ratio == nil || *m.Ratio < 1.8 || *m.Ratio > 2.2 {
			t.Errorf("%s: %s at %v, want a fail at about ×2", name, m.Verdict, m.Ratio)
		}
	}
	// The same chunks on both sides: every rule passes.
	if m := metric(t, evaluate(t, f, store, chunked(rec(f, 2, gatetest.Spec{Requests: 300}), 4)).Workloads[0], "itl_token_p99"); m.Verdict != Pass {
		t.Errorf("itl_token_p99 on the same chunks: %s at %v", m.Verdict, m.Ratio)
	}

	// A baseline without the itl_token column (written before it).
	b, err := FromRecords([]*result.Record{base}, created)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Trials {
		b.Trials[i].Requests.ITLToken = nil
	}
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"itl_token":`) {
		t.Fatal("the stripped baseline still holds itl_token")
	}
	old := Store{FS: fstest.MapFS{RelPath(b.Workload, b.Hardware): &fstest.MapFile{Data: data}}, Dir: "baselines"}
	m := metric(t, evaluate(t, f, old, cand).Workloads[0], "itl_token_p99")
	if m.Verdict == Pass || m.Verdict == Fail || !strings.Contains(strings.Join(append(m.Warnings, m.Undecided), " "), "baseline update") {
		t.Errorf("itl_token_p99 against an old baseline: %s, warnings %q, undecided %q; want no verdict and a refresh asked", m.Verdict, m.Warnings, m.Undecided)
	}
}
