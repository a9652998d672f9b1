package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

func TestEngineSamplerSummarizes(t *testing.T) {
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
	if len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "1 of") || !strings.Contains(rec.Notes[0], "connection reset") {
		t.Errorf("notes %q: want the failed scrape counted", rec.Notes)
	}
}

func TestEngineSamplerAbsentMetricsAreNotZeros(t *testing.T) {
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
