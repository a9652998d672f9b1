package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slogate/slogate/gate"
)

// verdictWords is a verdict as a reader says it.
func verdictWords(v gate.Verdict) string {
	if v == gate.NoBaseline {
		return "no baseline"
	}
	return string(v)
}

// byAttention orders workloads for reading: those without a baseline first (nothing was
// compared for them, and the fix is one command), then the others in the gate's order.
func byAttention(ws []gate.WorkloadResult) []gate.WorkloadResult {
	out := slices.Clone(ws)
	slices.SortStableFunc(out, func(a, b gate.WorkloadResult) int {
		ra, rb := 1, 1
		if a.Verdict == gate.NoBaseline {
			ra = 0
		}
		if b.Verdict == gate.NoBaseline {
			rb = 0
		}
		return ra - rb
	})
	return out
}

// comparedLine says which commits were compared and links the evidence.
func (c Comment) comparedLine(b *strings.Builder) {
	m := c.Meta
	var parts []string
	if m != nil && m.HeadSHA != "" {
		s := "head " + c.commitLink(m.HeadSHA)
		if m.BaseSHA != "" {
			s += " against base " + c.commitLink(m.BaseSHA)
		}
		parts = append(parts, "Compared "+s)
	}
	if u := c.reportURL(); u != "" {
		parts = append(parts, "[HTML report]("+u+")")
	}
	if c.RunURL != "" {
		parts = append(parts, "[workflow run]("+c.RunURL+")")
	}
	if len(parts) > 0 {
		b.WriteString(strings.Join(parts, " · ") + "\n\n")
	}
}

// reportURL links the HTML report: the artifact when its URL is known, else the run's
// artifacts.
func (c Comment) reportURL() string {
	if c.Meta != nil && c.Meta.ReportURL != "" {
		return c.Meta.ReportURL
	}
	if c.RunURL != "" {
		return c.RunURL + "#artifacts"
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// commitLink shows a commit, linked when the repository is known. A SHA is checked to be
// hex, so it cannot carry Markdown.
func (c Comment) commitLink(sha string) string {
	if !isHex(sha) {
		return code(sha)
	}
	if c.Meta != nil && c.Meta.RepoURL != "" {
		return fmt.Sprintf("[`%s`](%s/commit/%s)", short(sha), c.Meta.RepoURL, sha)
	}
	return "`" + short(sha) + "`"
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func (c Comment) configPath() string {
	switch {
	case c.Meta != nil && c.Meta.Config != "":
		return c.Meta.Config
	case c.Gate != nil && c.Gate.Config != "":
		return c.Gate.Config
	}
	return "slogate.yaml"
}

func (c Comment) resultsDir() string {
	if c.ResultsDir != "" {
		return c.ResultsDir
	}
	return "slogate-out"
}

// refreshHow is how to make the run records the workload's new baseline.
func (c Comment) refreshHow(w gate.WorkloadResult) string {
	return fmt.Sprintf("run `slogate baseline update -c %s -r %s` on %s hardware and commit %s (in the Action: `mode: baseline`, which opens a pull request with it)",
		mdInline(c.configPath()), mdInline(c.resultsDir()), code(w.Hardware), code(w.BaselinePath))
}

// mdInline puts a path of ours inside inline code; a backtick in it is replaced so that
// it cannot close the span.
func mdInline(s string) string { return strings.ReplaceAll(s, "`", "'") }

// nextSteps says, for the workload's verdict, what the reader should do.
func (c Comment) nextSteps(b *strings.Builder, w gate.WorkloadResult) {
	if w.BlocksRun > 0 {
		c.nextStepsAB(b, w)
		return
	}
	switch w.Verdict {
	case gate.Fail:
		whatRegressed(b, w)
		fmt.Fprintf(b, "**Next:** fix the regression; if it is an accepted trade-off, make this run the baseline: %s.\n\n", c.refreshHow(w))
	case gate.Improved:
		fmt.Fprintf(b, "**Next:** the whole interval is better than the tolerance; lock the improvement in so that a later regression is measured from here: %s.\n\n", c.refreshHow(w))
	case gate.Incomparable:
		if w.BaselineHash != "" && w.BaselineHash != w.WorkloadHash {
			s := fmt.Sprintf("**What changed:** the definition of workload %s in %s (what is sent: lengths, arrivals, seed, model, API); workload hash %s in the baseline, %s now. Nothing was compared.",
				code(w.Name), code(c.configPath()), code(w.BaselineHash), code(w.WorkloadHash))
			if len(w.Changed) > 0 {
				var keys []string
				for _, ch := range w.Changed {
					keys = append(keys, code(ch))
				}
				s = fmt.Sprintf("**What changed:** the definition of workload %s in %s since its baseline: %s. Nothing was compared.",
					code(w.Name), code(c.configPath()), strings.Join(keys, ", "))
			}
			if o := c.Meta.Origin(w.BaselinePath); o != nil && isHex(o.Commit) {
				s += fmt.Sprintf(" See `git diff %s -- %s`.", short(o.Commit), mdInline(c.configPath()))
			}
			b.WriteString(s + "\n\n")
		} else {
			b.WriteString("**What changed:** a rule could not compare the run with its baseline (see the warnings below). Nothing was shown either way.\n\n")
		}
		fmt.Fprintf(b, "**Next:** if the change is intended, make a new baseline from this run: %s.\n\n", c.refreshHow(w))
	case gate.NoBaseline:
		fmt.Fprintf(b, "**Next:** create the baseline: %s. If you expected one to exist, check `gate.baselines` in %s: it was looked for at %s.\n\n",
			c.refreshHow(w), code(c.configPath()), code(w.BaselinePath))
	case gate.Error:
		b.WriteString("**Not judged:** the gate refused this run (see above); no verdict on the change was given. **Next:** fix the cause and rerun the workflow.\n\n")
	}
}

// nextStepsAB says what an A/B job's verdict lets a team do. Both sides were measured in
// the job, so there is no baseline file to refresh: what the base branch runs is the
// baseline of the next job.
func (c Comment) nextStepsAB(b *strings.Builder, w gate.WorkloadResult) {
	switch w.Verdict {
	case gate.Fail:
		whatRegressed(b, w)
		b.WriteString("**Next:** fix the regression and push again. If it is an accepted trade-off, merge it past the check: an A/B job keeps no baseline, and once this merges the next job measures against it.\n\n")
	case gate.Improved:
		b.WriteString("**Next:** nothing to commit: the base and this head were both measured in the job. Once this merges, later jobs measure against the improvement.\n\n")
	case gate.Incomparable:
		b.WriteString("**Next:** the two sides could not be compared (see the warnings below): give the base and the head the same workload, or judge this change with a committed baseline (`mode: gate`).\n\n")
	case gate.Inconclusive:
		b.WriteString("**Next:** the blocks did not decide every rule: more blocks (`blocks`) or a longer workload narrow the interval; `slogate plan` says how many.\n\n")
	case gate.Error:
		b.WriteString("**Not judged:** the gate refused this job (see above); no verdict on the change was given. **Next:** fix the cause and rerun the workflow.\n\n")
	}
}

// whatRegressed lists what failed a workload: each failed rule with its change and
// interval, and each environment field whose drift policy is fail.
func whatRegressed(b *strings.Builder, w gate.WorkloadResult) {
	var what []string
	for _, m := range w.Metrics {
		if m.Verdict == gate.Fail {
			what = append(what, regression(m))
		}
	}
	for _, d := range w.Drift {
		if d.Verdict == gate.Fail {
			what = append(what, fmt.Sprintf("%s changed from %s to %s (drift policy fail)", esc(d.Field), code(d.Baseline), code(d.Candidate)))
		}
	}
	if len(what) > 0 {
		b.WriteString("**What regressed:**\n\n")
		for _, s := range what {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
}

// regression says what regressed, by how much, with the interval.
func regression(m gate.MetricResult) string {
	s := fmt.Sprintf("`%s` %s → %s", m.Metric, val(m.Baseline, m.Unit), val(m.Candidate, m.Unit))
	if m.Ratio != nil {
		s += ": " + delta(m.Ratio)
		if iv := interval(m); iv != "—" {
			s += ", interval " + iv
		} else if m.Method == gate.MethodExact {
			s += " (exact)"
		}
		if m.Tolerance > 0 {
			s += ", beyond the tolerance " + tolerance(gate.MetricResult{Tolerance: m.Tolerance, Direction: m.Direction})
		}
	}
	for _, x := range m.Warnings {
		if strings.HasPrefix(x, "absolute limit: ") {
			s += "; " + esc(x)
		}
	}
	return s
}

// comparedWith lists what the run was compared with: the baseline file and where it came
// from, its history, the hardware key, the engine and the model on each side.
func (c Comment) comparedWith(b *strings.Builder, w gate.WorkloadResult) {
	b.WriteString("**Compared with**\n\n")
	if w.BlocksRun > 0 {
		fmt.Fprintf(b, "- Baseline: the base's blocks, measured in this job beside the head's (%d blocks in all; no baseline file)\n", w.BlocksRun)
		c.comparedSides(b, w)
		return
	}
	file := code(w.BaselinePath)
	switch {
	case w.BaselineCreated != nil:
		file += ", created " + w.BaselineCreated.UTC().Format("2006-01-02 15:04 UTC")
	case w.Verdict == gate.NoBaseline || w.Verdict == gate.Error:
		file += " (not found)"
		if w.Verdict == gate.Error {
			file = code(w.BaselinePath)
		}
	}
	if o := c.Meta.Origin(w.BaselinePath); o != nil {
		switch {
		case o.Commit != "":
			file += "; last changed in " + c.commitLink(o.Commit)
			if !o.Date.IsZero() {
				file += " on " + o.Date.UTC().Format("2006-01-02")
				if !c.Generated.IsZero() && c.Generated.After(o.Date) {
					file += ", " + gateAge(c.Generated.Sub(o.Date)) + " ago"
				}
			}
			if o.Shallow {
				file += " (shallow clone: the oldest commit fetched; the file may be older)"
			}
		case o.Error != "":
			file += "; last change unknown (" + esc(o.Error) + ")"
		}
	}
	fmt.Fprintf(b, "- Baseline file: %s\n", file)
	if w.HistoryPath != "" {
		link := code(w.HistoryPath)
		if c.Meta != nil && c.Meta.RepoURL != "" && isHex(firstOf(c.Meta.BaseSHA, c.Meta.HeadSHA)) {
			link = fmt.Sprintf("[%s](%s/blob/%s/%s)", escHTML(w.HistoryPath), c.Meta.RepoURL, firstOf(c.Meta.BaseSHA, c.Meta.HeadSHA), urlPath(w.HistoryPath))
		}
		fmt.Fprintf(b, "- History: %s (the trend is charted in the HTML report)\n", link)
	}
	c.comparedSides(b, w)
}

// comparedSides lists the hardware key and the engine and the model on each side.
func (c Comment) comparedSides(b *strings.Builder, w gate.WorkloadResult) {
	fmt.Fprintf(b, "- Hardware key: %s\n", code(w.Hardware))
	base, cand := c.sides(w)
	for _, f := range []struct{ label, name, version string }{
		{"Engine", "engine.name", "engine.version"},
		{"Model", "model.id", "model.revision"},
	} {
		bs := strings.TrimSpace(base[f.name] + " " + base[f.version])
		cs := strings.TrimSpace(cand[f.name] + " " + cand[f.version])
		if bs == "" && cs == "" {
			continue
		}
		fmt.Fprintf(b, "- %s: baseline %s, candidate %s\n", f.label, code(bs), code(cs))
	}
	b.WriteString("\n")
}

// sides are the environments of the baseline and the candidate: from the drift, which
// holds every field of either side, else (no baseline) from the candidate's record.
func (c Comment) sides(w gate.WorkloadResult) (base, cand map[string]string) {
	base, cand = map[string]string{}, map[string]string{}
	for _, d := range w.Drift {
		base[d.Field], cand[d.Field] = d.Baseline, d.Candidate
	}
	if len(w.Drift) == 0 {
		if recs := c.Runs[w.Name]; len(recs) > 0 {
			for k, v := range recs[0].Environment {
				cand[k] = v
			}
		}
	}
	return base, cand
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// urlPath makes a relative file path usable in a link: slashes kept, anything else that
// is not plainly safe percent-encoded.
func urlPath(p string) string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(p, `\`, "/") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("/._-", r):
			b.WriteRune(r)
		default:
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
	}
	return strings.TrimPrefix(b.String(), "./")
}

// warningLines are a workload's warnings, one per cause: a text that several rules give
// (a calibration's, a thin tail's) is shown once, naming every rule it affects, and the
// baseline's and the candidate's same warning is one line naming both sides.
func warningLines(w gate.WorkloadResult) []string {
	type cause struct {
		text  string
		rules []string
		sides []string
	}
	var causes []*cause
	add := func(rule, text string) {
		side := ""
		for _, s := range []string{"baseline", "candidate"} {
			if t, ok := strings.CutPrefix(text, s+": "); ok {
				side, text = s, t
			}
		}
		i := slices.IndexFunc(causes, func(c *cause) bool { return c.text == text })
		if i < 0 {
			causes = append(causes, &cause{text: text})
			i = len(causes) - 1
		}
		c := causes[i]
		if rule != "" && !slices.Contains(c.rules, rule) {
			c.rules = append(c.rules, rule)
		}
		if side != "" && !slices.Contains(c.sides, side) {
			c.sides = append(c.sides, side)
		}
	}
	for _, m := range w.Metrics {
		for _, x := range m.Warnings {
			add(m.Metric, x)
		}
	}
	for _, x := range w.Warnings {
		add("", x)
	}
	out := make([]string, 0, len(causes))
	for _, c := range causes {
		s := c.text
		if len(c.sides) > 0 {
			s = strings.Join(c.sides, " and ") + ": " + s
		}
		if len(c.rules) > 0 {
			s = strings.Join(c.rules, ", ") + ": " + s
		}
		out = append(out, s)
	}
	return out
}
