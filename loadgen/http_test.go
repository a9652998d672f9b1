package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
)

// sseServer streams chunks content chunks gap apart after a prefill delay, then a
// finish chunk, a usage chunk and [DONE], like vLLM's /v1/completions. With slot set,
// one request at a time holds the slot from arrival to the end of its response: a
// single-slot server whose queue grows when the rate exceeds its capacity.
func sseServer(t testing.TB, prefill, gap time.Duration, chunks int, slot chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ctx := r.Context()
		if slot != nil {
			select {
			case slot <- struct{}{}:
				defer func() { <-slot }()
			case <-ctx.Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		if !sleepCtx(ctx, prefill) {
			return
		}
		for k := range chunks {
			if k > 0 && !sleepCtx(ctx, gap) {
				return
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"finish_reason\":null}]}\n\n", k)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", chunks, chunks+5)
		fmt.Fprintf(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func clientConfig(srv *httptest.Server, src Source) Config {
	c := engine.NewClient(engine.ClientOptions{BaseURL: srv.URL, Model: "m"})
	return Config{Streamer: c, Source: src, Epoch: c.Epoch(), API: engine.APICompletions, Model: "m", Timeout: 20 * time.Second}
}

// TestRealClient drives an SSE server through engine.Client at a constant 50 req/s:
// the timelines must show the server's 30 ms prefill and 5 ms token gaps.
func TestRealClient(t *testing.T) {
	t.Parallel()
	srv := sseServer(t, 30*time.Millisecond, 5*time.Millisecond, 10, nil)
	out := run(t, clientConfig(srv, &fakeSource{arrivals: constant(50, 100)}))
	if len(out.Measured) != 100 {
		t.Fatalf("%d measured, want 100", len(out.Measured))
	}
	var ttft, itl, decode []int64
	for _, q := range out.Measured {
		if q.Error != "" || q.Chunks != 10 || q.OutputTokens != 10 || q.NoUsage || q.Finish != "length" {
			t.Fatalf("request %d: error %q (%s) chunks %d tokens %d no_usage %v finish %q",
				q.I, q.Error, q.ErrorDetail, q.Chunks, q.OutputTokens, q.NoUsage, q.Finish)
		}
		ttft = append(ttft, q.FirstUS-q.SchedUS)
		itl = append(itl, q.ITLUS...)
		decode = append(decode, (q.LastUS-q.SchedUS)-(q.FirstUS-q.SchedUS)) // E2E − TTFT
	}
	if p50 := median(ttft); p50 < 25_000 || p50 > 150_000 {
		t.Errorf("TTFT p50 %dµs, want ≈ 30 ms", p50)
	}
	if len(itl) != 100*9 {
		t.Errorf("%d ITL gaps, want 900", len(itl))
	}
	if p50 := median(itl); p50 < 3_000 || p50 > 30_000 {
		t.Errorf("ITL p50 %dµs, want ≈ 5 ms", p50)
	}
	// E2E ≈ TTFT + 9 × 5 ms.
	if p50 := median(decode); p50 < 40_000 || p50 > 200_000 {
		t.Errorf("E2E − TTFT p50 %dµs, want ≈ 45 ms", p50)
	}
}

// TestRealClientQueueing: a server that holds every request 50 ms in a single slot
// (capacity 20 req/s), driven at 40 req/s. The open loop keeps sending on schedule, so
// the queue, and TTFT measured from the scheduled time, grow through the run.
func TestRealClientQueueing(t *testing.T) {
	t.Parallel()
	srv := sseServer(t, 50*time.Millisecond, 0, 1, make(chan struct{}, 1))
	out := run(t, clientConfig(srv, &fakeSource{arrivals: constant(40, 40)}))
	ttft := ttftsUS(out.Measured)
	for _, q := range out.Measured {
		if q.Error != "" {
			t.Fatalf("request %d: %s %s", q.I, q.Error, q.ErrorDetail)
		}
	}
	// Expected: TTFT grows by ~25 ms per request, p50 ≈ 0.55 s, p99 ≈ 1.05 s.
	p50, p99 := median(ttft), quantile(ttft, 0.99)
	if p99 < 3*p50/2 || p99 < 500_000 {
		t.Errorf("TTFT p50 %dµs, p99 %dµs: the queue should put p99 far above p50", p50, p99)
	}
	// A client that waited for the queue would send at the queue's pace, its median
	// lag near TTFT p50 (0.5 s); one interval between arrivals (25 ms) leaves room for
	// a loaded machine's stalls (4.8 ms once under -race beside a compile).
	if lag := median(lagsUS(out.Measured)); lag > 25_000 {
		t.Errorf("dispatch lag p50 %dµs: the client must keep its schedule while the server queues", lag)
	}
}
