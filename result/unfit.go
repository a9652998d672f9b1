package result

import (
	"fmt"
	"time"
)

// Unfit says why a record cannot be judged, become a baseline, or count as a
// calibration run or an A/B block; "" when it can. It is the one check that run,
// calibrate, ab and the gate all make: an incomplete run, a load generator that could
// not keep up (its goroutines late, or its schedule), a shard that opened its window
// too late after the common start, a cold run that met a warm cache, or no measured
// request.
func (r *Record) Unfit() string {
	if why := r.UnfitMeasurement(); why != "" {
		return why
	}
	return r.lateShard()
}

// UnfitMeasurement is Unfit less the check that the shards sent one arrival process:
// whether this record, on its own, measured the engine. A shard that opened its window
// late measured it well; the merge of the shards is what cannot be judged, and merge
// and the gate refuse it, so run only warns about it.
func (r *Record) UnfitMeasurement() string {
	switch {
	case r.Incomplete:
		why := r.IncompleteReason
		if why == "" {
			why = "no reason recorded"
		}
		return "the run is incomplete (" + why + ")"
	case r.Summary.ReaderSaturated && r.Summary.ReaderLagms != nil:
		return fmt.Sprintf("the load generator was saturated and could not keep up: its goroutines ran %.3f ms late at p99 (bound %g ms), so chunks were stamped late and ITL measured the client; rerun on a less loaded machine or shard the run",
			r.Summary.ReaderLagms.P99, r.MaxReaderLagMS)
	case r.Summary.ClientSaturated:
		bound := "its bound"
		if r.MaxDispatchLagMS > 0 {
			bound = fmt.Sprintf("%g ms", r.MaxDispatchLagMS)
		}
		return fmt.Sprintf("the load generator was saturated and could not keep the schedule (dispatch lag p99 %.3f ms > %s): the run measured the client, not the engine; rerun on a less loaded machine or shard the run",
			r.Summary.DispatchLagms.P99, bound)
	case r.WarmCold() != "":
		return r.WarmCold()
	case len(r.Requests) == 0:
		return "the run has no measured requests"
	}
	return ""
}

// lateShard says how late the latest shard opened its window, "" when in time.
func (r *Record) lateShard() string {
	if r.Sync != nil && r.Sync.MaxLateMS > 0 && r.Sync.LateMS > r.Sync.MaxLateMS {
		who := "the run"
		if r.Sync.WorstShard != "" {
			who = "shard " + r.Sync.WorstShard
		} else if r.Shard != "" {
			who = "shard " + r.Shard
		}
		return fmt.Sprintf("%s opened its window %.0f ms after the common start time %s (bound %g ms): the shards did not send one arrival process; start them earlier before --start-at",
			who, r.Sync.LateMS, r.Sync.StartAt.Format(time.RFC3339), r.Sync.MaxLateMS)
	}
	return ""
}
