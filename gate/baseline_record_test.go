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
	rec := gatetest.Record(3, gatetest.Spec{Requests: 200})
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
	if d == nil || len(d.Requests) != len(rec.Requests) || d.Window.EndUS != 0 {
		t.Fatalf("rebuilt record: %v", d)
	}
	for i, q := range rec.Requests {
		got := d.Requests[i]
		if q.OK() != got.OK() {
			t.Fatalf("request %d: ok %v, rebuilt %v", i, q.OK(), got.OK())
		}
		if !q.OK() {
			continue
		}
		// TTFT and E2E are kept to the microsecond, each gap to within 1%.
		if got.FirstUS != q.FirstUS-q.SchedUS || got.LastUS != q.LastUS-q.SchedUS || len(got.ITLUS) != len(q.ITLUS) {
			t.Fatalf("request %d: ttft %d/%d e2e %d/%d gaps %d/%d", i, got.FirstUS, q.FirstUS-q.SchedUS, got.LastUS, q.LastUS-q.SchedUS, len(got.ITLUS), len(q.ITLUS))
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
