package measure

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// sessionProfile is a simulated engine whose prefill is dear (200 µs a token) against
// its decode, so that recomputing a session's history shows far above the noise.
var sessionProfile = sim.Profile{
	Name: "sessions", Model: "sim-sessions", MaxModelLen: 4096,
	BlockSize: 16, NumBlocks: 2048, MaxNumSeqs: 16, MaxNumBatchedTokens: 4096,
	StepBase: time.Millisecond, StepPerDecodeSeq: 50 * time.Microsecond, StepPerPrefillToken: 200 * time.Microsecond,
}

const sessionsConfig = `version: 1
target: {api: chat, engine: auto}
model: {name: sim-sessions}
workloads:
  - name: sessions
    arrival: {process: constant, rate: 1}
    sessions:
      count: 4
      turns: 5
      user_tokens: 150
      output_tokens: 12
      think_time: 10ms
    max_dispatch_lag: 1s
    timeout: 20s
`

// ttftByTurn is the median TTFT (µs) of each turn of rec's sessions.
func ttftByTurn(t *testing.T, rec *result.Record) map[int]int64 {
	t.Helper()
	by := map[int][]int64{}
	for _, q := range rec.Requests {
		if q.Error != "" {
			t.Fatalf("session %d turn %d failed: %s %s", q.Session, q.Turn, q.Error, q.ErrorDetail)
		}
		by[q.Turn] = append(by[q.Turn], q.FirstUS-q.SchedUS)
	}
	out := map[int]int64{}
	for n, xs := range by {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		out[n] = xs[len(xs)/2]
	}
	return out
}

// Against the simulator's prefix cache, a session's later turns cost about what its
// first did (the history is cached, only the last answer and the new message are
// computed); with the cache off they grow with the history.
func TestSessionsPrefixCacheTTFT(t *testing.T) {
	t.Parallel()
	run := func(noCache bool) *result.Record {
		srv, err := sim.Start(context.Background(), sim.Options{Seed: 1, Profile: sessionProfile, NoPrefixCaching: noCache})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		return runOnce(t, testRunner(nil), sessionsConfig, srv.URL)
	}
	warm, cold := run(false), run(true)
	for _, rec := range []*result.Record{warm, cold} {
		if len(rec.Requests) != 20 {
			t.Fatalf("%d turns recorded, want 4 sessions × 5", len(rec.Requests))
		}
		for _, q := range rec.Requests {
			// Each turn carries the earlier ones: its history is the previous prompt and
			// answer as the engine counted them.
			if q.Turn > 1 && q.HistoryTokens < (q.Turn-1)*150 {
				t.Errorf("session %d turn %d carries %d history tokens, want at least %d", q.Session, q.Turn, q.HistoryTokens, (q.Turn-1)*150)
			}
			if q.Turn > 1 && q.PromptTokens < q.HistoryTokens+150 {
				t.Errorf("session %d turn %d prompt %d tokens, history %d", q.Session, q.Turn, q.PromptTokens, q.HistoryTokens)
			}
		}
	}
	w, c := ttftByTurn(t, warm), ttftByTurn(t, cold)
	t.Logf("TTFT p50 by turn (µs), cache on: %v; cache off: %v; hit rate %.2f", w, c, warm.Summary.PrefixCache.HitRate)
	if r := float64(w[5]) / float64(w[1]); r > 1.8 {
		t.Errorf("cache on: turn 5 TTFT %d µs is %.1f× turn 1's %d µs, want it near (under 1.8×)", w[5], r, w[1])
	}
	if r := float64(c[5]) / float64(c[1]); r < 2.5 {
		t.Errorf("cache off: turn 5 TTFT %d µs is %.1f× turn 1's %d µs, want it to grow with the history (over 2.5×)", c[5], r, c[1])
	}
	if hr := warm.Summary.PrefixCache.HitRate; hr < 0.4 {
		t.Errorf("cache on: hit rate %.2f, want the histories to hit (over 0.4)", hr)
	}
	if hr := cold.Summary.PrefixCache.HitRate; hr > 0.01 {
		t.Errorf("cache off: hit rate %.2f", hr)
	}
}

// A turn that fails ends its session: the error is on that turn, the later turns are
// not sent, and the record says how many sessions ended early. So it is when the turns
// are kept in the journal while the run is measured and read back from it: the record
// holds them session by session, numbered in that order.
func TestSessionsFailedTurnEndsSession(t *testing.T) {
	t.Parallel()
	t.Run("kept", func(t *testing.T) { testSessionsFailedTurn(t, "") })
	t.Run("journal", func(t *testing.T) { testSessionsFailedTurn(t, filepath.Join(t.TempDir(), "s.journal.jsonl")) })
}

func testSessionsFailedTurn(t *testing.T, journal string) {
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 3, Profile: sessionProfile, Faults: sim.Faults{ErrorRate: 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := strings.NewReplacer("count: 4", "count: 8", "rate: 1", "rate: 8").Replace(sessionsConfig)
	f, err := workload.Parse("slogate.yaml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(nil)
	tg, err := r.Prepare(context.Background(), f, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := r.Run(context.Background(), f, &f.Workloads[0], tg, Trial{Journal: journal})
	if rec.Incomplete {
		t.Fatalf("incomplete: %s", rec.IncompleteReason)
	}
	ended, failed := 0, 0
	turns := map[int][]result.Request{}
	for k, q := range rec.Requests {
		turns[q.Session] = append(turns[q.Session], q)
		if q.I != k || (k > 0 && q.Session < rec.Requests[k-1].Session) {
			t.Fatalf("record %d is request %d of session %d, after session %d: not session by session", k, q.I, q.Session, rec.Requests[max(k-1, 0)].Session)
		}
	}
	for s, qs := range turns {
		for k, q := range qs {
			if q.Turn != k+1 {
				t.Errorf("session %d: record %d is turn %d", s, k, q.Turn)
			}
			if q.Error != "" && k != len(qs)-1 {
				t.Errorf("session %d: turn %d failed (%s) but turn %d was sent", s, q.Turn, q.Error, qs[k+1].Turn)
			}
		}
		if last := qs[len(qs)-1]; last.Error != "" {
			failed++
			if last.Turn < 5 {
				ended++
			}
		}
	}
	if ended == 0 {
		t.Fatalf("no session ended early at a 20%% error rate over %d turns", len(rec.Requests))
	}
	want := fmt.Sprintf("%d of 8 sessions ended early", ended)
	found := false
	for _, n := range rec.Notes {
		found = found || strings.HasPrefix(n, want)
	}
	if !found {
		t.Errorf("notes %q: want %q", rec.Notes, want)
	}
	if rec.Summary.Errors["http_500"] != failed {
		t.Errorf("errors %v, want %d http_500 (one per session that failed)", rec.Summary.Errors, failed)
	}
}

// A session whose longest history cannot fit the engine's context is refused before
// anything is sent, as bad input naming the sessions key.
func TestSessionsOverContext(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 1, Profile: sessionProfile})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := strings.Replace(sessionsConfig, "turns: 5", "turns: {dist: uniform, min: 2, max: 40}", 1)
	f, err := workload.Parse("slogate.yaml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := testRunner(nil).Prepare(context.Background(), f, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckContext(f, tg, []*workload.Workload{&f.Workloads[0]})
	var ce *workload.ContextError
	if !IsBadInput(err) || !errors.As(err, &ce) {
		t.Fatalf("got %v, want a bad-input context error", err)
	}
	want := "slogate.yaml:7:5: workload \"sessions\" does not fit the engine's context of 4096 tokens per request"
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "turns max 40 × (user_tokens max 150 + output_tokens max 12), is 6480 tokens > 4096") {
		t.Errorf("got\n%v\nwant it to start %q and give the numbers", err, want)
	}
}

// A session workload is not split into shards: its turns follow one another.
func TestSessionsRefuseShards(t *testing.T) {
	t.Parallel()
	f, err := workload.Parse("slogate.yaml", []byte(sessionsConfig))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseShard("1/2", []*workload.Workload{&f.Workloads[0]}); !IsBadInput(err) || !strings.Contains(err.Error(), "set of sessions") {
		t.Errorf("got %v, want bad input refusing to shard sessions", err)
	}
}
