package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
)

// Units of MetricResult values.
const (
	UnitMS       = "ms"       // latencies
	UnitRPS      = "req/s"    // goodput, throughput, max_sustainable_rps
	UnitTokensPS = "tok/s"    // output_tokens_per_s
	UnitFraction = "fraction" // error_rate, slo_attainment (0.005 is 0.5%)
	UnitRequests = "requests" // kv_concurrency
	UnitTasksPS  = "tasks/s"  // task_goodput
)

// How a metric is compared.
const (
	kindBootstrap = iota // recomputed on resamples of whole requests
	kindExact            // deterministic: the tolerance alone (DESIGN §5)
	kindSweep            // from sweep records, not runs: judged by evalSweep
	kindStart            // one value per start of the engine (target.start): judged by evalStart
)

// metricDef says how to compute a rule's metric from a run and which way is better.
type metricDef struct {
	name    string
	unit    string
	natural stats.Direction
	kind    int
	// scale turns the statistic into the unit (µs to ms).
	scale float64
	// build is the resamplable statistic of one run (kindBootstrap).
	build func(r *run) stats.Metric
	// exact is the value of one run (kindExact); false when the run has none.
	exact func(r *run) (float64, bool)
	// missing says why a value is absent (kindExact without a value).
	missing string
	// start is the value of one start in ms (kindStart); false when it has none.
	start func(s *result.Startup) (float64, bool)
	// notes are said of every comparison of this metric.
	notes []string
	// present says whether a run has what the metric is built from (nil: every run
	// has); missing then says what a run lacks.
	present func(r *run) bool
	// q is a percentile's quantile (0.99 for a p99), 0 for any other statistic; values
	// counts what a run's percentile is taken over (its requests' values, or its pooled
	// gaps).
	q      float64
	values func(r *run) int
}

// tailOf is the number of values beyond def's percentile in the run that holds fewest of
// them among runs; ok is false for a statistic that is no percentile.
func tailOf(def metricDef, runs ...*run) (beyond float64, ok bool) {
	if def.q == 0 || def.values == nil || len(runs) == 0 {
		return 0, false
	}
	beyond = math.Inf(1)
	for _, r := range runs {
		beyond = min(beyond, stats.Beyond(def.q, def.values(r)))
	}
	return beyond, true
}

// tailVerdict keeps a percentile rule from passing on a tail it barely measured: a pass
// or an improvement whose value rests on fewer than stats.MinTail values beyond the
// percentile, in the run (or pooled side) that holds fewest, is inconclusive, and says
// how many requests would do. A fail stands: its interval decided it. runs are what
// each compared value was taken over.
func tailVerdict(m *MetricResult, def metricDef, v Verdict, runs ...*run) Verdict {
	beyond, ok := tailOf(def, runs...)
	if !ok || beyond >= stats.MinTail {
		return v
	}
	family, stat, _ := strings.Cut(def.name, "_")
	what := "requests"
	if tokStat, isTok := strings.CutPrefix(def.name, "itl_token_"); isTok {
		stat, what = tokStat, "output tokens after each request's first chunk"
	} else if family == "itl" {
		what = "gaps between chunks"
	}
	why := fmt.Sprintf("the %s rests on %.1f values beyond it (fewer than %d): its interval cannot show where the tail lies, so it cannot pass; %d %s per run would give it %d (workloads[].requests)",
		stat, beyond, stats.MinTail, stats.ValuesForTail(def.q), what, stats.MinTail)
	if v == Pass || v == Improved || v == Inconclusive {
		m.Undecided = why
		return Inconclusive
	}
	m.Warnings = append(m.Warnings, why)
	return v
}

var percentiles = map[string]float64{"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p999": 0.999}

// lookupMetric resolves a rule's metric name (workload.IsRuleMetric's names). The itl_*
// metrics pool the chunk gaps (result.Summary.ITLms: the stall between two updates a
// user sees); the itl_token_* metrics pool each token's interval (result.TokenGaps,
// Summary.ITLTokenms: a chunk of k tokens counts k times as its gap / k), which an engine
// that streams several tokens a chunk (speculative decoding, chunked streaming) changes
// without changing the chunk gaps' meaning; tpot_* is per output token.
func lookupMetric(name string) (metricDef, error) {
	switch name {
	case "goodput":
		return metricDef{name: name, unit: UnitRPS, natural: stats.HigherIsBetter, scale: 1,
			build: func(r *run) stats.Metric { return stats.NewPerSecond(r.met, r.goodputSpan()) }}, nil
	case "throughput":
		return metricDef{name: name, unit: UnitRPS, natural: stats.HigherIsBetter, scale: 1,
			build: func(r *run) stats.Metric { return stats.NewPerSecond(r.ok, r.window) }}, nil
	case "output_tokens_per_s":
		return metricDef{name: name, unit: UnitTokensPS, natural: stats.HigherIsBetter, scale: 1, build: tokensPerSecond}, nil
	case "task_goodput":
		return metricDef{name: name, unit: UnitTasksPS, natural: stats.HigherIsBetter, scale: 1,
			build:   func(r *run) stats.Metric { return stats.NewPerSecond(r.taskMet, r.goodputSpan()).Of("tasks") },
			present: func(r *run) bool { return r.taskMet != nil },
			missing: "no tasks: the workload groups no requests into tasks (workloads[].tasks)",
			notes:   []string{"resampled by task: a task's requests stay together"}}, nil
	case "slo_attainment":
		return metricDef{name: name, unit: UnitFraction, natural: stats.HigherIsBetter, scale: 1,
			build: func(r *run) stats.Metric { return stats.NewFraction(r.met) }}, nil
	case "error_rate":
		return metricDef{name: name, unit: UnitFraction, natural: stats.LowerIsBetter, scale: 1,
			build: func(r *run) stats.Metric { return stats.NewFraction(not(r.ok)) }}, nil
	case "kv_concurrency":
		return metricDef{name: name, unit: UnitRequests, natural: stats.HigherIsBetter, kind: kindExact, scale: 1,
			exact: func(r *run) (float64, bool) {
				if r.summary == nil || r.summary.KVConcurrency == nil {
					return 0, false
				}
				return float64(r.summary.KVConcurrency.Value), true
			},
			missing: "no KV-limited concurrency: the engine reported no KV capacity, and the config gives no kv_bytes_per_token to derive it"}, nil
	case "max_sustainable_rps":
		return metricDef{name: name, unit: UnitRPS, natural: stats.HigherIsBetter, kind: kindSweep, scale: 1}, nil
	case "engine_start":
		return metricDef{name: name, unit: UnitMS, natural: stats.LowerIsBetter, kind: kindStart, scale: 1,
			start: func(s *result.Startup) (float64, bool) { return s.ReadyMS, s.ReadyMS > 0 }}, nil
	case "first_token_after_start":
		return metricDef{name: name, unit: UnitMS, natural: stats.LowerIsBetter, kind: kindStart, scale: 1,
			start: func(s *result.Startup) (float64, bool) { return s.FirstTokenMS, s.FirstTokenMS > 0 }}, nil
	}
	m, stat, ok := strings.Cut(name, "_")
	if tokStat, isTok := strings.CutPrefix(name, "itl_token_"); isTok {
		m, stat = "itl_token", tokStat
	}
	if !ok || !slices.Contains([]string{"ttft", "tpot", "itl", "itl_token", "e2e"}, m) {
		return metricDef{}, fmt.Errorf("unknown metric %q", name)
	}
	d := metricDef{name: name, unit: UnitMS, natural: stats.LowerIsBetter, scale: 1e-3}
	// gaps are what an itl metric pools: the chunk gaps, or each token's interval.
	gaps := func(r *run) [][]float64 { return r.itl }
	isGap := m == "itl" || m == "itl_token"
	if m == "itl_token" {
		gaps = func(r *run) [][]float64 { return r.itlTok }
		d.present = func(r *run) bool { return r.itlTok != nil }
		// Every run made from a record has them; a baseline older than them has none,
		// and missingData asks for its refresh.
		d.missing = "no per-token intervals in the run's requests"
	}
	q, isPct := percentiles[stat]
	if isPct {
		d.q = q
		if isGap {
			d.values = func(r *run) int {
				n := 0
				for _, g := range gaps(r) {
					n += len(g)
				}
				return n
			}
		} else {
			d.values = func(r *run) int {
				n := 0
				for _, v := range column(r, m) {
					if v >= 0 {
						n++
					}
				}
				return n
			}
		}
	}
	switch {
	case isPct && isGap:
		d.build = func(r *run) stats.Metric { return stats.NewPooledPercentile(gaps(r), q) }
	case isPct:
		d.build = func(r *run) stats.Metric { return stats.NewPercentile(perRequest(r, m), q) }
	case stat == "mean" && isGap:
		d.build = func(r *run) stats.Metric { return pooledMean(r, gaps(r)) }
	case stat == "mean":
		d.build = func(r *run) stats.Metric { return stats.NewMean(perRequest(r, m)) }
	case stat == "max" && isGap:
		d.build = func(r *run) stats.Metric { return pooledMax(r, gaps(r)) }
		d.notes = append(d.notes, "a maximum is one value: its bootstrap interval is rough")
	case stat == "max":
		d.build = func(r *run) stats.Metric { return maxOf(perRequest(r, m)) }
		d.notes = append(d.notes, "a maximum is one value: its bootstrap interval is rough")
	default:
		return metricDef{}, fmt.Errorf("unknown metric %q", name)
	}
	build := d.build
	d.build = func(r *run) stats.Metric { return withSummary(r, m, stat, build(r)) }
	return d, nil
}

func not(b []bool) []bool {
	out := make([]bool, len(b))
	for i, v := range b {
		out[i] = !v
	}
	return out
}

// column is one latency per request in µs of metric (ttft, tpot, e2e), negative where
// the request has none.
func column(r *run, metric string) []int64 {
	switch metric {
	case "ttft":
		return r.ttft
	case "tpot":
		return r.tpot
	case "e2e":
		return r.e2e
	}
	return nil
}

// perRequest is one latency per request in µs, NaN where the request has none.
func perRequest(r *run, metric string) []float64 {
	col := column(r, metric)
	out := make([]float64, len(col))
	for i, v := range col {
		if v < 0 {
			out[i] = math.NaN()
		} else {
			out[i] = float64(v)
		}
	}
	return out
}

// tokensPerSecond is output tokens of successful requests per second of the window.
func tokensPerSecond(r *run) stats.Metric {
	tok := make([]float64, r.len())
	for i := range tok {
		if r.ok[i] {
			tok[i] = float64(r.tokens[i])
		}
	}
	window := r.window
	return stats.Func{N: len(tok), F: func(w []int32) float64 {
		if !(window > 0) {
			return math.NaN()
		}
		var s float64
		for i, t := range tok {
			s += float64(w[i]) * t
		}
		return s / window
	}, Notes: tooFew(len(tok))}
}

// pooledMean is the mean of all gaps (gaps(r): the chunk gaps or the per-token
// intervals) of the drawn requests.
func pooledMean(r *run, gaps [][]float64) stats.Metric {
	sums, counts := make([]float64, r.len()), make([]float64, r.len())
	for i, g := range gaps {
		for _, v := range g {
			sums[i] += v
		}
		counts[i] = float64(len(g))
	}
	return stats.Func{N: r.len(), F: func(w []int32) float64 {
		var s, n float64
		for i, c := range counts {
			if c > 0 {
				s += float64(w[i]) * sums[i]
				n += float64(w[i]) * c
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return s / n
	}, Notes: tooFew(r.len())}
}

// pooledMax is the largest gap of the drawn requests.
func pooledMax(r *run, gaps [][]float64) stats.Metric {
	m := make([]float64, r.len())
	for i, g := range gaps {
		m[i] = math.NaN()
		if len(g) > 0 {
			m[i] = g[len(g)-1] // ascending
		}
	}
	return maxOf(m)
}

// maxOf is the largest value of the drawn requests (NaN: the request has none).
func maxOf(vals []float64) stats.Metric {
	return stats.Func{N: len(vals), F: func(w []int32) float64 {
		best := math.NaN()
		for i, v := range vals {
			if w[i] > 0 && !math.IsNaN(v) && !(v <= best) {
				best = v
			}
		}
		return best
	}, Notes: tooFew(len(vals))}
}

func tooFew(n int) []string {
	if n < stats.MinRequests {
		return []string{fmt.Sprintf("too few requests for a bootstrap interval: %d < %d", n, stats.MinRequests)}
	}
	return nil
}

func parseDirection(s string) (stats.Direction, error) {
	switch s {
	case "higher":
		return stats.HigherIsBetter, nil
	case "lower":
		return stats.LowerIsBetter, nil
	}
	return 0, fmt.Errorf("direction %q; expected \"higher\" or \"lower\"", s)
}
