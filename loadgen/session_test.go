package loadgen

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/workload"
)

// chatFake answers each chat request with a text naming the last message, and fails
// the requests whose last message is in fail. It keeps every request's messages.
type chatFake struct {
	epoch time.Time
	delay time.Duration
	fail  map[string]bool

	mu   sync.Mutex
	sent map[string][]engine.Message // by the last message
}

func (f *chatFake) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	res.Reset()
	res.Send = time.Since(f.epoch)
	last := req.Messages[len(req.Messages)-1].Content
	f.mu.Lock()
	f.sent[last] = slices.Clone(req.Messages)
	f.mu.Unlock()
	sleepCtx(ctx, f.delay)
	res.End = time.Since(f.epoch)
	if f.fail[last] {
		res.ErrReason, res.Status = "http_500", 500
		return
	}
	res.First, res.Last = res.End, res.End
	res.Chunks, res.OutputTokens, res.UsageReported, res.FinishReason = 1, 5, true, "length"
	for _, m := range req.Messages {
		res.PromptTokens += len(m.Content)
	}
	if req.CaptureText {
		res.Text = append(res.Text, "answer to "+last...)
	}
}

// sessionSource has sessions of turns[i] turns, a system prompt on even sessions, and a
// think time of 30 ms.
type sessionSource struct {
	fakeSource
	turns []int
}

func (s *sessionSource) Session(i int) workload.Session {
	ss := workload.Session{Index: i, Turns: s.turns[i]}
	if i%2 == 0 {
		ss.System, ss.SystemTokens = fmt.Sprintf("system %d", i), 3
	}
	return ss
}

func (s *sessionSource) Turn(i, n int) workload.Turn {
	t := workload.Turn{N: n, Text: fmt.Sprintf("s%d t%d", i, n), Tokens: 4, OutputTokens: 5}
	if n > 1 {
		t.Think = 30 * time.Millisecond
	}
	return t
}

// Each turn sends the whole history (system prompt, every earlier message and the
// engine's own answer) and its new message; turn n is scheduled at the end of turn n-1
// plus its think time; a failed turn ends its session, recorded, with no later turn sent.
// The same holds when the turns are spilled as they finish (Config.Spill) and read back.
func TestSessions(t *testing.T) {
	t.Parallel()
	t.Run("kept", func(t *testing.T) { testSessions(t, false) })
	t.Run("spilled", func(t *testing.T) { testSessions(t, true) })
}

func testSessions(t *testing.T, spill bool) {
	epoch := time.Now()
	f := &chatFake{epoch: epoch, delay: 5 * time.Millisecond, fail: map[string]bool{"s1 t2": true}, sent: map[string][]engine.Message{}}
	src := &sessionSource{fakeSource: fakeSource{arrivals: constant(50, 3)}, turns: []int{3, 4, 2}}
	cfg := baseConfig(f, src, epoch)
	cfg.API, cfg.Sessions = engine.APIChat, src
	var box *spillBox
	if spill {
		box = spillTo(&cfg)
	}
	out := run(t, cfg)
	if spill {
		box.check(t, out)
	}

	// Session 2 (index 1) sent turns 1 and 2 (failed); 3 and 4 never went out.
	var got []string
	for _, q := range out.Measured {
		got = append(got, fmt.Sprintf("%d.%d %s", q.Session, q.Turn, q.Error))
	}
	want := []string{"1.1 ", "1.2 ", "1.3 ", "2.1 ", "2.2 http_500", "3.1 ", "3.2 "}
	if !slices.Equal(got, want) {
		t.Fatalf("turns sent %q, want %q", got, want)
	}
	for _, n := range []string{"s1 t3", "s1 t4"} {
		if _, ok := f.sent[n]; ok {
			t.Errorf("turn %q was sent after its session's turn failed", n)
		}
	}
	if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.HasPrefix(n, "1 of 3 sessions ended early") }) {
		t.Errorf("notes %q: want the session that ended early counted", out.Notes)
	}

	// The third turn of session 1 carries everything before it, answers included.
	wantMsgs := []engine.Message{
		{Role: "system", Content: "system 0"},
		{Role: "user", Content: "s0 t1"}, {Role: "assistant", Content: "answer to s0 t1"},
		{Role: "user", Content: "s0 t2"}, {Role: "assistant", Content: "answer to s0 t2"},
		{Role: "user", Content: "s0 t3"},
	}
	if !slices.Equal(f.sent["s0 t3"], wantMsgs) {
		t.Errorf("turn 3 sent %+v, want %+v", f.sent["s0 t3"], wantMsgs)
	}
	if m := f.sent["s1 t1"]; len(m) != 1 || m[0].Role != "user" {
		t.Errorf("session 2 (no system prompt) turn 1 sent %+v", m)
	}

	for k, q := range out.Measured {
		if q.I != k {
			t.Errorf("record %d has index %d", k, q.I)
		}
		if q.Turn == 1 {
			continue
		}
		prev := out.Measured[k-1]
		// Scheduled at the previous end plus the think time (µs rounding aside): a late
		// send shows as lag, never as a later schedule.
		if d := q.SchedUS - prev.EndUS - 30_000; d < -1 || d > 1 {
			t.Errorf("session %d turn %d scheduled %d µs after the previous end, want 30000", q.Session, q.Turn, q.SchedUS-prev.EndUS)
		}
		// History: the previous prompt and its answer as the engine counted them.
		if q.HistoryTokens != prev.PromptTokens+prev.OutputTokens {
			t.Errorf("session %d turn %d history %d, want %d", q.Session, q.Turn, q.HistoryTokens, prev.PromptTokens+prev.OutputTokens)
		}
	}
	if h := out.Measured[0].HistoryTokens; h != 3 {
		t.Errorf("turn 1 of a session with a 3-token system prompt carries %d history tokens", h)
	}
}

// An interrupted session run keeps what was measured and sends no further turn.
func TestSessionsInterrupted(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := &chatFake{epoch: epoch, delay: 2 * time.Millisecond, sent: map[string][]engine.Message{}}
	src := &sessionSource{fakeSource: fakeSource{arrivals: constant(100, 2)}, turns: []int{1000, 1000}}
	cfg := baseConfig(f, src, epoch)
	cfg.API, cfg.Sessions = engine.APIChat, src
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || len(out.Measured) == 0 || len(out.Measured) >= 2000 {
		t.Fatalf("interrupted %v with %d turns, want an interrupted run with some turns", out.Interrupted, len(out.Measured))
	}
	f.mu.Lock()
	n := len(f.sent)
	f.mu.Unlock()
	if n != len(out.Measured) {
		t.Errorf("%d requests sent, %d recorded", n, len(out.Measured))
	}
}
