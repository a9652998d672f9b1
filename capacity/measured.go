package capacity

import (
	"errors"
	"fmt"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Measured is an operating point read from a record, with what a reader of the worksheet
// must know about where it came from.
type Measured struct {
	Operating Operating
	// Source is "sweep" or "run".
	Source string
	// KV is the KV-limited concurrency detail at the operating point (nil when unknown).
	KV *result.KVConcurrency
	// AttainmentTarget and Attainment are those of the run (or sweep step) measured.
	Attainment, AttainmentTarget float64
	// Warnings are added to the worksheet.
	Warnings []string
	// ColdStart is what the record measured of the scaling model: the start of its engine
	// (when slogate started it) and the steepest minute of its arrivals (when they span
	// two whole minutes); zero fields where it measured none.
	ColdStart ColdStart
}

// FromSweep reads the operating point of an SLO-bound sweep: the per-replica rate is
// max_sustainable_rps, and latency, KV and attempts come from the passing step at that
// rate. A sweep that reported no capacity (client-limited, failed, no step passed) is an
// error: there is no rate the SLO allows to size a fleet with.
func FromSweep(s *result.Sweep) (Measured, error) {
	if s.MaxSustainableRPS == nil {
		why := s.Failure
		switch {
		case s.Bound == result.BoundClient:
			why = "the load generator, not the engine, limited it"
		case why == "":
			why = "no step met the SLO"
		}
		return Measured{}, fmt.Errorf("sweep of %s reports no sustainable rate: %s", s.Workload, why)
	}
	m := Measured{Source: "sweep", AttainmentTarget: s.SLOAttainmentTarget}
	m.Operating = Operating{SustainableRPS: *s.MaxSustainableRPS, FromSweep: true}
	st := s.OperatingStep()
	if st == nil {
		return Measured{}, fmt.Errorf("sweep of %s: no passing step at max_sustainable_rps %g", s.Workload, *s.MaxSustainableRPS)
	}
	m.Operating.MeanE2ES = st.E2EMeanms / 1000
	m.Operating.Attempts, m.Operating.Completed = st.Requests, st.Completed
	if ts := st.Tasks; ts != nil {
		m.Operating.RequestsPerTask = ts.RequestsPerCompleted
		m.Warnings = append(m.Warnings, tasksWarnings(ts)...)
	}
	m.Attainment = st.SLOAttainment
	if m.KV = st.KVConcurrency; m.KV != nil {
		m.Operating.KVConcurrency = m.KV.Value
	}
	if s.Bound == result.BoundMaxRate {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the sweep stopped at its --max-rate %g req/s with the SLO still met: the engine sustains at least that, so this GPU count is an upper bound", *s.MaxSustainableRPS))
	}
	return m, nil
}

// FromRun reads the operating point of a plain run: its throughput at the rate it
// happened to send. The worksheet warns that this is not the highest rate the SLO allows,
// and warns again when the run itself missed its attainment target.
func FromRun(r *result.Record) (Measured, error) {
	s := &r.Summary
	if r.Incomplete {
		return Measured{}, fmt.Errorf("run of %s is incomplete (%s): it measured no steady operating point", r.Workload, r.IncompleteReason)
	}
	if s.ClientSaturated {
		return Measured{}, errors.New("run of " + r.Workload + " is client-saturated: the load generator, not the engine, set its rate")
	}
	m := FromSummary(s, r.SLOAttainmentTarget)
	if st := r.Startup; st != nil {
		// A replica serves from its first token; without one, from when it was ready.
		switch {
		case st.FirstTokenMS > 0:
			m.ColdStart.StartS, m.ColdStart.Source = st.FirstTokenMS/1e3, "measured: first token after the start of "+r.Workload+"'s engine"
		case st.ReadyMS > 0:
			m.ColdStart.StartS, m.ColdStart.Source = st.ReadyMS/1e3, "measured: start of "+r.Workload+"'s engine to ready"
		}
	}
	sched := make([]int64, len(r.Requests))
	for i, q := range r.Requests {
		sched[i] = q.SchedUS
	}
	if ramp, ok := SteepestMinute(sched); ok {
		m.ColdStart.RampRPSPerMin, m.ColdStart.RampSource = ramp, "the steepest minute of "+r.Workload+"'s arrivals"
	}
	return m, nil
}

// FromSummary is FromRun's operating point from a run's summary alone (a baseline keeps
// summaries, not records), for a run already known to be complete and unsaturated.
func FromSummary(s *result.Summary, attainmentTarget float64) Measured {
	m := Measured{Source: "run", Attainment: s.SLOAttainment, AttainmentTarget: attainmentTarget, KV: s.KVConcurrency}
	m.Operating = Operating{
		SustainableRPS: s.ThroughputRPS,
		MeanE2ES:       s.E2Ems.Mean / 1000,
		Attempts:       s.Requests,
		Completed:      s.Completed,
	}
	if s.KVConcurrency != nil {
		m.Operating.KVConcurrency = s.KVConcurrency.Value
	}
	if ts := s.Tasks; ts != nil {
		m.Operating.RequestsPerTask = ts.RequestsPerCompleted
		m.Warnings = append(m.Warnings, tasksWarnings(ts)...)
	}
	if attainmentTarget > 0 && s.SLOAttainment < attainmentTarget {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the run missed its SLO (attainment %.2f%% < %.2f%%): its throughput is above any rate the SLO allows", 100*s.SLOAttainment, 100*attainmentTarget))
	}
	return m
}

// tasksWarnings are what a reader of the cost per task must know of the tasks measured.
func tasksWarnings(ts *result.TaskSummary) []string {
	switch {
	case ts.Completed == 0:
		return []string{fmt.Sprintf("none of the %d tasks completed: no cost per completed task", ts.Tasks)}
	case ts.Tasks < 30:
		return []string{fmt.Sprintf("requests per completed task from %d tasks only: a rough figure", ts.Tasks)}
	}
	return nil
}

// Worksheet computes the worksheet for this operating point and adds its warnings.
func (m Measured) Worksheet(t Traffic) (*Worksheet, error) {
	ws, err := Compute(t, m.Operating)
	if err != nil {
		return nil, err
	}
	ws.Warnings = append(ws.Warnings, m.Warnings...)
	return ws, nil
}

// TrafficFrom is the traffic profile of a config's capacity section.
func TrafficFrom(c *workload.CapacityConfig) Traffic {
	if c == nil {
		return Traffic{}
	}
	return Traffic{PeakRPS: c.PeakRPS, TargetUtilization: c.TargetUtilization, Headroom: c.Headroom, Redundancy: c.Redundancy, GPUHourUSD: c.GPUHourUSD}
}

// FleetDelta is the fleet change, in GPUs and cost per month, from the baseline's
// operating point to the candidate's for one traffic profile: what the pull request
// comment reports under the config's capacity section.
func FleetDelta(base, cand Measured, t Traffic) (Delta, error) {
	b, err := base.Worksheet(t)
	if err != nil {
		return Delta{}, fmt.Errorf("baseline: %w", err)
	}
	c, err := cand.Worksheet(t)
	if err != nil {
		return Delta{}, fmt.Errorf("candidate: %w", err)
	}
	return Compare(b, c), nil
}
