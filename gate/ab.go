package gate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// abBlock is one block of an A/B job as the gate computes on it.
type abBlock struct {
	r         *run
	candidate bool
	at        float64 // the block's midpoint, seconds since the job's first block began
	// pool, shared by the blocks of one job in their order, keeps each side's pooled
	// requests and statistics by prefix; nil: built at every judgement.
	pool *abPool
}

// abPool keeps what evalBlocks pools from the first n blocks of one job, by metric: a
// job judged again at the same length (by several rules on one metric, or by several
// stopping rules on the same blocks) joins and resamples its sides once. Every slice of
// blocks that shares an abPool must be a prefix of the same blocks.
type abPool struct {
	mu     sync.Mutex
	pooled map[pooledKey]*pooledSides
}

type pooledKey struct {
	metric string
	blocks int
}

// pooledSides are a job's sides, joined (the tail rule reads them) and as def's
// statistic, whose resampled spread is kept (stats.Keep).
type pooledSides struct {
	base, cand   *run
	bStat, cStat stats.Metric
}

func newABPool() *abPool { return &abPool{pooled: map[pooledKey]*pooledSides{}} }

// sidesOf pools blocks' sides for def, from j when it has them.
func (j *abPool) sidesOf(def metricDef, blocks []abBlock, base, cand []*run) *pooledSides {
	build := func() *pooledSides {
		jb, jc := joinRuns(base), joinRuns(cand)
		return &pooledSides{base: jb, cand: jc, bStat: stats.Keep(def.build(jb)), cStat: stats.Keep(def.build(jc))}
	}
	if j == nil {
		return build()
	}
	k := pooledKey{def.name, len(blocks)}
	j.mu.Lock()
	defer j.mu.Unlock()
	if p, ok := j.pooled[k]; ok {
		return p
	}
	p := build()
	j.pooled[k] = p
	return p
}

// joinRuns pools the requests of several runs into one: the values of every request,
// over the sum of their windows and of their spans of scheduled arrivals (goodput of the
// pooled run is its requests that met per second of arrivals, as each run's is; per
// second measured when a run has no span).
func joinRuns(rs []*run) *run {
	out := &run{}
	spans, noTok := true, false
	for _, r := range rs {
		out.window += r.window
		out.span += r.span
		spans = spans && r.span > 0
		out.taskMet = append(out.taskMet, r.taskMet...)
		out.ttft = append(out.ttft, r.ttft...)
		out.tpot = append(out.tpot, r.tpot...)
		out.e2e = append(out.e2e, r.e2e...)
		out.tokens = append(out.tokens, r.tokens...)
		out.ok = append(out.ok, r.ok...)
		out.met = append(out.met, r.met...)
		out.itl = append(out.itl, r.itl...)
		if r.itlTok == nil {
			noTok = true
		}
		out.itlTok = append(out.itlTok, r.itlTok...)
	}
	if noTok {
		out.itlTok = nil
	}
	if !spans {
		out.span = 0
	}
	if len(rs) > 0 {
		out.summary = rs[0].summary
	}
	return out
}

// evalBlocks judges one bootstrapped rule on the blocks of an A/B job (stats.CompareBlocks).
// basePol holds the policy's resamples, confidence and seed; the rule gives the rest.
// A sequential job (seq) is judged by the pairs' confidence sequence instead, the
// interval its stopping rule looked at, which holds however often it was looked at;
// CompareBlocks still says what the noise is made of.
//
// sp is what the engines' starts put into the ratio that the blocks cannot see (engines
// kept through their blocks): its spread joins the interval, fixed or sequential.
//
// stop is the job's stopping rule: a sequential job is judged by its sequences, or at
// its maximum with a final share by the fixed interval at that share of the error rate.
func evalBlocks(rule workload.Rule, def metricDef, blocks []abBlock, basePol stats.Policy, stop ABStop, sp startPart) MetricResult {
	m := MetricResult{Metric: rule.Metric, Unit: def.unit, Tolerance: rule.Tolerance, Max: rule.Max, Min: rule.Min, Method: MethodBlocks}
	dir := ruleDirection(rule, def)
	m.Direction = dir.String()
	m.Warnings = append(m.Warnings, def.notes...)
	var sb []stats.Block
	var base, cand []*run
	for _, b := range blocks {
		sb = append(sb, stats.Block{Candidate: b.candidate, At: b.at, Metric: b.r.metric(def)})
		v := scaleAll([]float64{stats.Value(sb[len(sb)-1].Metric)}, def.scale)[0]
		if b.candidate {
			cand = append(cand, b.r)
			m.CandidateTrials = append(m.CandidateTrials, v)
		} else {
			base = append(base, b.r)
			m.BaselineTrials = append(m.BaselineTrials, v)
		}
	}
	var pool *abPool
	if len(blocks) > 0 {
		pool = blocks[0].pool
	}
	ps := pool.sidesOf(def, blocks, base, cand)
	jb, jc, pb, pc := ps.base, ps.cand, ps.bStat, ps.cStat
	pol := basePol
	pol.Direction, pol.Tolerance = dir, rule.Tolerance
	pol, seq := stop.judgePolicy(pol, len(blocks))
	var verdicts []Verdict
	if isRelative(rule) {
		r, nz := stats.CompareBlocksShared(sb, pb, pc, pol, sp.shared())
		// The sides as compared (CompareBlocks): the baseline blocks' geometric mean and
		// the candidate at the ratio from it; an incomparable comparison shows none.
		if r.Verdict != Incomparable {
			m.Baseline, m.Candidate = scaled(r.Baseline, def.scale), scaled(r.Candidate, def.scale)
		}
		m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
		m.Resolution = r.Resolution
		if r.Verdict != Incomparable {
			m.Noise = noiseResult(nz, r)
			if sh := sp.shared(); sh.Var > 0 {
				m.Noise.StartsSD = math.Round(math.Sqrt(sh.Var)*1e6) / 1e6
				m.Noise.StartsDF = math.Round(sh.DF*100) / 100
			}
		}
		m.Warnings = append(m.Warnings, r.Warnings...)
		if sp.kept > 0 && !sp.known {
			m.Warnings = append(m.Warnings, "the spread between engine starts is unknown (no calibration of the baseline measured it): the interval leaves out the offset of the engines' one start each")
		}
		if sp.kept > 0 && sp.known && sp.bound {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: the interval adds that whole spread (%.3f on %g degrees of freedom, the noise of their runs included) in its place, an upper bound; more runs per start (slogate calibrate --restart-every K) narrow that bound, and more starts measure the part itself", StartBoundWhy, sp.sd, sp.df))
		}
		if seq && r.Verdict != Incomparable {
			r.Verdict = sequentialVerdict(&m, sb, pol, r.Verdict, sp.shared())
		}
		verdicts = append(verdicts, r.Verdict)
	} else {
		m.Method = MethodAbsolute
		m.Direction = ""
		m.Candidate = scaled(stats.Value(pc), def.scale)
	}
	if rule.Max != nil || rule.Min != nil {
		v := stats.Value(pc) * def.scale
		verdicts = append(verdicts, absoluteVerdict(&m, rule, v))
	}
	m.Verdict = Worst(verdicts...)
	if isRelative(rule) {
		m.Verdict = tailVerdict(&m, def, m.Verdict, jb, jc)
	}
	return m
}

// sequentialVerdict replaces m's interval by the confidence sequence of the blocks'
// pairs and judges it by the usual rule (fail when it lies wholly beyond the tolerance,
// warn when only its point does); the fixed interval's verdict when the blocks give no
// pairs.
func sequentialVerdict(m *MetricResult, sb []stats.Block, pol stats.Policy, fixed Verdict, sh stats.Shared) Verdict {
	p, lo, hi, dec, ok := stats.SequentialBlocksShared(sb, pol, sh)
	if !ok {
		m.Warnings = append(m.Warnings, "no pairs of blocks with positive values: judged by the blocks' fixed interval")
		return fixed
	}
	m.useSequence(p, lo, hi, dec, pol.Tolerance)
	if m.Lo == nil || m.Hi == nil {
		m.Warnings = append(m.Warnings, "too few pairs of blocks for the confidence sequence to exclude any ratio")
	}
	return stats.Judge(pol.Direction, pol.Tolerance, p, lo, hi)
}

// useSequence makes a confidence sequence's point and interval the rule's, in place of
// the fixed interval's (a sequential A/B job, or sequential repeats): the resolution
// shown is the sequence's, a warning that the tolerance is narrower quotes that figure
// rather than the fixed interval's, and the candidate shown is the baseline shown times
// the sequence's point, so that the values give the ratio.
func (m *MetricResult) useSequence(p, lo, hi float64, dec stats.Decision, tol float64) {
	m.Ratio, m.Lo, m.Hi = finite(p), finite(lo), finite(hi)
	m.Decided = dec
	m.Resolution = 0
	if hi > 0 && lo > 0 && !math.IsInf(hi, 0) {
		m.Resolution = math.Round(math.Sqrt(hi/lo)*1e6)/1e6 - 1
	}
	if m.Baseline != nil && m.Ratio != nil {
		m.Candidate = finite(*m.Baseline * *m.Ratio)
	}
	m.Warnings = slices.DeleteFunc(m.Warnings, func(s string) bool { return strings.HasSuffix(s, stats.FlapsOnNoise) })
	if m.Resolution > tol {
		m.Warnings = append(m.Warnings, fmt.Sprintf("tolerance %s is narrower than the ±%.1f%% the confidence sequence resolves: %s", pctText(tol), 100*m.Resolution, stats.FlapsOnNoise))
	}
}

// abLayout writes the sides of blocks in order: "ABBAABBA".
func abLayout(blocks []abBlock) string {
	b := make([]byte, len(blocks))
	for i, x := range blocks {
		b[i] = 'A'
		if x.candidate {
			b[i] = 'B'
		}
	}
	return string(b)
}

// Layout is the order of an A/B job's blocks for n blocks: ABBA repeated, so that a
// linear drift falls equally on both sides of every four blocks.
func Layout(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "ABBA"[i%4]
	}
	return string(b)
}

// EvaluateAB judges the candidate engine of an A/B job against the baseline engine
// measured in the same job: blocks are the job's run records (each with its AB place),
// any number of workloads. Every rule is judged from the blocks: a bootstrapped metric
// by CompareBlocks (the blocks' spread, a drift over the job taken out, never below the
// pooled requests' sampling noise), KV-limited concurrency by the tolerance alone, an
// absolute limit on the candidate's pooled requests. There is no baseline file: the
// baseline is the job's own A blocks. cals gives the calibration stored with a
// workload's baseline (nil: none): a side whose engine served all its blocks from one
// start adds the calibration's spread between engine starts to the intervals
// (abstarts.go).
func EvaluateAB(cfg *workload.File, blocks []*result.Record, cals CalibrationOf) (*Result, error) {
	if cfg == nil {
		return nil, errors.New("gate: no config")
	}
	g := cfg.Gate
	res := &Result{
		Schema: ResultSchema, Config: cfg.Path,
		Resamples: cmp.Or(g.Resamples, stats.DefaultResamples), Confidence: cmp.Or(g.Confidence, stats.DefaultConfidence), Seed: g.Seed,
	}
	rules, defs, err := ruleDefs(cfg)
	if err != nil {
		return nil, err
	}
	byWorkload := map[string][]*result.Record{}
	var names []string
	for _, r := range blocks {
		if r.AB == nil {
			return nil, inputErrorf("%s: the record of workload %q has no A/B block: not a record of slogate ab", cfg.Path, r.Workload)
		}
		if byWorkload[r.Workload] == nil {
			names = append(names, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], r)
	}
	if len(names) == 0 {
		return nil, inputErrorf("no A/B blocks to judge")
	}
	for _, name := range names {
		wr, err := judgeAB(cfg, name, byWorkload[name], rules, defs, cals)
		if err != nil {
			return nil, err
		}
		res.Workloads = append(res.Workloads, *wr)
	}
	res.Verdict = worstWorkload(res.Workloads)
	res.Family = familyOf(res.Workloads, res.Confidence)
	return res, nil
}

func judgeAB(cfg *workload.File, name string, recs []*result.Record, rules []workload.Rule, defs []metricDef, cals CalibrationOf) (*WorkloadResult, error) {
	slices.SortStableFunc(recs, func(a, b *result.Record) int { return a.AB.Block - b.AB.Block })
	first := recs[0]
	wr := &WorkloadResult{Name: name, Hardware: HardwareOf(first), WorkloadHash: first.WorkloadHash, BaselinePath: "A/B: the baseline engine's blocks of this job", Metrics: []MetricResult{}}
	var base, cand []*result.Record
	for i, r := range recs {
		if i > 0 && r.AB.Block == recs[i-1].AB.Block {
			return nil, inputErrorf("%s: two records of A/B block %d", name, r.AB.Block)
		}
		switch r.AB.Side {
		case result.SideBaseline:
			base = append(base, r)
		case result.SideCandidate:
			cand = append(cand, r)
		default:
			return nil, inputErrorf("%s: A/B block %d has side %q; want %q or %q", name, r.AB.Block, r.AB.Side, result.SideBaseline, result.SideCandidate)
		}
	}
	wr.Trials = TrialCounts{Baseline: len(base), Candidate: len(cand)}
	for _, r := range base {
		wr.BaselineSummaries = append(wr.BaselineSummaries, r.Summary)
	}
	for _, r := range cand {
		wr.CandidateSummaries = append(wr.CandidateSummaries, r.Summary)
	}
	stop := stopOf(first)
	wr.BlocksRun, wr.MaxBlocks = len(recs), first.AB.Blocks
	wr.Notes = append(wr.Notes, fmt.Sprintf("A/B in one job: %d blocks laid out %s (A: baseline, B: candidate)", len(recs), first.AB.Layout[:min(len(recs), len(first.AB.Layout))]))
	if stop.Sequential() {
		w := fmt.Sprintf("sequential: at least %d and at most %d blocks, judged by a confidence sequence valid at every look (docs/noise.md)", stop.MinBlocks, stop.MaxBlocks)
		if stop.FinalShare > 0 {
			w = fmt.Sprintf("sequential: at least %d and at most %d blocks, judged before the maximum by a confidence sequence valid at every look at %s of the error rate, at the maximum by the blocks' fixed interval at the other %s (docs/noise.md)", stop.MinBlocks, stop.MaxBlocks, pctText(1-stop.FinalShare), pctText(stop.FinalShare))
		}
		wr.Notes = append(wr.Notes, w)
	}
	if wr.Swap = abSwapTotal(recs); wr.Swap != nil {
		wr.Notes = append(wr.Notes, swapNote(wr.Swap))
	}
	for _, r := range recs {
		if why := r.Unfit(); why != "" {
			wr.Verdict, wr.Reason = Error, fmt.Sprintf("the gate refuses to judge this job: block %d (%s): %s", r.AB.Block, r.AB.Side, why)
			return wr, nil
		}
	}
	if len(base) < 2 || len(cand) < 2 {
		wr.Verdict, wr.Reason = Incomparable, fmt.Sprintf("%d baseline and %d candidate blocks: an A/B comparison needs at least 2 of each (--blocks 4 or more)", len(base), len(cand))
		return wr, nil
	}
	if base[0].WorkloadHash != cand[0].WorkloadHash {
		wr.Verdict, wr.Reason = Incomparable, fmt.Sprintf("workload changed: the baseline side's hash %s, the candidate's %s: the two sides did not send the same workload", base[0].WorkloadHash, cand[0].WorkloadHash)
		return wr, nil
	}
	wr.BaselineHash = base[0].WorkloadHash
	var verdicts []Verdict
	wr.Drift = CompareEnv(base[0].Environment, cand[0].Environment, cfg.Gate.Drift)
	for _, d := range wr.Drift {
		verdicts = append(verdicts, d.Verdict)
	}
	t0 := first.Start
	var ab []abBlock
	pool := newABPool()
	for _, r := range recs {
		x := runOf(r)
		ab = append(ab, abBlock{r: x, candidate: r.AB.Side == result.SideCandidate, at: r.Start.Sub(t0).Seconds() + x.window/2, pool: pool})
	}
	g := cfg.Gate
	pol := stats.Policy{Resamples: g.Resamples, Confidence: g.Confidence, Seed: uint64(g.Seed)}
	parts, note := jobStartParts(rules, defs, recs, cals, g.Confidence)
	if note != "" {
		wr.Warnings = append(wr.Warnings, note)
	}
	bruns, cruns := sides(ab)
	for i, rule := range rules {
		def := defs[i]
		var m MetricResult
		switch def.kind {
		case kindSweep:
			continue
		case kindExact, kindStart:
			var ok bool
			if m, ok = evalRule(rule, def, bruns, cruns, nil, g); !ok {
				continue
			}
		default:
			if v, why, lacking := missingData(def, bruns, cruns); lacking {
				m, _, _ = ruleStart(rule, def)
				m.Method, m.Verdict, m.Warnings = MethodBlocks, v, []string{why}
				break
			}
			m = evalBlocks(rule, def, ab, pol, stop, parts[i])
		}
		wr.Metrics = append(wr.Metrics, m)
		verdicts = append(verdicts, m.Verdict)
	}
	if stop.Sequential() {
		wr.Stopped = stoppedOf(rules, defs, ab, stop, g.Confidence, parts)
	}
	why := ""
	if wr.Stopped != nil && wr.Stopped.Reason == StopFutile {
		why = fmt.Sprintf("the job stopped futile after block %d (%s)", wr.Stopped.AtBlock, wr.Stopped.Why)
	}
	for i := range wr.Metrics {
		m := &wr.Metrics[i]
		explainUndecided(m, scaleOf(m, len(ab), len(cruns), 0), why, g.Confidence)
	}
	wr.Verdict = Worst(verdicts...)
	return wr, nil
}

// sides are the runs of the baseline's blocks and of the candidate's, in block order.
func sides(ab []abBlock) (base, cand []*run) {
	for _, b := range ab {
		if b.candidate {
			cand = append(cand, b.r)
		} else {
			base = append(base, b.r)
		}
	}
	return base, cand
}

// abSwapTotal sums the blocks' starts, sleeps and wakes; nil when no block recorded any
// (records written before target.swap). Mode is the sides' modes, "baseline/candidate"
// where they differ.
func abSwapTotal(recs []*result.Record) *result.ABSwap {
	var t *result.ABSwap
	modes := map[string]string{}
	for _, r := range recs {
		if r.AB.Swap == nil {
			continue
		}
		if t == nil {
			t = &result.ABSwap{}
		}
		t.Add(r.AB.Swap)
		modes[r.AB.Side] = r.AB.Swap.Mode
	}
	if t != nil {
		t.Mode = modes[result.SideBaseline]
		if c := modes[result.SideCandidate]; c != t.Mode {
			t.Mode += "/" + c
		}
	}
	return t
}

// swapNote says how the engines were brought up between blocks and what it cost.
func swapNote(s *result.ABSwap) string {
	return fmt.Sprintf("engines swapped by %s: %d starts (%.1f s), %d sleeps (%.1f s), %d wakes (%.1f s): %.1f s of engine time outside the measured blocks",
		s.Mode, s.Starts, s.StartS, s.Sleeps, s.SleepS, s.Wakes, s.WakeS, s.Seconds())
}
