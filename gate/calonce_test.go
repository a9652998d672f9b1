package gate

import "testing"

// A sequential A/B job looks after every block: its calibration lookups read each
// baseline once.
func TestCalibrationOfOnce(t *testing.T) {
	calls := 0
	cal := &Calibration{Runs: 3}
	c := CalibrationOf(func(w, h string) (*Calibration, string) {
		calls++
		if w == "none" {
			return nil, "baselines"
		}
		return cal, "baselines/" + w + "/" + h + ".json"
	}).Once()
	for range 3 {
		if got, p := c("chat", "sim"); got != cal || p != "baselines/chat/sim.json" {
			t.Fatalf("got %v, %q", got, p)
		}
		if got, p := c("none", "sim"); got != nil || p != "baselines" {
			t.Fatalf("got %v, %q for a workload without a calibration", got, p)
		}
	}
	if calls != 2 {
		t.Errorf("%d lookups for 2 baselines looked at 3 times each, want 2", calls)
	}
}
