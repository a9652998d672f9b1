package loadgen

import (
	"math"
	"runtime/metrics"

	"github.com/slogate/slogate/result"
)

// schedLatency reads the Go runtime's histogram of how long goroutines waited, runnable,
// before they ran (/sched/latencies:seconds). Its growth over the measured window is the
// client's second health signal: a reader goroutine that wakes late stamps its chunks
// late (stretching ITL and TPOT) however well the dispatcher keeps the schedule. It is
// process-wide: in-process tests include the simulator's goroutines.
type schedLatency struct {
	start *metrics.Float64Histogram
}

const schedLatencyMetric = "/sched/latencies:seconds"

func readSchedLatency() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedLatencyMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

func startSchedLatency() schedLatency { return schedLatency{start: readSchedLatency()} }

// summary is the lateness over the window in milliseconds (nil when the runtime has no
// such metric, or nothing waited): quantiles are bucket upper bounds, so they never
// understate it.
func (l schedLatency) summary() *result.LagSummary {
	end := readSchedLatency()
	if l.start == nil || end == nil || len(end.Counts) != len(l.start.Counts) {
		return nil
	}
	counts := make([]uint64, len(end.Counts))
	var total uint64
	for i := range counts {
		counts[i] = end.Counts[i] - l.start.Counts[i]
		total += counts[i]
	}
	if total == 0 {
		return nil
	}
	upper := func(i int) float64 {
		b := end.Buckets[i+1]
		if math.IsInf(b, 1) {
			b = end.Buckets[i]
		}
		return 1000 * b
	}
	q := func(f float64) float64 {
		var acc uint64
		for i, c := range counts {
			acc += c
			if float64(acc) >= f*float64(total) {
				return upper(i)
			}
		}
		return upper(len(counts) - 1)
	}
	s := &result.LagSummary{P50: q(0.5), P99: q(0.99)}
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			s.Max = upper(i)
			break
		}
	}
	return s
}
