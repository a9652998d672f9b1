package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const baselineUsage = `slogate baseline update -c FILE -r RESULTS_DIR [--baselines DIR] [-w NAME]

Makes the run records in RESULTS_DIR the new baselines: writes
DIR/<workload>/<hardware>.json for each workload (all trials of a workload in one file)
and prints the paths written, to be committed. DIR is --baselines, else gate.baselines
relative to FILE. Records that are incomplete or client-saturated are refused: nothing
is written.
Exit codes: 0 written; 2 bad input (config, flags, a run record that cannot be read,
records made from another definition of the workload than FILE has); 3 a refused record
or a write that failed.`

func (a *app) cmdBaseline(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] != "update" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(a.stderr, baselineUsage)
			return ExitOK
		}
		a.errorf("baseline: expected the subcommand \"update\"\n\n%s", baselineUsage)
		return ExitBadInput
	}
	fs := a.flagSet("baseline update", baselineUsage)
	var p gateParams
	p.register(fs)
	if code, ok := a.parse(fs, args[1:]); !ok {
		return code
	}
	f, recs, code := a.gateInputs(p)
	if f == nil {
		return code
	}
	_, code = a.updateBaselines(f, recs, p.names, p.results, baselineStore(f, p.baselines))
	return code
}

// updateBaselines makes and writes the baselines of the selected workloads from recs
// (from is where they came from, for messages) and returns the files written. Nothing is
// written unless every record is fit to be a baseline.
func (a *app) updateBaselines(f *workload.File, recs []*result.Record, names []string, from string, store gate.Store) ([]string, int) {
	selected, err := selectWorkloads(f, names)
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
	slices.SortFunc(keys, func(x, y key) int {
		if x.workload != y.workload {
			return cmpString(x.workload, y.workload)
		}
		return cmpString(x.hardware, y.hardware)
	})

	// Check everything before writing anything: a half-refreshed set of baselines is
	// worse than none.
	var todo [][]*result.Record
	for _, w := range selected {
		found := false
		for _, k := range keys {
			if k.workload != w.Name {
				continue
			}
			found = true
			g := groups[k]
			if h := workload.Hash(f, w); g[0].WorkloadHash != h {
				a.errorf("%s: the run records of %q on %s were made from another definition of it than %s has now (run hash %s, file hash %s): rerun them before making them the baseline",
					p.results, w.Name, k.hardware, f.Path, g[0].WorkloadHash, h)
				return nil, ExitBadInput
			}
			todo = append(todo, g)
		}
		if !found && len(p.names) > 0 {
			a.errorf("%s: no run record of workload %q", p.results, w.Name)
			return nil, ExitBadInput
		}
	}
	if len(todo) == 0 {
		a.errorf("%s: no run records of the workloads of %s", p.results, f.Path)
		return nil, ExitBadInput
	}
	refused := false
	for _, g := range todo {
		for _, r := range g {
			if why := gate.Unfit(r); why != "" {
				err := &gate.UnfitError{Workload: r.Workload, Trial: r.Trial, Reason: why}
				a.errorf("refusing to make a baseline of %v", err)
				refused = true
			}
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
		fmt.Fprintf(a.stdout, "wrote %s (%s on %s: %d trial(s), %d requests, engine %s)\n", path, b.Workload, b.Hardware, len(b.Trials), requests, engineOf(b.Environment))
		written = append(written, path)
	}
	return written, ExitOK
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
