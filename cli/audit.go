package cli

import (
	"context"

	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const auditUsage = `slogate audit -c FILE [-r RECORD] [--baselines DIR]

Prints every baseline of FILE's workloads with its versions (engine, model, GPU, driver,
CUDA, tool) and age, and its drift from the environment of RECORD (a run record), or
without -r from this machine's (engine and model fields are then unknown: only a run
talks to the engine). Baselines of other hardware are listed, not compared. Flags
baselines older than gate.max_baseline_age.
Exit codes: 0 nothing to act on (warnings allowed); 1 a baseline too old, drifted on a
field whose policy is fail, or nothing compared (no baseline on this hardware); 2 bad input (config, flags, a file that cannot be read);
3 this machine's environment could not be read.`

func (a *app) cmdAudit(ctx context.Context, args []string) int {
	fs := a.flagSet("audit", auditUsage)
	config := fs.String("c", "slogate.yaml", "workload `file`")
	fs.StringVar(config, "config", "slogate.yaml", "workload `file` (same as -c)")
	record := fs.String("r", "", "run record `file` whose environment the baselines are compared with (default: this machine)")
	baselines := fs.String("baselines", "", "baselines `dir`ectory (default: gate.baselines, relative to the config file)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	f, code := a.loadConfig(*config)
	if f == nil {
		return code
	}
	res, code := a.audit(ctx, f, baselineStore(f, *baselines), *record)
	if res == nil {
		return code
	}
	report.AuditTable(a.stdout, res)
	if res.Verdict == gate.Fail || res.Verdict == gate.Incomparable {
		return ExitGateFailed
	}
	return ExitOK
}

// audit compares the baselines with a record's environment, or this machine's.
func (a *app) audit(ctx context.Context, f *workload.File, store gate.Store, record string) (*gate.Audit, int) {
	in := gate.AuditInput{Config: f, Store: store, Now: a.now()}
	if record != "" {
		rec, err := result.Read(record)
		if err != nil {
			return nil, a.gateError(err)
		}
		in.Env, in.Hardware, in.Reference = rec.Environment, gate.HardwareOf(rec), "record "+record
	} else {
		env, err := a.runner().CollectEnv(ctx, f.Target.Image)
		if err != nil {
			a.errorf("%v", err)
			return nil, ExitFailure
		}
		in.Env, in.Hardware, in.Reference = env.Flat(), envinfo.HardwareKey(env), "this machine"
	}
	res, err := gate.AuditBaselines(in)
	if err != nil {
		return nil, a.gateError(err)
	}
	return res, ExitOK
}
