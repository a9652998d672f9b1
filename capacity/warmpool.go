package capacity

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ColdStart is the scaling model the warm pool is sized by: how long a new replica takes
// to serve (GPU cold starts take minutes: weights, compilation, graph capture) and how
// fast load can rise meanwhile.
type ColdStart struct {
	// StartS is the seconds from launching a replica to its first token; Source says
	// where it came from (a measured start, --cold-start).
	StartS float64
	Source string
	// RampRPSPerMin is the steepest rise of the arrival rate, in req/s per minute;
	// RampSource says where it came from (--ramp, a trace's steepest minute).
	RampRPSPerMin float64
	RampSource    string
}

// WarmPool is the idle replicas that keep the SLO while new ones start: during one cold
// start the load rises by ramp × start, and that rise must already have replicas to
// serve it.
type WarmPool struct {
	ColdStart ColdStart
	// RiseRPS = ramp × start / 60: the load added while one replica starts.
	RiseRPS float64
	// PerReplicaRPS = sustainable rate × target utilization: what one replica takes.
	PerReplicaRPS float64
	// Replicas = ceil(rise / per-replica rate); GPUs = replicas × GPUs per replica.
	Replicas, GPUs int
	// HourlyUSD = GPUs × price: the cost of keeping them idle; 0 without a price.
	HourlyUSD float64
}

// SizeWarmPool sizes the warm pool of ws's fleet for the cold-start model c.
func (ws *Worksheet) SizeWarmPool(c ColdStart) (*WarmPool, error) {
	var errs []error
	if !(c.StartS > 0) || math.IsInf(c.StartS, 0) {
		errs = append(errs, fmt.Errorf("cold start %g s: must be > 0", c.StartS))
	}
	if !(c.RampRPSPerMin >= 0) || math.IsInf(c.RampRPSPerMin, 0) {
		errs = append(errs, fmt.Errorf("ramp %g req/s per minute: must be >= 0", c.RampRPSPerMin))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g := max(ws.Operating.GPUsPerReplica, 1)
	util := ws.Traffic.TargetUtilization
	if util == 0 {
		util = 1
	}
	p := &WarmPool{ColdStart: c, RiseRPS: c.RampRPSPerMin * c.StartS / 60, PerReplicaRPS: ws.Operating.SustainableRPS * util}
	p.Replicas = ceil(p.RiseRPS / p.PerReplicaRPS)
	p.GPUs = p.Replicas * g
	p.HourlyUSD = float64(p.GPUs) * ws.Traffic.GPUHourUSD
	return p, nil
}

// SteepestMinute is the steepest rise of the arrival rate between two consecutive whole
// minutes of the scheduled arrivals (microseconds, any order), in req/s per minute; false
// when they span less than two minutes. A fall is not a rise: a trace whose rate only
// falls has a ramp of 0.
func SteepestMinute(schedUS []int64) (float64, bool) {
	if len(schedUS) == 0 {
		return 0, false
	}
	lo, hi := slices.Min(schedUS), slices.Max(schedUS)
	const minute = int64(60e6)
	// Only whole minutes count: the last one is cut short by the end of the arrivals, and
	// its count would read as a fall (or a burst as a rise) over a minute that never was.
	k := int((hi - lo) / minute)
	if k < 2 {
		return 0, false
	}
	counts := make([]int, k+1)
	for _, t := range schedUS {
		counts[(t-lo)/minute]++
	}
	counts = counts[:k]
	var best float64
	for i := 1; i < len(counts); i++ {
		best = max(best, float64(counts[i]-counts[i-1])/60)
	}
	return best, true
}
