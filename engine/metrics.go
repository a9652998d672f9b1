package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MetricSet says where an engine's Prometheus page is and which exact metric names carry
// each quantity. Each field lists candidate names in order of preference, because engines
// rename metrics across versions (vLLM's kv_cache_usage_perc was gpu_cache_usage_perc):
// the first name present on the page wins. Names match exactly, never by prefix.
type MetricSet struct {
	Path          string   // path under the base URL, e.g. /metrics
	QueueDepth    []string // gauge: requests waiting
	Running       []string // gauge: requests running
	KVUsage       []string // gauge: KV cache usage, 0..1
	Preemptions   []string // counter
	PrefixHits    []string // counter: prefix-cache hit tokens (with PrefixQueries)
	PrefixQueries []string // counter: prefix-cache queried tokens
	PrefixHitRate []string // gauge: hit rate 0..1, for engines that export a rate
	// PromptTokens ("prompt_tokens_processed") counts the prompt tokens the engine
	// computed, those served from its prefix cache excluded (llama.cpp
	// llamacpp:prompt_tokens_total). With PromptTokensCached it gives the prefix-cache
	// figures of engines without hit/query counters: hits = cached, queries = processed +
	// cached. Over a window its delta is the prompt work the engine really did.
	PromptTokens       []string // counter
	PromptTokensCached []string // counter: prompt tokens reused from the prefix cache
	OutputTokens       []string // counter: tokens generated
}

// families are parsed metric families by name.
type families = map[string]*dto.MetricFamily

// Value is a scraped value; OK is false when the engine does not export it.
type Value struct {
	V  float64
	OK bool
}

// Snapshot is one scrape of an engine's metrics page.
type Snapshot struct {
	QueueDepth, Running, KVUsage, Preemptions Value
	PrefixHits, PrefixQueries, PrefixHitRate  Value
	// PromptTokens (processed, cache hits excluded), PromptTokensCached and OutputTokens
	// are the engine's own token counters, where it exports them.
	PromptTokens, PromptTokensCached, OutputTokens Value
	// Dropped names the metrics of this scrape whose value was not a finite number (a
	// NaN or ±Inf sample, or series whose sum overflows), e.g. "vllm:kv_cache_usage_perc
	// (NaN)": their quantity is absent from this scrape (a gap, never a NaN in the
	// record).
	Dropped []string
}

// maxMetricsBytes caps a metrics page; real pages are tens of kilobytes.
const maxMetricsBytes = 8 << 20

// ParseMetricFamilies parses a Prometheus text page.
func ParseMetricFamilies(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(r, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics page: %w", err)
	}
	return fams, nil
}

// Snapshot extracts the set's quantities from parsed families.
func (m MetricSet) Snapshot(fams map[string]*dto.MetricFamily) Snapshot {
	var s Snapshot
	s.QueueDepth = pick(fams, m.QueueDepth, sumOf, &s.Dropped)
	s.Running = pick(fams, m.Running, sumOf, &s.Dropped)
	s.KVUsage = pick(fams, m.KVUsage, maxOf, &s.Dropped)
	s.Preemptions = pick(fams, m.Preemptions, sumOf, &s.Dropped)
	s.PrefixHits = pick(fams, m.PrefixHits, sumOf, &s.Dropped)
	s.PrefixQueries = pick(fams, m.PrefixQueries, sumOf, &s.Dropped)
	s.PrefixHitRate = pick(fams, m.PrefixHitRate, maxOf, &s.Dropped)
	s.PromptTokens = pick(fams, m.PromptTokens, sumOf, &s.Dropped)
	s.PromptTokensCached = pick(fams, m.PromptTokensCached, sumOf, &s.Dropped)
	s.OutputTokens = pick(fams, m.OutputTokens, sumOf, &s.Dropped)
	if len(m.PrefixHits) == 0 && len(m.PrefixQueries) == 0 && s.PromptTokens.OK && s.PromptTokensCached.OK {
		// Prompt-token counters in place of hit/query counters (llama.cpp): every prompt
		// token is either computed or taken from the cache.
		if q := s.PromptTokens.V + s.PromptTokensCached.V; finite(q) {
			s.PrefixHits = s.PromptTokensCached
			s.PrefixQueries = Value{V: q, OK: true}
		}
	}
	return s
}

// Missing names the quantities of the set that the parsed page does not carry, each with
// the names looked for, e.g. "KV usage (llamacpp:kv_cache_usage_ratio)".
func (m MetricSet) Missing(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for _, q := range []struct {
		what  string
		names []string
	}{
		{"queue depth", m.QueueDepth}, {"running requests", m.Running}, {"KV usage", m.KVUsage},
		{"preemptions", m.Preemptions}, {"prefix-cache hits", m.PrefixHits}, {"prefix-cache queries", m.PrefixQueries},
		{"prefix-cache hit rate", m.PrefixHitRate}, {"prompt tokens processed", m.PromptTokens},
		{"prompt tokens cached", m.PromptTokensCached}, {"output tokens", m.OutputTokens},
	} {
		if len(q.names) == 0 {
			continue
		}
		if v := pick(fams, q.names, sumOf, nil); !v.OK {
			out = append(out, fmt.Sprintf("%s (%s)", q.what, strings.Join(q.names, ", ")))
		}
	}
	return out
}

// Empty reports whether the set names no metric at all (an engine without metrics).
func (m MetricSet) Empty() bool { return m.Path == "" }

// pick reads the first of names present on the page, aggregated over its series. A
// family with a non-finite series (NaN, ±Inf), or whose aggregate is not finite (two
// huge counters that overflow when added), gives no value: it is named in *dropped (when
// dropped is not nil) and the next candidate name is not tried, since the engine did
// export this one.
func pick(fams map[string]*dto.MetricFamily, names []string, agg func([]float64) float64, dropped *[]string) Value {
	for _, n := range names {
		f, ok := fams[n]
		if !ok || len(f.GetMetric()) == 0 {
			continue
		}
		vals := make([]float64, 0, len(f.GetMetric()))
		for _, mt := range f.GetMetric() {
			v := metricValue(mt)
			if !finite(v) {
				drop(dropped, n, v)
				return Value{}
			}
			vals = append(vals, v)
		}
		v := agg(vals)
		if !finite(v) {
			drop(dropped, n, v)
			return Value{}
		}
		return Value{V: v, OK: true}
	}
	return Value{}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func drop(dropped *[]string, name string, v float64) {
	if dropped == nil {
		return
	}
	what := "NaN"
	switch {
	case math.IsInf(v, 1):
		what = "+Inf"
	case math.IsInf(v, -1):
		what = "-Inf"
	}
	*dropped = append(*dropped, name+" ("+what+")")
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// Series with several label sets (one per model, one per engine index) add up for
// counts; usage fractions take the fullest.
func sumOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// labelInt reads an integer label of the first series of a family (vLLM's
// cache_config_info carries facts in labels with the value 1).
func labelInt(fams map[string]*dto.MetricFamily, family, label string) (int64, bool) {
	f, ok := fams[family]
	if !ok || len(f.GetMetric()) == 0 {
		return 0, false
	}
	for _, lp := range f.GetMetric()[0].GetLabel() {
		if lp.GetName() == label {
			n, err := strconv.ParseInt(lp.GetValue(), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// familyValue reads the value of a family (summed over series).
func familyValue(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	v := pick(fams, []string{name}, sumOf, nil)
	return v.V, v.OK
}

// Scraper reads an engine's metrics page.
type Scraper struct {
	URL    string
	Set    MetricSet
	APIKey string
	HTTP   *http.Client
	// Timeout bounds one scrape, body included; default DefaultProbeTimeout.
	Timeout time.Duration
}

// Scrape fetches and parses the page once.
func (s *Scraper) Scrape(ctx context.Context) (Snapshot, error) {
	fams, err := s.fetch(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return s.Set.Snapshot(fams), nil
}

func (s *Scraper) fetch(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stalled := func(err error) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return fmt.Errorf("%w: GET %s gave no complete answer within %s", ErrStalled, s.URL, timeout)
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	c := s.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, stalled(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", s.URL, resp.StatusCode)
	}
	fams, err := ParseMetricFamilies(resp.Body)
	if err != nil {
		return nil, stalled(err)
	}
	return fams, nil
}
