package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const baselineUsage = `slogate baseline update -c FILE -r RESULTS_DIR [--baselines DIR] [-w NAME]

Makes the run records in RESULTS_DIR the new baselines: writes
DIR/<workload>/<hardware>.json for each workload (all trials of a workload in one file)
and prints the paths written, to be committed. DIR is --baselines, else gate.baselines
relative to FILE. A sweep record in RESULTS_DIR (<name>.sweep.json, from 'slogate
sweep') becomes the sweep baseline DIR/<workload>/<hardware>.sweep.json, which the
max_sustainable_rps rule compares with; it needs no run record beside it. Records that
are incomplete or client-saturated, and sweeps without a capacity (client-limited,
failed, no step within the SLO), are refused: nothing is written.
Exit codes: 0 written; 2 bad input (config, flags, a record that cannot be read, records
made from another definition of the workload than FILE has); 3 a refused record or a
write that failed.`

func (a *app) cmdBaseline(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] != "update" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			// The usage of its one subcommand, with its flags.
			args = []string{"update", "-h"}
		} else {
			a.errorf("baseline: expected the subcommand \"update\"\n\n%s", baselineUsage)
			return ExitBadInput
		}
	}
	fs := a.flagSet("baseline update", baselineUsage)
	var p gateParams
	p.register(fs)
	if code, ok := a.parse(fs, args[1:]); !ok {
		return code
	}
	f, recs, sweeps, code := a.gateInputs(p)
	if f == nil {
		return code
	}
	_, code = a.updateAllBaselines(f, recs, sweeps, p.names, p.results, baselineStore(f, p.baselines))
	return code
}

// updateBaselines makes and writes the baselines of the selected workloads from recs
// (from is where they came from, for messages) and returns the files written. Nothing is
// written unless every record is fit to be a baseline.
func (a *app) updateBaselines(f *workload.File, recs []*result.Record, names []string, from string, store gate.Store) ([]string, int) {
	return a.updateAllBaselines(f, recs, nil, names, from, store)
}

// updateAllBaselines is updateBaselines with sweep records too: each becomes the sweep
// baseline of its workload and hardware, with or without run records beside it.
func (a *app) updateAllBaselines(f *workload.File, recs []*result.Record, sweeps []*result.Sweep, names []string, from string, store gate.Store) ([]string, int) {
	selected, err := measure.SelectWorkloads(f, names)
	if err != nil {
		a.errorf("%v", err)
		return nil, ExitBadInput
	}
	p := struct {
		names   []string
		results string
	}{names, from}

	type key struct{ workload, hardware string }
	groups := map[key][]*result.Record{}
	var keys []key
	for _, r := range recs {
		k := key{r.Workload, gate.HardwareOf(r)}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	byKey := func(x, y key) int {
		if x.workload != y.workload {
			return cmpString(x.workload, y.workload)
		}
		return cmpString(x.hardware, y.hardware)
	}
	slices.SortFunc(keys, byKey)
	sweepOf := map[key]*result.Sweep{}
	var sweepKeys []key
	for _, sw := range sweeps {
		k := key{sw.Workload, gate.SweepHardwareOf(sw)}
		if sweepOf[k] != nil {
			a.errorf("%s: two sweeps of %q on %s: keep one sweep per workload and hardware", p.results, k.workload, k.hardware)
			return nil, ExitBadInput
		}
		sweepOf[k] = sw
		sweepKeys = append(sweepKeys, k)
	}
	slices.SortFunc(sweepKeys, byKey)

	// Check everything before writing anything: a half-refreshed set of baselines is
	// worse than none.
	var todo [][]*result.Record
	var sweepTodo []*result.Sweep
	for _, w := range selected {
		found := false
		for _, k := range keys {
			if k.workload != w.Name {
				continue
			}
			found = true
			g := groups[k]
			if h := workload.Hash(f, w); g[0].Source == nil && g[0].WorkloadHash != h {
				a.errorf("%s: the run records of %q on %s were made from another definition of it than %s has now (run hash %s, file hash %s): rerun them before making them the baseline",
					p.results, w.Name, k.hardware, f.Path, g[0].WorkloadHash, h)
				return nil, ExitBadInput
			}
			todo = append(todo, g)
		}
		for _, k := range sweepKeys {
			if k.workload != w.Name {
				continue
			}
			found = true
			sw := sweepOf[k]
			// The same hash slogate sweep gave it, so that a stale sweep is refused as a
			// stale run record is.
			if h := measure.SweepHash(f, w, sw); sw.WorkloadHash != h {
				a.errorf("%s: the sweep of %q on %s was made from another definition of it than %s has now (sweep hash %s, file hash %s): rerun it before making it the baseline",
					p.results, w.Name, k.hardware, f.Path, sw.WorkloadHash, h)
				return nil, ExitBadInput
			}
			sweepTodo = append(sweepTodo, sw)
		}
		if !found && len(p.names) > 0 {
			a.errorf("%s: no run record or sweep of workload %q", p.results, w.Name)
			return nil, ExitBadInput
		}
	}
	if len(todo) == 0 && len(sweepTodo) == 0 {
		a.errorf("%s: no run or sweep records of the workloads of %s", p.results, f.Path)
		return nil, ExitBadInput
	}
	refused := false
	for _, g := range todo {
		for _, r := range g {
			if why := r.Unfit(); why != "" {
				err := &gate.UnfitError{Workload: r.Workload, Trial: r.Trial, Reason: why}
				a.errorf("refusing to make a baseline of %v", err)
				refused = true
			}
		}
	}
	for _, sw := range sweepTodo {
		if why := sweepUnfitForBaseline(sw); why != "" {
			a.errorf("refusing to make a baseline of the sweep of %s on %s: %s", sw.Workload, gate.SweepHardwareOf(sw), why)
			refused = true
		}
	}
	if refused {
		a.errorf("no baseline written")
		return nil, ExitFailure
	}
	var bs []*gate.Baseline
	for _, g := range todo {
		b, err := gate.FromRecords(g, a.now())
		if err != nil {
			return nil, a.gateError(err)
		}
		bs = append(bs, b)
	}
	var written []string
	for _, b := range bs {
		path, err := gate.Write(store.Dir, b)
		if err != nil {
			a.errorf("writing the baseline of %s on %s: %v", b.Workload, b.Hardware, err)
			return nil, ExitFailure
		}
		requests := 0
		for _, t := range b.Trials {
			requests += t.Requests.N
		}
		size := ""
		if total, tl, err := gate.Sizes(b); err == nil {
			size = fmt.Sprintf(", %d bytes of which the timelines %d", total, tl)
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s on %s: %d trial(s), %d requests, engine %s%s)\n", path, b.Workload, b.Hardware, len(b.Trials), requests, engineOf(b.Environment), size)
		written = append(written, path)
		// One line of history per refresh, beside the baseline.
		if hp, err := a.appendHistory(f, store.Dir, groupOf(todo, b), gate.HistoryBaseline); err != nil {
			a.errorf("writing the history of %s on %s: %v", b.Workload, b.Hardware, err)
			return nil, ExitFailure
		} else {
			written = append(written, hp)
		}
	}
	for _, sw := range sweepTodo {
		path, err := gate.WriteSweep(store.Dir, sw)
		if err != nil {
			a.errorf("writing the sweep baseline of %s on %s: %v", sw.Workload, gate.SweepHardwareOf(sw), err)
			return nil, writeExit(err)
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s on %s: sweep, max sustainable %s req/s, bound %s, precision %s, engine %s)\n",
			path, sw.Workload, gate.SweepHardwareOf(sw), fmtRate(*sw.MaxSustainableRPS), sw.Bound, fractionFlag{&sw.Params.Precision}, engineOf(sw.Environment))
		written = append(written, path)
	}
	return written, ExitOK
}

// groupOf is the group of records b was made from.
func groupOf(todo [][]*result.Record, b *gate.Baseline) []*result.Record {
	for _, g := range todo {
		if g[0].Workload == b.Workload && gate.HardwareOf(g[0]) == b.Hardware {
			return g
		}
	}
	return nil
}

// appendHistory adds the records' line to the history beside their baseline under dir:
// the commit (GITHUB_SHA in Actions, else the checkout's HEAD), the date, the versions and
// each gated metric.
func (a *app) appendHistory(f *workload.File, dir string, recs []*result.Record, kind string) (string, error) {
	commit := a.getenv("GITHUB_SHA")
	if commit == "" && a.git != nil {
		if out, err := a.git(context.Background(), filepath.Dir(f.Path), "rev-parse", "HEAD"); err == nil {
			commit = strings.TrimSpace(string(out))
		}
	}
	e, err := gate.NewHistoryEntry(f, recs, kind, commit, a.now())
	if err != nil {
		return "", err
	}
	return gate.AppendHistory(dir, recs[0].Workload, gate.HardwareOf(recs[0]), e)
}

// sweepUnfitForBaseline says why a sweep cannot be a baseline; "" when it can. A
// baseline sweep needs a capacity to compare with: a client-limited or failed sweep has
// none, and neither has one whose every step missed the SLO.
func sweepUnfitForBaseline(sw *result.Sweep) string {
	if why := gate.UnfitSweep(sw); why != "" {
		return why
	}
	if sw.MaxSustainableRPS == nil {
		s := "no step met the SLO, so it has no capacity to compare with"
		if sw.FirstFailingRPS != nil {
			s += fmt.Sprintf(" (it is below %s req/s)", fmtRate(*sw.FirstFailingRPS))
		}
		return s + ": lower --min-rate and rerun the sweep"
	}
	return ""
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func engineOf(env map[string]string) string {
	s := env["engine.name"] + " " + env["engine.version"]
	if s == " " {
		return "unknown"
	}
	return s
}
