package stats

import "testing"

// BenchmarkGate10k is the gate's work for one workload: p99 ITL, p95 TTFT and goodput,
// 10,000 requests per side with about 100 gaps each (a million gaps a side), 2000
// resamples, building the metrics from per-request data included. Target: under 1 s on
// one core (run it with -cpu 1; nothing here relies on parallelism).
func BenchmarkGate10k(b *testing.B) {
	base := synth(61, synthSpec{requests: 10000, gapMedian: 100})
	cand := synth(62, synthSpec{requests: 10000, gapMedian: 100, gapScale: 1.05})
	ttftRule := Policy{Direction: LowerIsBetter, Tolerance: 0.10}
	for b.Loop() {
		itl := Compare(NewPooledPercentile(base.gaps, 0.99), NewPooledPercentile(cand.gaps, 0.99), itlRule)
		ttft := Compare(NewPercentile(base.ttft, 0.95), NewPercentile(cand.ttft, 0.95), ttftRule)
		goodput := Compare(NewPerSecond(base.good, base.window), NewPerSecond(cand.good, cand.window), goodputRule)
		if itl.Verdict == Incomparable || ttft.Verdict == Incomparable || goodput.Verdict == Incomparable {
			b.Fatal("incomparable", itl.Warnings, ttft.Warnings, goodput.Warnings)
		}
	}
}
