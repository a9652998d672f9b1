package stats

import (
	"math"
	"math/rand/v2"
)

// abJob draws the blocks of an A/B job laid out ABBA, n blocks, the candidate's log
// level delta above the baseline's. With restarts every block has its own engine start
// (its offset drawn per block); swapped, each side's engine keeps the one start's offset
// drawn before the first block. The noise model shapes each block's own offset and
// sampling error; the start offsets are normal (edgeWorld).
func (w edgeWorld) abJob(r *rand.Rand, m noiseModel, delta float64, n int, swapped bool) []Block {
	startB, startC := w.start*r.NormFloat64(), w.start*r.NormFloat64()
	blocks := make([]Block, n)
	for i := range blocks {
		cand := i%4 == 1 || i%4 == 2
		x := w.run*m.Draw(r) + w.within*m.Draw(r)
		switch {
		case !swapped:
			x += w.start * r.NormFloat64()
		case cand:
			x += startC
		default:
			x += startB
		}
		if cand {
			x += delta
		}
		blocks[i] = Block{Candidate: cand, At: float64(i), Metric: flat(math.Exp(x))}
	}
	return blocks
}

// pooledSide is a side's pooled statistic for CompareBlocks: the blocks here carry no
// requests to pool, so a constant at the side's geometric mean.
func pooledSide(blocks []Block, cand bool) Metric {
	var s float64
	var n int
	for _, b := range blocks {
		if b.Candidate == cand {
			s += math.Log(Value(b.Metric))
			n++
		}
	}
	return flat(math.Exp(s / float64(n)))
}

// flat is a statistic of value v that resampling never moves: a block's or side's
// value, its sampling error drawn into it already.
func flat(v float64) Metric { return Func{N: 1, F: func([]int32) float64 { return v }} }

func fixedAB(blocks []Block, pol Policy, sh Shared) Verdict {
	res, _ := CompareBlocksShared(blocks, pooledSide(blocks, false), pooledSide(blocks, true), pol, sh)
	return res.Verdict
}

// seqAB is a sequential A/B job looked at after every pair from minBlocks on, at most
// maxBlocks: the pairs' confidence sequence (with the shared part) decides; with a final
// share f the looks before the maximum take 1 − (1 − c)(1 − f) and the maximum is judged
// by the fixed interval at 1 − f(1 − c) (gate.ABStop). With futilityFrom (0: never) an
// undecided look from that block on stops the job undecided when Futile says so, as
// gate.LookAB does. It says whether the job failed.
func seqAB(blocks []Block, pol Policy, sh Shared, minBlocks, maxBlocks int, final float64, futilityFrom int) bool {
	seqPol, finPol := pol, pol
	if final > 0 {
		seqPol.Confidence = 1 - (1-pol.Confidence)*(1-final)
		finPol.Confidence = 1 - final*(1-pol.Confidence)
	}
	for n := minBlocks; n <= maxBlocks; n += 2 {
		if n == maxBlocks && final > 0 {
			return fixedAB(blocks[:n], finPol, sh) == Fail
		}
		_, _, _, dec, ok := SequentialBlocksShared(blocks[:n], seqPol, sh)
		if ok && dec != Undecided {
			return dec == DecidedFail
		}
		if futilityFrom > 0 && n >= futilityFrom && n < maxBlocks {
			finConf := 0.0
			if final > 0 {
				finConf = finPol.Confidence
			}
			if f, _, _, ok := Futile(blocks[:n], seqPol, sh, maxBlocks/2, finConf); ok && f {
				return false // stopped futile: judged by the sequence, undecided
			}
		}
	}
	return false
}

// abRules: the A/B rules, each block's spread as the committed rules' world; swapped
// engines add their starts' part from a known spread between starts.
func abRules() []edgeRule {
	w := edgeWorld{start: 0.04, run: 0.02, within: 0.03}
	pol := edgePolicy
	sh := Shared{Var: 2 * w.start * w.start}
	job := func(n int, swapped bool, fails func([]Block) bool) func(r *rand.Rand, m noiseModel, delta float64) bool {
		return func(r *rand.Rand, m noiseModel, delta float64) bool { return fails(w.abJob(r, m, delta, n, swapped)) }
	}
	return []edgeRule{
		{Name: "A/B fixed, 8 blocks, restarts", AA: 0.004, Power: 0.45, Fails: job(8, false, func(b []Block) bool { return fixedAB(b, pol, Shared{}) == Fail })},
		{Name: "A/B fixed, 8 blocks, swapped", AA: 0.004, Power: 0.28, Fails: job(8, true, func(b []Block) bool { return fixedAB(b, pol, sh) == Fail })},
		{Name: "A/B sequential 4-16, restarts", AA: 0.004, Power: 0.38, Fails: job(16, false, func(b []Block) bool { return seqAB(b, pol, Shared{}, 4, 16, 0, 0) })},
		{Name: "A/B sequential 4-16, swapped", AA: 0.004, Power: 0.03, Fails: job(16, true, func(b []Block) bool { return seqAB(b, pol, sh, 4, 16, 0, 0) })},
		{Name: "A/B sequential 4-16, final share 0.5", AA: 0.004, Power: 0.75, Fails: job(16, false, func(b []Block) bool { return seqAB(b, pol, Shared{}, 4, 16, 0.5, 0) })},
		{Name: "A/B sequential 4-32, restarts", AA: 0.004, Power: 0.85, Fails: job(32, false, func(b []Block) bool { return seqAB(b, pol, Shared{}, 4, 32, 0, 0) })},
		{Name: "A/B sequential 4-32, futility from 8", AA: 0.004, Power: 0.72, Fails: job(32, false, func(b []Block) bool { return seqAB(b, pol, Shared{}, 4, 32, 0, 8) })},
		{Name: "A/B sequential 4-32, final share 0.5, futility from 16", AA: 0.004, Power: 0.93, Fails: job(32, false, func(b []Block) bool { return seqAB(b, pol, Shared{}, 4, 32, 0.5, 16) })},
		{Name: "A/B sequential 4-32, swapped, futility from 8", AA: 0.004, Power: 0.06, Fails: job(32, true, func(b []Block) bool { return seqAB(b, pol, sh, 4, 32, 0, 8) })},
		{Name: "negative control: a fixed A/B interval at every pair, 4-32", Control: true, Fails: job(32, false, func(b []Block) bool {
			for n := 4; n <= 32; n += 2 {
				if fixedAB(b[:n], pol, Shared{}) == Fail {
					return true
				}
			}
			return false
		})},
		{Name: "negative control: swapped A/B without the starts' part", Control: true, Fails: job(8, true, func(b []Block) bool { return fixedAB(b, pol, Shared{}) == Fail })},
	}
}
