package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"math"
	"path/filepath"

	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-githubactions"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/ghaction"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/plan"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const ciUsage = `slogate ci

The GitHub Action's entry point. Reads the Action's inputs from the environment
(INPUT_CONFIG, INPUT_MODE, INPUT_TARGET, INPUT_GITHUB-TOKEN, INPUT_COMMENT (always,
not-pass or never), INPUT_FAIL-ON,
INPUT_ALLOW-FORK-PRS, INPUT_WORKING-DIRECTORY) and, by mode:
  gate      run, gate against the committed baselines, report, publish (pull requests)
  baseline  run and write new baselines; outside a pull request, open a pull request with them
  audit     show the baselines' versions, age and drift from this machine
  run       run only (with INPUT_SHARD and INPUT_START-AT: one shard of a sharded run)
  merge     merge the shard records under INPUT_SHARDS, then gate the merged run as gate does
  ab        measure the pull request's base and head in alternating blocks, gate head against base
Every file (records, gate.json, comment.md, report.html, the job summary) is written
before the first call to GitHub. The exit code follows fail-on (fail, inconclusive, warn, never); a
tool or engine failure is exit 3 whatever fail-on says.`

// ci is one run of the Action.
type ci struct {
	*app
	act    *githubactions.Action
	in     ghaction.Inputs
	gh     *ghaction.Context
	f      *workload.File
	outDir string
	out    ghaction.Outputs
}

func (a *app) cmdCI(ctx context.Context, args []string) int {
	fs := a.flagSet("ci", ciUsage)
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	c := &ci{app: a, act: githubactions.New(githubactions.WithGetenv(a.getenv), githubactions.WithWriter(a.stdout))}
	in, err := ghaction.ReadInputs(c.act)
	c.in = in
	wd := in.WorkingDirectory
	if wd == "" {
		wd = "."
	}
	cfg := in.Config
	if !filepath.IsAbs(cfg) {
		cfg = filepath.Join(wd, cfg)
	}
	c.outDir = filepath.Join(wd, "slogate-out")
	c.out.ResultsDir = c.outDir
	// On bad input the outputs still say so (verdict error), and results-dir is set so
	// that the documented artifact upload finds its path.
	if err != nil {
		a.errorf("%v", err)
		c.out.Verdict = "error"
		c.setOutputs()
		return ExitBadInput
	}
	if c.gh, err = ghaction.LoadContext(a.getenv, fsafe.ReadFile); err != nil {
		a.errorf("%v", err)
		c.out.Verdict = "error"
		c.setOutputs()
		return ExitBadInput
	}
	// A self-hosted GPU runner must not run a stranger's code by default: refuse before
	// anything from the pull request is loaded.
	if err := ghaction.CheckForkSafety(c.gh, in.AllowForkPRs); err != nil {
		a.errorf("%v", err)
		c.out.Verdict = "error"
		c.summary("## 💥 slogate: not run\n\n" + err.Error() + "\n")
		c.setOutputs()
		return ExitFailure
	}
	f, code := a.loadConfig(cfg)
	if f == nil {
		c.out.Verdict = "error"
		c.setOutputs()
		return code
	}
	c.f = f
	// slogate-out comes with the checkout under review: a link there, to the runner's
	// files, would take every file the job writes (each file in it is checked too, as
	// every command checks its outputs).
	if err := fsafe.CheckOwnDir(c.outDir); err != nil {
		a.errorf("%v: the job writes its results there; remove it from the repository", err)
		c.out.Verdict = "error"
		c.setOutputs()
		return ExitBadInput
	}
	if code := a.checkOutputs(c.outDir, reportOutputs(c.outDir)...); code != ExitOK {
		c.out.Verdict = "error"
		c.setOutputs()
		return code
	}
	switch in.Mode {
	case "run":
		return c.modeRun(ctx)
	case "baseline":
		return c.modeBaseline(ctx)
	case "audit":
		return c.modeAudit(ctx)
	case "merge":
		return c.modeMerge(ctx)
	case "ab":
		return c.modeAB(ctx)
	}
	return c.modeGate(ctx)
}

func (c *ci) run(ctx context.Context) ([]*result.Record, int) {
	p := runParams{config: c.f.Path, target: c.in.Target, outDir: c.outDir, shard: c.in.Shard, minRepeats: c.in.MinRepeats, restartEvery: c.in.RestartEvery}
	if code := c.checkRestartEvery("ci (input restart-every)", "trials", "one engine start", c.in.RestartEvery, c.f); code != ExitOK {
		return nil, code
	}
	if c.in.StartAt != "" {
		t, err := parseStartAt(c.in.StartAt)
		if err != nil {
			c.errorf("input start-at: %v", err)
			return nil, ExitBadInput
		}
		p.startAt = t
	}
	recs, code := c.runWorkloads(ctx, c.f, p)
	if len(recs) > 0 {
		c.headline(recs[0])
	}
	if code == ExitOK && c.in.Shard == "" {
		code = c.sweepRequested(ctx)
	}
	return recs, code
}

// sweepRequested sweeps every workload whose config asks for it (sweep:) after the run,
// writing DIR/<name>.sweep.json beside the run records, so that the fleet section prices
// the capacity its SLO allows and mode baseline commits a sweep baseline.
func (c *ci) sweepRequested(ctx context.Context) int {
	var ws []*workload.Workload
	for i := range c.f.Workloads {
		if c.f.Workloads[i].Sweep != nil {
			ws = append(ws, &c.f.Workloads[i])
		}
	}
	if len(ws) == 0 {
		return ExitOK
	}
	if c.f.Target.Start != nil {
		c.errorf("warning: sweep: is not run with target.start (the engine the run started is stopped); run slogate sweep against a running engine")
		return ExitOK
	}
	for _, w := range ws {
		if code := c.checkOutputs(c.outDir, sweepOutputs(c.outDir, w)...); code != ExitOK {
			return code
		}
	}
	t, err := c.runner().Prepare(ctx, c.f, c.in.Target)
	if err != nil {
		return c.measureError(err)
	}
	for _, w := range ws {
		sw := w.Sweep
		p := sweepParams{name: w.Name, target: c.in.Target, outDir: c.outDir, SweepParams: measure.SweepParams{
			MinRate: sw.MinRate, MaxRate: sw.MaxRate, Precision: sw.Precision, StepRequests: sw.StepRequests, StepDuration: sw.StepDuration}}
		if p.MinRate == 0 {
			p.MinRate = defaultSweepMinRate
		}
		if p.MaxRate == 0 {
			p.MaxRate = defaultSweepMaxRate
		}
		if p.Precision == 0 {
			p.Precision = defaultSweepPrecision
		}
		if msg := p.check(); msg != "" {
			c.errorf("%s: sweep: %s", w.Name, msg)
			return ExitBadInput
		}
		rec, code := c.sweep(ctx, c.f, w, t, p)
		path := filepath.Join(c.outDir, w.Name+".sweep.json")
		if err := result.WriteSweep(path, rec); err != nil {
			c.errorf("writing %s: %v", path, err)
			return writeExit(err)
		}
		report.SweepTable(c.stdout, rec, path)
		if code != ExitOK {
			return code
		}
	}
	return ExitOK
}

// headline fills the number outputs from the first workload's record.
func (c *ci) headline(r *result.Record) {
	s := r.Summary
	c.out.Goodput = strconv.FormatFloat(s.GoodputRPS, 'f', 3, 64)
	c.out.ITLP99ms = strconv.FormatFloat(s.ITLms.P99, 'f', 3, 64)
	if s.KVConcurrency != nil {
		c.out.KVConcurrency = strconv.Itoa(s.KVConcurrency.Value)
	}
}

func (c *ci) modeRun(ctx context.Context) int {
	recs, code := c.run(ctx)
	var b bytes.Buffer
	for _, r := range recs {
		report.RunTable(&b, r, "")
	}
	c.out.Verdict = "ran"
	if code != ExitOK {
		c.out.Verdict = "error"
	}
	c.summary("## slogate: run\n\n```\n" + b.String() + "```\n")
	c.setOutputs()
	return code
}

func (c *ci) modeGate(ctx context.Context) int {
	recs, code := c.run(ctx)
	return c.gateRecords(ctx, recs, code)
}

// modeMerge merges the shard records the shard jobs uploaded (input shards) into one
// record per workload, writes them to the results directory, and gates them as mode
// gate gates a run: one verdict and one sticky comment for the whole sharded run.
func (c *ci) modeMerge(ctx context.Context) int {
	recs, code := c.mergeShards()
	if len(recs) > 0 {
		c.headline(recs[0])
	}
	return c.gateRecords(ctx, recs, code)
}

// gateRecords gates the records of a run (code is the run's exit code), writes every
// report and publishes them.
func (c *ci) gateRecords(ctx context.Context, recs []*result.Record, code int) int {
	if len(recs) == 0 {
		c.out.Verdict = "error"
		c.summary("## 💥 slogate: error\n\nThe workload could not be run; see the job log.\n")
		c.setOutputs()
		return code
	}
	store := baselineStore(c.f, "")
	res, err := gate.Evaluate(gate.Input{Config: c.f, Runs: recs, Store: store})
	if err == nil {
		res.GPUMinutes = gpuMinutes(recs)
	}
	if err != nil {
		c.errorf("gate: %v", err)
		c.out.Verdict = "error"
		c.setOutputs()
		var ie *gate.InputError
		var fe *gate.FileError
		if errors.As(err, &ie) || errors.As(err, &fe) {
			return ExitBadInput
		}
		return ExitFailure
	}
	return c.publish(ctx, res, recs, store)
}

// publish writes every report of a gate result, then posts it: the job summary, the
// annotations, the outputs and the sticky comment.
func (c *ci) publish(ctx context.Context, res *gate.Result, recs []*result.Record, store gate.Store) int {
	c.out.Verdict = string(res.Verdict)
	marker := ghaction.Marker(c.in.Config)
	meta := c.meta(ctx, marker, res)
	c.secrets.Redact(res)
	sweeps, _ := result.ReadSweepsDir(c.outDir) // none readable: the fleet section says so
	md, html, err := renderReports(renderInput{res: res, recs: recs, cfg: c.f, store: store, meta: meta, sweeps: sweeps})
	if err != nil {
		c.errorf("%v", err)
		return ExitFailure
	}
	// The reports quote the records and the baselines: neither holds a secret, and what
	// is published is checked once more.
	md, html = c.secrets.String(md), []byte(c.secrets.String(string(html)))
	// Every file is written before the first call to GitHub.
	rp, err := writeReports(c.outDir, res, meta, md, html)
	if err != nil {
		c.errorf("%v", err)
		return ExitFailure
	}
	c.out.ReportPath = rp
	c.mainHistory(res, recs, store)
	report.GateTable(c.stdout, res)
	c.summary(md)
	c.annotate(res)
	c.setOutputs()

	post, create := ghaction.StickyPlan(c.in.CommentMode, res.Verdict == gate.Pass)
	switch {
	case post && c.gh.IsPullRequest() && c.in.Token == "":
		fmt.Fprintf(c.stderr, "slogate: github-token is empty: no pull request comment posted (the job summary and %s carry the result)\n", c.outDir)
	case post && c.gh.IsPullRequest():
		if code := c.comment(ctx, marker, md, create); code != ExitOK && c.in.FailOn != gate.FailOnNever {
			return code
		}
		c.setOutputs()
	}
	return c.verdictExit(res, c.in.FailOn)
}

// mainHistory adds a line to the history beside each judged baseline on a push to the
// main branch (SLOGATE_BASELINE_BASE, else main), so the trend shows main between
// refreshes; the workflow commits the files if it wants them kept. A failure to write it
// is said, and changes nothing else.
func (c *ci) mainHistory(res *gate.Result, recs []*result.Record, store gate.Store) {
	base := c.getenv("SLOGATE_BASELINE_BASE")
	if base == "" {
		base = "main"
	}
	if c.gh.EventName != "push" || c.gh.Ref != "refs/heads/"+base {
		return
	}
	for _, w := range res.Workloads {
		if w.BaselineCreated == nil || w.Verdict == gate.Error {
			continue
		}
		var group []*result.Record
		for _, r := range recs {
			if r.Workload == w.Name && gate.HardwareOf(r) == w.Hardware {
				group = append(group, r)
			}
		}
		if len(group) == 0 {
			continue
		}
		if p, err := c.appendHistory(c.f, store.Dir, group, gate.HistoryMain); err != nil {
			c.errorf("writing the history of %s on %s: %v", w.Name, w.Hardware, err)
		} else {
			fmt.Fprintf(c.stderr, "slogate: history line added to %s (commit it to keep it)\n", p)
		}
	}
}

// baselineRecord is the baseline of rec's workload and hardware as a record of its
// latency distributions, for the HTML report; nil when there is none.
func baselineRecord(store gate.Store, rec *result.Record) *result.Record {
	b, _, err := store.Lookup(rec.Workload, gate.HardwareOf(rec))
	if err != nil || b == nil {
		return nil
	}
	return b.DistributionRecord()
}

// writeReports writes gate.json, report-meta.json, comment.md and report.html into the
// results directory and returns the HTML report's path.
func writeReports(outDir string, res *gate.Result, meta *report.Meta, md string, html []byte) (string, error) {
	if err := writeJSON(filepath.Join(outDir, gateFile), res); err != nil {
		return "", err
	}
	if meta != nil {
		if err := writeJSON(filepath.Join(outDir, report.MetaFile), meta); err != nil {
			return "", err
		}
	}
	for name, data := range map[string][]byte{commentFile: []byte(md), htmlFile: html} {
		if err := fsafe.WriteFile(filepath.Join(outDir, name), data); err != nil {
			return "", err
		}
	}
	return filepath.Join(outDir, htmlFile), nil
}

// meta is what the comment says beyond the gate result: the commits compared, the
// commit that last changed each baseline file, the links.
func (c *ci) meta(ctx context.Context, marker string, res *gate.Result) *report.Meta {
	m := &report.Meta{
		Schema: report.MetaSchema, Generated: c.now().UTC().Truncate(time.Second), Config: c.in.Config,
		RunURL: c.gh.RunURL, HeadSHA: c.gh.HeadSHA, BaseSHA: c.gh.BaseSHA,
	}
	if c.gh.IsPullRequest() {
		m.Marker = marker
	}
	if c.gh.Owner != "" {
		m.RepoURL = strings.TrimSuffix(c.gh.ServerURL, "/") + "/" + c.gh.FullName()
	}
	for _, w := range res.Workloads {
		if w.BaselineCreated == nil || m.Origin(w.BaselinePath) != nil {
			continue
		}
		o := report.BaselineOrigin{Path: w.BaselinePath}
		fc, err := ghaction.LastCommit(ctx, c.app.git, "", w.BaselinePath)
		if err != nil {
			o.Error = err.Error()
		} else {
			o.Commit, o.Date, o.Shallow = fc.SHA, fc.Date, fc.Shallow
		}
		m.Baselines = append(m.Baselines, o)
	}
	return m
}

// comment posts md as the sticky comment; with create false it only updates an existing
// one (comment mode not-pass on a pass).
func (c *ci) comment(ctx context.Context, marker, md string, create bool) int {
	pub, err := ghaction.NewPublisher(c.in.Token, c.gh.APIURL, nil)
	if err != nil {
		return c.commentFailed(err)
	}
	pub.Owner, pub.Repo = c.gh.Owner, c.gh.Repo
	pub.Author = c.in.CommentAuthor
	var url string
	if create {
		url, _, err = pub.Upsert(ctx, c.gh.PRNumber, marker, md)
	} else {
		url, err = pub.UpdateSticky(ctx, c.gh.PRNumber, marker, md)
	}
	if url != "" {
		c.out.CommentURL = url
	}
	switch {
	case err == nil && url == "":
		fmt.Fprintf(c.stderr, "slogate: verdict pass and no comment yet: none posted (comment: %s)\n", c.in.CommentMode)
	case err == nil:
		fmt.Fprintf(c.stderr, "slogate: comment %s\n", url)
	case ghaction.IsWarning(err):
		c.act.Warningf("%s", err.Error()+" (the job summary and slogate-out/ carry the result)")
	default:
		return c.commentFailed(err)
	}
	return ExitOK
}

// commentFailed reports a comment that could not be posted. The verdict was reached and
// written before any call to GitHub: a warning, and the verdict decides the step, unless
// the workflow made the comment required (fail-on-comment-error).
func (c *ci) commentFailed(err error) int {
	msg := fmt.Sprintf("posting the pull request comment: %v (the job summary and %s carry the result)", err, c.outDir)
	if c.in.CommentRequired {
		c.errorf("%s", msg)
		return ExitFailure
	}
	c.act.Warningf("%s", msg)
	return ExitOK
}

func (c *ci) annotate(res *gate.Result) {
	var anns []ghaction.Annotation
	for _, w := range res.Workloads {
		for _, m := range w.Metrics {
			if m.Verdict == gate.Fail {
				anns = append(anns, ghaction.Annotation{Level: "error", Title: "slogate: " + w.Name + " " + m.Metric,
					Message: fmt.Sprintf("%s regressed: %s", m.Metric, ratioText(m)), File: c.in.Config})
			}
		}
		for _, d := range w.Drift {
			if d.Drifted() {
				level := "warning"
				if d.Verdict == gate.Fail {
					level = "error"
				}
				anns = append(anns, ghaction.Annotation{Level: level, Title: "slogate: " + w.Name + " drift",
					Message: fmt.Sprintf("%s changed from %q to %q (policy %s)", d.Field, d.Baseline, d.Candidate, d.Policy), File: c.in.Config})
			}
		}
		if w.Verdict == gate.Incomparable || w.Verdict == gate.Error {
			anns = append(anns, ghaction.Annotation{Level: "error", Title: "slogate: " + w.Name + " " + string(w.Verdict), Message: w.Reason, File: c.in.Config})
		}
	}
	ghaction.Annotate(c.act, anns)
}

func ratioText(m gate.MetricResult) string {
	if m.Ratio == nil {
		return "no ratio"
	}
	s := fmt.Sprintf("%+.1f%% (tolerance %.0f%%)", 100*(*m.Ratio-1), 100*m.Tolerance)
	if m.Lo != nil && m.Hi != nil {
		s += fmt.Sprintf(", interval [%+.1f%%, %+.1f%%]", 100*(*m.Lo-1), 100*(*m.Hi-1))
	}
	return s
}

func (c *ci) modeBaseline(ctx context.Context) int {
	var written []string
	code := ExitOK
	if n := c.in.CalibrateRuns; n > 1 {
		// A calibration: n A/A runs become the baseline, with each gated metric's
		// run-to-run spread stored beside them.
		if k := c.in.CalibrateRestartEvery; k > 1 && c.f.Target.Start == nil {
			c.errorf("input calibrate-restart-every %d: %s has no target.start, so slogate cannot start the engine; add target.start, or leave the input empty (the runs then share the running engine)", k, c.f.Path)
			c.out.Verdict = "error"
			c.setOutputs()
			return ExitBadInput
		}
		written, code = c.calibrate(ctx, c.f, runParams{config: c.f.Path, target: c.in.Target, outDir: c.outDir}, calibrateParams{runs: n, minRuns: c.in.CalibrateMinRuns, restartEvery: max(c.in.CalibrateRestartEvery, 1)}, baselineStore(c.f, ""))
	} else {
		recs, rc := c.run(ctx)
		if rc != ExitOK || len(recs) == 0 {
			c.out.Verdict = "error"
			c.setOutputs()
			return max(rc, ExitFailure)
		}
		sweeps, _ := result.ReadSweepsDir(c.outDir)
		written, code = c.updateAllBaselines(c.f, recs, sweeps, nil, c.outDir, baselineStore(c.f, ""))
	}
	if code != ExitOK {
		c.out.Verdict = "error"
		c.setOutputs()
		return code
	}
	c.out.Verdict = "baseline"
	md := "## slogate: baselines written\n\n" + bulletList(written) + "\n"
	c.summary(md)
	c.setOutputs()
	if c.in.Token == "" || c.gh.IsPullRequest() || c.gh.Repo == "" {
		return ExitOK
	}
	// Outside a pull request (a release, a schedule), propose the new baselines.
	files := map[string][]byte{}
	for _, p := range written {
		data, err := fsafe.ReadFile(p)
		if err != nil {
			c.errorf("%v", err)
			return ExitFailure
		}
		files[filepath.ToSlash(p)] = data
	}
	pub, err := ghaction.NewPublisher(c.in.Token, c.gh.APIURL, nil)
	if err != nil {
		return c.commentFailed(err)
	}
	pub.Owner, pub.Repo = c.gh.Owner, c.gh.Repo
	pub.Author = c.in.CommentAuthor
	base := c.getenv("SLOGATE_BASELINE_BASE")
	if base == "" {
		base = "main"
	}
	sha := c.gh.SHA
	if len(sha) > 12 {
		sha = sha[:12]
	}
	url, err := pub.OpenBaselinePR(ctx, base, "slogate/baselines-"+sha, files, "slogate: refresh baselines", md)
	if err != nil {
		c.errorf("opening the baseline pull request: %v (the baselines are written in %s)", err, baselineStore(c.f, "").Dir)
		return ExitFailure
	}
	fmt.Fprintf(c.stderr, "slogate: baseline pull request %s\n", url)
	return ExitOK
}

func bulletList(items []string) string {
	var b strings.Builder
	for _, s := range items {
		fmt.Fprintf(&b, "- `%s`\n", s)
	}
	return b.String()
}

func (c *ci) modeAudit(ctx context.Context) int {
	au, code := c.audit(ctx, c.f, baselineStore(c.f, ""), "")
	if au == nil {
		c.out.Verdict = "error"
		c.setOutputs()
		return code
	}
	var b bytes.Buffer
	report.AuditTable(&b, au)
	c.stdout.Write(b.Bytes())
	c.out.Verdict = string(au.Verdict)
	c.summary("## slogate: baseline audit\n\n```\n" + b.String() + "```\n")
	c.setOutputs()
	if au.Verdict == gate.Fail || au.Verdict == gate.Incomparable {
		return VerdictExit(&gate.Result{Verdict: au.Verdict}, c.in.FailOn)
	}
	return ExitOK
}

func (c *ci) summary(md string) {
	if err := ghaction.WriteSummary(c.act, md); err != nil && !errors.Is(err, ghaction.ErrNoEnvFile) {
		c.errorf("writing the job summary: %v", err)
	}
}

func (c *ci) setOutputs() {
	if err := ghaction.SetOutputs(c.act, c.out); err != nil && !errors.Is(err, ghaction.ErrNoEnvFile) {
		c.errorf("writing the outputs: %v", err)
	}
}

// fleetSection computes the capacity section of the comment from the first workload's
// sweeps: the candidate's (a sweep record among the results) and the baseline's (the
// sweep baseline beside the run baseline), each priced at its max_sustainable_rps. A
// plain run's rate is what the workload offered, not the capacity the SLO allows, so it
// is never priced: a side without a sweep says what is missing instead of a figure.
//
// baseline and candidate operating points, when the config has a capacity section.
func fleetSection(f *workload.File, res *gate.Result, store gate.Store, sweeps []*result.Sweep) *report.FleetSection {
	if f.Capacity == nil {
		return nil
	}
	t := capacity.TrafficFrom(f.Capacity)
	for _, w := range res.Workloads {
		if len(w.BaselineSummaries) == 0 || len(w.CandidateSummaries) == 0 {
			continue
		}
		fs := &report.FleetSection{Workload: w.Name, PeakRPS: t.PeakRPS}
		price := func(side string, sw *result.Sweep, missing string) (*capacity.Worksheet, string) {
			if sw == nil {
				return nil, side + ": " + missing
			}
			m, err := capacity.FromSweep(sw)
			if err == nil {
				var ws *capacity.Worksheet
				if ws, err = m.Worksheet(t); err == nil {
					return ws, ""
				}
			}
			return nil, side + ": " + err.Error()
		}
		var candSweep *result.Sweep
		for _, sw := range sweeps {
			if sw.Workload == w.Name && (w.Hardware == "" || gate.SweepHardwareOf(sw) == w.Hardware) {
				candSweep = sw
			}
		}
		baseSweep, _, err := store.LookupSweep(w.Name, w.Hardware)
		if err != nil {
			baseSweep = nil
		}
		fs.Baseline, fs.BaselineErr = price("baseline", baseSweep, fmt.Sprintf("no sweep baseline (%s): a run's rate is what the workload offered, not the capacity its SLO allows; commit one with `slogate sweep` and `slogate baseline update`", store.SweepPath(w.Name, w.Hardware)))
		fs.Candidate, fs.CandErr = price("candidate", candSweep, "no sweep among the results: a run's rate is what the workload offered, not the capacity its SLO allows; run `slogate sweep` to price the fleet")
		if fs.Baseline != nil && fs.Candidate != nil {
			fs.Delta = capacity.Compare(fs.Baseline, fs.Candidate)
		}
		return fs
	}
	return nil
}

// attainmentTarget is the SLO attainment target of the named workload (0 if unknown).
func attainmentTarget(f *workload.File, name string) float64 {
	for _, w := range f.Workloads {
		if w.Name == name {
			return w.SLO.Attainment
		}
	}
	return 0
}

// gpuMinutes is what a job's records held the GPU for, to the hundredth of a minute.
func gpuMinutes(recs []*result.Record) float64 {
	return math.Round(plan.Used(recs)*100) / 100
}
