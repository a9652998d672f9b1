package stats

import (
	"fmt"
	"math"
)

// Block is one block of an A/B job: a stretch of the workload sent to one of two engines
// measured in alternation on the same machine (ABBA...).
type Block struct {
	// Candidate is true for the candidate's blocks, false for the baseline's.
	Candidate bool
	// At is when the block ran (its midpoint, in any unit), for the drift term.
	At float64
	// Metric is the block's own statistic.
	Metric Metric
}

// CompareBlocks compares the candidate engine with the baseline engine of one A/B job.
//
// The blocks' log values are fitted by least squares to ln x = a + δ·[candidate] + γ·At:
// δ is the candidate's effect with a linear drift over the job taken out (the drift
// both engines shared), and the residual spread of the blocks, which holds their
// between-block noise (an engine start, a moment of the job) and their sampling noise,
// gives δ's standard error on n − 3 degrees of freedom. That error is never taken below
// the sampling noise of the pooled requests (the bootstrap of base and cand, every
// block's requests of a side together), which few blocks could otherwise underestimate.
// With fewer than five blocks the drift term is dropped (n − 2 degrees of freedom).
//
// Point is exp(δ). Baseline is the geometric mean of the baseline blocks' values and
// Candidate is Baseline × Point, so that the values shown give the ratio shown: with a
// balanced layout (ABBA...) Candidate is the geometric mean of the candidate blocks, and
// otherwise their value with the drift taken out. The verdict follows Compare's rule.
func CompareBlocks(blocks []Block, base, cand Metric, pol Policy) (Result, Noise) {
	return CompareBlocksShared(blocks, base, cand, pol, Shared{})
}

// CompareBlocksShared is CompareBlocks for a job whose blocks share a part sh that their
// spread cannot see (engines started once for the job): its variance is added to the
// between-block part, and the degrees of freedom are the Welch–Satterthwaite ones of
// the sum (the blocks' part on theirs, the shared part on sh.DF).
//
// It is two steps: the bootstrap of the pooled sides (their sampling spread, the
// floor of δ's error), then CompareBlocksCore on the blocks' values.
func CompareBlocksShared(blocks []Block, base, cand Metric, pol Policy, sh Shared) (Result, Noise) {
	pol, notes, errs := pol.effective()
	res := Result{Policy: pol, Warnings: notes}
	if len(errs) > 0 {
		res.Warnings = append(res.Warnings, errs[:len(errs)-1]...)
		return res.incomparable(errs[len(errs)-1]), Noise{Source: "blocks"}
	}
	if why := tooFewBlocks(blocks); why != "" {
		return res.incomparable(why), Noise{Source: "blocks"}
	}
	for _, w := range base.Warnings() {
		res.Warnings = append(res.Warnings, "baseline: "+w)
	}
	for _, w := range cand.Warnings() {
		res.Warnings = append(res.Warnings, "candidate: "+w)
	}
	_, sb, why := logWithin(base, pol, streamBase)
	if why != "" {
		return res.incomparable("baseline " + why), Noise{Source: "blocks"}
	}
	_, sc, why := logWithin(cand, pol, streamCand)
	if why != "" {
		return res.incomparable("candidate " + why), Noise{Source: "blocks"}
	}
	core, nz := CompareBlocksCore(blocks, sb*sb+sc*sc, pol, sh)
	core.Warnings = append(res.Warnings, core.Warnings...)
	return core, nz
}

// tooFewBlocks says why blocks cannot be compared for want of blocks ("" when they can):
// at least 2 of each side.
func tooFewBlocks(blocks []Block) string {
	var nb, nc int
	for _, b := range blocks {
		if b.Candidate {
			nc++
		} else {
			nb++
		}
	}
	if nb < 2 || nc < 2 {
		return fmt.Sprintf("%d baseline and %d candidate blocks: an A/B comparison needs at least 2 of each", nb, nc)
	}
	return ""
}

// CompareBlocksCore is CompareBlocksShared without resampling: within is the variance
// of δ's sampling error (the pooled sides' log spreads squared and summed), the floor of
// its standard error; each block's value is its Metric's Value. The noise simulations
// call it with the values they drew.
func CompareBlocksCore(blocks []Block, within float64, pol Policy, sh Shared) (Result, Noise) {
	pol, notes, errs := pol.effective()
	res := Result{Policy: pol, Warnings: notes}
	nz := Noise{Source: "blocks"}
	if len(errs) > 0 {
		res.Warnings = append(res.Warnings, errs[:len(errs)-1]...)
		return res.incomparable(errs[len(errs)-1]), nz
	}
	if why := tooFewBlocks(blocks); why != "" {
		return res.incomparable(why), nz
	}
	y := make([]float64, len(blocks))
	for i, b := range blocks {
		v := Value(b.Metric)
		if why := undefinedRatio(v, 1); why != "" || v == 0 {
			return res.incomparable(fmt.Sprintf("block %d has no positive value", i+1)), nz
		}
		y[i] = math.Log(v)
	}
	d, se2, df := blockFit(blocks, y, len(blocks) >= 5)
	nz.Within = math.Sqrt(within)
	dfTotal := df
	var between2 float64
	if se2 > within {
		between2 = se2 - within
	} else {
		dfTotal = math.Inf(1)
	}
	if sh.Var > 0 {
		shDF := sh.DF
		if shDF <= 0 {
			shDF = math.Inf(1)
		}
		dfTotal = satterthwaite(max(se2, within), dfTotal, sh.Var, shDF)
		between2 += sh.Var
	}
	nz.Between = math.Sqrt(between2)
	res = combined(res, d, within, dfTotal, &nz)
	var sum float64
	var nb int
	for i, b := range blocks {
		if !b.Candidate {
			sum += y[i]
			nb++
		}
	}
	res.Baseline = math.Exp(sum / float64(nb))
	res.Candidate = res.Baseline * res.Point
	return res, nz
}

// blockFit fits y = a + δ·[candidate] (+ γ·At) by least squares and returns δ, its
// squared standard error and the residual degrees of freedom.
func blockFit(blocks []Block, y []float64, trend bool) (delta, se2, df float64) {
	n := len(blocks)
	p := 2
	if trend {
		p = 3
	}
	var tm float64
	for _, b := range blocks {
		tm += b.At
	}
	tm /= float64(n)
	row := func(b Block) []float64 {
		c := 0.0
		if b.Candidate {
			c = 1
		}
		if trend {
			return []float64{1, c, b.At - tm}
		}
		return []float64{1, c}
	}
	xtx := make([][]float64, p)
	for i := range xtx {
		xtx[i] = make([]float64, p)
	}
	xty := make([]float64, p)
	for k, b := range blocks {
		r := row(b)
		for i := range p {
			xty[i] += r[i] * y[k]
			for j := range p {
				xtx[i][j] += r[i] * r[j]
			}
		}
	}
	inv, ok := invert(xtx)
	if !ok && trend {
		return blockFit(blocks, y, false) // all blocks at one time: no drift to fit
	}
	beta := make([]float64, p)
	for i := range p {
		for j := range p {
			beta[i] += inv[i][j] * xty[j]
		}
	}
	var rss float64
	for k, b := range blocks {
		r := row(b)
		var fit float64
		for i := range p {
			fit += r[i] * beta[i]
		}
		rss += (y[k] - fit) * (y[k] - fit)
	}
	df = float64(n - p)
	return beta[1], rss / df * inv[1][1], df
}

// invert inverts a small symmetric positive matrix by Gauss–Jordan elimination; false
// when it is singular.
func invert(a [][]float64) ([][]float64, bool) {
	n := len(a)
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, 2*n)
		copy(m[i], a[i])
		m[i][n+i] = 1
	}
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) < 1e-12 {
			return nil, false
		}
		m[c], m[piv] = m[piv], m[c]
		f := m[c][c]
		for j := range m[c] {
			m[c][j] /= f
		}
		for r := range n {
			if r != c {
				g := m[r][c]
				for j := range m[r] {
					m[r][j] -= g * m[c][j]
				}
			}
		}
	}
	out := make([][]float64, n)
	for i := range out {
		out[i] = m[i][n:]
	}
	return out, true
}

// satterthwaite is the Welch–Satterthwaite degrees of freedom of the sum of two
// variance estimates a (on da degrees of freedom) and b (on db); +Inf degrees of freedom
// are a known variance.
func satterthwaite(a, da, b, db float64) float64 {
	den := 0.0
	if !math.IsInf(da, 1) {
		den += a * a / da
	}
	if !math.IsInf(db, 1) {
		den += b * b / db
	}
	if den == 0 {
		return math.Inf(1)
	}
	return (a + b) * (a + b) / den
}
