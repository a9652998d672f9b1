package measure

import (
	"testing"

	"github.com/slogate/slogate/result"
)

// arrivals at 10/s for 100 s; w(i) is request i's time in the system in µs.
func timelines(w func(i int) int64) *result.Record {
	rec := &result.Record{}
	for i := range 1000 {
		s := int64(i) * 100_000
		rec.Requests = append(rec.Requests, result.Request{I: i, SchedUS: s, EndUS: s + w(i)})
	}
	return rec
}

func TestLittleLawSteadyAndGrowing(t *testing.T) {
	t.Parallel()
	// Steady: every request takes 2 s; L = 10/s × 2 s = 20, measured ≈ 20 (only the
	// first 2 s of ramp-up differ).
	l := LittleLaw(timelines(func(int) int64 { return 2_000_000 }))
	if l == nil || l.Flagged || l.PredictedInFlight < 19.9 || l.PredictedInFlight > 20.1 || l.MeasuredInFlight < 19 || l.MeasuredInFlight > 20.1 {
		t.Errorf("steady: %+v", l)
	}
	// A queue that grows all run long (time in system rising from 0.1 s to 30 s): no
	// steady state, and the check says so.
	rec := timelines(func(i int) int64 { return 100_000 + int64(i)*30_000 })
	if l := LittleLaw(rec); l == nil || !l.Flagged || len(rec.Notes) != 1 {
		t.Errorf("growing: %+v, notes %q", l, rec.Notes)
	}
}
