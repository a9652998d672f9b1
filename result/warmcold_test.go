package result

import (
	"strings"
	"testing"
)

func TestWarmColdAllowsATokenCachesOpening(t *testing.T) {
	cold := func(block int, hits, queries float64, requests int) *Record {
		r := &Record{PrefixCache: &PrefixCacheRun{Mode: PrefixCold}}
		r.Summary.Requests = requests
		r.Summary.PrefixCache = &PrefixCacheStats{Queries: queries, Hits: hits, HitRate: hits / queries, Source: "test"}
		r.Summary.KVConcurrency = &KVConcurrency{Value: 4, BlockSize: block}
		return r
	}
	// llama.cpp, 100 short cold prompts: 3 tokens each from the cache (the opening every
	// prompt shares) is 4.9% here, and would be refused on prompts a little shorter.
	if why := cold(1, 314, 5500, 100).WarmCold(); why != "" {
		t.Errorf("a token cache's shared opening refused: %s", why)
	}
	// The same engine with the prompts of an earlier run cached: refused, with the figure.
	if why := cold(1, 5900, 6300, 100).WarmCold(); !strings.Contains(why, "93.7%") {
		t.Errorf("a warm rerun on a token cache: %q", why)
	}
	// A block cache (vLLM, 16 tokens a block) never hits a shared opening of a few
	// tokens: the 5% bound alone holds.
	if why := cold(16, 314, 5500, 100).WarmCold(); !strings.Contains(why, "5.7%") {
		t.Errorf("a block cache over 5%%: %q", why)
	}
}
