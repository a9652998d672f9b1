package result

import (
	"math"
	"testing"
)

func TestAttributePrefixHits(t *testing.T) {
	ip := func(v int) *int { return &v }
	type req struct {
		prompt, output, turn, history int
		cached                        *int
	}
	tests := []struct {
		name        string
		hits        float64
		preemptions float64 // -1: the engine exports none
		reqs        []req
		method      string
		readmitted  float64
		declared    float64
		foreign     float64
	}{
		// The defect's shape: unique prompts, none cached at first scheduling, and the
		// counters' hits all from sequences re-admitted after preemption.
		{"re-admissions, per request", 64, 2, []req{{100, 50, 0, 0, ip(0)}, {200, 50, 0, 0, ip(0)}},
			OwnPerRequest, 64, 0, 0},
		// Hits at the first scheduling are from before the window: foreign, whatever
		// preemption happened.
		{"warm cache, per request", 96, 2, []req{{100, 50, 0, 0, ip(64)}, {200, 50, 0, 0, ip(32)}},
			OwnPerRequest, 0, 0, 96},
		// Hits beyond the first schedulings but more than the preemptions could re-admit
		// (one preemption, at most 240 tokens): the excess is foreign.
		{"residual beyond the preemption bound", 400, 1, []req{{100, 50, 0, 0, ip(0)}, {200, 50, 0, 0, ip(0)}},
			OwnPerRequest, 240, 0, 160},
		// A session's later turn hits its own history (rounded down to whole blocks).
		{"session history", 48, 0, []req{{40, 10, 1, 0, ip(0)}, {90, 10, 2, 50, ip(48)}},
			OwnPerRequest, 0, 48, 0},
		// Hits on a turn beyond its history are foreign.
		{"more than the history", 80, 0, []req{{40, 10, 1, 0, ip(0)}, {150, 10, 2, 50, ip(80)}},
			OwnPerRequest, 0, 48, 32},
		// No per-request counts: own is the most the preemptions could explain.
		{"bound, explained", 64, 2, []req{{100, 50, 0, 0, nil}, {200, 50, 0, 0, nil}},
			OwnBound, 64, 0, 0},
		// No per-request counts and no preemption: every hit is foreign.
		{"bound, no preemption", 64, 0, []req{{100, 50, 0, 0, nil}, {200, 50, 0, 0, nil}},
			OwnBound, 0, 0, 64},
		// An engine that exports no preemption counter: nothing is taken as re-admission.
		{"no preemption counter", 64, -1, []req{{100, 50, 0, 0, ip(0)}, {200, 50, 0, 0, ip(0)}},
			OwnPerRequest, 0, 0, 64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Record{PrefixCache: &PrefixCacheRun{Mode: PrefixCold}}
			var prompts float64
			for i, q := range tc.reqs {
				r.Requests = append(r.Requests, Request{I: i, PromptTokens: q.prompt, OutputTokens: q.output, Turn: q.turn, HistoryTokens: q.history, CachedTokens: q.cached})
				prompts += float64(q.prompt)
			}
			r.Summary.PrefixCache = &PrefixCacheStats{Queries: prompts + 100, Hits: tc.hits, HitRate: tc.hits / (prompts + 100), Source: "test"}
			r.Summary.KVConcurrency = &KVConcurrency{Value: 4, BlockSize: 16}
			if tc.preemptions >= 0 {
				p := tc.preemptions
				r.Summary.Preemptions = &p
			}
			AttributePrefixHits(r)
			pc := r.Summary.PrefixCache
			if pc.Own == nil || pc.Foreign == nil || pc.ForeignRate == nil {
				t.Fatalf("not attributed: %+v", pc)
			}
			if pc.Own.Method != tc.method || pc.Own.Readmitted != tc.readmitted || pc.Own.Declared != tc.declared || *pc.Foreign != tc.foreign {
				t.Errorf("own %+v foreign %v; want %s readmitted %v declared %v foreign %v", *pc.Own, *pc.Foreign, tc.method, tc.readmitted, tc.declared, tc.foreign)
			}
			if pc.Own.Hits+*pc.Foreign != tc.hits {
				t.Errorf("own %v + foreign %v != hits %v", pc.Own.Hits, *pc.Foreign, tc.hits)
			}
			if want := tc.foreign / prompts; math.Abs(*pc.ForeignRate-want) > 1e-12 {
				t.Errorf("foreign rate %v, want %v (over the prompts' tokens)", *pc.ForeignRate, want)
			}
			// The verdict follows the foreign rate alone.
			if refused := r.WarmCold() != ""; refused != (*pc.ForeignRate > ColdHitRateMax) {
				t.Errorf("WarmCold refused %v at foreign rate %v", refused, *pc.ForeignRate)
			}
		})
	}
}

// A run that is not cold, or a rate without counts, is left unattributed.
func TestAttributePrefixHitsLeavesOthers(t *testing.T) {
	shared := &Record{PrefixCache: &PrefixCacheRun{Mode: PrefixShared}}
	shared.Summary.PrefixCache = &PrefixCacheStats{Queries: 100, Hits: 50, HitRate: 0.5}
	rateOnly := &Record{PrefixCache: &PrefixCacheRun{Mode: PrefixCold}}
	rateOnly.Summary.PrefixCache = &PrefixCacheStats{HitRate: 0.3}
	for _, r := range []*Record{shared, rateOnly} {
		AttributePrefixHits(r)
		if r.Summary.PrefixCache.Own != nil || r.Summary.PrefixCache.Foreign != nil {
			t.Errorf("attributed %+v", r.Summary.PrefixCache)
		}
	}
	if rateOnly.WarmCold() == "" {
		t.Error("a cold run at a 30% hit-rate gauge was not refused")
	}
}
