package plan

import (
	"fmt"
	"math"
	"time"

	"github.com/slogate/slogate/gate"
)

// MaxDecideBlocks is the most blocks ToDecide looks at: beyond it a rule is better
// widened than measured longer.
const MaxDecideBlocks = 256

// ToDecide is the smallest sequential A/B job, its maximum a multiple of 4 up to limit and
// looked at from block 4, whose unchanged candidate Costs expects to stop decided before
// that maximum: the recipe of mode (ModeABRestarts or ModeABSwaps) for rule r on job j.
// ok is false when no maximum up to limit does (a swapped job's spread between engine
// starts, which more blocks do not narrow, can forbid it).
func ToDecide(j Job, r Rule, mode string, limit int) (rc Recipe, ok bool) {
	for n := 8; n <= limit; n += 4 {
		jj := j
		jj.MinBlocks, jj.MaxBlocks, jj.FutilityFrom, jj.FinalShare = 4, n, 0, 0
		for _, c := range Costs(jj, []Rule{r}) {
			if c.Mode == mode && c.Blocks < n {
				return c, true
			}
		}
	}
	return Recipe{}, false
}

// AdviseAB adds to each inconclusive rule of an A/B job's result that its blocks judged
// what slogate plan says would decide it: the smallest sequential job (ToDecide) at the
// noise this job measured, with its expected blocks and GPU minutes on job j (the run,
// warm-up, start and wake costs of the workload). The rule's spread between runs is
// taken back out of its interval's: a fixed job of n blocks has the log ratio's standard
// deviation 2·sd/√n (beside the engines' start offsets, with swaps).
func AdviseAB(wr *gate.WorkloadResult, j Job) {
	mode := ModeABRestarts
	if wr.Swap != nil && wr.Swap.Starts < wr.BlocksRun && wr.Swap.Starts > 0 {
		mode = ModeABSwaps
		if wr.Swap.Wakes > 0 {
			j.Wake = time.Duration(wr.Swap.WakeS / float64(wr.Swap.Wakes) * float64(time.Second))
		}
	}
	n := wr.BlocksRun
	for i := range wr.Metrics {
		m := &wr.Metrics[i]
		if m.Verdict != gate.Inconclusive || m.Method != gate.MethodBlocks || m.Noise == nil || m.Noise.TotalSD <= 0 || n < 4 || m.Tolerance <= 0 {
			continue
		}
		// The starts' part (swapped engines) is not the blocks' own: taken out here,
		// and added back by Costs from StartsSD.
		sd := math.Sqrt(max(m.Noise.TotalSD*m.Noise.TotalSD-m.Noise.StartsSD*m.Noise.StartsSD, 0)) * math.Sqrt(float64(n)) / 2
		r := Rule{Metric: m.Metric, Tolerance: m.Tolerance, RunSD: sd}
		if m.Noise.StartsSD > 0 {
			r.StartsSD, r.StartsDF = m.Noise.StartsSD/math.Sqrt2, max(int(m.Noise.DF), 1)
		}
		rc, ok := ToDecide(j, r, mode, MaxDecideBlocks)
		s := fmt.Sprintf("slogate plan, at this job's noise (%.3f between runs): ", sd)
		if ok {
			s += fmt.Sprintf("a sequential job of at most %d blocks (ab --min-blocks 4 --blocks %d, %s) is expected to decide an unchanged engine after about %d blocks, %.1f GPU minutes", rc.MaxBlocks, rc.MaxBlocks, mode, rc.Blocks, rc.GPUMinutes)
		} else {
			s += fmt.Sprintf("no sequential job of up to %d blocks (%s) is expected to decide it: widen the tolerance", MaxDecideBlocks, mode)
			if mode == ModeABSwaps {
				s += ", or restart the engines for each block"
			}
		}
		if m.Undecided != "" {
			m.Undecided += "; "
		}
		m.Undecided += s
	}
}
