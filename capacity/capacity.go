// Package capacity owns the capacity worksheet: it turns a measured operating point
// (throughput at the SLO, latency, KV-limited concurrency) and a traffic profile into a
// GPU count that can be defended, and a cost per completed request.
//
// Every step is kept in the Worksheet so that a reader can check the arithmetic. A
// saturated-throughput number is not a capacity: the per-GPU rate must come from a sweep
// at the SLO operating point, and a plain run is accepted only with a stated warning.
package capacity

import (
	"errors"
	"fmt"
	"math"
)

// HoursPerMonth is the month used for monthly costs (365 × 24 / 12).
const HoursPerMonth = 730.0

// Traffic is the traffic profile to size for.
type Traffic struct {
	PeakRPS float64 // peak arrival rate to serve within the SLO
	// TargetUtilization is the fraction of the measured SLO-bound rate each GPU may be
	// loaded to (0 < u <= 1). Default 1 when 0.
	TargetUtilization float64
	// Headroom is extra capacity for growth and bursts, as a fraction (0.3 = 30%).
	Headroom float64
	// Redundancy is the number of spare replicas (N+1 is 1).
	Redundancy int
	GPUHourUSD float64 // price of one GPU-hour; 0 = no cost lines
}

// Operating is what was measured.
type Operating struct {
	// SustainableRPS is the highest arrival rate one replica served within the SLO.
	SustainableRPS float64
	// FromSweep is true when SustainableRPS came from an SLO-bound sweep; false when it is
	// the throughput of a plain run (then the worksheet warns).
	FromSweep bool
	// GPUsPerReplica is the GPUs one engine replica uses (tensor parallelism). Default 1.
	GPUsPerReplica int
	// MeanE2ES is the mean end-to-end latency at the operating point, in seconds.
	MeanE2ES float64
	// KVConcurrency is the KV-limited concurrency of one replica (0 = unknown: no memory
	// bound is computed, and the worksheet says so).
	KVConcurrency int
	// Attempts and Completed count requests sent (retries and errors included) and
	// requests that completed, for the cost per completed request. Zero: no retries.
	Attempts, Completed int
	// RequestsPerTask is the requests one completed task cost at the operating point
	// (result.TaskSummary.RequestsPerCompleted: its turns, its retries, and the requests
	// of the tasks that failed); 0 when the workload has no tasks.
	RequestsPerTask float64
}

// Bound names what limits the GPU count.
type Bound string

// Bounds.
const (
	BoundThroughput Bound = "throughput"
	BoundMemory     Bound = "memory"
)

// Worksheet is the result, step by step.
type Worksheet struct {
	Traffic   Traffic
	Operating Operating

	GPUSecondsPerRequest float64 // GPUs per replica / sustainable rate
	// ThroughputGPUs = ceil(peak × GPU-s per request / target utilization).
	ThroughputGPUs int
	// InFlightNeeded = peak × mean E2E (Little's law): requests in flight at peak.
	InFlightNeeded float64
	// MemoryReplicas = ceil(in flight needed / KV-limited concurrency); MemoryGPUs is that
	// × GPUs per replica. Zero when the KV-limited concurrency is unknown.
	MemoryReplicas int
	MemoryGPUs     int
	// BaseGPUs is the larger of the two, rounded up to whole replicas; Bound says which.
	BaseGPUs int
	Bound    Bound
	// WithHeadroom = ceil(base × (1 + headroom)) rounded up to whole replicas.
	WithHeadroom int
	// TotalGPUs adds Redundancy spare replicas.
	TotalGPUs int
	// FitsKV reports whether the in-flight requests per replica at peak fit the KV-limited
	// concurrency (Little's law against KV memory).
	FitsKV bool
	// InFlightPerReplica is the in-flight count per replica at peak on TotalGPUs.
	InFlightPerReplica float64

	// CostPerCompletedUSD is the GPU cost of one completed request at the operating point,
	// retries and errors included: GPU-s per attempt × attempts / completed × $/GPU-s.
	CostPerCompletedUSD float64
	// MonthlyUSD is TotalGPUs × 730 h × price.
	MonthlyUSD float64
	// GPUSecondsPerTask = GPU-s per request × requests per completed task, and
	// CostPerTaskUSD that at the price; TasksPerReplicaS = sustainable rate / requests
	// per completed task. Zero when the workload has no tasks.
	GPUSecondsPerTask float64
	CostPerTaskUSD    float64
	TasksPerReplicaS  float64

	Warnings []string
}

// Compute fills the worksheet. It returns an error for inputs that make no sense.
func Compute(t Traffic, op Operating) (*Worksheet, error) {
	var errs []error
	if t.PeakRPS <= 0 {
		errs = append(errs, fmt.Errorf("peak rate %g req/s: must be > 0", t.PeakRPS))
	}
	if op.SustainableRPS <= 0 {
		errs = append(errs, fmt.Errorf("sustainable rate %g req/s: must be > 0 (no operating point within the SLO was measured)", op.SustainableRPS))
	}
	if t.TargetUtilization == 0 {
		t.TargetUtilization = 1
	}
	if t.TargetUtilization < 0 || t.TargetUtilization > 1 {
		errs = append(errs, fmt.Errorf("target utilization %g: must be in (0, 1]", t.TargetUtilization))
	}
	if t.Headroom < 0 {
		errs = append(errs, fmt.Errorf("headroom %g: must be >= 0", t.Headroom))
	}
	if t.Redundancy < 0 {
		errs = append(errs, fmt.Errorf("redundancy %d: must be >= 0", t.Redundancy))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if op.GPUsPerReplica <= 0 {
		op.GPUsPerReplica = 1
	}
	ws := &Worksheet{Traffic: t, Operating: op}
	g := op.GPUsPerReplica
	if !op.FromSweep {
		ws.Warnings = append(ws.Warnings, "the per-GPU rate comes from a single run, not an SLO-bound sweep: it is the rate that run happened to send, not the highest rate the SLO allows")
	}

	ws.GPUSecondsPerRequest = float64(g) / op.SustainableRPS
	ws.ThroughputGPUs = ceil(t.PeakRPS * ws.GPUSecondsPerRequest / t.TargetUtilization)
	ws.InFlightNeeded = t.PeakRPS * op.MeanE2ES
	if op.KVConcurrency > 0 {
		ws.MemoryReplicas = ceil(ws.InFlightNeeded / float64(op.KVConcurrency))
		ws.MemoryGPUs = ws.MemoryReplicas * g
	} else {
		ws.Warnings = append(ws.Warnings, "KV-limited concurrency unknown: the memory bound was not computed")
	}

	ws.BaseGPUs, ws.Bound = ws.ThroughputGPUs, BoundThroughput
	if ws.MemoryGPUs > ws.BaseGPUs {
		ws.BaseGPUs, ws.Bound = ws.MemoryGPUs, BoundMemory
	}
	ws.BaseGPUs = roundUpTo(ws.BaseGPUs, g)
	ws.WithHeadroom = roundUpTo(ceil(float64(ws.BaseGPUs)*(1+t.Headroom)), g)
	ws.TotalGPUs = ws.WithHeadroom + t.Redundancy*g

	// Without the spare replicas: the fleet must hold the peak when one is down.
	replicas := ws.WithHeadroom / g
	if replicas > 0 {
		ws.InFlightPerReplica = ws.InFlightNeeded / float64(replicas)
	}
	ws.FitsKV = op.KVConcurrency == 0 || ws.InFlightPerReplica <= float64(op.KVConcurrency)
	if !ws.FitsKV {
		ws.Warnings = append(ws.Warnings, fmt.Sprintf("at peak each replica holds %.1f requests in flight, more than its KV-limited concurrency %d", ws.InFlightPerReplica, op.KVConcurrency))
	}

	if op.RequestsPerTask > 0 {
		// Requests per completed task already counts every attempt of the task's calls
		// and the requests of failed tasks.
		ws.GPUSecondsPerTask = ws.GPUSecondsPerRequest * op.RequestsPerTask
		ws.TasksPerReplicaS = op.SustainableRPS / op.RequestsPerTask
		ws.CostPerTaskUSD = ws.GPUSecondsPerTask * t.GPUHourUSD / 3600
	}
	if t.GPUHourUSD > 0 {
		retry := 1.0
		if op.Attempts > 0 && op.Completed > 0 {
			retry = float64(op.Attempts) / float64(op.Completed)
		}
		ws.CostPerCompletedUSD = ws.GPUSecondsPerRequest * retry * t.GPUHourUSD / 3600
		ws.MonthlyUSD = float64(ws.TotalGPUs) * HoursPerMonth * t.GPUHourUSD
	}
	return ws, nil
}

// PeakShortfall is how many times too small a fleet sized for the average rate at
// utilization u is at a peak of peakToAverage × the average, with every GPU at 100%:
// sizing for the average at 80% with a 3× peak leaves the fleet 2.4× short.
func PeakShortfall(peakToAverage, u float64) float64 { return peakToAverage * u }

// Delta is the fleet change between a baseline and a candidate worksheet.
type Delta struct {
	BaselineGPUs, CandidateGPUs int
	GPUs                        int     // candidate − baseline
	MonthlyUSD                  float64 // candidate − baseline
}

// Compare returns the fleet delta from base to cand.
func Compare(base, cand *Worksheet) Delta {
	return Delta{
		BaselineGPUs:  base.TotalGPUs,
		CandidateGPUs: cand.TotalGPUs,
		GPUs:          cand.TotalGPUs - base.TotalGPUs,
		MonthlyUSD:    cand.MonthlyUSD - base.MonthlyUSD,
	}
}

// ceil rounds up, treating values within 1e-9 of an integer as that integer so that
// 16.000000000000004 GPUs is 16, not 17.
func ceil(v float64) int {
	r := math.Round(v)
	if math.Abs(v-r) < 1e-9 {
		return int(r)
	}
	return int(math.Ceil(v))
}

func roundUpTo(n, m int) int {
	if m <= 1 {
		return n
	}
	return (n + m - 1) / m * m
}
