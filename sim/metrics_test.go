package sim

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A fresh engine's page is deterministic: it is the golden file a reader of docs/sim.md
// compares with vLLM's.
func TestMetricsGolden(t *testing.T) {
	t.Parallel()
	s, err := New(tinyOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	golden(t, "testdata/metrics_idle.golden", scrape(t, s))
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, mustRequest(t, "GET", "/metrics"))
	if rec.status != 0 && rec.status != 200 {
		t.Fatalf("status %d", rec.status)
	}
	return rec.body.String()
}

type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.status = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

func mustRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// parseText parses a page with expfmt, as a scraper does, and flattens it to
// name → labels → value (histograms as their _count and _sum).
func parseText(t *testing.T, r io.Reader) map[string]map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	put := func(name, labels string, v float64) {
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][labels] = v
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.GetMetric() {
			var labels []string
			named := false
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
				named = named || l.GetName() == "model_name"
			}
			if !named {
				t.Errorf("%s without model_name", name)
			}
			key := strings.Join(labels, ",")
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				put(name, key, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				put(name, key, m.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM:
				put(name+"_count", key, float64(m.GetHistogram().GetSampleCount()))
				put(name+"_sum", key, m.GetHistogram().GetSampleSum())
			default:
				t.Errorf("%s: unexpected type %v", name, f.GetType())
			}
		}
	}
	return out
}

func TestMetricsHasEveryFamily(t *testing.T) {
	t.Parallel()
	s, err := New(tinyOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := parseText(t, strings.NewReader(scrape(t, s)))
	for _, name := range []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
		"vllm:cache_config_info", "slogate_sim:step_lag_seconds_count",
	} {
		if len(m[name]) != 1 {
			t.Errorf("%s: %d series, want 1", name, len(m[name]))
		}
	}
}

func TestMetricsReflectLoad(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Faults.KVBlocks = 16
	r, c, ctx := start(t, o)
	done := make(chan streamResult, 6)
	for range 6 {
		go func() {
			done <- post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: words(32), MaxTokens: 96, IgnoreEOS: true, Stream: true})
		}()
	}
	// Scrape while the batch is full.
	var busy map[string]map[string]float64
	for range 200 {
		resp, err := c.Get(r.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m := parseText(t, resp.Body)
		resp.Body.Close()
		if one(m, "vllm:num_requests_running") > 0 && one(m, "vllm:num_requests_waiting") > 0 {
			busy = m
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if busy == nil {
		t.Fatal("never saw a full batch with a queue")
	}
	if u := one(busy, "vllm:kv_cache_usage_perc"); u <= 0 || u > 1 {
		t.Fatalf("kv usage %v", u)
	}
	for range 6 {
		<-done
	}
	resp, err := c.Get(r.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := parseText(t, resp.Body)
	for name, want := range map[string]float64{
		"vllm:generation_tokens_total": 6 * 96,
		"vllm:prompt_tokens_total":     6 * 32,
		"vllm:num_requests_running":    0,
	} {
		if got := one(m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if one(m, "vllm:num_preemptions_total") == 0 {
		t.Error("no preemption counted")
	}
	var cfg string
	for l := range m["vllm:cache_config_info"] {
		cfg = l
	}
	if !strings.Contains(cfg, `block_size="16"`) || !strings.Contains(cfg, `num_gpu_blocks="16"`) {
		t.Errorf("cache_config_info labels %s", cfg)
	}
	if one(m, "slogate_sim:step_lag_seconds_count") == 0 {
		t.Error("no step lag observations")
	}
}

// one returns the single sample of a family.
func one(m map[string]map[string]float64, name string) float64 {
	for _, v := range m[name] {
		return v
	}
	return -1
}
