package measure

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/workload"
)

// fakeSource numbers its prompts.
type fakeSource struct{ n int }

func (s fakeSource) Arrivals() []time.Duration { return make([]time.Duration, s.n) }
func (s fakeSource) Request(i int) workload.Item {
	return workload.Item{Index: i, Prompt: "prompt " + string(rune('A'+i)), OutputTokens: 50}
}
func (s fakeSource) WarmupRequest(i int) workload.Item { return workload.Item{} }
func (s fakeSource) ThinkTime(u, n int) time.Duration  { return 0 }

// fakeStreamer answers one token, fails the prompts it is told to, and stalls one
// until its deadline.
type fakeStreamer struct {
	mu      sync.Mutex
	prompts []string
	maxTok  []int
	fail    map[string]string
	stall   string
	empty   string
}

func (f *fakeStreamer) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	f.mu.Lock()
	f.prompts = append(f.prompts, req.Prompt)
	f.maxTok = append(f.maxTok, req.MaxTokens)
	f.mu.Unlock()
	switch {
	case req.Prompt == f.stall:
		<-ctx.Done()
		res.ErrReason = engine.ErrDisconnect
	case f.fail[req.Prompt] != "":
		res.ErrReason = f.fail[req.Prompt]
	case req.Prompt == f.empty:
		res.ErrReason = engine.ErrEmpty
	default:
		res.PromptTokens, res.OutputTokens, res.Chunks = 10, 1, 1
	}
}

// The priming pass sends every prompt once with max_tokens 1, last first; it counts
// failures by reason (a deadline as a timeout) and not an empty answer, whose prompt was
// prefilled all the same.
func TestPrimeCountsAndOrder(t *testing.T) {
	t.Parallel()
	st := &fakeStreamer{fail: map[string]string{"prompt C": "http_500"}, stall: "prompt E", empty: "prompt B"}
	r := testRunner(nil)
	p := r.prime(context.Background(), st, fakeSource{6}, 6, "completions", "m", 50*time.Millisecond)
	if p.Requests != 6 || p.Errors["http_500"] != 1 || p.Errors[engine.ErrTimeout] != 1 || len(p.Errors) != 2 {
		t.Errorf("priming %+v: want 6 requests, one http_500 and one timeout", p)
	}
	// Four prompts answered, one of them empty-handed (no usage): 3 × 10 tokens.
	if p.PromptTokens != 30 || p.Concurrency != 6 {
		t.Errorf("prompt tokens %d, concurrency %d: want 30 and 6 (fewer prompts than PrimeConcurrency)", p.PromptTokens, p.Concurrency)
	}
	if len(st.prompts) != 6 {
		t.Fatalf("sent %d prompts, want 6", len(st.prompts))
	}
	for _, m := range st.maxTok {
		if m != 1 {
			t.Errorf("a priming request asked for %d tokens, want 1", m)
		}
	}
	note := primingNote(p)
	if !strings.Contains(note, "2 of 6 requests failed") || !strings.Contains(note, "http_500") {
		t.Errorf("note %q", note)
	}

	// Last first: indices are taken in order, so the first request to reach the engine
	// is one of the first PrimeConcurrency taken, which are the schedule's last.
	order := &fakeStreamer{}
	n := 2 * PrimeConcurrency
	r.prime(context.Background(), order, fakeSource{n}, n, "completions", "m", time.Second)
	first := order.prompts[0]
	late := false
	for i := n - PrimeConcurrency; i < n; i++ {
		late = late || first == fakeSource{}.Request(i).Prompt
	}
	if !late || len(order.prompts) != n {
		t.Errorf("first priming request %q of %d: want one of the last %d of the schedule", first, len(order.prompts), PrimeConcurrency)
	}

	// Interrupted before it starts: every request counts as canceled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := r.prime(ctx, &fakeStreamer{}, fakeSource{5}, 5, "completions", "m", time.Second)
	if c.Errors[engine.ErrCanceled] != 5 {
		t.Errorf("canceled priming %+v: want 5 canceled", c)
	}
}
