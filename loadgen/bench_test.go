package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

// noopServer answers every request at once with one content chunk, usage and [DONE]:
// the cheapest honest server, so that what is measured is the load generator.
func noopServer(b *testing.B) *httptest.Server {
	body := []byte("data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\n" +
		"data: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func BenchmarkDispatch1000(b *testing.B) { benchDispatch(b, 1000) }
func BenchmarkDispatch5000(b *testing.B) { benchDispatch(b, 5000) }

// instant is a Streamer that answers at once without I/O: what is left is the
// dispatcher and the per-request bookkeeping.
type instant struct{ epoch time.Time }

func (s instant) Stream(_ context.Context, _ *engine.Request, res *engine.Result) {
	res.Reset()
	res.Send = time.Since(s.epoch)
	res.First, res.Last, res.End = res.Send, res.Send, res.Send
	res.Chunks, res.OutputTokens = 1, 1
}

// benchDispatch runs an open loop for 2 s at rate and reports the dispatch lag
// (send − sched): the client's own share of latency, which must stay below the
// client-saturation bound (1 ms at p99). Sub-benchmarks: through the real client against
// a no-op server ("http"), or an instant Streamer ("nohttp"); each with every pacing, the
// default ("precise") first.
func benchDispatch(b *testing.B, rate float64) {
	srv := noopServer(b)
	for _, transport := range []string{"http", "nohttp"} {
		for _, mode := range []pacing{pacePrecise, paceSpin, paceTimer} {
			b.Run(transport+"/"+mode.String(), func(b *testing.B) { benchRun(b, srv, transport == "http", rate, mode) })
		}
	}
}

func benchRun(b *testing.B, srv *httptest.Server, useHTTP bool, rate float64, mode pacing) {
	var lags []int64
	var errs, sent int
	var cpu, wall time.Duration
	for b.Loop() {
		c := engine.NewClient(engine.ClientOptions{BaseURL: srv.URL, Model: "m"})
		var s engine.Streamer = c
		if !useHTTP {
			s = instant{c.Epoch()}
		}
		cfg := Config{
			Streamer: s, Source: &fakeSource{arrivals: constant(rate, int(2*rate))}, Epoch: c.Epoch(),
			API: engine.APICompletions, Model: "m", Timeout: 10 * time.Second,
			// Opens a few connections first, as a real run's warm-up does.
			Warmup: 64, WarmupConcurrency: 16,
			pacing: mode,
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cpu0, wall0 := cpuTime(), time.Now()
		out, err := Run(ctx, cfg)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
		wall += time.Since(wall0)
		lags = append(lags, lagsUS(out.Measured)...)
		sent += len(out.Measured)
		for _, q := range out.Measured {
			if q.Error != "" {
				errs++
			}
		}
	}
	b.ReportMetric(float64(median(lags)), "lag-p50-µs")
	b.ReportMetric(float64(quantile(lags, 0.99)), "lag-p99-µs")
	b.ReportMetric(float64(quantile(lags, 1)), "lag-max-µs")
	b.ReportMetric(float64(errs)/float64(max(sent, 1)), "errors/req")
	// CPU of the whole process (client and test server) per second of wall time.
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(wall), "cpus")
	}
}

// gapped answers at once with chunks content chunks 1 µs apart: a request's full
// timeline without I/O.
type gapped struct {
	epoch  time.Time
	chunks int
}

func (s gapped) Stream(_ context.Context, req *engine.Request, res *engine.Result) {
	res.Reset()
	res.Send = time.Since(s.epoch)
	res.First = res.Send + time.Millisecond
	for range s.chunks - 1 {
		res.Gaps = append(res.Gaps, time.Microsecond)
	}
	res.Last = res.First + time.Duration(s.chunks-1)*time.Microsecond
	res.End = res.Last
	res.Chunks, res.OutputTokens, res.PromptTokens, res.UsageReported, res.FinishReason = s.chunks, s.chunks, 16, true, "length"
}

// BenchmarkHeapPerRequest measures how the live heap grows with a run's length: an open
// loop of n requests of 128 chunks each.
//
//   - kept: the Outcome holds the requests, as a run without a journal does until its
//     record is written. heap-B/req is the live heap after the run, above the level
//     before it, per measured request: constant in n means memory grows linearly with the
//     run (each finished request costs that much).
//   - spilled: the requests go to Finished as they end and nowhere else (Config.Spill, as
//     a run with measure's journal does); heap-B/req is the live heap as the window
//     closes, before anything is read back, above the level before the run, per
//     request: near 0 and falling with n means the client's memory does not grow with
//     the run.
//
// Run it with
//
//	go test -run '^$' -bench HeapPerRequest ./loadgen/
func BenchmarkHeapPerRequest(b *testing.B) {
	holdGCFloor() // the ballast is the process's, not the run's
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	for _, spill := range []bool{false, true} {
		for _, n := range []int{2000, 8000} {
			b.Run(fmt.Sprintf("%s/requests=%d", map[bool]string{false: "kept", true: "spilled"}[spill], n), func(b *testing.B) {
				var per float64
				for b.Loop() {
					epoch := time.Now()
					cfg := Config{
						Streamer: gapped{epoch, 128}, Source: &fakeSource{arrivals: constant(20000, n)}, Epoch: epoch,
						API: engine.APICompletions, Model: "m", Timeout: 10 * time.Second,
					}
					var finished atomic.Int64
					var atClose float64
					if spill {
						cfg.Finished = func(warm bool, q *result.Request) { finished.Add(1) }
						cfg.Spill = func() ([]result.Request, error) {
							atClose = heap()
							return nil, nil
						}
					}
					before := heap()
					out, err := Run(context.Background(), cfg)
					if err != nil {
						b.Fatal(err)
					}
					if spill {
						if finished.Load() != int64(n) {
							b.Fatalf("%d requests finished", finished.Load())
						}
						per = (atClose - before) / float64(n)
						continue
					}
					if len(out.Measured) != n {
						b.Fatalf("%d requests measured", len(out.Measured))
					}
					per = (heap() - before) / float64(n)
					runtime.KeepAlive(out)
				}
				b.ReportMetric(per, "heap-B/req")
			})
		}
	}
}
