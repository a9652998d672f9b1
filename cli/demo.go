package cli

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"
	"time"

	"github.com/slogate/slogate/baselines"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

//go:embed demo.yaml
var demoConfig []byte

const demoUsage = `slogate demo [--regress] [-o DIR]

Runs the whole pipeline on the built-in simulated engine, no GPU and no server needed:
serves the simulator (profile llama-8b-h100) on a free loopback port, runs the embedded
chat workload (about 40 s), and writes the run record to DIR. With --regress the
simulator runs 30% slower with a quarter less KV cache, to show a failing gate.`

func (a *app) cmdDemo(ctx context.Context, args []string) int {
	fs := a.flagSet("demo", demoUsage)
	regress := fs.Bool("regress", false, "run the simulator slower and with less KV cache")
	out := fs.String("o", "slogate-out", "output `dir`ectory")
	a.quietFlag(fs)
	dur := fs.Duration("duration", 0, "override the workload's measured duration (a changed workload is incomparable with the committed baseline)")
	failOn := failOnFlag(fs)
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if code, ok := a.checkFailOn(*failOn); !ok {
		return code
	}
	f, err := workload.Parse("demo.yaml", demoConfig)
	if err != nil {
		a.errorf("embedded demo config: %v", err)
		return ExitFailure
	}
	if *dur > 0 {
		f.Workloads[0].Duration = *dur
	}
	prof, _ := sim.LookupProfile("llama-8b-h100")
	o := sim.Options{Profile: prof, Seed: 1}
	if *regress {
		o.Faults.Slowdown = 1.3
		o.Faults.KVBlocks = prof.NumBlocks * 3 / 4
		o.Version = sim.DefaultVersion + "+regress"
	}
	srv, err := sim.Start(ctx, o)
	if err != nil {
		a.errorf("starting the simulator: %v", err)
		return ExitFailure
	}
	defer srv.Close()
	if !a.quiet {
		fmt.Fprintf(a.stderr, "slogate demo: simulated engine (profile %s%s) at %s\n", prof.Name, map[bool]string{true: ", regressed", false: ""}[*regress], srv.URL)
	}
	recs, code := a.runWorkloads(ctx, f, runParams{target: srv.URL, outDir: *out})
	if len(recs) == 0 {
		return code
	}
	// Gate against the baseline committed for the demo (embedded in the binary).
	store := gate.Store{FS: baselines.FS, Dir: "baselines"}
	res, err := gate.Evaluate(gate.Input{Config: f, Runs: recs, Store: store})
	if err != nil {
		a.errorf("gate: %v", err)
		return ExitFailure
	}
	meta := &report.Meta{Schema: report.MetaSchema, Generated: a.now().UTC().Truncate(time.Second), Config: "cli/demo.yaml"}
	md, html, err := renderReports(renderInput{res: res, recs: recs, cfg: f, store: store, meta: meta})
	if err != nil {
		a.errorf("%v", err)
		return ExitFailure
	}
	rp, err := writeReports(*out, res, meta, md, html)
	if err != nil {
		a.errorf("%v", err)
		return ExitFailure
	}
	report.GateTable(a.stdout, res)
	fmt.Fprintf(a.stdout, "The pull-request comment is in %s, the HTML report in %s.\n", filepath.Join(*out, "comment.md"), rp)
	return a.verdictExit(res, *failOn)
}
