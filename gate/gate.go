// Package gate owns the verdict: the baseline store (baselines/<workload>/<hardware>.json,
// with the compact per-request data a bootstrap needs, and the sweep baseline
// <hardware>.sweep.json beside it), the rules of a workload file
// mapped to statistics over whole requests, the comparison of a run with its baseline
// (through gate/stats), drift between their environments, and the audit of committed
// baselines.
//
// It returns plain, JSON-serializable results and renders nothing: the report package
// turns them into tables and comments, the command line into exit codes.
package gate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Verdict is the outcome of a metric, a workload or the whole gate.
type Verdict = stats.Verdict

// Verdicts. Error is the gate's own: the run cannot be judged (incomplete, or the load
// generator saturated), which is a failure of the tool or the engine, not of the change.
const (
	Pass                 = stats.Pass
	Warn                 = stats.Warn
	Fail                 = stats.Fail
	Improved             = stats.Improved
	Inconclusive         = stats.Inconclusive
	Incomparable         = stats.Incomparable
	Error        Verdict = "error"
	// NoBaseline: there is no baseline file to compare the run with. It is never a pass:
	// the exit code is non-zero unless gate.missing_baseline is allow (Result.
	// AllowMissingBaseline), which a repository sets while it bootstraps its baselines.
	NoBaseline Verdict = "no_baseline"
)

// Verdicts are every verdict a gate result can carry, from the best to the worst (the
// order of severity): the names gate.json, the comment and the Action's verdict output
// use.
var Verdicts = []Verdict{Improved, Pass, Warn, NoBaseline, Inconclusive, Incomparable, Fail, Error}

// severity orders verdicts: error > fail > incomparable > inconclusive > no_baseline >
// warn > pass > improved. Incomparable and inconclusive rank above warn because they are
// not a pass: nothing was shown either way. Inconclusive ranks above no_baseline so that
// allowing missing baselines (which lets a result whose worst verdict is no_baseline
// through) never lets an undecided rule of another workload through with it. Improved
// ranks below pass: a workload with one rule improved and another passed passed.
func severity(v Verdict) int {
	switch v {
	case Improved:
		return 0
	case Pass:
		return 1
	case Warn:
		return 2
	case NoBaseline:
		return 3
	case Inconclusive:
		return 4
	case Incomparable:
		return 5
	case Fail:
		return 6
	case Error:
		return 7
	}
	return 5 // an unknown verdict is not a pass
}

// Blocks says whether the result fails the gate under its own mapping (fail-on fail,
// the least strict but never): any verdict but pass, improved, warn and inconclusive,
// except no_baseline when the config allows missing baselines. Whether an inconclusive
// result blocks is fail-on's to say (cli.VerdictExit).
func (r *Result) Blocks() bool {
	switch r.Verdict {
	case Pass, Improved, Warn, Inconclusive:
		return false
	case NoBaseline:
		return !r.AllowMissingBaseline
	}
	return true
}

// Worst is the most severe of vs; Pass when there are none.
func Worst(vs ...Verdict) Verdict {
	if len(vs) == 0 {
		return Pass
	}
	w := vs[0]
	for _, v := range vs[1:] {
		if severity(v) > severity(w) {
			w = v
		}
	}
	return w
}

// ResultSchema identifies a gate result file (gate.json).
const ResultSchema = "slogate.gate/v1"

// Result is the whole gate: one entry per workload and hardware judged.
type Result struct {
	Schema     string           `json:"schema"` // ResultSchema
	Verdict    Verdict          `json:"verdict"`
	Config     string           `json:"config,omitempty"`
	Baselines  string           `json:"baselines,omitempty"`
	Resamples  int              `json:"resamples"`
	Confidence float64          `json:"confidence"`
	Seed       int64            `json:"seed"`
	Workloads  []WorkloadResult `json:"workloads"`
	// AllowMissingBaseline is gate.missing_baseline: allow: a workload without a baseline
	// does not fail the gate (bootstrapping). Its verdict is still no_baseline.
	AllowMissingBaseline bool `json:"allow_missing_baseline,omitempty"`
	// GPUMinutes is what the job that made the records held its GPUs for: engine starts,
	// warm-ups and runs, times the GPUs (plan.Used); 0 when not known (a gate of records
	// made elsewhere).
	GPUMinutes float64 `json:"gpu_minutes,omitempty"`
	// Warnings concern the input as a whole (records of workloads the config does not
	// define, workloads without records).
	Warnings []string `json:"warnings,omitempty"`
	// Family is the job's false-fail rate across its rules; nil when no rule was judged
	// by an interval.
	Family *Family `json:"family,omitempty"`
}

// Family states the job's error rate across its gated rules and workloads. Each rule
// judged by an interval (or a confidence sequence) at confidence c fails a system at
// its tolerance's edge at most (1 − c)/2 of the time, and an unchanged one less; the job
// fails when any rule does, so at most Rules × PerRule of such jobs fail on some rule
// (the union bound, which holds however the rules' noise is correlated).
type Family struct {
	// Rules: the rules, over every workload, judged by an interval or a sequence.
	Rules int `json:"rules"`
	// PerRule: each one's false-fail rate at its edge, (1 − confidence)/2.
	PerRule float64 `json:"per_rule_false_fail"`
	// Bound: the job's false-fail rate, at most min(1, Rules × PerRule).
	Bound float64 `json:"family_false_fail_bound"`
}

// familyOf counts the rules of workloads judged by an interval or a sequence.
func familyOf(workloads []WorkloadResult, confidence float64) *Family {
	n := 0
	for _, w := range workloads {
		for _, m := range w.Metrics {
			switch m.Method {
			case MethodBootstrap, MethodTrials, MethodCalibrated, MethodBlocks:
				if m.Ratio != nil && m.Verdict != Incomparable {
					n++
				}
			}
		}
	}
	if n == 0 {
		return nil
	}
	per := (1 - confidence) / 2
	return &Family{Rules: n, PerRule: math.Round(per*1e6) / 1e6, Bound: math.Round(min(1, float64(n)*per)*1e6) / 1e6}
}

// WorkloadResult is the verdict of one workload on one hardware.
type WorkloadResult struct {
	Name     string `json:"name"`
	Hardware string `json:"hardware"`
	// WorkloadHash is the run's; BaselineHash the baseline's (they differ when the
	// verdict is incomparable because the workload changed).
	WorkloadHash string `json:"workload_hash"`
	BaselinePath string `json:"baseline_path"`
	BaselineHash string `json:"baseline_hash,omitempty"`
	// Changed names what changed between the baseline's workload and the run's, key by
	// key with the old and new values (workload.FormChanges), when the hashes differ
	// and both carry their form.
	Changed         []string   `json:"changed,omitempty"`
	BaselineCreated *time.Time `json:"baseline_created,omitempty"`
	// HistoryPath is the history file beside the baseline (HistoryRelPath), "" when
	// there is none.
	HistoryPath string  `json:"history_path,omitempty"`
	Verdict     Verdict `json:"verdict"`
	// Reason says why the workload was not compared metric by metric (error, missing
	// baseline, workload changed); "" when it was.
	Reason  string         `json:"reason,omitempty"`
	Metrics []MetricResult `json:"metrics"`
	// Drift holds every environment field of either side, changed or not.
	Drift  []DriftResult `json:"drift,omitempty"`
	Trials TrialCounts   `json:"trials"`
	// Summaries of each trial, for rendering; BaselineSummaries is empty without a
	// baseline.
	BaselineSummaries  []result.Summary `json:"baseline_summaries,omitempty"`
	CandidateSummaries []result.Summary `json:"candidate_summaries"`
	// Provenance says, for each side, who measured it: "candidate: imported from vllm
	// (...)" for a record made by slogate import, "baseline: measured by slogate ...".
	// Empty when both sides are slogate's own runs.
	Provenance []string `json:"provenance,omitempty"`
	// Swap totals an A/B job's engine starts, sleeps and wakes over its blocks (nil
	// outside A/B jobs): the engine time spent outside measured windows.
	Swap *result.ABSwap `json:"swap,omitempty"`
	// BlocksRun and MaxBlocks are an A/B job's blocks run and its maximum; Stopped
	// says when and why a sequential job stopped (nil for a fixed one).
	BlocksRun int      `json:"blocks_run,omitempty"`
	MaxBlocks int      `json:"max_blocks,omitempty"`
	Stopped   *Stopped `json:"stopped,omitempty"`
	// Repeats says how a candidate's sequential repeats ended (run --min-repeats): how
	// many ran of at most how many, and why they stopped; nil when every repeat ran
	// without looking.
	Repeats  *result.RepeatStop `json:"repeats,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
	// Notes say how the job was run (an A/B job's layout, its stopping rule, the engine
	// time its swaps took): information for the record, which asks nothing of the reader.
	Notes []string `json:"notes,omitempty"`
}

// TrialCounts are the number of trials on each side.
type TrialCounts struct {
	Baseline  int `json:"baseline"`
	Candidate int `json:"candidate"`
}

// Methods of comparison in MetricResult.Method.
const (
	MethodBootstrap = "bootstrap" // ratio with a bootstrap interval over whole requests
	MethodTrials    = "trials"    // repeated trials: sampling noise and the trials' between-run spread
	// MethodCalibrated: sampling noise and the between-run spread of the baseline's
	// calibration.
	MethodCalibrated = "calibrated"
	// MethodBlocks: an A/B job's blocks (CompareBlocks).
	MethodBlocks   = "blocks"
	MethodExact    = "exact"    // a deterministic metric: the tolerance alone
	MethodAbsolute = "absolute" // an absolute limit on the candidate alone
	MethodNone     = "none"     // nothing could be compared (no data)
)

// MetricResult is one rule's outcome. Values are in Unit (a latency in ms, a rate as a
// fraction); nil where there is no value (no baseline, an incomparable ratio).
type MetricResult struct {
	Metric    string   `json:"metric"`
	Unit      string   `json:"unit"`
	Direction string   `json:"direction,omitempty"` // higher | lower; "" for an absolute-only rule
	Tolerance float64  `json:"tolerance"`
	Max       *float64 `json:"max,omitempty"`
	Min       *float64 `json:"min,omitempty"`
	Method    string   `json:"method"`
	Baseline  *float64 `json:"baseline"`
	Candidate *float64 `json:"candidate"`
	// Ratio is candidate/baseline; Lo and Hi bound its interval at the gate's confidence
	// (the trial spread for repeated trials; equal to Ratio for an exact metric).
	Ratio *float64 `json:"ratio"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
	// Resolution is the interval's expected half-width as a fraction: what these sample
	// sizes can tell from noise. 0 when not bootstrapped.
	Resolution float64 `json:"resolution,omitempty"`
	// Noise says what the interval is made of (sampling and between-run noise) and what
	// tolerance it supports; nil when the comparison is not statistical.
	Noise *NoiseResult `json:"noise,omitempty"`
	// Per-trial values with repeated trials.
	BaselineTrials  []float64 `json:"baseline_trials,omitempty"`
	CandidateTrials []float64 `json:"candidate_trials,omitempty"`
	// Decided is what a sequential A/B job's confidence sequence decided for the rule
	// ("fail", "pass"); "" when it decided nothing or the job was not sequential.
	Decided stats.Decision `json:"decided,omitempty"`
	Verdict Verdict        `json:"verdict"`
	// Undecided says, for an inconclusive rule, in one line why it was not decided and
	// what would decide it: the smallest change this job could have shown against the
	// tolerance the rule asks, and about how many more blocks, runs or requests (or how
	// wide a tolerance) would. "" for a decided rule.
	Undecided string   `json:"undecided,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// InputError is input the gate cannot judge (no records, two records of one trial, an
// unknown workload or metric): bad input, exit code 2.
type InputError struct{ Reason string }

func (e *InputError) Error() string { return e.Reason }

func inputErrorf(format string, args ...any) error {
	return &InputError{Reason: fmt.Sprintf(format, args...)}
}

// Input is what the gate judges.
type Input struct {
	Config *workload.File
	// Runs are the candidate's run records, any number of workloads and trials.
	Runs []*result.Record
	// Sweeps are the candidate's sweep records (slogate sweep), at most one per workload
	// and hardware: the max_sustainable_rps rule compares each with the sweep baseline
	// beside the workload's baseline (Store.LookupSweep).
	Sweeps []*result.Sweep
	// Store holds the baselines.
	Store Store
	// Workloads restricts the gate to these names; each must have runs or a sweep.
	// Empty: every workload of Config that has either.
	Workloads []string
	// SweepHash, when set, is the workload hash a sweep of w with sw's step size would
	// have if made from Config now (slogate sweep's hash: the step workload at rate 0, no
	// warm-up); a sweep with another hash was made from another definition and is said to
	// be. nil: not checked (the gate cannot build a sweep's step workload itself).
	SweepHash func(w *workload.Workload, sw *result.Sweep) string
	// AllowChangedConfig gates run records made from another definition of their
	// workload than Config has now, with a warning naming what changed (gate
	// --allow-changed-config). Without it such records are bad input.
	AllowChangedConfig bool
}

// Evaluate compares each workload's runs with its baseline. The error is an
// *InputError or a *FileError (a baseline file that cannot be used) for bad input, or
// an I/O error.
func Evaluate(in Input) (*Result, error) {
	cfg := in.Config
	if cfg == nil {
		return nil, errors.New("gate: no config")
	}
	g := cfg.Gate
	res := &Result{
		Schema: ResultSchema, Config: cfg.Path, Baselines: in.Store.Dir,
		Resamples: cmp.Or(g.Resamples, stats.DefaultResamples), Confidence: cmp.Or(g.Confidence, stats.DefaultConfidence), Seed: g.Seed,
		AllowMissingBaseline: AllowsMissingBaseline(g),
	}
	rules, defs, err := ruleDefs(cfg)
	if err != nil {
		return nil, err
	}

	groups := map[key][]*result.Record{}
	for _, r := range in.Runs {
		k := key{r.Workload, HardwareOf(r)}
		groups[k] = append(groups[k], r)
	}
	sweeps := map[key]*result.Sweep{}
	for _, sw := range in.Sweeps {
		k := key{sw.Workload, SweepHardwareOf(sw)}
		if sweeps[k] != nil {
			return nil, inputErrorf("two sweeps of workload %q on %s among the results: keep one sweep per workload and hardware", k.workload, k.hardware)
		}
		sweeps[k] = sw
	}
	sweepRule := slices.ContainsFunc(defs, func(d metricDef) bool { return d.kind == kindSweep })
	byName := map[string]*workload.Workload{}
	for i := range cfg.Workloads {
		byName[cfg.Workloads[i].Name] = &cfg.Workloads[i]
	}
	hasRuns := map[string][]string{} // workload -> hardware keys with runs or a sweep to judge
	for k := range groups {
		if byName[k.workload] == nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("run records of workload %q, which %s does not define: not judged", k.workload, cfg.Path))
			continue
		}
		hasRuns[k.workload] = append(hasRuns[k.workload], k.hardware)
	}
	for k := range sweeps {
		switch {
		case byName[k.workload] == nil:
			res.Warnings = append(res.Warnings, fmt.Sprintf("a sweep of workload %q, which %s does not define: not judged", k.workload, cfg.Path))
		case !sweepRule:
			res.Warnings = append(res.Warnings, fmt.Sprintf("the sweep of %q on %s is not judged: gate.rules has no max_sustainable_rps rule", k.workload, k.hardware))
		case groups[k] == nil:
			hasRuns[k.workload] = append(hasRuns[k.workload], k.hardware)
		}
	}
	slices.Sort(res.Warnings)

	var selected []*workload.Workload
	if len(in.Workloads) > 0 {
		for _, n := range in.Workloads {
			w := byName[n]
			switch {
			case w == nil:
				return nil, inputErrorf("%s: no workload %q", cfg.Path, n)
			case len(hasRuns[n]) == 0:
				return nil, inputErrorf("no run record or sweep of workload %q among the results", n)
			}
			selected = append(selected, w)
		}
	} else {
		for i := range cfg.Workloads {
			w := &cfg.Workloads[i]
			if len(hasRuns[w.Name]) == 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("workload %q has no run record or sweep among the results: not judged", w.Name))
				continue
			}
			selected = append(selected, w)
		}
	}
	if len(selected) == 0 {
		return nil, inputErrorf("no run records or sweeps of the workloads of %s to judge", cfg.Path)
	}

	for _, w := range selected {
		hws := hasRuns[w.Name]
		slices.Sort(hws)
		for _, hw := range hws {
			k := key{w.Name, hw}
			var wr *WorkloadResult
			var err error
			if len(groups[k]) == 0 {
				wr, err = judgeSweepOnly(cfg, w, hw, sweeps[k], in, rules, defs)
			} else {
				wr, err = judgeWorkload(cfg, w, hw, groups[k], sweeps[k], in, rules, defs)
			}
			if err != nil {
				return nil, err
			}
			res.Workloads = append(res.Workloads, *wr)
		}
	}
	res.Verdict = worstWorkload(res.Workloads)
	res.Family = familyOf(res.Workloads, res.Confidence)
	return res, nil
}

// worstWorkload is the verdict of a set of workloads: the worst of theirs.
func worstWorkload(ws []WorkloadResult) Verdict {
	vs := make([]Verdict, len(ws))
	for i, w := range ws {
		vs[i] = w.Verdict
	}
	return Worst(vs...)
}

// AllowsMissingBaseline says whether the gate section lets a workload without a
// baseline through (gate.missing_baseline: allow, or its older spelling warn).
func AllowsMissingBaseline(g workload.GateConfig) bool {
	return g.MissingBaseline == "allow" || g.MissingBaseline == "warn"
}

// NoBaselineReason says where the baseline was looked for and how to create it.
func NoBaselineReason(path string, cfg *workload.File, hw string) string {
	policy := "the gate fails until it exists; set gate.missing_baseline: allow while bootstrapping"
	if AllowsMissingBaseline(cfg.Gate) {
		policy = "gate.missing_baseline: allow lets this through while bootstrapping"
	}
	return fmt.Sprintf("no baseline at %s (is gate.baselines right?): create it from these run records with `slogate baseline update -c %s -r RESULTS_DIR` on %s hardware and commit it; %s",
		path, cfg.Path, hw, policy)
}

// key is a workload on a hardware: what one baseline covers.
type key struct{ workload, hardware string }

func judgeWorkload(cfg *workload.File, w *workload.Workload, hw string, recs []*result.Record, sw *result.Sweep, in Input, rules []workload.Rule, defs []metricDef) (*WorkloadResult, error) {
	store := in.Store
	recs, err := sortTrials(recs)
	if err != nil {
		return nil, &InputError{Reason: err.Error()}
	}
	first := recs[0]
	wr := &WorkloadResult{
		Name: w.Name, Hardware: hw, WorkloadHash: first.WorkloadHash,
		BaselinePath: store.Path(w.Name, hw),
		Metrics:      []MetricResult{},
		Trials:       TrialCounts{Candidate: len(recs)},
	}
	if store.FS != nil {
		if _, err := fs.Stat(store.FS, HistoryRelPath(w.Name, hw)); err == nil {
			wr.HistoryPath = store.HistoryPath(w.Name, hw)
		}
	}
	for _, r := range recs {
		if r.WorkloadHash != first.WorkloadHash {
			return nil, inputErrorf("%s: trials with workload hashes %s and %s in one set of results", w.Name, first.WorkloadHash, r.WorkloadHash)
		}
		wr.CandidateSummaries = append(wr.CandidateSummaries, r.Summary)
	}
	// An imported record's hash is derived from what its source pins, not from the
	// workload file: only a baseline of the same source can match it.
	if h := workload.Hash(cfg, w); first.Source == nil && h != first.WorkloadHash {
		what := fmt.Sprintf("run hash %s, file hash %s", first.WorkloadHash, h)
		if ch := formChanges(first.WorkloadForm, workload.Form(cfg, w)); len(ch) > 0 {
			what = "the records → the file now: " + strings.Join(ch, "; ")
		}
		if !in.AllowChangedConfig {
			return nil, inputErrorf("the run records of %q were made from another definition of it than %s has now (%s): rerun them, or gate them as they were made with --allow-changed-config", w.Name, cfg.Path, what)
		}
		wr.Warnings = append(wr.Warnings, fmt.Sprintf("the run records were made from another definition of %q than %s has now (%s), gated as asked (--allow-changed-config)", w.Name, cfg.Path, what))
	}
	for _, r := range recs {
		if why := r.Unfit(); why != "" {
			wr.Verdict = Error
			wr.Reason = why
			if r.Trial > 0 {
				wr.Reason = fmt.Sprintf("trial %d: %s", r.Trial, why)
			}
			wr.Reason = "the gate refuses to judge this run: " + wr.Reason
			// Nothing is compared, but the reader is still told what would have been:
			// the baseline and the environment on each side.
			if b, _, err := store.Lookup(w.Name, hw); err == nil && b != nil {
				created := b.Created
				wr.BaselineCreated, wr.BaselineHash, wr.Trials.Baseline = &created, b.WorkloadHash, len(b.Trials)
				wr.Drift = CompareEnv(b.Environment, first.Environment, cfg.Gate.Drift)
			}
			return wr, nil
		}
	}
	cand := make([]*run, len(recs))
	for i, r := range recs {
		cand[i] = runOf(r)
	}

	b, _, err := store.Lookup(w.Name, hw)
	if err != nil {
		return nil, err
	}
	var base []*run
	var cal *Calibration
	var verdicts []Verdict
	switch {
	case b == nil:
		verdicts = append(verdicts, NoBaseline)
		wr.Reason = NoBaselineReason(wr.BaselinePath, cfg, hw)
	default:
		created := b.Created
		wr.BaselineCreated, wr.BaselineHash = &created, b.WorkloadHash
		wr.Trials.Baseline = len(b.Trials)
		for _, t := range b.Trials {
			wr.BaselineSummaries = append(wr.BaselineSummaries, t.Summary)
		}
		wr.Drift = CompareEnv(b.Environment, first.Environment, cfg.Gate.Drift)
		for _, d := range wr.Drift {
			verdicts = append(verdicts, d.Verdict)
		}
		if b.WorkloadHash != first.WorkloadHash {
			verdicts = append(verdicts, Incomparable)
			wr.Changed = formChanges(b.WorkloadForm, first.WorkloadForm)
			wr.Reason = fmt.Sprintf("workload changed: baseline hash %s, run hash %s; refresh the baseline with `slogate baseline update`", b.WorkloadHash, first.WorkloadHash)
			if len(wr.Changed) > 0 {
				wr.Reason = fmt.Sprintf("workload changed since the baseline: %s; refresh the baseline with `slogate baseline update`", strings.Join(wr.Changed, "; "))
			}
			if who, other := measuredBy(b.Source), measuredBy(first.Source); who != other {
				// Not a changed benchmark: two sources whose identities cannot match.
				wr.Reason = fmt.Sprintf("incomparable sources: the baseline was %s and the run %s; an imported record's workload identity is derived from its source file, so it compares only with imports of the same benchmark by the same tool (make the baseline from one with `slogate baseline update`)", who, other)
			}
		} else {
			base, cal = b.runs, b.Noise
		}
	}

	sides, err := sweepSidesOf(cfg, w, hw, sw, in, defs)
	if err != nil {
		return nil, err
	}
	// Rules are independent and each comparison is seeded, so they run in parallel and
	// give the same result as one after another.
	ms := make([]MetricResult, len(rules))
	judged := make([]bool, len(rules))
	var wg sync.WaitGroup
	for i := range rules {
		if defs[i].kind == kindSweep {
			ms[i], judged[i] = evalSweep(rules[i], defs[i], sides), true
			continue
		}
		wg.Go(func() { ms[i], judged[i] = evalRule(rules[i], defs[i], base, cand, cal, cfg.Gate) })
	}
	wg.Wait()
	if st := result.RepeatStopOf(recs); st != nil {
		wr.Repeats = st
		wr.Warnings = append(wr.Warnings, repeatsNote(st))
		for i := range ms {
			if judged[i] && cal != nil {
				judgeRepeatsSequence(&ms[i], rules[i], defs[i], base, cand, cal, cfg.Gate)
			}
		}
	}
	refuseSweep(wr, ms, judged)
	if base != nil && slices.ContainsFunc(ms, func(m MetricResult) bool { return m.Noise != nil && m.Noise.Source == "" }) {
		wr.Warnings = append(wr.Warnings, "the between-run spread is unknown (one baseline trial, one candidate run, no calibration): intervals hold only the sampling noise of the requests, and a run that moved as a whole can fail; calibrate the baseline with `slogate calibrate` or use repeats")
	}
	requests := 0
	for i, r := range cand {
		if i == 0 || r.len() < requests {
			requests = r.len()
		}
	}
	for i, m := range ms {
		if judged[i] {
			explainUndecided(&m, scaleOf(&m, 0, len(cand), requests), "", cfg.Gate.Confidence)
			wr.Metrics = append(wr.Metrics, m)
			verdicts = append(verdicts, m.Verdict)
		}
	}
	verdicts = append(verdicts, provenance(wr, first.Source, b)...)
	wr.Verdict = Worst(verdicts...)
	return wr, nil
}

// measuredBy names who measured a record: slogate, or the tool it was imported from.
func measuredBy(s *result.Source) string {
	if s == nil {
		return "measured by slogate"
	}
	return "imported from " + s.Tool
}

// provenance fills wr.Provenance when either side was imported, says where the two
// sides measure by different definitions, and makes a rule incomparable whose metric a
// side's source could not give (guidellm keeps no chunk gaps, so no ITL). It returns the
// verdicts it set.
func provenance(wr *WorkloadResult, cand *result.Source, b *Baseline) []Verdict {
	var base *result.Source
	if b != nil {
		base = b.Source
	}
	if cand == nil && base == nil {
		return nil
	}
	wr.Provenance = append(wr.Provenance, "candidate: "+cand.Line())
	if b != nil {
		wr.Provenance = append(wr.Provenance, "baseline: "+base.Line())
	}
	from := func(s *result.Source) string {
		if s == nil {
			return "sched"
		}
		return s.TTFTFrom
	}
	tool := func(s *result.Source) string {
		if s == nil {
			return "slogate"
		}
		return s.Tool
	}
	var defWarn string
	if b != nil && b.WorkloadHash == wr.WorkloadHash {
		switch {
		case from(base) != from(cand):
			defWarn = fmt.Sprintf("different definitions: the baseline's TTFT and E2E are measured from the %s, the candidate's from the %s; their ratio mixes the two", from(base), from(cand))
		case tool(base) != tool(cand):
			defWarn = fmt.Sprintf("different tools: the baseline was measured by %s, the candidate by %s; chunk boundaries and token counts may be defined differently", tool(base), tool(cand))
		}
	}
	if defWarn != "" {
		wr.Warnings = append(wr.Warnings, defWarn)
	}
	var vs []Verdict
	for i := range wr.Metrics {
		m := &wr.Metrics[i]
		family, _, _ := strings.Cut(m.Metric, "_")
		if !slices.Contains([]string{"ttft", "tpot", "itl", "e2e"}, family) || m.Method == MethodAbsolute {
			continue
		}
		for _, side := range []struct {
			name string
			src  *result.Source
		}{{"candidate", cand}, {"baseline", base}} {
			if why, lacks := side.src.Lacks(family); lacks {
				m.Verdict, m.Method = Incomparable, MethodNone
				m.Baseline, m.Candidate, m.Ratio, m.Lo, m.Hi = nil, nil, nil, nil, nil
				// The statistics' own warnings about empty data say the same, less clearly.
				m.Warnings = []string{"not measured by the " + side.name + "'s source: " + why}
				vs = append(vs, Incomparable)
				break
			}
		}
		if defWarn != "" && m.Verdict != Incomparable && (family == "ttft" || family == "e2e" || tool(base) != tool(cand)) {
			m.Warnings = append(m.Warnings, defWarn)
		}
	}
	return vs
}

// evalRule judges one rule. base is nil when there is no comparable baseline: then only
// the rule's absolute limits are checked, on the candidate alone, and a rule without one
// is not judged at all (false): a row saying "pass" where nothing was compared would
// mislead, and the workload's reason already says why.
func noSpan(r *run) bool { return !(r.span > 0) }

// ruleStart is a rule's result before any value: which checks apply (absolute limits,
// a comparison with the baseline) and the direction that comparison takes.
func ruleStart(rule workload.Rule, def metricDef) (m MetricResult, absolute, relative bool) {
	m = MetricResult{Metric: rule.Metric, Unit: def.unit, Tolerance: rule.Tolerance, Max: rule.Max, Min: rule.Min, Method: MethodNone}
	absolute = rule.Max != nil || rule.Min != nil
	relative = isRelative(rule)
	if relative {
		m.Direction = ruleDirection(rule, def).String()
	}
	return m, absolute, relative
}

// absoluteVerdict checks v against the rule's absolute limits (max, min), noting on m
// what the check warned of and, on a fail, the limit passed.
func absoluteVerdict(m *MetricResult, rule workload.Rule, v float64) Verdict {
	c := stats.CheckAbsolute(v, rule.Min, rule.Max)
	for _, w := range c.Warnings {
		m.Warnings = append(m.Warnings, "absolute limit: "+w)
	}
	if c.Verdict == Fail {
		m.Warnings = append(m.Warnings, "absolute limit: "+limitText(rule, v))
	}
	return c.Verdict
}

func evalRule(rule workload.Rule, def metricDef, base, cand []*run, cal *Calibration, g workload.GateConfig) (MetricResult, bool) {
	if def.kind == kindStart {
		return evalStart(rule, def, base, cand, g)
	}
	m, absolute, relative := ruleStart(rule, def)
	if v, why, lacking := missingData(def, base, cand); lacking {
		m.Verdict, m.Warnings = v, append(m.Warnings, why)
		return m, true
	}
	m.Warnings = append(m.Warnings, def.notes...)
	if def.name == "goodput" && base != nil && slices.ContainsFunc(base, noSpan) != slices.ContainsFunc(cand, noSpan) {
		base, cand = windowGoodput(base), windowGoodput(cand)
		m.Warnings = append(m.Warnings, "one side has no span of scheduled arrivals (a baseline older than drain-free goodput, or an imported result): goodput compared per second of the measured window on both sides, drain included; refresh the baseline")
	}

	var verdicts []Verdict

	// Per-trial values in the metric's unit, NaN where a trial has none.
	values := func(runs []*run) ([]float64, []stats.Metric) {
		vs := make([]float64, len(runs))
		var ms []stats.Metric
		for i, r := range runs {
			if def.kind == kindExact {
				v, ok := def.exact(r)
				vs[i] = math.NaN()
				if ok {
					vs[i] = v
				}
				continue
			}
			// Kept: a calibrated rule measures the candidate's repeats' spread on the
			// resamples its comparison then uses (withCandidate).
			mt := stats.Keep(def.build(r))
			ms = append(ms, mt)
			vs[i] = stats.Value(mt)
		}
		return vs, ms
	}
	cv, cms := values(cand)
	candVal := medianOf(cv)
	m.Candidate = scaled(candVal, def.scale)
	if len(cand) > 1 {
		m.CandidateTrials = scaleAll(cv, def.scale)
	}
	var bv []float64
	var bms []stats.Metric
	if base != nil {
		bv, bms = values(base)
		m.Baseline = scaled(medianOf(bv), def.scale)
		if len(base) > 1 {
			m.BaselineTrials = scaleAll(bv, def.scale)
		}
	}

	if relative && base != nil {
		pol := rulePolicy(rule, def, g)
		baseVal := medianOf(bv)
		switch {
		case def.kind == kindExact && math.IsNaN(candVal) && math.IsNaN(baseVal):
			verdicts = append(verdicts, Warn)
			m.Warnings = append(m.Warnings, def.missing)
		case def.kind == kindExact && math.IsNaN(candVal):
			verdicts = append(verdicts, Incomparable)
			m.Warnings = append(m.Warnings, "the baseline has a value and this run none: "+def.missing)
		case def.kind == kindExact && math.IsNaN(baseVal):
			verdicts = append(verdicts, Warn)
			m.Warnings = append(m.Warnings, "the baseline has no value to compare with: refresh it with `slogate baseline update`")
		case allZero(bv) && allZero(cv):
			// Nothing on either side (no errors before, none now): no change, where a
			// ratio would be 0/0.
			m.Method = methodFor(def, base, cand)
			one := 1.0
			m.Ratio, m.Lo, m.Hi = &one, &one, &one
			verdicts = append(verdicts, Pass)
		case def.kind == kindExact:
			r := stats.CompareExact(baseVal, candVal, pol)
			m.Method = MethodExact
			m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
			m.Warnings = append(m.Warnings, r.Warnings...)
			verdicts = append(verdicts, r.Verdict)
		default:
			sp, source, pooled := spreadOf(rule.Metric, cal, bms, cms, pol)
			if !sp.Known() && len(base) == 1 && len(cand) == 1 {
				r := stats.Compare(bms[0], cms[0], pol)
				m.Method = MethodBootstrap
				m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
				m.Resolution = r.Resolution
				if r.Verdict != Incomparable {
					m.Noise = &NoiseResult{Supported: r.Resolution}
				}
				m.Warnings = append(m.Warnings, r.Warnings...)
				verdicts = append(verdicts, r.Verdict)
				break
			}
			r, nz := stats.CompareSpread(bms, cms, startsOf(base, cal), startsOf(cand, nil), sp, source, pol)
			m.Method = MethodTrials
			if source == "calibration" {
				m.Method = MethodCalibrated
				if x := lacksText(cal.Lookup(rule.Metric).Components); x != "" {
					m.Warnings = append(m.Warnings, x)
				}
			}
			if r.Verdict != Incomparable {
				// The sides as compared: the geometric means of their runs.
				m.Baseline, m.Candidate = scaled(r.Baseline, def.scale), scaled(r.Candidate, def.scale)
			}
			m.setRatio(r.Verdict, r.Point, r.Lo, r.Hi)
			m.Resolution = r.Resolution
			if r.Verdict != Incomparable {
				m.Noise = noiseResult(nz, r)
				m.Noise.CandidateDF = pooled.DF
			}
			if pooled.Warning != "" {
				m.Warnings = append(m.Warnings, pooled.Warning)
			}
			m.Warnings = append(m.Warnings, r.Warnings...)
			verdicts = append(verdicts, r.Verdict)
		}
	}
	if slices.Contains(verdicts, Incomparable) && medianOf(bv) == 0 {
		m.Warnings = append(m.Warnings, "a baseline of 0 has no ratio to compare with: give this rule an absolute limit (max or min) instead of a tolerance")
	}
	if absolute {
		if m.Method == MethodNone {
			m.Method = MethodAbsolute
		}
		verdicts = append(verdicts, absoluteVerdict(&m, rule, candVal*def.scale))
	}
	if len(verdicts) == 0 {
		return m, false
	}
	m.Verdict = Worst(verdicts...)
	if relative && base != nil && def.kind == kindBootstrap {
		m.Verdict = tailVerdict(&m, def, m.Verdict, append(slices.Clip(base), cand...)...)
	}
	return m, true
}

// missingData is the verdict of a rule whose metric some runs cannot give (def.present):
// warn when neither side has it or only the baseline lacks it (refresh the baseline),
// incomparable when the candidate lacks what the baseline has. lacking is false when
// every run has it; base nil is a rule without a baseline (absolute limits).
func missingData(def metricDef, base, cand []*run) (v Verdict, why string, lacking bool) {
	if def.present == nil {
		return "", "", false
	}
	has := func(rs []*run) bool {
		for _, r := range rs {
			if !def.present(r) {
				return false
			}
		}
		return len(rs) > 0
	}
	bh, ch := base == nil || has(base), has(cand)
	switch {
	case bh && ch:
		return "", "", false
	case !ch && (base == nil || !has(base)):
		return Warn, def.missing, true
	case !ch:
		return Incomparable, "the baseline has a value and this run none: " + def.missing, true
	}
	return Warn, "the baseline has no value to compare with: refresh it with `slogate baseline update`", true
}

func methodFor(def metricDef, base, cand []*run) string {
	switch {
	case def.kind == kindExact:
		return MethodExact
	case len(base) == 1 && len(cand) == 1:
		return MethodBootstrap
	}
	return MethodTrials
}

func (m *MetricResult) setRatio(v Verdict, point, lo, hi float64) {
	if v == Incomparable {
		return
	}
	m.Ratio, m.Lo, m.Hi = finite(point), finite(lo), finite(hi)
}

func limitText(rule workload.Rule, v float64) string {
	switch {
	case rule.Max != nil && v > *rule.Max:
		return fmt.Sprintf("%g is above the maximum %g", v, *rule.Max)
	case rule.Min != nil && v < *rule.Min:
		return fmt.Sprintf("%g is below the minimum %g", v, *rule.Min)
	}
	return "outside its limits"
}

func allZero(vs []float64) bool {
	for _, v := range vs {
		if v != 0 {
			return false
		}
	}
	return len(vs) > 0
}

// medianOf is the median of the values, NaN if any is NaN or there are none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 || slices.ContainsFunc(vs, math.IsNaN) {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func scaled(v, scale float64) *float64 { return finite(v * scale) }

func scaleAll(vs []float64, scale float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		out[i] = v * scale
	}
	return out
}

// ruleDefs is the config's gate rules (the defaults when it has none) with the metric
// each one judges; a rule of an unknown metric or direction is bad input.
func ruleDefs(cfg *workload.File) ([]workload.Rule, []metricDef, error) {
	rules := cfg.Gate.Rules
	if len(rules) == 0 {
		rules = workload.DefaultRules()
	}
	defs := make([]metricDef, len(rules))
	for i, r := range rules {
		d, err := lookupMetric(r.Metric)
		if err != nil {
			return nil, nil, inputErrorf("%s: gate.rules: %v", cfg.Path, err)
		}
		if r.Direction != "" {
			if _, err := parseDirection(r.Direction); err != nil {
				return nil, nil, inputErrorf("%s: gate.rules.%s: %v", cfg.Path, r.Metric, err)
			}
		}
		defs[i] = d
	}
	return rules, defs, nil
}

// rulePolicy is the policy that judges rule on def's metric under the gate's settings.
func rulePolicy(rule workload.Rule, def metricDef, g workload.GateConfig) stats.Policy {
	return stats.Policy{Direction: ruleDirection(rule, def), Tolerance: rule.Tolerance, Resamples: g.Resamples, Confidence: g.Confidence, Seed: uint64(g.Seed)}
}

// ruleDirection is the direction rule judges def's metric in: the rule's own where it
// gives one (ruleDefs has checked it), else the metric's natural one.
func ruleDirection(rule workload.Rule, def metricDef) stats.Direction {
	if rule.Direction == "" {
		return def.natural
	}
	dir, _ := parseDirection(rule.Direction)
	return dir
}

// formChanges is workload.FormChanges of two stored forms; nil when either is absent
// (a record or baseline from before forms were stored, an import) or unreadable.
func formChanges(old, new json.RawMessage) []string {
	if len(old) == 0 || len(new) == 0 {
		return nil
	}
	ch, err := workload.FormChanges(old, new)
	if err != nil {
		return nil
	}
	return ch
}
