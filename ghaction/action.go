// Package ghaction owns slogate's GitHub side: the Action's inputs, outputs, step summary
// and annotations (through go-githubactions, with the environment and the writer handed
// in), the workflow context read from the runner's environment and event payload, the
// refusal to run a fork's pull request on a self-hosted runner, the one sticky pull-request
// comment, and the pull request that refreshes committed baselines.
//
// It knows nothing of statistics: it receives Markdown that is already rendered and plain
// values that are already formatted.
package ghaction

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/slogate/slogate/gate"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sethvargo/go-githubactions"
)

// Inputs are the Action's inputs (action.yml), validated.
type Inputs struct {
	Config           string // path to slogate.yaml
	Mode             string // gate | baseline | audit | run | merge
	Target           string // the engine URL or target name the workload is sent to
	Token            string // github-token; never printed
	FailOn           string // fail | inconclusive | warn | never (gate.FailOns)
	WorkingDirectory string
	Comment          bool   // post the sticky pull-request comment at all (CommentMode is not never)
	CommentMode      string // always | not-pass | never: see CommentModes
	AllowForkPRs     bool   // run the workload on a pull request from a fork
	// Shard ("i/n") and StartAt (a wall-clock time) make the run one shard of a run
	// split over several runners; Shards is the directory of shard records that mode
	// merge merges and gates.
	Shard, StartAt, Shards string
	// CommentAuthor is the login whose comment is the sticky one, for a token whose
	// identity the API does not give (comment-author; "" finds it from the token).
	CommentAuthor string
	// CommentRequired makes a failure to post the comment fail the step
	// (fail-on-comment-error); otherwise it is a warning and the verdict decides.
	CommentRequired bool
	// CalibrateRuns > 1 makes mode baseline a calibration: that many A/A runs, stored
	// with the baseline as each gated metric's run-to-run spread (slogate calibrate).
	CalibrateRuns int
	// CalibrateMinRuns makes that calibration sequential (slogate calibrate --min-runs);
	// 0: every run.
	CalibrateMinRuns int
	// CalibrateRestartEvery starts the engine afresh every that many runs of the
	// calibration (slogate calibrate --restart-every; target.start); 0: every run.
	CalibrateRestartEvery int
	// RestartEvery starts the engine afresh every that many trials of a workload in
	// modes run and gate (slogate run --restart-every; target.start); 0: one start.
	RestartEvery int
	// Blocks is the number of A/B blocks of mode ab (slogate ab --blocks); 0: 16.
	Blocks int
	// MinBlocks makes mode ab sequential (slogate ab --min-blocks); 0: every block runs.
	MinBlocks int
	// FutilityFrom lets mode ab stop undecidable jobs (slogate ab --futility-from); 0:
	// never.
	FutilityFrom int
	// FinalShare is the share of the error rate kept for the fixed interval that judges
	// a sequential mode ab job at its maximum (slogate ab --final-share); 0: none.
	FinalShare float64
	// MinRepeats makes a candidate's repeats in mode gate sequential (slogate run
	// --min-repeats); 0: every repeat runs.
	MinRepeats int
}

// Valid values of the enumerated inputs, in the order the errors list them.
var (
	Modes   = []string{"gate", "baseline", "audit", "run", "merge", "ab"}
	FailOns = gate.FailOns
	// CommentModes say when the sticky comment is posted: always; not-pass only when the
	// verdict is not a pass (an existing comment is still updated when the state returns
	// to pass, so it never shows a stale failure); never. true and false, the input's
	// older values, mean always and never.
	CommentModes = []string{CommentAlways, CommentNotPass, CommentNever}
	// The values the Actions toolkit's getBooleanInput accepts (YAML 1.2 core schema);
	// "yes", "1" and the like are rejected there too, so a workflow that works with one
	// action behaves the same with this one.
	boolTrue  = []string{"true", "True", "TRUE"}
	boolFalse = []string{"false", "False", "FALSE"}
)

// ReadInputs reads and validates every input; all problems are reported at once.
//
// go-githubactions looks an input up as INPUT_<NAME> with the name upper-cased and
// spaces (not hyphens) turned into underscores, as the runner sets them: the token is
// read from INPUT_GITHUB-TOKEN.
func ReadInputs(a *githubactions.Action) (Inputs, error) {
	in := Inputs{
		Config:           a.GetInput("config"),
		Mode:             a.GetInput("mode"),
		Target:           a.GetInput("target"),
		Token:            a.GetInput("github-token"),
		FailOn:           a.GetInput("fail-on"),
		WorkingDirectory: a.GetInput("working-directory"),
		Shard:            a.GetInput("shard"),
		StartAt:          a.GetInput("start-at"),
		Shards:           a.GetInput("shards"),
		CommentAuthor:    a.GetInput("comment-author"),
	}
	if in.Config == "" {
		in.Config = "slogate.yaml"
	}
	if in.Mode == "" {
		in.Mode = "gate"
	}
	if in.FailOn == "" {
		in.FailOn = gate.DefaultFailOn
	}
	var errs []error
	if err := oneOf("mode", in.Mode, Modes); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf("fail-on", in.FailOn, FailOns); err != nil {
		errs = append(errs, err)
	}
	if in.Mode == "merge" && in.Shards == "" {
		errs = append(errs, errors.New("input mode: merge needs the input shards: the directory the shard jobs' records were downloaded to"))
	}
	var err error
	if in.CommentMode, err = commentInput(a); err != nil {
		errs = append(errs, err)
	}
	in.Comment = in.CommentMode != CommentNever
	if in.AllowForkPRs, err = boolInput(a, "allow-fork-prs", false); err != nil {
		errs = append(errs, err)
	}
	if in.CommentRequired, err = boolInput(a, "fail-on-comment-error", false); err != nil {
		errs = append(errs, err)
	}
	if in.CalibrateRuns, err = intInput(a, "calibrate-runs", 0, func(n int) bool { return n == 0 || n >= 2 }, "0 (no calibration) or at least 2"); err != nil {
		errs = append(errs, err)
	}
	if in.CalibrateMinRuns, err = intInput(a, "calibrate-min-runs", 0, func(n int) bool { return n == 0 || (n >= 3 && n <= in.CalibrateRuns) }, "0 (every run) or from 3 to calibrate-runs"); err != nil {
		errs = append(errs, err)
	}
	if in.CalibrateRestartEvery, err = intInput(a, "calibrate-restart-every", 0, func(n int) bool { return n == 0 || (n >= 1 && n <= in.CalibrateRuns) }, "0 (an engine start every run) or from 1 to calibrate-runs"); err != nil {
		errs = append(errs, err)
	}
	if in.RestartEvery, err = intInput(a, "restart-every", 0, func(n int) bool { return n >= 0 }, "0 (every trial on one engine start) or a number of trials, at least 1"); err != nil {
		errs = append(errs, err)
	}
	if in.Blocks, err = intInput(a, "blocks", 0, func(n int) bool { return n >= 4 && n%4 == 0 }, "a multiple of 4, at least 4"); err != nil {
		errs = append(errs, err)
	}
	if in.MinBlocks, err = intInput(a, "min-blocks", 0, func(n int) bool { return n == 0 || (n >= 4 && n%2 == 0 && n <= cmp.Or(in.Blocks, 16)) }, "an even number from 4 to blocks (16 when blocks is empty)"); err != nil {
		errs = append(errs, err)
	}
	if in.FutilityFrom, err = intInput(a, "futility-from", 0, func(n int) bool {
		return n == 0 || (n >= 8 && n%2 == 0 && n >= in.MinBlocks && in.MinBlocks > 0 && n < cmp.Or(in.Blocks, 16))
	}, "0 (never) or an even block from 8 and from min-blocks to below blocks (16 when blocks is empty)"); err != nil {
		errs = append(errs, err)
	}
	if in.FinalShare, err = floatInput(a, "final-share", func(f float64) bool {
		return f == 0 || (f > 0 && f <= 0.9 && in.MinBlocks > 0 && in.MinBlocks < cmp.Or(in.Blocks, 16))
	}, "0 (none) or a share of the error rate up to 0.9, with min-blocks below blocks (16 when blocks is empty)"); err != nil {
		errs = append(errs, err)
	}
	if in.MinRepeats, err = intInput(a, "min-repeats", 0, func(n int) bool { return n >= 0 }, "0 (every repeat runs) or the fewest repeats after which the candidate may stop, 1 or more"); err != nil {
		errs = append(errs, err)
	}
	return in, errors.Join(errs...)
}

// intInput reads a whole-number input, def when empty; valid says what ok accepts.
func intInput(a *githubactions.Action, name string, def int, ok func(int) bool, valid string) (int, error) {
	v := a.GetInput(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !ok(n) {
		return def, fmt.Errorf("input %q: invalid value %q; valid values: %s", name, v, valid)
	}
	return n, nil
}

// floatInput reads a number input, 0 when empty; valid says what ok accepts.
func floatInput(a *githubactions.Action, name string, ok func(float64) bool, valid string) (float64, error) {
	v := a.GetInput(name)
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || !ok(f) {
		return 0, fmt.Errorf("input %q: invalid value %q; valid values: %s", name, v, valid)
	}
	return f, nil
}

// Comment modes.
const (
	CommentAlways  = "always"
	CommentNotPass = "not-pass"
	CommentNever   = "never"
)

func commentInput(a *githubactions.Action) (string, error) {
	v := a.GetInput("comment")
	switch {
	case v == "":
		return CommentAlways, nil
	case contains(CommentModes, v):
		return v, nil
	case contains(boolTrue, v):
		return CommentAlways, nil
	case contains(boolFalse, v):
		return CommentNever, nil
	}
	return CommentAlways, fmt.Errorf("input %q: invalid value %q; valid values: %s (true and false are the older spellings of always and never)",
		"comment", v, quoteList(CommentModes))
}

// StickyPlan says what to do with the sticky comment under a comment mode: post it (create
// or update), update it only if it exists, or leave it alone. passed is whether the
// verdict is a plain pass.
func StickyPlan(mode string, passed bool) (post, create bool) {
	switch mode {
	case CommentNever:
		return false, false
	case CommentNotPass:
		// A pass creates nothing, but an existing comment (from an earlier failing push) is
		// updated so that it does not keep saying "fail".
		return true, !passed
	}
	return true, true
}

func oneOf(name, v string, valid []string) error {
	for _, ok := range valid {
		if v == ok {
			return nil
		}
	}
	return fmt.Errorf("input %q: invalid value %q; valid values: %s", name, v, quoteList(valid))
}

func boolInput(a *githubactions.Action, name string, def bool) (bool, error) {
	v := a.GetInput(name)
	switch {
	case v == "":
		return def, nil
	case contains(boolTrue, v):
		return true, nil
	case contains(boolFalse, v):
		return false, nil
	}
	return def, fmt.Errorf("input %q: invalid value %q; valid values: %s",
		name, v, quoteList(append(append([]string{}, boolTrue...), boolFalse...)))
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// Outputs are the step outputs, already formatted by the caller.
type Outputs struct {
	Verdict       string // pass | warn | fail | improved | error
	Goodput       string
	ITLP99ms      string
	KVConcurrency string
	ResultsDir    string
	ReportPath    string
	CommentURL    string
}

// ErrNoEnvFile reports that the runner did not name the file a command writes to
// (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY): the tool is not running inside Actions. Callers
// running locally may ignore it.
var ErrNoEnvFile = errors.New("not running in GitHub Actions")

// The delimiter go-githubactions v1.3.1 writes around every value in GITHUB_OUTPUT. It
// is fixed, not random, so a value holding it on a line of its own would end the value
// early and could forge further outputs: such values are refused.
const outputDelimiter = "_GitHubActionsFileCommandDelimeter_"

// SetOutputs writes every output, in a fixed order, to the file named by GITHUB_OUTPUT.
// Empty values are written too, so that a downstream step sees each output defined.
func SetOutputs(a *githubactions.Action, o Outputs) error {
	pairs := [][2]string{
		{"verdict", o.Verdict},
		{"goodput", o.Goodput},
		{"itl-p99-ms", o.ITLP99ms},
		{"kv-concurrency", o.KVConcurrency},
		{"results-dir", o.ResultsDir},
		{"report-path", o.ReportPath},
		{"comment-url", o.CommentURL},
	}
	if a.Getenv("GITHUB_OUTPUT") == "" {
		return fmt.Errorf("setting outputs: GITHUB_OUTPUT is not set: %w", ErrNoEnvFile)
	}
	for _, p := range pairs {
		if strings.Contains(p[1], outputDelimiter) {
			return fmt.Errorf("output %q: value contains the file-command delimiter %q", p[0], outputDelimiter)
		}
	}
	for _, p := range pairs {
		if err := recoverPanic(func() { a.SetOutput(p[0], p[1]) }); err != nil {
			return fmt.Errorf("output %q: %w", p[0], err)
		}
	}
	return nil
}

// MaxSummaryBytes is GitHub's limit on one step's job summary (1 MiB); a larger summary
// is dropped by the runner with an error, so it is refused here with a clearer one.
const MaxSummaryBytes = 1 << 20

// WriteSummary appends markdown to the job summary (the file named by
// GITHUB_STEP_SUMMARY).
func WriteSummary(a *githubactions.Action, markdown string) error {
	if a.Getenv("GITHUB_STEP_SUMMARY") == "" {
		return fmt.Errorf("writing the job summary: GITHUB_STEP_SUMMARY is not set: %w", ErrNoEnvFile)
	}
	if len(markdown) > MaxSummaryBytes {
		return fmt.Errorf("writing the job summary: %d bytes is over GitHub's limit of %d", len(markdown), MaxSummaryBytes)
	}
	if !utf8.ValidString(markdown) {
		return errors.New("writing the job summary: the Markdown is not valid UTF-8")
	}
	if err := recoverPanic(func() { a.AddStepSummary(markdown) }); err != nil {
		return fmt.Errorf("writing the job summary: %w", err)
	}
	return nil
}

// go-githubactions panics when a file command cannot be written; a benchmark result must
// not be lost to a panic in the last step, so the panic becomes an error.
func recoverPanic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// Annotation is one workflow annotation. Level is error, warning or notice; an unknown
// level is shown as a warning so that it is never lost.
type Annotation struct {
	Level   string
	Title   string
	Message string
	File    string // path relative to the repository root; optional
	Line    int    // 1-based; used only with File
}

// Annotate prints the annotations as workflow commands on the Action's writer.
// go-githubactions escapes the message (%, CR, LF) and the properties (also ':' and ','),
// so text that came from the server under test cannot end the command early or inject
// another one.
func Annotate(a *githubactions.Action, anns []Annotation) {
	for _, an := range anns {
		fields := map[string]string{}
		if an.Title != "" {
			fields["title"] = an.Title
		}
		if an.File != "" {
			fields["file"] = an.File
			if an.Line > 0 {
				fields["line"] = fmt.Sprint(an.Line)
			}
		}
		b := a
		if len(fields) > 0 {
			b = a.WithFieldsMap(fields)
		}
		// The message goes through "%s": the library formats with Sprintf, and a '%'
		// in a server's error text must not be read as a verb.
		switch an.Level {
		case "error":
			b.Errorf("%s", an.Message)
		case "notice":
			b.Noticef("%s", an.Message)
		default:
			b.Warningf("%s", an.Message)
		}
	}
}
