package gate

import (
	"fmt"
	"math"
	"strings"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// A candidate gated against a committed baseline runs its workload `repeats` times. With
// a minimum (run --min-repeats) the runs stop as soon as the answer is known: after
// each run from the minimum on, every gated rule whose spread the baseline's
// calibration measured is looked at by a confidence sequence valid at every look
// (stats.RepeatsSequence: the candidate's runs against the baseline's side, with the
// calibration's spread of a run taken as known), and the runs stop when one rule is
// decided fail or every one is decided. The gate then judges those rules by the same
// sequence, whatever number of runs it saw. A rule without a calibrated spread cannot
// be decided before the last run: without a calibration, every repeat runs.

// LookRepeats is the stopping rule's look after a candidate's trial: recs are the trials
// of one workload so far (in order), minRepeats the fewest that may stop. It returns nil
// to go on, or how the runs end: decided, or the workload's repeats reached (the last
// run always ends them).
func LookRepeats(cfg *workload.File, store Store, minRepeats int, recs []*result.Record) (*result.RepeatStop, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	w := workloadNamed(cfg, recs[0].Workload)
	if w == nil {
		return nil, inputErrorf("%s: no workload %q", cfg.Path, recs[0].Workload)
	}
	repeats := max(w.Repeats, 1)
	n := len(recs)
	st := &result.RepeatStop{MinRepeats: minRepeats, Repeats: repeats, Run: n}
	if n >= repeats {
		st.Reason, st.Why = result.RepeatsMax, fmt.Sprintf("every one of the %d repeats ran", repeats)
		if ok, why, err := lookRepeats(cfg, store, recs); err == nil && ok {
			st.Why = why + " at the last repeat"
		}
		return st, nil
	}
	if n < minRepeats {
		return nil, nil
	}
	ok, why, err := lookRepeats(cfg, store, recs)
	if err != nil || !ok {
		return nil, err
	}
	st.Reason, st.Why = result.RepeatsDecided, why
	return st, nil
}

func workloadNamed(cfg *workload.File, name string) *workload.Workload {
	for i := range cfg.Workloads {
		if cfg.Workloads[i].Name == name {
			return &cfg.Workloads[i]
		}
	}
	return nil
}

// lookRepeats is one look at every gated rule's sequence: stop when a rule is decided
// fail or every rule is decided, and why. Nothing is decided without a baseline of the
// same workload with a calibration, or with a run the gate will refuse.
func lookRepeats(cfg *workload.File, store Store, recs []*result.Record) (bool, string, error) {
	for _, r := range recs {
		if r.Unfit() != "" {
			return false, "", nil
		}
	}
	b, _, err := store.Lookup(recs[0].Workload, HardwareOf(recs[0]))
	if err != nil || b == nil || b.Noise == nil || b.WorkloadHash != recs[0].WorkloadHash {
		return false, "", err
	}
	base, err := b.trialRuns()
	if err != nil {
		return false, "", err
	}
	rules, defs, err := ruleDefs(cfg)
	if err != nil {
		return false, "", err
	}
	cand := make([]*run, len(recs))
	for i, r := range recs {
		cand[i] = runOf(r)
	}
	var decided, failed []string
	open := 0
	for i, rule := range rules {
		if defs[i].kind != kindBootstrap || !isRelative(rule) {
			continue
		}
		_, _, _, dec, ok := repeatsSequence(rule, defs[i], base, cand, b.Noise, cfg.Gate)
		switch {
		case !ok:
			open++
		case dec == stats.DecidedFail:
			failed = append(failed, rule.Metric)
		case dec == stats.DecidedPass, dec == stats.DecidedImproved:
			decided = append(decided, rule.Metric)
		default:
			open++
		}
	}
	switch {
	case len(failed) > 0:
		return true, strings.Join(failed, ", ") + " decided fail", nil
	case open == 0 && len(decided) > 0:
		return true, "every rule decided", nil
	}
	return false, "", nil
}

// repeatsSequence is a rule's sequence over the candidate's runs against the baseline's
// (stats.RepeatsSequence); ok is false without a calibrated spread for the rule.
func repeatsSequence(rule workload.Rule, def metricDef, base, cand []*run, cal *Calibration, g workload.GateConfig) (point, lo, hi float64, dec stats.Decision, ok bool) {
	ms := cal.Lookup(rule.Metric)
	if ms == nil {
		return 0, 0, 0, stats.Undecided, false
	}
	pol := rulePolicy(rule, def, g)
	bms := make([]stats.Metric, len(base))
	for i, r := range base {
		bms[i] = def.build(r)
	}
	side, why := stats.Summarise(bms, pol, stats.StreamBaseline)
	if why != "" {
		return 0, 0, 0, stats.Undecided, false
	}
	logs := make([]float64, len(cand))
	for i, r := range cand {
		v := stats.Value(def.build(r))
		if !(v > 0) {
			return 0, 0, 0, stats.Undecided, false
		}
		logs[i] = math.Log(v)
	}
	side.Starts = startsOf(base, cal)
	return stats.RepeatsSequence(side, logs, startsOf(cand, nil), ms.Spread(), pol)
}

// judgeRepeatsSequence replaces the interval of each calibrated rule of a candidate
// whose repeats were sequential by the rules' sequence, the one its stopping rule
// looked at, and judges it by the usual rule (fail when wholly beyond the tolerance,
// warn when only the point is); an absolute limit keeps its own verdict.
func judgeRepeatsSequence(m *MetricResult, rule workload.Rule, def metricDef, base, cand []*run, cal *Calibration, g workload.GateConfig) {
	if def.kind != kindBootstrap || !isRelative(rule) || m.Method != MethodCalibrated {
		return
	}
	p, lo, hi, dec, ok := repeatsSequence(rule, def, base, cand, cal, g)
	if !ok {
		return
	}
	m.useSequence(p, lo, hi, dec, rule.Tolerance)
	v := stats.Judge(ruleDirection(rule, def), rule.Tolerance, p, lo, hi)
	if rule.Max != nil || rule.Min != nil {
		vs := make([]float64, len(cand))
		for i, r := range cand {
			vs[i] = stats.Value(def.build(r))
		}
		c := stats.CheckAbsolute(medianOf(vs)*def.scale, rule.Min, rule.Max)
		v = Worst(v, c.Verdict)
	}
	m.Verdict = v
	m.Warnings = append(m.Warnings, "sequential repeats: judged by a confidence sequence over the candidate's runs, valid at every look (docs/noise.md)")
}

// repeatsNote is the workload's line on a candidate's sequential repeats.
func repeatsNote(st *result.RepeatStop) string {
	if st.Reason == result.RepeatsDecided {
		return fmt.Sprintf("sequential repeats: stopped after %d of at most %d runs (from %d on, each run looked at): %s", st.Run, st.Repeats, st.MinRepeats, st.Why)
	}
	return fmt.Sprintf("sequential repeats: ran %d of at most %d runs: %s", st.Run, st.Repeats, st.Why)
}
