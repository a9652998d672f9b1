package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/plan"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const abUsage = `slogate ab -c FILE --baseline-target URL --candidate-target URL [--baseline-config FILE] [--blocks N] [--min-blocks N] [--baselines DIR] [-w NAME] [-o DIR]

Measures two engines in one job on this machine, in alternating blocks (ABBA ABBA ...;
A the baseline, B the candidate), each block one run of the workload with its own
warm-up, and gates the candidate against the baseline measured in the same job, from
the blocks' spread as well as the requests (a drift over the job that both engines
share is taken out). The baseline side uses --baseline-config (default FILE) and
--baseline-target; the candidate side FILE and --candidate-target. A side whose config
has target.start has its engine started afresh for each of its blocks and stopped after
it, so two engines can take turns on one GPU; with target.swap the engines stay up and
the idle one is put aside instead (vLLM's sleep mode, SGLang's memory release, or both
resident), checked before any block (docs/swap.md). With --min-blocks below --blocks
the job is sequential: from that block on it looks after every block at each rule's
confidence sequence (valid however often it is looked at) and stops as soon as a rule
is decided fail or every rule is decided; only a close call runs all --blocks. With
--futility-from N it also stops, from block N on, once no undecided rule could be
decided by --blocks if its pairs went on as they have (an engine against itself on a
host noisier than the tolerance); the job is then judged as at the maximum. With
--final-share F a job that runs all --blocks is judged there by the blocks' fixed
interval at that share of the error rate, its looks before by the sequences at the
rest: a close call is then judged with the fixed design's power. An
engine started once for the job (any target.swap but restart, or one someone else runs)
keeps its start's offset through all its blocks, which the blocks cannot see: the
intervals then add the spread between engine starts of the baseline's calibration in
--baselines (default: gate.baselines relative to FILE), or warn that none measured it.
Writes
each block's record
(DIR/<workload>.ab<K>.<side>.json), gate.json, comment.md and report.html as gate and ci
do (docs/noise.md).
Exit codes: 0 pass, 1 the gate failed, 2 bad input, 3 an engine or the tool failed (or
a block did not measure the engine: the job stops there, its blocks written), 4
inconclusive: a rule was not decided (--fail-on, default inconclusive, says which
verdict fails).`

// abParams are the two sides of an A/B job.
type abParams struct {
	base, cand             *workload.File
	baseTarget, candTarget string
	names                  stringList
	blocks, minBlocks      int
	futilityFrom           int
	finalShare             float64
	outDir                 string
	baselines              string
}

func (a *app) cmdAB(ctx context.Context, args []string) int {
	fs := a.flagSet("ab", abUsage)
	var p abParams
	config := fs.String("c", "slogate.yaml", "the candidate's workload `file`")
	fs.StringVar(config, "config", "slogate.yaml", "the candidate's workload `file` (same as -c)")
	baseConfig := fs.String("baseline-config", "", "the baseline's workload `file` (default: -c)")
	fs.StringVar(&p.baseTarget, "baseline-target", "", "the baseline engine's base `URL` (default: its config's target.url)")
	fs.StringVar(&p.candTarget, "candidate-target", "", "the candidate engine's base `URL` (default: its config's target.url)")
	fs.IntVar(&p.blocks, "blocks", 16, "blocks in the job at most, both sides together: a multiple of 4 (ABBA), at least 4")
	fs.IntVar(&p.blocks, "max-blocks", 16, "the same as --blocks")
	fs.IntVar(&p.minBlocks, "min-blocks", 0, "the fewest blocks after which the job may stop, its answer known: even, at least 4 (default: --blocks, every block runs)")
	fs.IntVar(&p.futilityFrom, "futility-from", 0, "with --min-blocks: also stop from this `block` on (even, at least 8) once no rule is likely to leave its tolerance by --blocks at the noise seen (0: never)")
	fs.Float64Var(&p.finalShare, "final-share", 0, "with --min-blocks: the `share` of the error rate kept for the blocks' fixed interval that judges a job reaching --blocks (0 to 0.9; 0: the sequences judge it)")
	fs.Var(&p.names, "w", "workload `name` (repeatable or comma-separated; default: all)")
	fs.StringVar(&p.outDir, "o", "slogate-out", "output `dir`ectory")
	fs.StringVar(&p.baselines, "baselines", "", "baselines `dir`ectory whose calibrations give the spread between engine starts (default: gate.baselines, relative to the config file)")
	failOn := failOnFlag(fs)
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if code, ok := a.checkFailOn(*failOn); !ok {
		return code
	}
	if p.blocks < 4 || p.blocks%4 != 0 {
		a.errorf("ab: --blocks %d: want a multiple of 4 (ABBA, so that a linear drift falls equally on both sides), at least 4", p.blocks)
		return ExitBadInput
	}
	if p.minBlocks == 0 {
		p.minBlocks = p.blocks
	}
	if p.minBlocks < 4 || p.minBlocks%2 != 0 || p.minBlocks > p.blocks {
		a.errorf("ab: --min-blocks %d: want an even number (the job decides on pairs of blocks) from 4 to --blocks %d", p.minBlocks, p.blocks)
		return ExitBadInput
	}
	stop := gate.ABStop{MinBlocks: p.minBlocks, MaxBlocks: p.blocks, FutilityFrom: p.futilityFrom, FinalShare: p.finalShare}
	if err := stop.CheckFutility(); err != nil {
		a.errorf("ab: --futility-from %d: %v", p.futilityFrom, err)
		return ExitBadInput
	}
	if err := stop.CheckFinal(); err != nil {
		a.errorf("ab: --final-share %g: %v", p.finalShare, err)
		return ExitBadInput
	}
	if p.cand, _ = a.loadConfig(*config); p.cand == nil {
		return ExitBadInput
	}
	p.base = p.cand
	if *baseConfig != "" {
		if p.base, _ = a.loadConfig(*baseConfig); p.base == nil {
			return ExitBadInput
		}
	}
	res, recs, code := a.abJob(ctx, p)
	if res == nil {
		return code
	}
	meta := &report.Meta{Schema: report.MetaSchema, Generated: a.now().UTC().Truncate(time.Second), Config: p.cand.Path}
	md, html, err := renderReports(renderInput{res: res, recs: recs, cfg: p.cand, meta: meta})
	if err != nil {
		a.errorf("%v", err)
		return ExitFailure
	}
	rp, err := writeReports(p.outDir, res, meta, md, html)
	if err != nil {
		a.errorf("%v", err)
		return ExitFailure
	}
	report.GateTable(a.stdout, res)
	fmt.Fprintf(a.stdout, "The pull-request comment is in %s, the HTML report in %s.\n", filepath.Join(p.outDir, "comment.md"), rp)
	if code != ExitOK {
		return code
	}
	return a.verdictExit(res, *failOn)
}

// abJob measures the blocks of every selected workload and gates them. It returns the
// gate result (nil when nothing could be judged), the candidate's block records (what
// the report renders) and the exit code of the measurement.
func (a *app) abJob(ctx context.Context, p abParams) (*gate.Result, []*result.Record, int) {
	selected, err := measure.SelectWorkloads(p.cand, p.names)
	if err != nil {
		return nil, nil, a.measureError(err)
	}
	layout := gate.Layout(p.blocks)
	if code := a.checkOutputs(p.outDir, abOutputs(p.outDir, selected, p.blocks, layout)...); code != ExitOK {
		return nil, nil, code
	}
	stop := gate.ABStop{MinBlocks: p.minBlocks, MaxBlocks: p.blocks, FutilityFrom: p.futilityFrom, FinalShare: p.finalShare}
	// Looked up once: the job looks after every block.
	cals := gate.CalibrationOf(baselineStore(p.cand, p.baselines).CalibrationOf).Once()
	r := a.runner()
	sides := []measure.ABSide{{Name: result.SideBaseline, File: p.base, Override: p.baseTarget}, {Name: result.SideCandidate, File: p.cand, Override: p.candTarget}}
	sw, err := r.NewSwapper(ctx, sides, a.launchSide(r, p.outDir))
	if err != nil {
		return nil, nil, a.measureError(err)
	}
	defer sw.Close()
	var all, cand []*result.Record
	for _, w := range selected {
		bw := w
		if p.base != p.cand {
			ws, err := measure.SelectWorkloads(p.base, []string{w.Name})
			if err != nil {
				a.errorf("the baseline config %s has no workload %q: an A/B job needs the workload on both sides", p.base.Path, w.Name)
				return nil, nil, ExitBadInput
			}
			bw = ws[0]
		}
		if hb, hc := workload.Hash(p.base, bw), workload.Hash(p.cand, w); hb != hc {
			fmt.Fprintf(a.stderr, "slogate: warning: %s differs between the two configs (hash %s and %s): the gate will call it incomparable\n", w.Name, hb, hc)
		}
		var mine []*result.Record // this workload's blocks so far
		for k, side := range layout {
			i, wl := 0, bw
			if side == 'B' {
				i, wl = 1, w
			}
			f, target, name := sides[i].File, sides[i].Override, sides[i].Name
			cost, err := sw.Bring(ctx, i, wl.PrefixCache.Mode == workload.PrefixCold && !wl.SharesPrefixes())
			if err != nil {
				return nil, nil, a.measureError(err)
			}
			if sides[i].Managed() && f.Target.Start != nil {
				// The swapper started this engine once for the job: the block must not
				// start it again.
				g := *f
				g.Target.Start = nil
				f = &g
			}
			rec, code := a.measureOnce(ctx, r, f, wl, target, p.outDir, measure.Trial{N: k + 1, Of: p.blocks,
				Journal: journalPath(abBlockPath(p.outDir, w.Name, k+1, name))}, abBlockEngineLog(k+1, name))
			if rec == nil {
				return nil, nil, code
			}
			if f.Target.Start != nil && rec.Warmup != nil {
				cost.Starts++
				cost.StartS += rec.Warmup.EngineStartS
			}
			rec.AB = &result.ABBlock{Side: name, Block: k + 1, Blocks: p.blocks, Layout: layout, Restarted: f.Target.Start != nil, Swap: cost}
			if stop.Sequential() {
				rec.AB.MinBlocks, rec.AB.FutilityFrom, rec.AB.FinalShare = p.minBlocks, p.futilityFrom, p.finalShare
			}
			path := abBlockPath(p.outDir, w.Name, k+1, name)
			if err := result.Write(path, rec); err != nil {
				a.errorf("writing %s: %v", path, err)
				return nil, nil, writeExit(err)
			}
			fmt.Fprintf(a.stderr, "slogate: block %d/%d (%c, %s) of %s: ITL p99 %.2f ms, TTFT p95 %.1f ms, goodput %.3f req/s\n",
				k+1, p.blocks, side, name, w.Name, rec.Summary.ITLms.P99, rec.Summary.TTFTms.P95, rec.Summary.GoodputRPS)
			all = append(all, rec)
			mine = append(mine, rec)
			if side == 'B' {
				cand = append(cand, rec)
			}
			if code != ExitOK {
				if why := rec.Unfit(); why != "" {
					a.errorf("%s: the job stops at block %d (%s side), which did not measure the engine: %s; the %d blocks measured so far are in %s", w.Name, k+1, name, why, len(all), p.outDir)
				}
				return nil, nil, code
			}
			st, err := gate.LookAB(p.cand, stop, mine, cals)
			if err != nil {
				return nil, nil, a.gateError(err)
			}
			if st != nil && st.Reason != gate.StopMaxBlocks {
				fmt.Fprintf(a.stderr, "slogate: %s: stopping after block %d of at most %d: %s\n", w.Name, k+1, p.blocks, st.Why)
				break
			}
		}
	}
	res, err := gate.EvaluateAB(p.cand, all, cals)
	if err != nil {
		return nil, nil, a.gateError(err)
	}
	// What would decide each rule left undecided, as slogate plan computes it.
	for i := range res.Workloads {
		for _, w := range selected {
			if w.Name != res.Workloads[i].Name {
				continue
			}
			if pl, err := plan.ForWorkload(w, plan.Inputs{Job: plan.Job{Confidence: p.cand.Gate.Confidence}, Records: all}); err == nil {
				plan.AdviseAB(&res.Workloads[i], pl.Job)
			}
		}
	}
	res.GPUMinutes = gpuMinutes(all)
	return res, cand, ExitOK
}

// launchSide starts a side's engine once for the whole A/B job (target.swap other than
// restart), its output in DIR/engine.<side>.log.
func (a *app) launchSide(r *measure.Runner, outDir string) measure.LaunchFunc {
	return func(ctx context.Context, side measure.ABSide) (time.Duration, func(), error) {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return 0, nil, err
		}
		logPath := filepath.Join(outDir, abSideEngineLog(side.Name))
		log, err := fsafe.Create(logPath)
		if err != nil {
			return 0, nil, err
		}
		proc, stop, err := r.Launch(ctx, side.File, side.Override, log, logPath)
		if err != nil {
			log.Close()
			return 0, nil, err
		}
		return proc.StartDuration, func() { stop(); log.Close() }, nil
	}
}
