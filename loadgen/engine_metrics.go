package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

// Series names of the engine's gauges in a record.
const (
	SeriesQueueDepth  = "queue_depth"
	SeriesRunning     = "running"
	SeriesKVUsage     = "kv_usage"
	SeriesPreemptions = "preemptions"
)

// EngineSampler scrapes the engine's metrics page at a fixed interval during the measured
// window (hang Run on Config.Observe) and summarizes what it saw. Scrape failures are
// counted, not fatal: a missed sample is a gap in the series, never a zero.
type EngineSampler struct {
	Scrape func(ctx context.Context) (engine.Snapshot, error)
	Every  time.Duration // default 1s
	Epoch  time.Time     // times of samples are offsets from it
	// Timeout bounds one scrape; default twice Every, at least 2s. A scrape that passes
	// it is counted as timed out, so a stalled page shows in the record's notes instead
	// of holding the sampler for the rest of the window.
	Timeout time.Duration

	mu                          sync.Mutex
	series                      map[string][]result.Sample
	first, last                 engine.Snapshot
	samples, failures, timeouts int
	lastErr                     error
	// dropped counts the non-finite values the engine exported, by metric and kind.
	dropped map[string]int
	primed  bool
}

func (s *EngineSampler) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return max(2*s.Every, 2*time.Second)
}

// Prime takes the first sample before the window opens (hang it on Config.OpenWindow):
// a scrape racing the first measured request could count part of it.
func (s *EngineSampler) Prime(ctx context.Context) {
	s.sample(ctx)
	s.mu.Lock()
	s.primed = true
	s.mu.Unlock()
}

// Run samples until ctx ends: once at once (unless Prime did), then every Every, and once
// more at the end so that counters cover the whole window.
func (s *EngineSampler) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = time.Second
	}
	s.mu.Lock()
	primed := s.primed
	s.mu.Unlock()
	if !primed {
		s.sample(ctx)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The window has closed; one last scrape with a short deadline of its own.
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			s.sample(fctx)
			cancel()
			return
		case <-t.C:
			s.sample(ctx)
		}
	}
}

func (s *EngineSampler) sample(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, s.timeout())
	snap, err := s.Scrape(sctx)
	timedOut := sctx.Err() != nil
	cancel()
	at := time.Since(s.Epoch).Microseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.failures++
			s.lastErr = err
			if timedOut || errors.Is(err, engine.ErrStalled) {
				s.timeouts++
			}
		}
		return
	}
	if s.series == nil {
		s.series = map[string][]result.Sample{}
	}
	for _, d := range snap.Dropped {
		if s.dropped == nil {
			s.dropped = map[string]int{}
		}
		s.dropped[d]++
	}
	add := func(name string, v engine.Value) {
		if v.OK {
			s.series[name] = append(s.series[name], result.Sample{TUS: at, V: v.V})
		}
	}
	add(SeriesQueueDepth, snap.QueueDepth)
	add(SeriesRunning, snap.Running)
	add(SeriesKVUsage, snap.KVUsage)
	add(SeriesPreemptions, snap.Preemptions)
	// Counters are differenced between the first and the last scrape that had them, so
	// that one dropped (non-finite) value does not lose the whole delta.
	keep(&s.first, snap, true)
	keep(&s.last, snap, false)
	s.samples++
}

// Apply writes the series and their summaries into rec, and notes what was missing.
func (s *EngineSampler) Apply(rec *result.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		timedOut := ""
		if s.timeouts > 0 {
			timedOut = fmt.Sprintf("%d timed out after %s; ", s.timeouts, s.timeout())
		}
		rec.Notes = append(rec.Notes, fmt.Sprintf("engine metrics: %d of %d scrapes failed (%slast: %v)", s.failures, s.samples+s.failures, timedOut, s.lastErr))
	}
	if len(s.dropped) > 0 {
		keys := make([]string, 0, len(s.dropped))
		for k := range s.dropped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s in %d of %d scrapes", k, s.dropped[k], s.samples)
		}
		rec.Notes = append(rec.Notes, "engine metrics: non-finite values dropped (gaps in the series, not zeros): "+strings.Join(parts, "; "))
	}
	if s.samples == 0 {
		rec.Notes = append(rec.Notes, "engine metrics: no scrape succeeded; queue depth, KV usage and preemptions are not measured")
		return
	}
	if rec.Series.Engine == nil {
		rec.Series.Engine = map[string][]result.Sample{}
	}
	for k, v := range s.series {
		rec.Series.Engine[k] = v
	}
	sum := &rec.Summary
	sum.QueueDepth = gaugeOf(s.series[SeriesQueueDepth])
	sum.Running = gaugeOf(s.series[SeriesRunning])
	sum.KVUsage = gaugeOf(s.series[SeriesKVUsage])
	if s.first.Preemptions.OK && s.last.Preemptions.OK {
		d := max(s.last.Preemptions.V-s.first.Preemptions.V, 0)
		sum.Preemptions = &d
	}
	switch {
	case s.first.PrefixQueries.OK && s.last.PrefixQueries.OK && s.first.PrefixHits.OK && s.last.PrefixHits.OK:
		q := max(s.last.PrefixQueries.V-s.first.PrefixQueries.V, 0)
		h := min(max(s.last.PrefixHits.V-s.first.PrefixHits.V, 0), q)
		pc := &result.PrefixCacheStats{Queries: q, Hits: h, Source: "engine counters of queried and cached prompt tokens, delta over the window"}
		if q > 0 {
			pc.HitRate = h / q
			r := pc.HitRate
			sum.PrefixCacheHitRate = &r
		}
		sum.PrefixCache = pc
	case s.last.PrefixHitRate.OK:
		r := min(max(s.last.PrefixHitRate.V, 0), 1)
		sum.PrefixCacheHitRate = &r
		sum.PrefixCache = &result.PrefixCacheStats{HitRate: r, Source: "engine hit-rate gauge, last sample of the window"}
	}
	sum.EngineTokens = engineTokens(s.first, s.last)
	if t := sum.EngineTokens; sum.PrefixCache == nil && t != nil && t.PromptProcessed != nil && t.PromptCached != nil {
		// Engines that count processed and cached prompt tokens apart (llama.cpp): every
		// prompt token was looked up, the cached ones hit.
		q := *t.PromptProcessed + *t.PromptCached
		pc := &result.PrefixCacheStats{Queries: q, Hits: *t.PromptCached, Source: "engine counters of processed and cached prompt tokens, delta over the window"}
		if q > 0 {
			pc.HitRate = pc.Hits / q
			r := pc.HitRate
			sum.PrefixCacheHitRate = &r
		}
		sum.PrefixCache = pc
	}
	var missing []string
	for _, n := range []struct {
		name string
		g    *result.Gauge
	}{{"queue depth", sum.QueueDepth}, {"running requests", sum.Running}, {"KV usage", sum.KVUsage}} {
		if n.g == nil {
			missing = append(missing, n.name)
		}
	}
	if sum.Preemptions == nil {
		missing = append(missing, "preemptions")
	}
	if len(missing) > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("engine metrics: the engine exports no %v", missing))
	}
}

// gaugeOf summarizes samples (nearest-rank percentiles); nil when there are none.
func gaugeOf(ss []result.Sample) *result.Gauge {
	if len(ss) == 0 {
		return nil
	}
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = s.V
	}
	sort.Float64s(v)
	at := func(p float64) float64 {
		k := int(p*float64(len(v))+0.999999) - 1
		return v[min(max(k, 0), len(v)-1)]
	}
	return &result.Gauge{P50: at(0.50), P95: at(0.95), Max: v[len(v)-1]}
}

// keep copies the values src has into dst: all of them, or (onlyUnset) those dst lacks.
func keep(dst *engine.Snapshot, src engine.Snapshot, onlyUnset bool) {
	for _, f := range []struct{ d, s *engine.Value }{
		{&dst.QueueDepth, &src.QueueDepth}, {&dst.Running, &src.Running}, {&dst.KVUsage, &src.KVUsage},
		{&dst.Preemptions, &src.Preemptions}, {&dst.PrefixHits, &src.PrefixHits},
		{&dst.PrefixQueries, &src.PrefixQueries}, {&dst.PrefixHitRate, &src.PrefixHitRate},
		{&dst.PromptTokens, &src.PromptTokens}, {&dst.PromptTokensCached, &src.PromptTokensCached},
		{&dst.OutputTokens, &src.OutputTokens},
	} {
		if f.s.OK && !(onlyUnset && f.d.OK) {
			*f.d = *f.s
		}
	}
}

// engineTokens are the deltas of the engine's token counters between two snapshots; nil
// when it exports none. A counter that went down (the engine restarted) gives no figure.
func engineTokens(first, last engine.Snapshot) *result.EngineTokens {
	delta := func(a, b engine.Value) *float64 {
		if !a.OK || !b.OK || b.V < a.V {
			return nil
		}
		d := b.V - a.V
		return &d
	}
	t := &result.EngineTokens{
		PromptProcessed: delta(first.PromptTokens, last.PromptTokens),
		PromptCached:    delta(first.PromptTokensCached, last.PromptTokensCached),
		Output:          delta(first.OutputTokens, last.OutputTokens),
	}
	if t.PromptProcessed == nil && t.PromptCached == nil && t.Output == nil {
		return nil
	}
	return t
}
