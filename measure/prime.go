package measure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// PrimeConcurrency is how many priming requests of a warm run are in flight at once:
// enough to prefill a few thousand prompts in reasonable time, few enough that the engine
// does not preempt or evict while it primes.
const PrimeConcurrency = 8

// primeCount is how many measured requests a warm run primes: every one its schedule
// sends (the open loop's arrivals, the closed loop's requests).
func primeCount(w *workload.Workload, src loadgen.Source) int {
	if w.Arrival.Process == workload.ArrivalClosed {
		return w.Requests
	}
	return len(src.Arrivals())
}

// prime is the priming pass of prefix_cache: warm. It sends the prompt of every measured
// request of src (0 ≤ i < n) once, asking for one token, PrimeConcurrency at a time,
// last request first: where the engine's cache cannot hold them all, it evicts the least
// recently used, and the requests the window sends first are then the ones still cached
// when they are sent. It runs after the warm-up and before the engine's metrics are first
// scraped, so the window's prefix-cache figures exclude it. A prompt whose one token
// carried no text (an empty answer) was prefilled all the same and is not an error.
func (r *Runner) prime(ctx context.Context, st engine.Streamer, src loadgen.Source, n int, api, model string, timeout time.Duration) *result.PrimingSummary {
	p := &result.PrimingSummary{Requests: n, Concurrency: min(PrimeConcurrency, max(n, 1))}
	start := r.now()
	var (
		next   atomic.Int64
		mu     sync.Mutex
		tokens int
		wg     sync.WaitGroup
	)
	fail := func(reason string) {
		mu.Lock()
		defer mu.Unlock()
		if p.Errors == nil {
			p.Errors = map[string]int{}
		}
		p.Errors[reason]++
	}
	for range p.Concurrency {
		wg.Go(func() {
			var res engine.Result
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				it := src.Request(n - 1 - k)
				req := engine.Request{API: api, Model: model, Prompt: it.Prompt, MaxTokens: 1}
				res.Reset()
				rctx, cancel := context.WithTimeout(ctx, timeout)
				st.Stream(rctx, &req, &res)
				deadline := errors.Is(rctx.Err(), context.DeadlineExceeded)
				cancel()
				switch {
				case res.OK() || res.ErrReason == engine.ErrEmpty:
					mu.Lock()
					tokens += res.PromptTokens
					mu.Unlock()
				case deadline && ctx.Err() == nil:
					fail(engine.ErrTimeout)
				case ctx.Err() != nil:
					fail(engine.ErrCanceled)
				default:
					fail(res.ErrReason)
				}
			}
		})
	}
	wg.Wait()
	if sent := int(min(next.Load(), int64(n))); sent < n {
		// Interrupted: the requests never sent count as canceled.
		for range n - sent {
			fail(engine.ErrCanceled)
		}
	}
	p.PromptTokens = tokens
	p.DurationS = r.now().Sub(start).Seconds()
	return p
}

// primingNote says what a reader must know of a priming pass with failures; "" when
// every prompt was primed.
func primingNote(p *result.PrimingSummary) string {
	failed := 0
	for _, v := range p.Errors {
		failed += v
	}
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf("priming: %d of %d requests failed (%s): their prompts may not be in the engine's prefix cache, and the window is that much less warm",
		failed, p.Requests, result.ErrorCounts(p.Errors))
}
