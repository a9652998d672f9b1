package capacity

import (
	"math"
	"testing"
)

func TestSizeWarmPool(t *testing.T) {
	for _, c := range []struct {
		name      string
		traffic   Traffic
		op        Operating
		cold      ColdStart
		rise      float64
		replicas  int
		gpus      int
		hourlyUSD float64
	}{
		// A 2-minute start while load rises 3 req/s a minute: 6 req/s to absorb, at 2.5 req/s
		// a replica (5 × 50%) that is 3 replicas, priced at 2 GPUs each.
		{"vLLM-like start", Traffic{PeakRPS: 50, TargetUtilization: 0.5, GPUHourUSD: 2.5}, Operating{SustainableRPS: 5, GPUsPerReplica: 2},
			ColdStart{StartS: 120, RampRPSPerMin: 3}, 6, 3, 6, 15},
		// Load that does not rise needs no warm pool.
		{"flat traffic", Traffic{PeakRPS: 50}, Operating{SustainableRPS: 5}, ColdStart{StartS: 600, RampRPSPerMin: 0}, 0, 0, 0, 0},
		// A rise of a sliver of a replica still needs a whole one; no price, no cost.
		{"rounds up", Traffic{PeakRPS: 50}, Operating{SustainableRPS: 10}, ColdStart{StartS: 6, RampRPSPerMin: 1}, 0.1, 1, 1, 0},
		// Utilization 0 means 1 (the worksheet's default).
		{"default utilization", Traffic{PeakRPS: 50, GPUHourUSD: 1}, Operating{SustainableRPS: 4}, ColdStart{StartS: 60, RampRPSPerMin: 8}, 8, 2, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, err := Compute(c.traffic, c.op)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ws.SizeWarmPool(c.cold)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.RiseRPS-c.rise) > 1e-9 || p.Replicas != c.replicas || p.GPUs != c.gpus || math.Abs(p.HourlyUSD-c.hourlyUSD) > 1e-9 {
				t.Errorf("%+v, want rise %g, %d replicas, %d GPUs, $%g/h", p, c.rise, c.replicas, c.gpus, c.hourlyUSD)
			}
		})
	}
	ws, _ := Compute(Traffic{PeakRPS: 1}, Operating{SustainableRPS: 1})
	for _, bad := range []ColdStart{{StartS: 0, RampRPSPerMin: 1}, {StartS: 60, RampRPSPerMin: -1}, {StartS: math.NaN()}, {StartS: math.Inf(1)}} {
		if _, err := ws.SizeWarmPool(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestSteepestMinute(t *testing.T) {
	const s = int64(1e6)
	at := func(perMinute ...int) []int64 {
		var out []int64
		for m, n := range perMinute {
			for i := range n {
				out = append(out, int64(m)*60*s+int64(i)*60*s/int64(n))
			}
		}
		// The arrivals end at the close of their last minute.
		return append(out, int64(len(perMinute))*60*s)
	}
	for _, c := range []struct {
		name  string
		sched []int64
		ramp  float64
		ok    bool
	}{
		// 60, then 240, then 300 arrivals a minute: the steepest rise is 1 → 4 req/s.
		{"rising", at(60, 240, 300), 3, true},
		// A rate that only falls has no rise.
		{"falling", at(300, 120, 60), 0, true},
		// Under two whole minutes: no ramp can be read.
		{"too short", at(60), 0, false},
		{"empty", nil, 0, false},
		// A burst in the last, partial minute is not a minute's rise.
		{"partial last minute ignored", append(at(60, 60), 120*s+1, 120*s+2, 120*s+3, 150*s), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := SteepestMinute(c.sched)
			if ok != c.ok || math.Abs(got-c.ramp) > 1e-9 {
				t.Errorf("SteepestMinute = %g, %v; want %g, %v", got, ok, c.ramp, c.ok)
			}
		})
	}
}
