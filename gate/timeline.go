package gate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/slogate/slogate/result"
)

// MaxTimelinePoints bounds each series a baseline keeps: enough for the report to draw the
// baseline's timelines beside the candidate's at the size of a chart (a few hundred
// pixels wide), small against the per-request columns.
const MaxTimelinePoints = 300

// Timeline is what a baseline keeps of a trial's timelines, for the report's charts over
// time: when each request was scheduled, when each failed one ended, and the in-flight
// count and the engine's gauges, each cut to MaxTimelinePoints. The gate never reads it.
type Timeline struct {
	// WindowMS is the length of the measured window.
	WindowMS int64 `json:"window_ms"`
	// SchedMS is each request's scheduled time, ms from the window's start, in record
	// order (the columns' order).
	SchedMS []int64 `json:"sched_ms"`
	// FailEndMS is, for each failed request in record order, when it ended, ms after its
	// scheduled time.
	FailEndMS []int64 `json:"fail_end_ms,omitempty"`
	// Series holds "in_flight" and the engine's gauges by name.
	Series map[string]SeriesColumns `json:"series,omitempty"`
}

// SeriesColumns is one series: times in ms from the window's start, and values.
type SeriesColumns struct {
	TMS []int64   `json:"t_ms"`
	V   []float64 `json:"v"`
}

// seriesInFlight is the Timeline.Series key of the client-side in-flight count.
const seriesInFlight = "in_flight"

func timelineOf(rec *result.Record) *Timeline {
	if rec.Window.EndUS <= rec.Window.StartUS {
		return nil
	}
	o := rec.Window.StartUS
	tl := &Timeline{WindowMS: (rec.Window.EndUS - o) / 1000, SchedMS: make([]int64, len(rec.Requests))}
	for i := range rec.Requests {
		q := &rec.Requests[i]
		tl.SchedMS[i] = (q.SchedUS - o) / 1000
		if !q.OK() {
			tl.FailEndMS = append(tl.FailEndMS, max(q.EndUS-q.SchedUS, 0)/1000)
		}
	}
	add := func(name string, ss []result.Sample) {
		if len(ss) == 0 {
			return
		}
		if tl.Series == nil {
			tl.Series = map[string]SeriesColumns{}
		}
		ss = thin(ss, MaxTimelinePoints)
		c := SeriesColumns{TMS: make([]int64, len(ss)), V: make([]float64, len(ss))}
		for i, s := range ss {
			c.TMS[i], c.V[i] = (s.TUS-o)/1000, s.V
		}
		tl.Series[name] = c
	}
	add(seriesInFlight, rec.Series.InFlight)
	for name, ss := range rec.Series.Engine {
		add(name, ss)
	}
	return tl
}

// thin keeps at most n samples of a series ordered in time: the lowest and the highest of
// each of n/2 buckets, in time order, so a spike survives (every kth sample would drop it).
func thin(ss []result.Sample, n int) []result.Sample {
	if len(ss) <= n {
		return ss
	}
	buckets := n / 2
	out := make([]result.Sample, 0, n)
	for b := range buckets {
		lo, hi := b*len(ss)/buckets, (b+1)*len(ss)/buckets
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if ss[i].V < ss[iMin].V {
				iMin = i
			}
			if ss[i].V > ss[iMax].V {
				iMax = i
			}
		}
		out = append(out, ss[min(iMin, iMax)])
		if iMin != iMax {
			out = append(out, ss[max(iMin, iMax)])
		}
	}
	return out
}

// check says what is wrong with a timeline of n requests of which failed failed.
func (tl *Timeline) check(n, failed int) error {
	switch {
	case len(tl.SchedMS) != n:
		return fmt.Errorf("timeline.sched_ms has %d entries for %d requests", len(tl.SchedMS), n)
	case len(tl.FailEndMS) != failed:
		return fmt.Errorf("timeline.fail_end_ms has %d entries for %d failed requests", len(tl.FailEndMS), failed)
	}
	for _, name := range slices.Sorted(maps.Keys(tl.Series)) {
		if c := tl.Series[name]; len(c.TMS) != len(c.V) {
			return fmt.Errorf("timeline.series.%s has %d times and %d values", name, len(c.TMS), len(c.V))
		}
	}
	return nil
}

// Sizes are the bytes of a baseline file and how many of them its timelines take (what
// the report's baseline timelines cost in the repository).
func Sizes(b *Baseline) (total, timeline int, err error) {
	data, err := Marshal(b)
	if err != nil {
		return 0, 0, err
	}
	bare := *b
	bare.Trials = slices.Clone(b.Trials)
	for i := range bare.Trials {
		bare.Trials[i].Timeline = nil
	}
	without, err := Marshal(&bare)
	if err != nil {
		return 0, 0, err
	}
	return len(data), len(data) - len(without), nil
}
