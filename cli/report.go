package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const reportUsage = `slogate report -r RESULTS_DIR [--gate FILE] [--markdown FILE] [--html FILE]

Renders the pull-request comment (Markdown) and the HTML report from files alone, exactly
as 'slogate ci' rendered them for the same results: the run records in RESULTS_DIR, the
gate result (--gate, default RESULTS_DIR/gate.json, as 'slogate gate --json' or ci writes
it), the baselines it names, and RESULTS_DIR/report-meta.json when ci wrote one (the
commits, links and time stamp). Without --markdown and --html the comment is printed.
A FILE of "-" is standard output.
Exit codes: 0 rendered; 2 bad input (a missing or unreadable file); 3 a file could not be
written.`

func (a *app) cmdReport(_ context.Context, args []string) int {
	fl := a.flagSet("report", reportUsage)
	var results, gatePath, mdPath, htmlPath, baselinesDir string
	fl.StringVar(&results, "r", "", "`dir`ectory of run records (required)")
	fl.StringVar(&results, "results", "", "`dir`ectory of run records (same as -r)")
	fl.StringVar(&gatePath, "gate", "", "gate result `file` (default: RESULTS_DIR/gate.json)")
	fl.StringVar(&mdPath, "markdown", "", "write the comment to `file`")
	fl.StringVar(&htmlPath, "html", "", "write the HTML report to `file`")
	fl.StringVar(&baselinesDir, "baselines", "", "baselines `dir`ectory (default: the one the gate result names)")
	if code, ok := a.parse(fl, args); !ok {
		return code
	}
	if results == "" {
		a.errorf("-r RESULTS_DIR is required: the directory 'slogate run' or 'slogate ci' wrote the run records to")
		return ExitBadInput
	}
	for flag, p := range map[string]string{"--markdown": mdPath, "--html": htmlPath} {
		if code := a.checkOutputFile(flag, p); code != ExitOK {
			return code
		}
	}
	if gatePath == "" {
		gatePath = filepath.Join(results, "gate.json")
	}
	res, err := readGateResult(gatePath)
	if err != nil {
		a.errorf("%v (write one with 'slogate gate --json %s')", err, gatePath)
		return ExitBadInput
	}
	recs, _, err := result.ReadRun(results)
	if err != nil {
		return a.gateError(err)
	}
	if len(recs) == 0 {
		a.errorf("%s: no run records (*.json) to render", results)
		return ExitBadInput
	}
	meta, err := report.ReadMeta(filepath.Join(results, report.MetaFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		meta = nil
	case err != nil:
		a.errorf("%v", err)
		return ExitBadInput
	}
	store := gate.DirStore(res.Baselines)
	if baselinesDir != "" {
		store = gate.DirStore(baselinesDir)
	}
	// The fleet section needs the config's capacity section; without the file the
	// comment has none, as ci's would not either.
	var cfg *workload.File
	paths := []string{res.Config}
	if meta != nil {
		// The demo's config is embedded (res.Config names it "demo.yaml"); the comment
		// names the file beside the source, which is where a reader of the results has it.
		paths = append(paths, meta.Config)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if f, err := workload.Load(p); err == nil {
			cfg = f
			break
		}
	}
	sweeps, _ := result.ReadSweepsDir(results) // none readable: the fleet section says so
	md, html, err := renderReports(renderInput{res: res, recs: recs, cfg: cfg, store: store, meta: meta, sweeps: sweeps})
	if err != nil {
		a.errorf("%v", err)
		return ExitFailure
	}
	if mdPath == "" && htmlPath == "" {
		mdPath = "-"
	}
	for _, o := range []struct {
		path string
		data []byte
	}{{mdPath, []byte(md)}, {htmlPath, html}} {
		switch o.path {
		case "":
		case "-":
			a.stdout.Write(o.data)
		default:
			if err := fsafe.WriteFile(o.path, o.data); err != nil {
				a.errorf("writing %s: %v", o.path, err)
				return writeExit(err)
			}
		}
	}
	return ExitOK
}

func readGateResult(path string) (*gate.Result, error) {
	data, err := fsafe.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res gate.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: not a gate result: %v", path, err)
	}
	if res.Schema != gate.ResultSchema {
		return nil, fmt.Errorf("%s: schema %q, not a gate result (%q)", path, res.Schema, gate.ResultSchema)
	}
	return &res, nil
}

// renderInput is everything the comment and the HTML report are rendered from. ci, demo
// and report build it from the same files, so they render the same bytes.
type renderInput struct {
	res   *gate.Result
	recs  []*result.Record
	cfg   *workload.File // nil: no capacity section
	store gate.Store
	meta  *report.Meta // nil: no commits, links or time stamp
	// sweeps are the candidate's sweep records among the results (the fleet section
	// prices sweeps only).
	sweeps []*result.Sweep
}

// renderReports renders the comment and the HTML report. Records are ordered by the
// gate's workload order and by trial, so the order they were read in does not matter.
func renderReports(in renderInput) (string, []byte, error) {
	order := map[string]int{}
	for i, w := range in.res.Workloads {
		if _, ok := order[w.Name]; !ok {
			order[w.Name] = i
		}
	}
	recs := slices.Clone(in.recs)
	slices.SortStableFunc(recs, func(a, b *result.Record) int {
		oa, oka := order[a.Workload]
		ob, okb := order[b.Workload]
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case oa != ob:
			return oa - ob
		}
		return a.Trial - b.Trial
	})
	byName := map[string][]*result.Record{}
	for _, r := range recs {
		byName[r.Workload] = append(byName[r.Workload], r)
	}
	c := report.Comment{Gate: in.res, Runs: byName, Meta: in.meta}
	if in.cfg != nil {
		c.Fleet = fleetSection(in.cfg, in.res, in.store, in.sweeps)
	}
	var generated time.Time
	if m := in.meta; m != nil {
		c.Marker, c.RunURL, c.Generated = m.Marker, m.RunURL, m.Generated
		generated = m.Generated
	}
	md := report.Markdown(c)
	if len(recs) == 0 {
		return md, nil, errors.New("no run records to render")
	}
	hw := gate.HardwareOf(recs[0])
	// A history that cannot be read costs the trend charts, not the report.
	hist, _ := in.store.History(recs[0].Workload, hw)
	var html bytes.Buffer
	if err := report.WriteHTML(&html, report.HTMLReport{
		Title: "slogate: " + recs[0].Workload + " on " + hw, Generated: generated, Gate: in.res, Candidate: recs[0],
		Baseline: baselineRecord(in.store, recs[0]), History: hist, HistoryPath: in.store.HistoryPath(recs[0].Workload, hw),
	}); err != nil {
		return "", nil, fmt.Errorf("rendering the HTML report: %w", err)
	}
	return md, html.Bytes(), nil
}
