package cli

import (
	"flag"

	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/workload"
)

// progress is the measure.Runner's progress: report's renderer on stderr, a bar on a
// terminal and a plain line every 10 s otherwise; none with --quiet. f, when given,
// supplies each workload's target rate.
func (a *app) progress(f *workload.File) (func(string) func(loadgen.Progress), func()) {
	if a.quiet {
		return nil, nil
	}
	var cur *report.Progress
	start := func(name string) func(loadgen.Progress) {
		cur = report.NewProgress(a.stderr, a.now, a.isTTY, name, targetRate(f, name))
		return cur.Update
	}
	done := func() {
		if cur != nil {
			cur.Finish()
		}
	}
	return start, done
}

// targetRate is the rate a workload's schedule sends at; 0 when it has none fixed (a
// closed loop, a trace, a rate profile, or sessions, whose rate is of session starts
// while progress counts turns).
func targetRate(f *workload.File, name string) float64 {
	if f == nil {
		return 0
	}
	for _, w := range f.Workloads {
		if w.Name == name && w.Arrival.Profile == nil && w.Arrival.Process != workload.ArrivalClosed && w.Arrival.Process != workload.ArrivalTrace && w.Sessions == nil {
			return w.Arrival.Rate
		}
	}
	return 0
}

// quietFlag registers --quiet (-q) on a command that reports progress.
func (a *app) quietFlag(fs *flag.FlagSet) {
	fs.BoolVar(&a.quiet, "quiet", false, "print only the result: no progress")
	fs.BoolVar(&a.quiet, "q", false, "print only the result (same as -quiet)")
}
