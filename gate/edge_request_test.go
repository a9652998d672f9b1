package gate

import (
	"cmp"
	"math"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// requestModels are the noise models of TestNoiseEdgePerRequest at the level of
// requests: the simulator's noise of an engine start (sim.Noise, as gatetest draws it
// into every request's gaps and TTFT), normal, with a Student t (3 degrees of freedom)
// speed factor, and with engine-wide stalls.
var requestModels = []struct {
	name  string
	noise sim.Noise
}{
	{"normal", sim.Noise{SpeedSD: 0.08, DriftSD: 0.02}},
	{"t3", sim.Noise{SpeedSD: 0.08, SpeedDF: 3, DriftSD: 0.02}},
	{"stall", sim.Noise{SpeedSD: 0.08, DriftSD: 0.02, StallEvery: 3 * time.Second, StallFor: 60 * time.Millisecond}},
}

// Per-request edge trials: each builds 10 runs of 200 requests, so 100 a model.
const (
	requestEdgeTrials   = 100
	requestEdgeMaxFails = 8 // a correct 2.5% rule fails more than 8 of 100 with probability 0.0007
	requestCalRuns      = 6
	requestRepeats      = 3
	requestSeqRepeats   = 4 // the sequential candidate's most runs (run --min-repeats 1)
	requestRunRequests  = 200
	requestRunTokens    = 48
)

// requestTrial is one committed-baseline trial on per-request runs: its calibration of
// requestCalRuns runs, each on its own engine start, and a candidate's requestSeqRepeats
// runs on one start, made by spec (the fixed rule judges the first requestRepeats).
type requestTrial struct {
	cal, cand []*result.Record
	starts    []int
}

func newRequestTrial(f *workload.File, noise sim.Noise, seed uint64, spec gatetest.Spec) requestTrial {
	tr := requestCalibration(f, noise, seed)
	// The candidate's repeats share one start's draw and follow one another on its clock.
	for k := range requestSeqRepeats {
		sp := spec
		sp.Trial, sp.Requests, sp.OutputTokens, sp.Noise, sp.NoiseSeed = k+1, requestRunRequests, requestRunTokens, noise, int64(seed+50)
		sp.Offset = time.Duration(k) * 40 * time.Second
		r := rec(f, seed+60+uint64(k), sp)
		r.Startup = &result.Startup{Start: requestCalRuns}
		tr.cand = append(tr.cand, r)
	}
	return tr
}

// requestCalibration is a trial's calibration alone: requestCalRuns runs, each on its
// own engine start.
func requestCalibration(f *workload.File, noise sim.Noise, seed uint64) requestTrial {
	var tr requestTrial
	for j := range requestCalRuns {
		s := seed + uint64(j)
		r := rec(f, s, gatetest.Spec{Trial: j + 1, Requests: requestRunRequests, OutputTokens: requestRunTokens, Noise: noise, NoiseSeed: int64(s)})
		r.Startup = &result.Startup{Start: j}
		tr.cal = append(tr.cal, r)
		tr.starts = append(tr.starts, j)
	}
	return tr
}

// judge gives the verdict of rule through the product's path (the calibration by
// CalibrateStarts, stored with the baseline as a file, Evaluate on the candidate's
// records) and through the summary functions on the same runs (each run's value and
// sampling spread by Summarise, the calibration's MetricSpread.Spread, CompareSides at
// the design's starts: one a calibration run, one for the candidate's repeats).
//
// control is the summary functions' verdict with the candidate's repeats taken as three
// starts: the model that divided a start's offset by the repeats (issue 45's first
// defect), which the comparison must tell apart.
func (tr requestTrial) judge(t *testing.T, f *workload.File, rule workload.Rule) (product, summary, control stats.Verdict, within, between float64, seq seqVerdicts) {
	b, err := FromRecords(tr.cal, created)
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = CalibrateStarts(f, tr.cal, tr.starts, created); err != nil {
		t.Fatal(err)
	}
	store := storeWith(t, b)
	cand := tr.cand[:requestRepeats]
	m := metric(t, evaluate(t, f, store, cand...).Workloads[0], rule.Metric)

	d, err := lookupMetric(rule.Metric)
	if err != nil {
		t.Fatal(err)
	}
	build := func(rs []*result.Record) []stats.Metric {
		var ms []stats.Metric
		for _, r := range rs {
			ms = append(ms, d.build(runOf(r)))
		}
		return ms
	}
	pol := rulePolicy(rule, d, f.Gate)
	bs, whyB := stats.Summarise(build(tr.cal), pol, stats.StreamBaseline)
	cs, whyC := stats.Summarise(build(cand), pol, stats.StreamCandidate)
	if whyB != "" || whyC != "" {
		t.Fatalf("%s: %s %s", rule.Metric, whyB, whyC)
	}
	bs.Starts, cs.Starts = requestCalRuns, 1
	sp := b.Noise.Lookup(rule.Metric).Spread()
	res, _ := stats.CompareSides(bs, cs, sp, "calibration", pol, "")
	cs.Starts = requestRepeats
	ctl, _ := stats.CompareSides(bs, cs, sp, "calibration", pol, "")

	// Sequential repeats: LookRepeats after every run, then Evaluate on the runs that
	// ran, against RepeatsSequence on the same runs' values.
	seqF := testConfig(f.Gate.Rules)
	seqF.Workloads[0].Repeats = requestSeqRepeats
	var logs []float64
	for n := 1; n <= requestSeqRepeats; n++ {
		logs = append(logs, math.Log(stats.Value(d.build(runOf(tr.cand[n-1])))))
		st, err := LookRepeats(seqF, store, 1, tr.cand[:n])
		if err != nil {
			t.Fatal(err)
		}
		p, lo, hi, dec, ok := stats.RepeatsSequence(bs, logs, 1, sp, pol)
		if !ok {
			t.Fatalf("%s: no sequence on %d runs", rule.Metric, n)
		}
		stop := dec != stats.Undecided || n == requestSeqRepeats
		if (st != nil) != stop || (st != nil && (st.Reason == result.RepeatsDecided) != (dec != stats.Undecided && n < requestSeqRepeats)) {
			t.Errorf("%s after %d runs: LookRepeats %+v, the sequence %v", rule.Metric, n, st, dec)
			return m.Verdict, res.Verdict, ctl.Verdict, 0, 0, seqVerdicts{}
		}
		if st == nil {
			continue
		}
		runs := make([]*result.Record, n)
		for i := range runs {
			c := *tr.cand[i]
			runs[i] = &c
		}
		runs[n-1].RepeatStop = st
		seq := seqVerdicts{
			product: metric(t, evaluate(t, seqF, store, runs...).Workloads[0], rule.Metric).Verdict,
			summary: stats.Judge(pol.Direction, rule.Tolerance, p, lo, hi),
			runs:    n,
		}
		return m.Verdict, res.Verdict, ctl.Verdict, math.Sqrt(cs.Within * float64(cs.Runs)), sp.Between(), seq
	}
	panic("unreachable: the last run always stops")
}

// seqVerdicts are a sequential candidate's verdicts through the gate and through the
// summary functions, and how many runs it took.
type seqVerdicts struct {
	product, summary stats.Verdict
	runs             int
}

// requestRule is the rule TestNoiseEdgePerRequest drives; requestEdge puts a candidate
// at its edge: every gap 1 + tolerance times as long.
var (
	requestRule = workload.Rule{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}
	requestEdge = gatetest.Spec{GapScale: 1.10}
)

// TestNoiseEdgePerRequest drives the committed rules through the paths that run, on runs
// of simulated requests. A calibration of 6 runs of 200 requests, each on its own engine
// start (CalibrateStarts), is stored with its baseline as a file. A candidate at the
// edge of an itl_p99 rule, its repeats on one start, is judged:
//
//   - fixed: 3 repeats, by Evaluate;
//   - sequential (run --min-repeats 1, at most 4): LookRepeats after every run, then
//     Evaluate on the runs that ran.
//
// On every trial each verdict must be the one the summary functions give on the same
// runs (Summarise, MetricSpread.Spread, CompareSides at the design's starts;
// RepeatsSequence), and at the edge at most 8 of 100 may fail. A control judges the
// fixed repeats as three starts, as the model that divided a start's offset by the
// repeats did: it must differ from the gate on some trials. The log gives each model's
// sampling spread of one run and the calibration's spread between runs, what the
// summary matrix (TestNoiseEdge...) simulates. Under the stall model a stall lengthens
// the gaps it falls in by a fixed time, which the candidate's scaling does not touch, so
// the edge is on the safe side. With 1,600 trials (normal model) the fixed rule failed
// 29 at the edge and the sequential 40; with the start's offset alone, 33 and 32.
func TestNoiseEdgePerRequest(t *testing.T) {
	waittest.ManyTrials(t)
	f := testConfig([]workload.Rule{requestRule})
	for mi, m := range requestModels {
		t.Run(m.name, func(t *testing.T) {
			var mu sync.Mutex
			fails, differ, controlDiffers := 0, 0, 0
			seqFails, seqDiffer, seqRuns := 0, 0, 0
			var within, between float64
			inParallel(requestEdgeTrials, func(i int) {
				tr := newRequestTrial(f, m.noise, uint64(7_000_000+mi*100_000+i*100), requestEdge)
				product, summary, control, w, b, seq := tr.judge(t, f, requestRule)
				mu.Lock()
				defer mu.Unlock()
				if product == Fail {
					fails++
				}
				if product != summary {
					differ++
					if differ <= 3 {
						t.Errorf("trial %d: the gate said %s, the summary functions %s on the same runs", i, product, summary)
					}
				}
				if product != control {
					controlDiffers++
				}
				if seq.product == Fail {
					seqFails++
				}
				seqRuns += seq.runs
				if seq.product != seq.summary {
					seqDiffer++
					if seqDiffer <= 3 {
						t.Errorf("trial %d, sequential: the gate said %s, RepeatsSequence %s on the same %d runs", i, seq.product, seq.summary, seq.runs)
					}
				}
				within += w / requestEdgeTrials
				between += b / requestEdgeTrials
			})
			t.Logf("| fixed, 3 repeats on one start | %s | %d/%d | sampling sd of a run %.4f, calibration's between-run sd %.4f; control differs in %d |",
				m.name, fails, requestEdgeTrials, within, between, controlDiffers)
			t.Logf("| sequential, at most %d repeats | %s | %d/%d | %.2f runs on average |", requestSeqRepeats, m.name, seqFails, requestEdgeTrials, float64(seqRuns)/requestEdgeTrials)
			requireEdge(t, "fixed", fails, differ, requestEdgeTrials)
			requireEdge(t, "sequential", seqFails, seqDiffer, requestEdgeTrials)
			if controlDiffers == 0 {
				t.Errorf("the summary functions with each repeat its own start agreed with the gate on every trial: the comparison cannot tell the designs apart")
			}
		})
	}
}

// storeWith is a store that holds b as its file, as the gate finds a committed baseline.
func storeWith(t testing.TB, b *Baseline) Store {
	t.Helper()
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return Store{FS: fstest.MapFS{RelPath(b.Workload, b.Hardware): &fstest.MapFile{Data: data}}, Dir: "baselines"}
}

// requireEdge holds one rule driven on per-request runs to its two checks: none of its
// trials may disagree with the summary functions on the same runs (differ), and at the
// edge at most requestEdgeMaxFails of requestEdgeTrials may fail. trials is how many were
// compared.
func requireEdge(t *testing.T, rule string, fails, differ, trials int) {
	t.Helper()
	if differ > 0 {
		t.Errorf("%s: the gate's path differs from the summary functions' in %d of %d trials", rule, differ, trials)
	}
	if fails > requestEdgeMaxFails {
		t.Errorf("%s: at the edge %d of %d failed, want at most %d", rule, fails, requestEdgeTrials, requestEdgeMaxFails)
	}
}

// requestABBlocks is an A/B job's blocks as per-request runs: 8 blocks laid out ABBAABBA,
// each on an engine start of its own (restarted), the candidate's made by spec.
const requestABBlocks = 8

func requestABJob(f *workload.File, noise sim.Noise, seed uint64, spec gatetest.Spec) []*result.Record {
	layout := Layout(requestABBlocks)
	var blocks []*result.Record
	for k := range requestABBlocks {
		sp, side := gatetest.Spec{}, result.SideBaseline
		if layout[k] == 'B' {
			sp, side = spec, result.SideCandidate
		}
		s := seed + uint64(k)
		sp.Trial, sp.Requests, sp.OutputTokens, sp.Noise, sp.NoiseSeed = k+1, requestRunRequests, requestRunTokens, noise, int64(s)
		r := rec(f, s, sp)
		r.AB = &result.ABBlock{Side: side, Block: k + 1, Blocks: requestABBlocks, Layout: layout, Restarted: true}
		blocks = append(blocks, r)
	}
	return blocks
}

// judgeRequestAB gives the verdict of rule on an A/B job's blocks through EvaluateAB and through
// the summary function on the same runs: stats.CompareBlocks on each block's value at
// its place, with each side's requests pooled for the sampling floor.
//
// control is CompareBlocks with the blocks taken at the places of an AAAABBBB layout, as
// a gate that lost the job's order would: the drift it takes out then moves the ratio.
func judgeRequestAB(t *testing.T, f *workload.File, rule workload.Rule, blocks []*result.Record) (product, summary, control stats.Verdict) {
	res, err := EvaluateAB(f, blocks, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res.Workloads[0], rule.Metric)
	d, err := lookupMetric(rule.Metric)
	if err != nil {
		t.Fatal(err)
	}
	var sb []stats.Block
	var pooled [2]result.Record
	for k, r := range blocks {
		cand := r.AB.Side == result.SideCandidate
		sb = append(sb, stats.Block{Candidate: cand, At: float64(k), Metric: d.build(runOf(r))})
		p := &pooled[b2i(cand)]
		if p.Requests == nil {
			*p = *r
			p.Requests = nil
		}
		p.Requests = append(p.Requests, r.Requests...)
	}
	pol := rulePolicy(rule, d, f.Gate)
	pb, pc := d.build(runOf(&pooled[0])), d.build(runOf(&pooled[1]))
	r, _ := stats.CompareBlocks(sb, pb, pc, pol)
	var lost []stats.Block
	for _, cand := range []bool{false, true} {
		for _, b := range sb {
			if b.Candidate == cand {
				b.At = float64(len(lost))
				lost = append(lost, b)
			}
		}
	}
	ctl, _ := stats.CompareBlocks(lost, pb, pc, pol)
	return m.Verdict, r.Verdict, ctl.Verdict
}

// TestNoiseEdgePerRequestAB drives the fixed A/B rule through EvaluateAB on simulated
// requests: 100 jobs of 8 blocks (each block on its own engine start) whose candidate
// is at the edge of an itl_p99 rule, under each noise model. On every job the verdict
// must be the one stats.CompareBlocks gives on the same blocks, and at most 8 of 100
// may fail. A control that takes the blocks out of their order must differ on some.
func TestNoiseEdgePerRequestAB(t *testing.T) {
	waittest.ManyTrials(t)
	f := testConfig([]workload.Rule{requestRule})
	for mi, m := range requestModels {
		t.Run(m.name, func(t *testing.T) {
			var mu sync.Mutex
			fails, differ, controlDiffers := 0, 0, 0
			inParallel(requestEdgeTrials, func(i int) {
				blocks := requestABJob(f, m.noise, uint64(8_000_000+mi*100_000+i*100), requestEdge)
				product, summary, control := judgeRequestAB(t, f, requestRule, blocks)
				mu.Lock()
				defer mu.Unlock()
				if product != control {
					controlDiffers++
				}
				if product == Fail {
					fails++
				}
				if product != summary {
					differ++
					if differ <= 3 {
						t.Errorf("job %d: EvaluateAB said %s, CompareBlocks %s on the same blocks", i, product, summary)
					}
				}
			})
			t.Logf("| fixed A/B, %d blocks on their own starts | %s | %d/%d | control differs in %d |", requestABBlocks, m.name, fails, requestEdgeTrials, controlDiffers)
			if controlDiffers == 0 {
				t.Errorf("CompareBlocks on the blocks out of their order agreed with EvaluateAB on every job: the comparison cannot tell the order apart")
			}
			requireEdge(t, "EvaluateAB against CompareBlocks", fails, differ, requestEdgeTrials)
		})
	}
}

// requestSwapped is a sequential A/B job of engines swapped without restarts, on
// per-request runs: at least 4 and at most 12 blocks laid out ABBAABBA..., each side's
// blocks served by one engine start (their noise drawn from one seed, one after another
// on its clock). The sequence excludes nothing on fewer than four pairs, so the looks
// that can stop it are at 8 and 10 blocks.
var requestSwapped = ABStop{MinBlocks: 4, MaxBlocks: 12}

func requestSwappedJob(f *workload.File, noise sim.Noise, seed uint64, spec gatetest.Spec) []*result.Record {
	layout := Layout(requestSwapped.MaxBlocks)
	var blocks []*result.Record
	for k := range requestSwapped.MaxBlocks {
		sp, side, start := gatetest.Spec{}, result.SideBaseline, seed+80
		if layout[k] == 'B' {
			sp, side, start = spec, result.SideCandidate, seed+90
		}
		sp.Trial, sp.Requests, sp.OutputTokens, sp.Noise, sp.NoiseSeed = k+1, requestRunRequests, requestRunTokens, noise, int64(start)
		sp.Offset = time.Duration(k) * 20 * time.Second
		r := rec(f, seed+60+uint64(k), sp)
		r.AB = &result.ABBlock{Side: side, Block: k + 1, Blocks: requestSwapped.MaxBlocks, MinBlocks: requestSwapped.MinBlocks, Layout: layout}
		blocks = append(blocks, r)
	}
	return blocks
}

// swappedVerdicts are one swapped job's outcome through LookAB and EvaluateAB (product)
// and through the summary functions on the same blocks: the blocks it ran, the verdict,
// and the interval; control is the summary functions' interval without the starts' part.
type swappedVerdicts struct {
	runs                 int
	product, summary     stats.Verdict
	pLo, pHi, sLo, sHi   float64
	controlLo, controlHi float64
}

// judgeRequestSwapped runs one swapped job against a baseline calibrated by
// CalibrateStarts (stored as a file, as LookAB and EvaluateAB find it): LookAB after
// every block until it stops, then EvaluateAB on the blocks run. The summary functions
// take the same blocks' values (each run's statistic, stats.Block at its place), the
// start part from the stored calibration (StartSpread, once per side), look with
// stats.SequentialBlocksShared at the sequences' confidence after every pair from the
// minimum, and judge the blocks run by the sequence (stats.Judge).
func judgeRequestSwapped(t *testing.T, f *workload.File, rule workload.Rule, cal []*result.Record, starts []int, blocks []*result.Record) swappedVerdicts {
	b, err := FromRecords(cal, created)
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = CalibrateStarts(f, cal, starts, created); err != nil {
		t.Fatal(err)
	}
	store := storeWith(t, b)
	cals := CalibrationOf(store.CalibrationOf).Once() // as slogate ab looks it up

	d, err := lookupMetric(rule.Metric)
	if err != nil {
		t.Fatal(err)
	}
	pol := rulePolicy(rule, d, f.Gate)
	conf := cmp.Or(pol.Confidence, stats.DefaultConfidence)
	seqPol := pol
	seqPol.Confidence = requestSwapped.SeqConfidence(conf)
	sd, df, ok, _ := StartSpread(b.Noise, rule.Metric, conf)
	if !ok {
		t.Fatalf("%s: the calibration of %d starts measured no spread between starts", rule.Metric, len(cal))
	}
	sh := stats.Shared{Var: 2 * sd * sd, DF: df}
	var sb []stats.Block
	for k, r := range blocks {
		sb = append(sb, stats.Block{Candidate: r.AB.Side == result.SideCandidate, At: float64(k), Metric: d.build(runOf(r))})
	}

	var out swappedVerdicts
	for n := 1; n <= len(blocks); n++ {
		st, err := LookAB(f, requestSwapped, blocks[:n], cals)
		if err != nil {
			t.Fatal(err)
		}
		var dec stats.Decision = stats.Undecided
		look := n >= requestSwapped.MinBlocks && n%2 == 0 && n < requestSwapped.MaxBlocks
		if look {
			_, _, _, dec, _ = stats.SequentialBlocksShared(sb[:n], seqPol, sh)
		}
		stop := dec != stats.Undecided || n == requestSwapped.MaxBlocks
		if (st != nil) != stop || (st != nil && (st.Reason == StopDecided) != (dec != stats.Undecided)) {
			t.Errorf("%s after %d blocks: LookAB %+v, the sequence %v", rule.Metric, n, st, dec)
			return out
		}
		if st == nil {
			continue
		}
		res, err := EvaluateAB(f, blocks[:n], cals)
		if err != nil {
			t.Fatal(err)
		}
		m := metric(t, res.Workloads[0], rule.Metric)
		p, lo, hi, _, ok := stats.SequentialBlocksShared(sb[:n], seqPol, sh)
		if !ok {
			t.Fatalf("%s: no sequence on %d blocks", rule.Metric, n)
		}
		_, cLo, cHi, _, _ := stats.SequentialBlocksShared(sb[:n], seqPol, stats.Shared{})
		out = swappedVerdicts{runs: n, product: m.Verdict, summary: stats.Judge(pol.Direction, rule.Tolerance, p, lo, hi), sLo: lo, sHi: hi, controlLo: cLo, controlHi: cHi}
		if m.Lo != nil && m.Hi != nil {
			out.pLo, out.pHi = *m.Lo, *m.Hi
		}
		return out
	}
	panic("unreachable: the maximum always stops")
}

// TestNoiseEdgePerRequestSwapped drives the sequential A/B rule of engines swapped
// without restarts through LookAB and EvaluateAB on simulated requests: 100 jobs of 4
// to 12 blocks a noise model, each side's blocks on one engine start, the candidate at
// the edge of an itl_p99 rule, against a baseline whose calibration of 6 runs on their
// own starts (CalibrateStarts) gives the spread between starts. On every job LookAB
// must stop where the summary functions' sequence (with that spread once per side)
// decides, and EvaluateAB's verdict and interval must be the sequence's on the blocks
// run; at most 8 of 100 may fail. A control without the starts' part must give another
// interval on every job (the part is in the interval). A further 20 jobs a model whose
// candidate is twice as slow (every gap ×2) take the stops before the maximum through
// the same comparison: some must stop decided fail.
func TestNoiseEdgePerRequestSwapped(t *testing.T) {
	waittest.ManyTrials(t)
	f := testConfig([]workload.Rule{requestRule})
	for mi, m := range requestModels {
		t.Run(m.name, func(t *testing.T) {
			var mu sync.Mutex
			fails, differ, sameAsControl, runs := 0, 0, 0, 0
			early, slowFails := 0, 0
			const slowJobs = 20
			inParallel(requestEdgeTrials+slowJobs, func(i int) {
				seed := uint64(9_000_000 + mi*100_000 + i*100)
				tr := requestCalibration(f, m.noise, seed)
				spec := requestEdge
				if i >= requestEdgeTrials {
					spec = gatetest.Spec{GapScale: 2}
				}
				v := judgeRequestSwapped(t, f, requestRule, tr.cal, tr.starts, requestSwappedJob(f, m.noise, seed, spec))
				mu.Lock()
				defer mu.Unlock()
				if i >= requestEdgeTrials {
					if v.runs < requestSwapped.MaxBlocks {
						early++
					}
					if v.product == Fail {
						slowFails++
					}
				} else {
					runs += v.runs
					if v.product == Fail {
						fails++
					}
				}
				if v.product != v.summary || !closeTo(v.pLo, v.sLo) || !closeTo(v.pHi, v.sHi) {
					differ++
					if differ <= 3 {
						t.Errorf("job %d: EvaluateAB said %s [%.4f, %.4f], the sequence %s [%.4f, %.4f] on the same %d blocks", i, v.product, v.pLo, v.pHi, v.summary, v.sLo, v.sHi, v.runs)
					}
				}
				if closeTo(v.pLo, v.controlLo) && closeTo(v.pHi, v.controlHi) {
					sameAsControl++
				}
			})
			t.Logf("| sequential A/B, %d-%d blocks, swapped | %s | %d/%d | %.2f blocks on average; the interval without the starts' part on %d; twice as slow: %d of %d failed, %d stopped early |",
				requestSwapped.MinBlocks, requestSwapped.MaxBlocks, m.name, fails, requestEdgeTrials, float64(runs)/requestEdgeTrials, sameAsControl, slowFails, slowJobs, early)
			requireEdge(t, "LookAB and EvaluateAB", fails, differ, requestEdgeTrials+slowJobs)
			if early == 0 {
				t.Errorf("no job of a candidate twice as slow stopped before the maximum: the looks that stop were not compared")
			}
			if sameAsControl > 0 {
				t.Errorf("on %d of %d jobs the interval was the one without the starts' part", sameAsControl, requestEdgeTrials)
			}
		})
	}
}

// closeTo says whether a and b agree to 1e-9 of their size.
func closeTo(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// The sequential calibration on per-request runs (calibrate --min-runs 3, at most 8,
// candidates of 3 repeats). Its rule's tolerance is 50%: at the per-request runs' spread
// a third to a half of the calibrations stop decided supported before their eighth run,
// so the stop and its correction are both exercised (at 35%, one in five did).
const (
	requestCalMin, requestCalMax = 3, 8
	requestCalTolerance          = 0.50
)

// calStopVerdicts are one trial's outcome through the product's path and the summary
// functions': how many calibration runs ran and why they stopped, the verdicts, the
// stored spread, and the control's verdict (the spread as measured, uncorrected).
type calStopVerdicts struct {
	runs                int
	reason              string
	product, summary    stats.Verdict
	control             stats.Verdict
	storedSD, summarySD float64
	stopDiffers         bool
}

// judgeRequestCalStop runs one sequential calibration as calibrate does (after each run
// from the minimum: FromRecords and CalibrateStarts on the runs so far, LookCalibration;
// at the end ApplyStop), stores it with its baseline as a file, and judges a candidate's
// 3 repeats on one start by Evaluate. The summary functions take the spread the
// calibration measured at each look (MetricSpread.Spread), decide it by SpreadInterval
// and SupportedTolerance at the looks' level, correct it by StopFactor when the
// calibration stopped decided supported, and judge the candidate by CompareSides on
// Summarise's sides of the same runs at the design's starts.
func judgeRequestCalStop(t *testing.T, f *workload.File, noise sim.Noise, seed uint64, spec gatetest.Spec) calStopVerdicts {
	rule := f.Gate.Rules[0]
	w := &f.Workloads[0]
	d, err := lookupMetric(rule.Metric)
	if err != nil {
		t.Fatal(err)
	}
	pol := rulePolicy(rule, d, f.Gate)
	conf := cmp.Or(pol.Confidence, stats.DefaultConfidence)
	level := 1 - (1-conf)/float64(requestCalMax-requestCalMin+1)
	var out calStopVerdicts
	var recs []*result.Record
	var starts []int
	var cal *Calibration
	var st *CalStop
	var sumSD float64
	sumDecided := ""
	for n := 1; n <= requestCalMax; n++ {
		s := seed + uint64(n)
		r := rec(f, s, gatetest.Spec{Trial: n, Requests: requestRunRequests, OutputTokens: requestRunTokens, Noise: noise, NoiseSeed: int64(s)})
		r.Startup = &result.Startup{Start: n - 1}
		recs, starts = append(recs, r), append(starts, n-1)
		if n < requestCalMin {
			continue
		}
		if cal, err = CalibrateStarts(f, recs, starts, created); err != nil {
			t.Fatal(err)
		}
		if st, err = LookCalibration(f, w, cal, n, requestCalMin, requestCalMax); err != nil {
			t.Fatal(err)
		}
		// The same look on the spread the calibration measured.
		msp := cal.Lookup(rule.Metric).Spread()
		sumSD = msp.RunSD
		lo, hi := SpreadInterval(sumSD, msp.DF, level)
		sumDecided = ""
		switch {
		case SupportedTolerance(hi, n, w.Repeats, conf) <= rule.Tolerance:
			sumDecided = CalSupported
		case SupportedTolerance(lo, requestCalMax, w.Repeats, conf) > rule.Tolerance:
			sumDecided = CalTooNarrow
		}
		sumStops := sumDecided != "" || n == requestCalMax
		if (st != nil) != sumStops || (st != nil && (st.Reason == CalStopDecided) != (sumDecided != "" && n < requestCalMax)) {
			out.stopDiffers = true
			t.Errorf("after %d runs: LookCalibration %+v, the spread's look %q (sd %.4f)", n, st, sumDecided, sumSD)
		}
		if st != nil {
			break
		}
	}
	out.runs, out.reason = len(recs), st.Reason
	measured := cal.Lookup(rule.Metric).Spread()
	// The baseline of the runs made (calibrate builds it at every look; only its
	// calibration changes between looks).
	b, err := FromRecords(recs, created)
	if err != nil {
		t.Fatal(err)
	}
	b.Noise = cal
	ApplyStop(f, w, b.Noise, st)
	store := storeWith(t, b)

	// The candidate's repeats share one start's draw and follow one another on its clock.
	var cand []*result.Record
	for k := range w.Repeats {
		sp := spec
		sp.Trial, sp.Requests, sp.OutputTokens, sp.Noise, sp.NoiseSeed = k+1, requestRunRequests, requestRunTokens, noise, int64(seed+50)
		sp.Offset = time.Duration(k) * 40 * time.Second
		r := rec(f, seed+60+uint64(k), sp)
		r.Startup = &result.Startup{Start: requestCalMax}
		cand = append(cand, r)
	}
	m := metric(t, evaluate(t, f, store, cand...).Workloads[0], rule.Metric)
	stored, _, err := store.Lookup(b.Workload, b.Hardware)
	if err != nil {
		t.Fatal(err)
	}
	out.product, out.storedSD = m.Verdict, stored.Noise.Lookup(rule.Metric).Spread().RunSD

	build := func(rs []*result.Record) []stats.Metric {
		var ms []stats.Metric
		for _, r := range rs {
			ms = append(ms, d.build(runOf(r)))
		}
		return ms
	}
	bs, whyB := stats.Summarise(build(recs), pol, stats.StreamBaseline)
	cs, whyC := stats.Summarise(build(cand), pol, stats.StreamCandidate)
	if whyB != "" || whyC != "" {
		t.Fatalf("%s: %s %s", rule.Metric, whyB, whyC)
	}
	bs.Starts, cs.Starts = len(recs), 1
	ctl, _ := stats.CompareSides(bs, cs, measured, "calibration", pol, "")
	sp := measured
	if st.Reason == CalStopDecided && sumDecided == CalSupported {
		f := StopFactor(sumSD, 0, len(recs), requestCalMin, requestCalMax, w.Repeats, rule.Tolerance, conf)
		sp.RunSD *= f
		sp.SharedSD *= f
	}
	res, _ := stats.CompareSides(bs, cs, sp, "calibration", pol, "")
	out.summary, out.control, out.summarySD = res.Verdict, ctl.Verdict, sp.RunSD
	return out
}

// TestNoiseEdgePerRequestCalibrationStop drives the calibration stop through the paths
// that run, on simulated requests: 100 sequential calibrations a noise model (3 to 8
// runs of 200 requests, each on its own engine start; LookCalibration after every run
// from the third on CalibrateStarts' spread; ApplyStop), each stored with its baseline as
// a file, and a candidate of 3 repeats on one start at the edge of a 50% itl_p99 rule
// (every gap ×1.5) judged by Evaluate. On every trial LookCalibration must stop where
// the measured spread decides (SpreadInterval, SupportedTolerance), the stored spread
// must be the measured one times StopFactor when the stop was decided supported, and
// Evaluate's verdict must be CompareSides' on that spread; at most 8 of 100 may fail, and
// some calibrations must stop early. (With the correction left out of ApplyStop the
// comparison fails.) The log says on how many trials the spread as measured, without the
// correction, would have given another verdict.
func TestNoiseEdgePerRequestCalibrationStop(t *testing.T) {
	waittest.ManyTrials(t)
	rule := workload.Rule{Metric: "itl_p99", Direction: "lower", Tolerance: requestCalTolerance}
	edge := gatetest.Spec{GapScale: 1 + requestCalTolerance}
	for mi, m := range requestModels {
		t.Run(m.name, func(t *testing.T) {
			var mu sync.Mutex
			fails, differ, controlDiffers, early, runs := 0, 0, 0, 0, 0
			inParallel(requestEdgeTrials, func(i int) {
				f := testConfig([]workload.Rule{rule})
				f.Workloads[0].Repeats = 3
				v := judgeRequestCalStop(t, f, m.noise, uint64(10_000_000+mi*100_000+i*100), edge)
				mu.Lock()
				defer mu.Unlock()
				runs += v.runs
				if v.reason == CalStopDecided {
					early++
				}
				if v.product == Fail {
					fails++
				}
				if v.product != v.summary || !closeTo(v.storedSD, v.summarySD) || v.stopDiffers {
					differ++
					if differ <= 3 {
						t.Errorf("trial %d: the gate said %s on a stored spread %.5f, the summary functions %s on %.5f (%d runs, %s)", i, v.product, v.storedSD, v.summary, v.summarySD, v.runs, v.reason)
					}
				}
				if v.product != v.control {
					controlDiffers++
				}
			})
			t.Logf("| calibration stop, 3-8 runs, 3 repeats on one start | %s | %d/%d | %.2f runs on average, %d stopped decided; the uncorrected spread's verdict differs in %d |",
				m.name, fails, requestEdgeTrials, float64(runs)/requestEdgeTrials, early, controlDiffers)
			requireEdge(t, "LookCalibration, ApplyStop and Evaluate", fails, differ, requestEdgeTrials)
			if early == 0 {
				t.Errorf("no calibration stopped early: the stop and its correction were not compared")
			}
		})
	}
}
