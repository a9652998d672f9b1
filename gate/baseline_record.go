package gate

import (
	"math"

	"github.com/slogate/slogate/result"
)

// DistributionRecord rebuilds, from the first trial of a loaded baseline, a run record
// that holds the baseline's latency distributions (TTFT, E2E, each request's ITL gaps as
// their sketch values) for the report's baseline-against-candidate charts. A baseline
// keeps no timelines: every request is scheduled at 0 and the record has no window and
// no series, so charts over time show the candidate alone. Nil when nothing is decoded.
func (b *Baseline) DistributionRecord() *result.Record {
	if b == nil || len(b.runs) == 0 || len(b.Trials) == 0 {
		return nil
	}
	r := b.runs[0]
	rec := &result.Record{
		Schema: result.Schema, Workload: b.Workload, WorkloadHash: b.WorkloadHash, Hardware: b.Hardware,
		Mode: b.Mode, Start: b.Trials[0].Start, ToolVersion: b.ToolVersion, Environment: b.Environment,
		Summary: b.Trials[0].Summary, Requests: make([]result.Request, r.len()),
		Notes:  []string{"rebuilt from the baseline file: latency distributions only, no timelines"},
		Source: b.Source,
	}
	if b.Source != nil {
		rec.Notes = append(rec.Notes, "provenance: "+b.Source.Line())
	}
	for i := range rec.Requests {
		q := &rec.Requests[i]
		q.I = i
		if i < len(r.tokens) {
			q.OutputTokens = r.tokens[i]
		}
		if !r.ok[i] {
			q.Error = "error"
			continue
		}
		q.SLOMet = r.met[i]
		if r.ttft[i] >= 0 {
			q.FirstUS = r.ttft[i]
		}
		if r.e2e[i] >= 0 {
			q.LastUS, q.EndUS = r.e2e[i], r.e2e[i]
		}
		if g := r.itl[i]; len(g) > 0 {
			q.ITLUS = make([]int64, len(g))
			for k, v := range g {
				q.ITLUS[k] = int64(math.Round(v))
			}
			q.Chunks = len(g) + 1
		}
	}
	return rec
}
