package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/slogate/slogate/internal/fsafe"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const gateUsage = `slogate gate -c FILE -r RESULTS_DIR [--baselines DIR] [--json FILE] [-w NAME]

Compares the run records in RESULTS_DIR (written by 'slogate run') with the committed
baselines (--baselines, else gate.baselines relative to FILE) and prints the verdict of
every rule of gate.rules, with its interval, and the environment drift. A sweep record
in RESULTS_DIR (<name>.sweep.json, written by 'slogate sweep') is compared with the
sweep baseline beside the workload's baseline by the max_sustainable_rps rule. --json
writes the whole result as JSON (schema slogate.gate/v1, which a later gate over the same
RESULTS_DIR passes over).
Exit codes: 0 pass, warn or improved; 1 fail, or incomparable (a changed workload is not
a pass); 2 bad input (config, flags, a baseline or run record that cannot be read, or
run records made from another definition of their workload than FILE has now, unless
--allow-changed-config gates them as they were made, with a warning naming what changed);
3 a run or sweep the gate refuses to judge (incomplete, or the load generator saturated);
4 inconclusive: a rule was not decided either way. --fail-on (default inconclusive)
says which verdict fails: fail lets an inconclusive result exit 0, warn fails a warn
too (exit 1), never exits 0 unless the tool or the engine failed.`

func (a *app) cmdGate(ctx context.Context, args []string) int {
	fs := a.flagSet("gate", gateUsage)
	var p gateParams
	p.register(fs)
	jsonOut := fs.String("json", "", "write the result as JSON to `file`")
	failOn := failOnFlag(fs)
	allowChanged := fs.Bool("allow-changed-config", false, "gate run records made from another definition of their workload than the config has now (a warning names what changed)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if code, ok := a.checkFailOn(*failOn); !ok {
		return code
	}
	if code := a.checkOutputFile("--json", *jsonOut); code != ExitOK {
		return code
	}
	f, recs, sweeps, code := a.gateInputs(p)
	if f == nil {
		return code
	}
	_, code = a.judge(f, recs, sweeps, p.baselines, p.names, *jsonOut, *failOn, *allowChanged)
	return code
}

// judge runs the gate on run and sweep records, prints the verdict table, writes the
// JSON result when jsonOut is set, and returns the result (nil on bad input) and the exit
// code. baselinesDir "" means gate.baselines relative to the config file; names restricts
// the workloads judged; allowChanged gates records of another definition of their
// workload (gate.Input.AllowChangedConfig). It is what `slogate gate` does after reading RESULTS_DIR, for a
// command that has the records in hand.
func (a *app) judge(f *workload.File, recs []*result.Record, sweeps []*result.Sweep, baselinesDir string, names []string, jsonOut, failOn string, allowChanged bool) (*gate.Result, int) {
	res, err := gate.Evaluate(gate.Input{
		Config: f, Runs: recs, Sweeps: sweeps, Store: baselineStore(f, baselinesDir), Workloads: names, AllowChangedConfig: allowChanged,
		SweepHash: func(w *workload.Workload, sw *result.Sweep) string { return measure.SweepHash(f, w, sw) },
	})
	if err != nil {
		return nil, a.gateError(err)
	}
	report.GateTable(a.stdout, res)
	if jsonOut != "" {
		if err := writeJSON(jsonOut, res); err != nil {
			a.errorf("writing %s: %v", jsonOut, err)
			return res, writeExit(err)
		}
	}
	return res, a.verdictExit(res, failOn)
}

// VerdictExit maps a gate result to the exit code under fail-on (DESIGN §5): error is
// exit 3 whatever fail-on says; fail, incomparable and a missing baseline the config does
// not allow are exit 1 unless fail-on is never; inconclusive is exit 4 under fail-on
// inconclusive (the default) and warn; warn is exit 1 under fail-on warn; pass, improved
// and an allowed missing baseline are 0.
func VerdictExit(res *gate.Result, failOn string) int {
	v := res.Verdict
	switch {
	case v == gate.Error:
		return ExitFailure
	case failOn == gate.FailOnNever:
		return ExitOK
	case v == gate.NoBaseline && !res.Blocks():
		return ExitOK
	case v == gate.Pass || v == gate.Improved:
		return ExitOK
	case v == gate.Warn:
		if failOn == gate.FailOnWarn {
			return ExitGateFailed
		}
		return ExitOK
	case v == gate.Inconclusive:
		if failOn == gate.FailOnFail {
			return ExitOK
		}
		return ExitInconclusive
	}
	return ExitGateFailed
}

// failOnFlag registers --fail-on on fs.
func failOnFlag(fs *flag.FlagSet) *string {
	return fs.String("fail-on", gate.DefaultFailOn, "which `verdict` fails the command: "+strings.Join(gate.FailOns, ", ")+" (exit 1 for fail and warn, 4 for inconclusive)")
}

// checkFailOn refuses a fail-on value that is none of gate.FailOns (exit 2).
func (a *app) checkFailOn(v string) (int, bool) {
	if err := gate.CheckFailOn(v); err != nil {
		a.errorf("--fail-on %v", err)
		return ExitBadInput, false
	}
	return 0, true
}

// verdictExit is VerdictExit, saying on stderr why an undecided result exits as it
// does: 4, or 0 under fail-on fail, never silently.
func (a *app) verdictExit(res *gate.Result, failOn string) int {
	code := VerdictExit(res, failOn)
	if res.Verdict == gate.Inconclusive {
		if code == ExitOK {
			a.errorf("warning: the verdict is inconclusive (a rule was not decided either way); fail-on %s lets it through with exit 0", failOn)
		} else {
			a.errorf("the verdict is inconclusive: a rule was not decided either way (exit %d; fail-on fail lets an undecided result through)", code)
		}
	}
	return code
}

// gateParams are the flags gate and baseline update share.
type gateParams struct {
	config    string
	results   string
	baselines string
	names     stringList
}

func (p *gateParams) register(fs *flag.FlagSet) {
	fs.StringVar(&p.config, "c", "slogate.yaml", "workload `file`")
	fs.StringVar(&p.config, "config", "slogate.yaml", "workload `file` (same as -c)")
	fs.StringVar(&p.results, "r", "", "`dir`ectory of run and sweep records (required)")
	fs.StringVar(&p.results, "results", "", "`dir`ectory of run and sweep records (same as -r)")
	fs.StringVar(&p.baselines, "baselines", "", "baselines `dir`ectory (default: gate.baselines, relative to the config file)")
	fs.Var(&p.names, "w", "workload `name` (repeatable or comma-separated; default: all with records)")
	fs.Var(&p.names, "workload", "workload `name` (same as -w)")
}

// gateInputs loads the config, the run records and the sweep records (RESULTS_DIR's
// *.sweep.json; a sweep's steps, in its subdirectory, are not read); a nil file means
// return code.
func (a *app) gateInputs(p gateParams) (*workload.File, []*result.Record, []*result.Sweep, int) {
	if p.results == "" {
		a.errorf("-r RESULTS_DIR is required: the directory 'slogate run -o' wrote the run records to")
		return nil, nil, nil, ExitBadInput
	}
	f, code := a.loadConfig(p.config)
	if f == nil {
		return nil, nil, nil, code
	}
	if _, err := measure.SelectWorkloads(f, p.names); err != nil {
		a.errorf("%v", err)
		return nil, nil, nil, ExitBadInput
	}
	recs, stale, err := result.ReadRun(p.results)
	if err != nil {
		return nil, nil, nil, a.gateError(err)
	}
	if len(stale) > 0 {
		a.errorf("note: %s: passing over %d records an earlier run left (not in %s): %s", p.results, len(stale), result.ManifestName, strings.Join(stale, ", "))
	}
	if err := measure.CheckTrials(f, recs); err != nil {
		a.errorf("%v", err)
		return nil, nil, nil, ExitBadInput
	}
	sweeps, err := result.ReadSweepsDir(p.results)
	if err != nil {
		return nil, nil, nil, a.gateError(err)
	}
	if len(recs) == 0 && len(sweeps) == 0 {
		a.errorf("%s: no run or sweep records (*.json) to judge", p.results)
		return nil, nil, nil, ExitBadInput
	}
	return f, recs, sweeps, ExitOK
}

// baselineStore is the --baselines directory, else gate.baselines resolved against the
// config file's directory (so the command works from any working directory).
func baselineStore(f *workload.File, flagDir string) gate.Store {
	dir := flagDir
	if dir == "" {
		dir = f.Gate.Baselines
		if dir == "" {
			dir = "baselines"
		}
		if !filepath.IsAbs(dir) && f.Path != "" {
			dir = filepath.Join(filepath.Dir(f.Path), dir)
		}
	}
	return gate.DirStore(dir)
}

// gateError prints err and maps it to an exit code: what the user handed in is bad input;
// anything else is a failure of the tool.
func (a *app) gateError(err error) int {
	a.errorf("%v", err)
	var fe *gate.FileError
	var ie *gate.InputError
	var re *result.FormatError
	var ue *gate.UnfitError
	switch {
	case errors.As(err, &fe), errors.As(err, &ie), errors.As(err, &re), badFile(err):
		return ExitBadInput
	case errors.As(err, &ue):
		return ExitFailure // an incomplete or saturated run: the tool or the engine failed
	}
	return ExitFailure
}

// badFile says whether err is a path that cannot be read as a file: one that names no
// regular file (a FIFO, a device, a socket, a directory), a file over the size its
// reader accepts, or a path the system refused (missing, unreadable, a loop of links):
// bad input, exit 2, in every command.
func badFile(err error) bool {
	var tl *fsafe.TooLargeError
	var pe *fs.PathError
	return fsafe.IsNotRegular(err) || errors.As(err, &tl) || errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist)
}

// writeExit is the exit code of a failed write: a path that is not a regular file
// (fsafe refuses it, leaving it as it was) is a bad flag or a bad directory, exit 2;
// anything else (a full disk, a directory removed during the run) is a failure, exit 3.
func writeExit(err error) int {
	if fsafe.IsNotRegular(err) {
		return ExitBadInput
	}
	return ExitFailure
}

// writeJSON writes v as indented JSON atomically. A non-finite float (a ratio over a
// zero baseline, a value the engine sent) is written as 0 rather than failing the write:
// the gate's result is kept whatever it holds.
func writeJSON(path string, v any) error {
	result.ReplaceNonFinite(v)
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsafe.WriteFile(path, append(data, '\n'))
}
