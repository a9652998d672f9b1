package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

func TestEngineSamplerSummarizes(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	s := &EngineSampler{
		Every: 10 * time.Millisecond,
		Epoch: time.Now(),
		Scrape: func(ctx context.Context) (engine.Snapshot, error) {
			k := float64(n.Add(1))
			if k == 3 {
				return engine.Snapshot{}, errors.New("connection reset") // one failed scrape: a gap, not a zero
			}
			return engine.Snapshot{
				QueueDepth:    engine.Value{V: k, OK: true},
				Running:       engine.Value{V: 4, OK: true},
				KVUsage:       engine.Value{V: k / 100, OK: true},
				Preemptions:   engine.Value{V: 10 + 2*k, OK: true},
				PrefixQueries: engine.Value{V: 1000 * k, OK: true},
				PrefixHits:    engine.Value{V: 250 * k, OK: true},
			}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for n.Load() < 8 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done

	var rec result.Record
	s.Apply(&rec)
	calls := n.Load()
	q := rec.Series.Engine[SeriesQueueDepth]
	if int64(len(q)) != calls-1 {
		t.Fatalf("%d queue samples for %d scrapes with one failure", len(q), calls)
	}
	for i := 1; i < len(q); i++ {
		if q[i].TUS < q[i-1].TUS || q[i].V == 0 {
			t.Fatalf("samples out of order or zero-filled: %v", q)
		}
	}
	sum := rec.Summary
	if sum.QueueDepth == nil || sum.QueueDepth.Max != float64(calls) || sum.Running.P50 != 4 || sum.KVUsage.Max != float64(calls)/100 {
		t.Errorf("gauges %+v %+v %+v", sum.QueueDepth, sum.Running, sum.KVUsage)
	}
	// Counters: the delta between the first and the last scrape.
	if sum.Preemptions == nil || *sum.Preemptions != 2*float64(calls-1) {
		t.Errorf("preemptions %v, want %d", sum.Preemptions, 2*(calls-1))
	}
	if sum.PrefixCacheHitRate == nil || *sum.PrefixCacheHitRate != 0.25 {
		t.Errorf("prefix hit rate %v, want 0.25", sum.PrefixCacheHitRate)
	}
	if pc := sum.PrefixCache; pc == nil || pc.HitRate != 0.25 || pc.Queries != 4*pc.Hits || pc.Queries <= 0 || pc.Source == "" {
		t.Errorf("prefix cache %+v, want the counters' deltas over the window and a 0.25 hit rate", pc)
	}
	if len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "1 of") || !strings.Contains(rec.Notes[0], "connection reset") {
		t.Errorf("notes %q: want the failed scrape counted", rec.Notes)
	}
}

func TestEngineSamplerAbsentMetricsAreNotZeros(t *testing.T) {
	t.Parallel()
	// An engine that exports only a queue gauge: the rest stays absent, with a note.
	s := &EngineSampler{Every: time.Hour, Epoch: time.Now(), Scrape: func(ctx context.Context) (engine.Snapshot, error) {
		return engine.Snapshot{QueueDepth: engine.Value{V: 2, OK: true}}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Run(ctx)
	var rec result.Record
	s.Apply(&rec)
	sum := rec.Summary
	if sum.QueueDepth == nil || sum.KVUsage != nil || sum.Running != nil || sum.Preemptions != nil || sum.PrefixCacheHitRate != nil {
		t.Errorf("summary %+v", sum)
	}
	if len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "running requests KV usage preemptions") {
		t.Errorf("notes %q", rec.Notes)
	}

	// Nothing at all succeeded: one note, no series.
	s = &EngineSampler{Every: time.Hour, Epoch: time.Now(), Scrape: func(ctx context.Context) (engine.Snapshot, error) {
		return engine.Snapshot{}, errors.New("HTTP 404")
	}}
	s.Run(ctx)
	rec = result.Record{}
	s.Apply(&rec)
	if rec.Series.Engine != nil || rec.Summary.QueueDepth != nil || len(rec.Notes) != 2 {
		t.Errorf("series %v notes %q", rec.Series.Engine, rec.Notes)
	}
}

// A metrics page whose KV gauge is sometimes NaN and whose running gauge is +Inf: the
// record is still written, those samples are gaps with a note, and the counter delta
// survives a scrape that dropped it.
func TestEngineSamplerNonFiniteMetricsKeepTheRecord(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		kv, pre := "0.5", strconv.FormatInt(10*k, 10)
		if k%2 == 0 {
			kv, pre = "NaN", "NaN"
		}
		fmt.Fprintf(w, "vllm:num_requests_waiting 1\nvllm:num_requests_running +Inf\nvllm:kv_cache_usage_perc %s\nvllm:num_preemptions_total %s\n", kv, pre)
	}))
	defer srv.Close()
	sc := &engine.Scraper{URL: srv.URL, Set: engine.MetricSetFor(engine.EngineVLLM)}
	s := &EngineSampler{Scrape: sc.Scrape, Every: 5 * time.Millisecond, Epoch: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for n.Load() < 6 {
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	<-done

	rec := &result.Record{Workload: "w"}
	s.Apply(rec)
	path := filepath.Join(t.TempDir(), "run.json")
	if err := result.Write(path, rec); err != nil {
		t.Fatalf("the record could not be written: %v", err)
	}
	back, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range back.Series.Engine[SeriesKVUsage] {
		if smp.V != 0.5 {
			t.Errorf("KV series holds %v: a dropped sample became a value", smp.V)
		}
	}
	if back.Series.Engine[SeriesRunning] != nil || back.Summary.Running != nil {
		t.Errorf("an +Inf gauge was recorded: %v", back.Series.Engine[SeriesRunning])
	}
	if back.Summary.Preemptions == nil || *back.Summary.Preemptions <= 0 {
		t.Errorf("preemptions %v: the delta between the first and last finite values was lost", back.Summary.Preemptions)
	}
	var note string
	for _, nt := range back.Notes {
		if strings.Contains(nt, "non-finite") {
			note = nt
		}
	}
	if !strings.Contains(note, "vllm:kv_cache_usage_perc (NaN) in ") || !strings.Contains(note, "vllm:num_requests_running (+Inf) in ") {
		t.Errorf("note %q: want both dropped metrics named", note)
	}
}

// countingEngine counts prompt tokens when a request arrives and output tokens when it
// ends, as an engine's counters do.
type countingEngine struct {
	f              *fakeServer
	prompt, output atomic.Int64
}

func (c *countingEngine) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	c.prompt.Add(10) // the fake's usage says 10 prompt tokens
	c.f.Stream(ctx, req, res)
	c.output.Add(int64(res.OutputTokens))
}

// TestEngineTokensCoverExactlyTheMeasuredRequests: the engine's token counters over the
// window equal the tokens of the measured requests, warm-up excluded, even when the engine
// answers the first scrape late (llama.cpp queues /metrics behind the requests). The first
// scrape is taken before the first measured request is sent.
func TestEngineTokensCoverExactlyTheMeasuredRequests(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	eng := &countingEngine{f: newFake(epoch, 2*time.Millisecond, 3, time.Millisecond, false)}
	var scrapes atomic.Int64
	s := &EngineSampler{Every: time.Hour, Epoch: epoch, Scrape: func(ctx context.Context) (engine.Snapshot, error) {
		if scrapes.Add(1) == 1 {
			time.Sleep(60 * time.Millisecond) // read the counters late
		}
		return engine.Snapshot{
			PromptTokens:       engine.Value{V: float64(eng.prompt.Load()), OK: true},
			PromptTokensCached: engine.Value{V: 0, OK: true},
			OutputTokens:       engine.Value{V: float64(eng.output.Load()), OK: true},
		}, nil
	}}
	cfg := baseConfig(eng, &fakeSource{arrivals: constant(200, 6)}, epoch)
	cfg.Warmup = 2
	cfg.OpenWindow, cfg.Observe = s.Prime, s.Run
	out := run(t, cfg)
	var rec result.Record
	s.Apply(&rec)
	var prompt, output int
	for _, r := range out.Measured {
		if r.Error != "" {
			t.Fatalf("request failed: %+v", r)
		}
		prompt += r.PromptTokens
		output += r.OutputTokens
	}
	et := rec.Summary.EngineTokens
	if et == nil || et.PromptProcessed == nil || et.Output == nil || et.PromptCached == nil {
		t.Fatalf("engine tokens %+v", et)
	}
	if *et.PromptProcessed != float64(prompt) || *et.Output != float64(output) || *et.PromptCached != 0 {
		t.Errorf("engine counted prompt %v (cached %v), output %v over the window; the measured requests had %d and %d",
			*et.PromptProcessed, *et.PromptCached, *et.Output, prompt, output)
	}
	if eng.prompt.Load() != int64(prompt)+20 {
		t.Errorf("the engine saw %d prompt tokens, want the 2 warm-up requests' 20 besides", eng.prompt.Load())
	}
}
