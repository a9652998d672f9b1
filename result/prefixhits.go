package result

// Attribution of a cold run's prefix-cache hits. A cold run's prompts open with a salt
// unique to the request and the run, so no prompt block of the window can be in the
// cache from before it; what the engine still counts as hits is one of:
//
//   - re-admission: a sequence preempted under KV pressure and scheduled again finds the
//     blocks it computed itself still cached. vLLM counted these lookups in
//     vllm:prefix_cache_queries/hits until 0.11 (pull request 25787 moved them to
//     preempted_* stats that /metrics does not export); the simulator counts them as
//     the older versions do;
//   - declared sharing: a turn of a session opens with the history an earlier turn of
//     the same run computed;
//   - the opening: what every prompt of the run renders to before its salt (a chat
//     template's header, the BOS token), measured before the run (PrefixCacheRun.Opening)
//     in whole KV blocks. The run's first request computes it on a fresh engine, and a
//     warm engine has it from any earlier request: it says nothing of the cache's state;
//   - the rest, which a cache warm from before the window gave: a missing salt, a rerun
//     of the same run id.
//
// Only the last can make a cold run measure a warm cache, so it alone is judged
// (Record.WarmCold).

// Ways the run's own hits were told apart (OwnHits.Method).
const (
	OwnPerRequest = "per-request"
	OwnBound      = "bound"
)

var ownMethodText = map[string]string{
	OwnPerRequest: "by each request's cached_tokens at its first scheduling",
	OwnBound:      "by bound: the engine gave no per-request cached_tokens, so the most that the window's preemptions, the declared history and the shared opening could explain was counted as the run's own",
}

// AttributePrefixHits splits the window's prefix-cache hits of a cold run into the run's
// own (Own) and the rest (Foreign, ForeignRate). It needs the engine's token counters
// (Summary.PrefixCache with queries) and the measured requests; the KV block size, where
// known, rounds declared history down to whole blocks (a cache serves whole blocks).
//
// With every answered request's cached_tokens (usage.prompt_tokens_details, set at the
// first scheduling) the split is exact: their sum is what first admissions took from the
// cache, of which a turn's history is the run's own; hits beyond that sum are
// re-admissions, up to what the window's preemptions could re-admit (each at most one
// request's prompt and output). Without them, the declared history and that preemption
// bound are taken as own in full: the most they could explain.
func AttributePrefixHits(rec *Record) {
	pc := rec.Summary.PrefixCache
	if pc == nil || rec.PrefixCache == nil || rec.PrefixCache.Mode != PrefixCold {
		return
	}
	pc.Own, pc.Foreign, pc.ForeignRate = nil, nil, nil
	if !(pc.Queries > 0) {
		return // a rate without token counts (SGLang's gauge) cannot be split
	}
	block := 1
	if k := rec.Summary.KVConcurrency; k != nil && k.BlockSize > 0 {
		block = k.BlockSize
	}
	opening := 0
	if o := rec.PrefixCache.Opening; o != nil {
		opening = o.Tokens
	}
	var prompts, cachedSum, declaredHits, declaredMax, openingHits, openingMax float64
	answered, reported, maxCtx := 0, 0, 0
	for i := range rec.Requests {
		q := &rec.Requests[i]
		decl := 0
		if q.Turn > 1 {
			decl = q.HistoryTokens / block * block
		}
		declaredMax += float64(decl)
		// The opening is inside a turn's history: only what it adds beyond that counts.
		open := max(decl, opening)
		if q.PromptTokens > 0 {
			open = min(open, q.PromptTokens)
		}
		openingMax += float64(max(open-decl, 0))
		prompts += float64(q.PromptTokens)
		maxCtx = max(maxCtx, (q.PromptTokens+q.OutputTokens)/block*block)
		if !q.NoUsage && q.PromptTokens > 0 {
			answered++
		}
		if q.CachedTokens != nil {
			reported++
			c := float64(*q.CachedTokens)
			cachedSum += c
			declaredHits += min(c, float64(decl))
			openingHits += max(min(c, float64(open))-min(c, float64(decl)), 0)
		}
	}
	bound := 0.0
	if p := rec.Summary.Preemptions; p != nil {
		bound = *p * float64(maxCtx)
	}
	hits := pc.Hits
	own := &OwnHits{}
	if reported > 0 && reported >= answered {
		own.Method = OwnPerRequest
		first := min(cachedSum, hits)
		own.Declared = min(declaredHits, first)
		own.Opening = min(openingHits, first-own.Declared)
		own.Readmitted = min(hits-first, bound)
	} else {
		own.Method = OwnBound
		own.Declared = min(declaredMax, hits)
		own.Opening = min(openingMax, hits-own.Declared)
		own.Readmitted = min(hits-own.Declared-own.Opening, bound)
	}
	own.Hits = own.Declared + own.Opening + own.Readmitted
	foreign := max(hits-own.Hits, 0)
	denom := prompts
	if denom <= 0 {
		denom = pc.Queries
	}
	denom = max(denom, foreign)
	rate := 0.0
	if denom > 0 {
		rate = foreign / denom
	}
	pc.Own, pc.Foreign, pc.ForeignRate = own, &foreign, &rate
}
