package gate

import (
	"fmt"
	"math"

	"github.com/slogate/slogate/result"
)

// DistributionRecord rebuilds, from the first trial of a loaded baseline, a run record
// that holds the baseline's latency distributions (TTFT, E2E, each request's ITL gaps as
// their sketch values) and, where the baseline kept its timeline, its window, each
// request's scheduled time and the in-flight and engine series (cut to
// MaxTimelinePoints), for the report's baseline-against-candidate charts. An older
// baseline without a timeline schedules every request at 0 and has no window and no
// series: charts over time then show the candidate alone. Nil when nothing is decoded.
func (b *Baseline) DistributionRecord() *result.Record {
	if b == nil || len(b.runs) == 0 || len(b.Trials) == 0 {
		return nil
	}
	r := b.runs[0]
	rec := &result.Record{
		Schema: result.Schema, Workload: b.Workload, WorkloadHash: b.WorkloadHash, WorkloadForm: b.WorkloadForm, Hardware: b.Hardware,
		Mode: b.Mode, Start: b.Trials[0].Start, ToolVersion: b.ToolVersion, Environment: b.Environment,
		Summary: b.Trials[0].Summary, Requests: make([]result.Request, r.len()),
		Notes:  []string{"rebuilt from the baseline file: latency distributions only, no timelines"},
		Source: b.Source,
	}
	tl := b.Trials[0].Timeline
	if tl != nil {
		rec.Notes[0] = fmt.Sprintf("rebuilt from the baseline file: latency distributions, and timelines cut to at most %d points a series", MaxTimelinePoints)
		rec.Window = result.Window{StartUS: 0, EndUS: tl.WindowMS * 1000}
		for name, c := range tl.Series {
			ss := make([]result.Sample, len(c.TMS))
			for i := range c.TMS {
				ss[i] = result.Sample{TUS: c.TMS[i] * 1000, V: c.V[i]}
			}
			if name == seriesInFlight {
				rec.Series.InFlight = ss
				continue
			}
			if rec.Series.Engine == nil {
				rec.Series.Engine = map[string][]result.Sample{}
			}
			rec.Series.Engine[name] = ss
		}
	}
	if b.Source != nil {
		rec.Notes = append(rec.Notes, "provenance: "+b.Source.Line())
	}
	failed := 0
	for i := range rec.Requests {
		q := &rec.Requests[i]
		q.I = i
		if i < len(r.tokens) {
			q.OutputTokens = r.tokens[i]
		}
		var sched int64
		if tl != nil && i < len(tl.SchedMS) {
			sched = tl.SchedMS[i] * 1000
		}
		q.SchedUS, q.SendUS = sched, sched
		if !r.ok[i] {
			q.Error = "error"
			if tl != nil && failed < len(tl.FailEndMS) {
				q.EndUS = sched + tl.FailEndMS[failed]*1000
			}
			failed++
			continue
		}
		q.SLOMet = r.met[i]
		if r.ttft[i] >= 0 {
			q.FirstUS = sched + r.ttft[i]
		}
		if r.e2e[i] >= 0 {
			q.LastUS, q.EndUS = sched+r.e2e[i], sched+r.e2e[i]
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
