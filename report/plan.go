package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/slogate/slogate/plan"
)

// PlanTable prints what gating a workload costs per mode (slogate plan).
func PlanTable(w io.Writer, p plan.Plan) {
	j := p.Job
	fmt.Fprintf(w, "%s: a run of %.1f s after a warm-up of %.1f s; engine start %.0f s (%s), wake %.0f s\n",
		p.Workload, j.Run.Seconds(), j.Warmup.Seconds(), j.Start.Seconds(), p.StartFrom, j.Wake.Seconds())
	for _, r := range p.Rules {
		fmt.Fprintf(w, "  %s: tolerance %s, run-to-run sd of the log %.3f (%s)\n", r.Metric, planPct(r.Tolerance), r.RunSD, r.Source)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"mode", "GPU minutes per PR", "blocks"}
	for _, r := range p.Rules {
		head = append(head, r.Metric+" detected at")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, rc := range p.Recipes {
		blocks := "-"
		if rc.MaxBlocks > 0 {
			blocks = fmt.Sprintf("%d of at most %d", rc.Blocks, rc.MaxBlocks)
		}
		row := []string{rc.Mode, fmt.Sprintf("%.1f", rc.GPUMinutes), blocks}
		for _, d := range rc.Detectable {
			if math.IsInf(d, 1) || math.IsNaN(d) {
				row = append(row, "none")
			} else {
				row = append(row, planPct(d)+" worse")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, n := range p.Tails {
		if n.Short() {
			fmt.Fprintf(w, "warning: %s\n", n)
		} else {
			fmt.Fprintf(w, "%s\n", n)
		}
	}
	for _, x := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
}

func planPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
