package gate_test

import (
	"math"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
)

func TestDistributionRecord(t *testing.T) {
	rec := gatetest.Record(3, gatetest.Spec{Requests: 200, ErrorRate: 0.05})
	// An in-flight series sampled every 10 ms over the window: far more points than a
	// baseline keeps, with one spike the thinning must not drop.
	for t := rec.Window.StartUS; t < rec.Window.EndUS; t += 10_000 {
		v := 5.0
		if t == rec.Window.StartUS+1_000_000 {
			v = 99
		}
		rec.Series.InFlight = append(rec.Series.InFlight, result.Sample{TUS: t, V: v})
	}
	rec.Series.Engine = map[string][]result.Sample{"kv_usage": {{TUS: rec.Window.StartUS, V: 0.25}, {TUS: rec.Window.EndUS, V: 0.5}}}
	b, err := gate.FromRecords([]*result.Record{rec}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, err := gate.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := gate.Decode("b.json", data)
	if err != nil {
		t.Fatal(err)
	}
	d := loaded.DistributionRecord()
	if d == nil || len(d.Requests) != len(rec.Requests) {
		t.Fatalf("rebuilt record: %v", d)
	}
	// The timelines: the window's length, the series cut to MaxTimelinePoints with the
	// spike kept, the engine gauges.
	if w := rec.Window.EndUS - rec.Window.StartUS; d.Window.StartUS != 0 || d.Window.EndUS/1000 != w/1000 {
		t.Errorf("window %+v, want 0..%d µs", d.Window, w)
	}
	if n := len(d.Series.InFlight); n == 0 || n > gate.MaxTimelinePoints || len(rec.Series.InFlight) <= gate.MaxTimelinePoints {
		t.Errorf("in-flight series of %d points from %d", n, len(rec.Series.InFlight))
	}
	spike := false
	for _, s := range d.Series.InFlight {
		spike = spike || s.V == 99
	}
	if !spike {
		t.Errorf("the spike was thinned away")
	}
	if kv := d.Series.Engine["kv_usage"]; len(kv) != 2 || kv[1].V != 0.5 {
		t.Errorf("kv_usage %v", kv)
	}
	for i, q := range rec.Requests {
		got := d.Requests[i]
		if q.OK() != got.OK() {
			t.Fatalf("request %d: ok %v, rebuilt %v", i, q.OK(), got.OK())
		}
		// Scheduled times to the millisecond from the window's start.
		if want := (q.SchedUS - rec.Window.StartUS) / 1000 * 1000; got.SchedUS != want {
			t.Fatalf("request %d: sched %d, want %d", i, got.SchedUS, want)
		}
		if !q.OK() {
			if want := (q.EndUS - q.SchedUS) / 1000 * 1000; got.EndUS-got.SchedUS != want {
				t.Fatalf("failed request %d: ended %d after sched, want %d", i, got.EndUS-got.SchedUS, want)
			}
			continue
		}
		// TTFT and E2E are kept to the microsecond, each gap to within 1%.
		ttft, e2e := got.FirstUS-got.SchedUS, got.LastUS-got.SchedUS
		if ttft != q.FirstUS-q.SchedUS || e2e != q.LastUS-q.SchedUS || len(got.ITLUS) != len(q.ITLUS) {
			t.Fatalf("request %d: ttft %d/%d e2e %d/%d gaps %d/%d", i, ttft, q.FirstUS-q.SchedUS, e2e, q.LastUS-q.SchedUS, len(got.ITLUS), len(q.ITLUS))
		}
		var sumGot, sumWant float64
		for k := range q.ITLUS {
			sumGot += float64(got.ITLUS[k])
			sumWant += float64(q.ITLUS[k])
		}
		if sumWant > 0 && math.Abs(sumGot/sumWant-1) > 0.01 {
			t.Fatalf("request %d: gaps sum to %.0f, want %.0f ± 1%%", i, sumGot, sumWant)
		}
	}
}

// TestDistributionRecordOldBaseline: a baseline written before timelines were kept still
// loads, and its record has no window, so the report draws the candidate alone over time.
func TestDistributionRecordOldBaseline(t *testing.T) {
	rec := gatetest.Record(3, gatetest.Spec{Requests: 50})
	b, err := gate.FromRecords([]*result.Record{rec}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.Trials[0].Timeline = nil
	data, _ := gate.Marshal(b)
	loaded, err := gate.Decode("b.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if d := loaded.DistributionRecord(); d == nil || d.Window.EndUS != 0 || len(d.Series.InFlight) != 0 {
		t.Fatalf("rebuilt record of an old baseline: window %+v, %d in-flight samples", d.Window, len(d.Series.InFlight))
	}
}
