package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// A page with a NaN gauge, a +Inf gauge and two counter series whose sum overflows: none
// of them may reach a record as a number, and each is named in Dropped.
const nonFinitePage = `# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 3
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} +Inf
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} NaN
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0"} 1.7e308
vllm:num_preemptions_total{engine="1"} 1.7e308
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total 100
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total -Inf
`

func TestScrapeDropsNonFinite(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(nonFinitePage))
	}))
	defer srv.Close()
	s := &Scraper{URL: srv.URL + "/metrics", Set: vllmMetrics}
	snap, err := s.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !snap.QueueDepth.OK || snap.QueueDepth.V != 3 {
		t.Errorf("finite gauge lost: %+v", snap.QueueDepth)
	}
	if !snap.PrefixQueries.OK || snap.PrefixQueries.V != 100 {
		t.Errorf("finite counter lost: %+v", snap.PrefixQueries)
	}
	for name, v := range map[string]Value{"running": snap.Running, "kv": snap.KVUsage, "preemptions": snap.Preemptions, "hits": snap.PrefixHits} {
		if v.OK {
			t.Errorf("%s: a non-finite value was kept: %+v", name, v)
		}
	}
	want := []string{
		"vllm:num_requests_running (+Inf)",
		"vllm:kv_cache_usage_perc (NaN)",
		"vllm:num_preemptions_total (+Inf)", // the sum of two finite series overflows
		"vllm:prefix_cache_hits_total (-Inf)",
	}
	if !slices.Equal(snap.Dropped, want) {
		t.Errorf("Dropped = %q, want %q", snap.Dropped, want)
	}
	// The older name of the KV gauge is not tried in place of a NaN one.
	page := nonFinitePage + "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.5\n"
	fams, err := ParseMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if v := vllmMetrics.Snapshot(fams).KVUsage; v.OK {
		t.Errorf("fell back to another gauge for a NaN one: %+v", v)
	}
	if _, ok := familyValue(fams, "vllm:kv_cache_usage_perc"); ok {
		t.Error("familyValue returned a NaN as a value")
	}
}
