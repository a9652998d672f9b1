package measure

import (
	"testing"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

func TestClientBoundsFollowTheSLO(t *testing.T) {
	t.Parallel()
	slo := func(targets ...workload.SLOTarget) *workload.Workload {
		return &workload.Workload{SLO: workload.SLO{Targets: targets}}
	}
	ttft := func(d time.Duration) workload.SLOTarget {
		return workload.SLOTarget{Metric: "ttft", Percentile: 95, Limit: d}
	}
	itl := func(d time.Duration) workload.SLOTarget {
		return workload.SLOTarget{Metric: "itl", Percentile: 99, Limit: d}
	}
	explicit := slo(ttft(500 * time.Millisecond))
	explicit.MaxDispatchLag = 3 * time.Millisecond
	cases := []struct {
		name             string
		w                *workload.Workload
		dispatch, reader time.Duration
	}{
		// 5% of the TTFT SLO bounds sending; 5% of the ITL SLO bounds reading.
		{"chat", slo(ttft(500*time.Millisecond), itl(200*time.Millisecond)), 25 * time.Millisecond, 10 * time.Millisecond},
		// The tightest of each kind counts.
		{"two ttft", slo(ttft(2*time.Second), ttft(100*time.Millisecond)), 5 * time.Millisecond, 5 * time.Millisecond},
		// Only an ITL SLO: sending is held to it too (throughput depends on the schedule).
		{"itl only", slo(itl(200 * time.Millisecond)), 10 * time.Millisecond, 10 * time.Millisecond},
		// Never below 1 ms, however tight the SLO.
		{"tight", slo(ttft(4*time.Millisecond), itl(2*time.Millisecond)), time.Millisecond, time.Millisecond},
		// No SLO: the old 1 ms for sending; reading recorded, not judged.
		{"no slo", slo(), time.Millisecond, 0},
		// max_dispatch_lag overrides both.
		{"explicit", explicit, 3 * time.Millisecond, 3 * time.Millisecond},
	}
	for _, c := range cases {
		if d, r := MaxDispatchLag(c.w), MaxReaderLag(c.w); d != c.dispatch || r != c.reader {
			t.Errorf("%s: dispatch %v reader %v, want %v %v", c.name, d, r, c.dispatch, c.reader)
		}
	}
}

func TestReaderLatenessMakesTheClientSaturated(t *testing.T) {
	t.Parallel()
	rec := &result.Record{MaxReaderLagMS: 10}
	rec.Summary.DispatchLagms = result.LagSummary{P50: 0.1, P99: 0.4} // sending kept up
	rec.Summary.ReaderLagms = &result.LagSummary{P50: 1, P99: 20, Max: 40}
	result.JudgeReader(rec)
	if !rec.Summary.ReaderSaturated || !rec.Summary.ClientSaturated {
		t.Errorf("reader p99 20 ms over a 10 ms bound not caught: %+v", rec.Summary)
	}
	ok := &result.Record{MaxReaderLagMS: 10}
	ok.Summary.ReaderLagms = &result.LagSummary{P99: 5}
	result.JudgeReader(ok)
	if ok.Summary.ReaderSaturated || ok.Summary.ClientSaturated {
		t.Errorf("reader within its bound flagged: %+v", ok.Summary)
	}
	unjudged := &result.Record{}
	unjudged.Summary.ReaderLagms = &result.LagSummary{P99: 500}
	result.JudgeReader(unjudged)
	if unjudged.Summary.ClientSaturated {
		t.Error("a record without a reader bound was judged")
	}
}
