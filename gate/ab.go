package gate

import (
	"fmt"
	"math"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/workload"
)

// abBlock is one block of an A/B job as the gate computes on it.
type abBlock struct {
	r         *run
	candidate bool
	at        float64 // the block's midpoint, seconds since the job's first block began
}

// joinRuns pools the requests of several runs into one: the values of every request,
// over the sum of their windows (goodput of the pooled run is its requests that met per
// second measured).
func joinRuns(rs []*run) *run {
	out := &run{}
	for _, r := range rs {
		out.window += r.window
		out.ttft = append(out.ttft, r.ttft...)
		out.tpot = append(out.tpot, r.tpot...)
		out.e2e = append(out.e2e, r.e2e...)
		out.tokens = append(out.tokens, r.tokens...)
		out.ok = append(out.ok, r.ok...)
		out.met = append(out.met, r.met...)
		out.itl = append(out.itl, r.itl...)
	}
	if len(rs) > 0 {
		out.summary = rs[0].summary
	}
	return out
}

// evalBlocks judges one bootstrapped rule on the blocks of an A/B job (stats.CompareBlocks).
// basePol holds the policy's resamples, confidence and seed; the rule gives the rest.
func evalBlocks(rule workload.Rule, def metricDef, blocks []abBlock, basePol stats.Policy) MetricResult {
	m := MetricResult{Metric: rule.Metric, Unit: def.unit, Tolerance: rule.Tolerance, Max: rule.Max, Min: rule.Min, Method: MethodBlocks}
	dir := def.natural
	if rule.Direction != "" {
		dir, _ = parseDirection(rule.Direction)
	}
	m.Direction = dir.String()
	m.Warnings = append(m.Warnings, def.notes...)
	var sb []stats.Block
	var base, cand []*run
	for _, b := range blocks {
		sb = append(sb, stats.Block{Candidate: b.candidate, At: b.at, Metric: def.build(b.r)})
		v := scaleAll([]float64{stats.Value(sb[len(sb)-1].Metric)}, def.scale)[0]
		if b.candidate {
			cand = append(cand, b.r)
			m.CandidateTrials = append(m.CandidateTrials, v)
		} else {
			base = append(base, b.r)
			m.BaselineTrials = append(m.BaselineTrials, v)
		}
	}
	pb, pc := def.build(joinRuns(base)), def.build(joinRuns(cand))
	pol := basePol
	pol.Direction, pol.Tolerance = dir, rule.Tolerance
	var verdicts []Verdict
	if rule.Direction != "" || rule.Tolerance > 0 || (rule.Max == nil && rule.Min == nil) {
		r, nz := stats.CompareBlocks(sb, pb, pc, pol)
		m.Baseline, m.Candidate = scaled(r.Baseline, def.scale), scaled(r.Candidate, def.scale)
		m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
		m.Resolution = r.Resolution
		if r.Verdict != Incomparable {
			m.Noise = noiseResult(nz, r)
		}
		m.Warnings = append(m.Warnings, r.Warnings...)
		verdicts = append(verdicts, r.Verdict)
	} else {
		m.Method = MethodAbsolute
		m.Direction = ""
		m.Candidate = scaled(stats.Value(pc), def.scale)
	}
	if rule.Max != nil || rule.Min != nil {
		v := stats.Value(pc) * def.scale
		c := stats.CheckAbsolute(v, rule.Min, rule.Max)
		for _, w := range c.Warnings {
			m.Warnings = append(m.Warnings, "absolute limit: "+w)
		}
		if c.Verdict == Fail {
			m.Warnings = append(m.Warnings, "absolute limit: "+limitText(rule, v))
		}
		verdicts = append(verdicts, c.Verdict)
	}
	m.Verdict = Worst(verdicts...)
	return m
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

func finiteOrZero(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

var _ = fmt.Sprintf
