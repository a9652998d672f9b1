package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/workload"
)

// TailNeed is what a relative rule on a percentile needs of one run to pass: Need
// values (requests, or gaps between chunks for ITL) so that stats.MinTail lie beyond
// the percentile, against the Expect a run of the workload gives (0: not known before it
// runs, a workload bounded by duration).
type TailNeed struct {
	Metric string
	Need   int
	Expect int
	What   string // "requests", "gaps between chunks"
}

// Short says whether a run of the workload is expected to give fewer values than the
// rule needs.
func (n TailNeed) Short() bool { return n.Expect > 0 && n.Expect < n.Need }

// String says it in one line.
func (n TailNeed) String() string {
	s := fmt.Sprintf("%s needs %d %s per run (%d beyond the percentile)", n.Metric, n.Need, n.What, stats.MinTail)
	switch {
	case n.Expect == 0:
		return s + "; a run bounded by duration gives as many as it measures"
	case n.Short():
		return s + fmt.Sprintf("; a run of this workload gives about %d: the rule cannot pass (it ends inconclusive unless it fails); raise workloads[].requests", n.Expect)
	}
	return s + fmt.Sprintf("; a run of this workload gives about %d", n.Expect)
}

// TailNeeds lists, for each relative rule on a percentile among rules (the defaults when
// empty), the values a run of w needs and is expected to give: its measured requests,
// and for ITL their gaps, about requests × (typical output tokens − 1) at one token per
// chunk.
func TailNeeds(w *workload.Workload, rules []workload.Rule) []TailNeed {
	if len(rules) == 0 {
		rules = workload.DefaultRules()
	}
	var out []TailNeed
	for _, r := range rules {
		d, err := lookupMetric(r.Metric)
		if err != nil || d.q == 0 || !isRelative(r) {
			continue
		}
		n := TailNeed{Metric: r.Metric, Need: stats.ValuesForTail(d.q), Expect: w.Requests, What: "requests"}
		if family, _, _ := strings.Cut(r.Metric, "_"); family == "itl" {
			n.What = "gaps between chunks"
			n.Expect = w.Requests * max(w.OutputTokens.Typical()-1, 0)
		}
		if !slices.ContainsFunc(out, func(o TailNeed) bool { return o.Metric == n.Metric }) {
			out = append(out, n)
		}
	}
	return out
}
