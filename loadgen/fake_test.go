package loadgen

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/workload"
)

// fakeServer is a Streamer with injected delays that stamps Send/First/Last/End from
// its epoch like the real client. On a done context it reports "disconnect", as a naive
// client would, so the tests also check that loadgen names cancellation and timeouts.
type fakeServer struct {
	epoch   time.Time
	prefill time.Duration // before the first chunk
	chunks  int           // content chunks; default 1
	gap     time.Duration // between chunks
	// slot, when set, holds one request at a time for its whole duration: a server
	// that serves requests one by one, so that queueing builds up.
	slot chan struct{}

	calls, finished  atomic.Int64
	mu               sync.Mutex
	active, maxActiv int
	last             engine.Request
}

func newFake(epoch time.Time, prefill time.Duration, chunks int, gap time.Duration, serial bool) *fakeServer {
	f := &fakeServer{epoch: epoch, prefill: prefill, chunks: chunks, gap: gap}
	if serial {
		f.slot = make(chan struct{}, 1)
	}
	return f
}

func (f *fakeServer) now() time.Duration { return time.Since(f.epoch) }

func (f *fakeServer) maxActive() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxActiv
}

func (f *fakeServer) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	res.Reset()
	res.Send = f.now()
	f.calls.Add(1)
	f.mu.Lock()
	f.active++
	f.maxActiv = max(f.maxActiv, f.active)
	f.last = *req
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
		f.finished.Add(1)
	}()
	fail := func() {
		res.ErrReason = engine.ErrDisconnect
		res.End = f.now()
	}
	if f.slot != nil {
		select {
		case f.slot <- struct{}{}:
			defer func() { <-f.slot }()
		case <-ctx.Done():
			fail()
			return
		}
	}
	if !sleepCtx(ctx, f.prefill) {
		fail()
		return
	}
	res.First = f.now()
	res.Chunks = 1
	last := res.First
	for k := 1; k < max(f.chunks, 1); k++ {
		if !sleepCtx(ctx, f.gap) {
			fail()
			return
		}
		t := f.now()
		res.Gaps = append(res.Gaps, t-last)
		last = t
		res.Chunks++
	}
	res.Last = last
	res.End = f.now()
	res.OutputTokens = res.Chunks
	res.PromptTokens = 10
	res.UsageReported = true
	res.FinishReason = "length"
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fakeSource is a Source with a fixed schedule and think time; it records which
// (user, n) think times were asked for.
type fakeSource struct {
	arrivals []time.Duration
	think    time.Duration

	mu         sync.Mutex
	thinkCalls map[int][]int
}

func (s *fakeSource) Arrivals() []time.Duration { return s.arrivals }

func (s *fakeSource) Request(i int) workload.Item {
	return workload.Item{Index: i, Class: "chat", PromptTokens: 100 + i, OutputTokens: 7, Prompt: fmt.Sprintf("measured %d", i)}
}

func (s *fakeSource) WarmupRequest(i int) workload.Item {
	return workload.Item{Index: i, Warmup: true, Class: "warm", PromptTokens: 50, OutputTokens: 3, Prompt: fmt.Sprintf("warm %d", i)}
}

func (s *fakeSource) ThinkTime(u, n int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thinkCalls == nil {
		s.thinkCalls = map[int][]int{}
	}
	s.thinkCalls[u] = append(s.thinkCalls[u], n)
	return s.think
}

// constant is a constant-rate schedule of n arrivals.
func constant(rate float64, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(i) / rate * float64(time.Second))
	}
	return out
}

// median of xs in their units (xs is copied).
func median(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// quantile of xs, nearest rank.
func quantile(xs []int64, q float64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(q * float64(len(s)))
	return s[min(k, len(s)-1)]
}
