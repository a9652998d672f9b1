package ghaction

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sethvargo/go-githubactions"
)

func newAction(env map[string]string, w *bytes.Buffer) *githubactions.Action {
	return githubactions.New(githubactions.WithGetenv(envFunc(env)), githubactions.WithWriter(w))
}

func TestReadInputs(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Inputs
	}{
		// Nothing set: the documented defaults.
		{"defaults", map[string]string{},
			Inputs{Config: "slogate.yaml", Mode: "gate", FailOn: "inconclusive", Comment: true, CommentMode: "always"}},
		// Everything set; the token input keeps its hyphen in the variable name, as the
		// runner sets it; surrounding whitespace from YAML block scalars is trimmed.
		{"all set", map[string]string{
			"INPUT_CONFIG":            "bench/slogate.yaml",
			"INPUT_MODE":              "baseline",
			"INPUT_TARGET":            " http://127.0.0.1:8000 \n",
			"INPUT_GITHUB-TOKEN":      "ghs_x",
			"INPUT_COMMENT":           "false",
			"INPUT_FAIL-ON":           "warn",
			"INPUT_ALLOW-FORK-PRS":    "TRUE",
			"INPUT_WORKING-DIRECTORY": "serving",
		}, Inputs{Config: "bench/slogate.yaml", Mode: "baseline", Target: "http://127.0.0.1:8000", Token: "ghs_x",
			FailOn: "warn", WorkingDirectory: "serving", Comment: false, CommentMode: "never", AllowForkPRs: true}},
		// The other valid values of the enumerations.
		{"audit, never", map[string]string{"INPUT_MODE": "audit", "INPUT_FAIL-ON": "never", "INPUT_COMMENT": "True"},
			Inputs{Config: "slogate.yaml", Mode: "audit", FailOn: "never", Comment: true, CommentMode: "always"}},
		{"run", map[string]string{"INPUT_MODE": "run", "INPUT_ALLOW-FORK-PRS": "false"},
			Inputs{Config: "slogate.yaml", Mode: "run", FailOn: "inconclusive", Comment: true, CommentMode: "always"}},
		{"fail-on fail", map[string]string{"INPUT_FAIL-ON": "fail"},
			Inputs{Config: "slogate.yaml", Mode: "gate", FailOn: "fail", Comment: true, CommentMode: "always"}},
		// A sequential A/B job: at least 4 blocks, at most 32.
		{"ab, sequential", map[string]string{"INPUT_MODE": "ab", "INPUT_BLOCKS": "32", "INPUT_MIN-BLOCKS": "4"},
			Inputs{Config: "slogate.yaml", Mode: "ab", FailOn: "inconclusive", Comment: true, CommentMode: "always", Blocks: 32, MinBlocks: 4}},
		{"ab, sequential with futility", map[string]string{"INPUT_MODE": "ab", "INPUT_BLOCKS": "32", "INPUT_MIN-BLOCKS": "4", "INPUT_FUTILITY-FROM": "16"},
			Inputs{Config: "slogate.yaml", Mode: "ab", FailOn: "inconclusive", Comment: true, CommentMode: "always", Blocks: 32, MinBlocks: 4, FutilityFrom: 16}},
		{"ab, sequential with a final share", map[string]string{"INPUT_MODE": "ab", "INPUT_MIN-BLOCKS": "4", "INPUT_FINAL-SHARE": "0.5"},
			Inputs{Config: "slogate.yaml", Mode: "ab", FailOn: "inconclusive", Comment: true, CommentMode: "always", MinBlocks: 4, FinalShare: 0.5}},
		// A sequential calibration: at least 3 runs, at most 20.
		{"baseline, sequential calibration", map[string]string{"INPUT_MODE": "baseline", "INPUT_CALIBRATE-RUNS": "20", "INPUT_CALIBRATE-MIN-RUNS": "3"},
			Inputs{Config: "slogate.yaml", Mode: "baseline", FailOn: "inconclusive", Comment: true, CommentMode: "always", CalibrateRuns: 20, CalibrateMinRuns: 3}},
		// A calibration of 20 starts of 4 runs each.
		{"baseline, calibration with several runs per start", map[string]string{"INPUT_MODE": "baseline", "INPUT_CALIBRATE-RUNS": "80", "INPUT_CALIBRATE-RESTART-EVERY": "4"},
			Inputs{Config: "slogate.yaml", Mode: "baseline", FailOn: "inconclusive", Comment: true, CommentMode: "always", CalibrateRuns: 80, CalibrateRestartEvery: 4}},
		// Repeats spread over engine starts, two trials a start.
		{"gate, restart every 2 trials", map[string]string{"INPUT_RESTART-EVERY": "2"},
			Inputs{Config: "slogate.yaml", Mode: "gate", FailOn: "inconclusive", Comment: true, CommentMode: "always", RestartEvery: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadInputs(newAction(tt.env, &bytes.Buffer{}))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("inputs (-want +got):\n%s", d)
			}
		})
	}
}

func TestCommentModes(t *testing.T) {
	for _, c := range []struct {
		input, want string
	}{
		{"", CommentAlways}, {"always", CommentAlways}, {"not-pass", CommentNotPass}, {"never", CommentNever},
		// The input's older boolean values keep working.
		{"true", CommentAlways}, {"FALSE", CommentNever},
	} {
		in, err := ReadInputs(newAction(map[string]string{"INPUT_COMMENT": c.input}, &bytes.Buffer{}))
		if err != nil || in.CommentMode != c.want || in.Comment != (c.want != CommentNever) {
			t.Errorf("comment %q: mode %q, comment %v, err %v; want %q", c.input, in.CommentMode, in.Comment, err, c.want)
		}
	}
	for _, c := range []struct {
		mode          string
		passed        bool
		post, creates bool
	}{
		{CommentAlways, true, true, true},
		{CommentAlways, false, true, true},
		// not-pass: a failure creates the comment...
		{CommentNotPass, false, true, true},
		// ...and a pass only updates one that exists, so a fixed PR does not keep a stale "fail".
		{CommentNotPass, true, true, false},
		{CommentNever, false, false, false},
	} {
		post, create := StickyPlan(c.mode, c.passed)
		if post != c.post || create != c.creates {
			t.Errorf("StickyPlan(%s, passed %v) = %v, %v; want %v, %v", c.mode, c.passed, post, create, c.post, c.creates)
		}
	}
}

func TestReadInputsInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // every line of the error, in order
	}{
		// A typo in mode.
		{"mode", map[string]string{"INPUT_MODE": "gat"},
			[]string{`input "mode": invalid value "gat"; valid values: "gate", "baseline", "audit", "run", "merge", "ab"`}},
		// Values are case-sensitive, as in action.yml.
		{"mode case", map[string]string{"INPUT_MODE": "Gate"},
			[]string{`input "mode": invalid value "Gate"; valid values: "gate", "baseline", "audit", "run", "merge", "ab"`}},
		// A plausible but wrong fail-on.
		{"fail-on", map[string]string{"INPUT_FAIL-ON": "error"},
			[]string{`input "fail-on": invalid value "error"; valid values: "fail", "inconclusive", "warn", "never"`}},
		// "yes" is not a boolean to the Actions toolkit either.
		{"comment", map[string]string{"INPUT_COMMENT": "yes"},
			[]string{`input "comment": invalid value "yes"; valid values: "always", "not-pass", "never" (true and false are the older spellings of always and never)`}},
		// "1" is not either: a security switch must not be turned on by accident.
		{"allow-fork-prs", map[string]string{"INPUT_ALLOW-FORK-PRS": "1"},
			[]string{`input "allow-fork-prs": invalid value "1"; valid values: "true", "True", "TRUE", "false", "False", "FALSE"`}},
		// A minimum above the maximum, and one that cannot make pairs of blocks.
		{"min-blocks", map[string]string{"INPUT_BLOCKS": "8", "INPUT_MIN-BLOCKS": "12"},
			[]string{`input "min-blocks": invalid value "12"; valid values: an even number from 4 to blocks (16 when blocks is empty)`}},
		// A futility look before four pairs, or without a sequential job.
		{"futility-from", map[string]string{"INPUT_MIN-BLOCKS": "4", "INPUT_FUTILITY-FROM": "6"},
			[]string{`input "futility-from": invalid value "6"; valid values: 0 (never) or an even block from 8 and from min-blocks to below blocks (16 when blocks is empty)`}},
		{"futility-from without min-blocks", map[string]string{"INPUT_FUTILITY-FROM": "8"},
			[]string{`input "futility-from": invalid value "8"; valid values: 0 (never) or an even block from 8 and from min-blocks to below blocks (16 when blocks is empty)`}},
		// A final share above 0.9, not a number, or without a sequential job.
		{"final-share", map[string]string{"INPUT_MIN-BLOCKS": "4", "INPUT_FINAL-SHARE": "0.95"},
			[]string{`input "final-share": invalid value "0.95"; valid values: 0 (none) or a share of the error rate up to 0.9, with min-blocks below blocks (16 when blocks is empty)`}},
		{"final-share not a number", map[string]string{"INPUT_MIN-BLOCKS": "4", "INPUT_FINAL-SHARE": "half"},
			[]string{`input "final-share": invalid value "half"; valid values: 0 (none) or a share of the error rate up to 0.9, with min-blocks below blocks (16 when blocks is empty)`}},
		{"final-share without min-blocks", map[string]string{"INPUT_FINAL-SHARE": "0.5"},
			[]string{`input "final-share": invalid value "0.5"; valid values: 0 (none) or a share of the error rate up to 0.9, with min-blocks below blocks (16 when blocks is empty)`}},
		// A calibration's minimum below 3, or above its runs (none given: 0).
		{"calibrate-min-runs", map[string]string{"INPUT_CALIBRATE-RUNS": "10", "INPUT_CALIBRATE-MIN-RUNS": "2"},
			[]string{`input "calibrate-min-runs": invalid value "2"; valid values: 0 (every run) or from 3 to calibrate-runs`}},
		{"calibrate-restart-every above the runs", map[string]string{"INPUT_CALIBRATE-RUNS": "10", "INPUT_CALIBRATE-RESTART-EVERY": "11"},
			[]string{`input "calibrate-restart-every": invalid value "11"; valid values: 0 (an engine start every run) or from 1 to calibrate-runs`}},
		{"calibrate-restart-every not a number", map[string]string{"INPUT_CALIBRATE-RUNS": "10", "INPUT_CALIBRATE-RESTART-EVERY": "four"},
			[]string{`input "calibrate-restart-every": invalid value "four"; valid values: 0 (an engine start every run) or from 1 to calibrate-runs`}},
		{"restart-every negative", map[string]string{"INPUT_RESTART-EVERY": "-1"},
			[]string{`input "restart-every": invalid value "-1"; valid values: 0 (every trial on one engine start) or a number of trials, at least 1`}},
		{"calibrate-min-runs without runs", map[string]string{"INPUT_CALIBRATE-MIN-RUNS": "3"},
			[]string{`input "calibrate-min-runs": invalid value "3"; valid values: 0 (every run) or from 3 to calibrate-runs`}},
		{"min-blocks odd", map[string]string{"INPUT_MIN-BLOCKS": "5"},
			[]string{`input "min-blocks": invalid value "5"; valid values: an even number from 4 to blocks (16 when blocks is empty)`}},
		// All problems are reported at once.
		{"all at once", map[string]string{"INPUT_MODE": "x", "INPUT_FAIL-ON": "y", "INPUT_COMMENT": "z", "INPUT_ALLOW-FORK-PRS": "w"},
			[]string{
				`input "mode": invalid value "x"; valid values: "gate", "baseline", "audit", "run", "merge", "ab"`,
				`input "fail-on": invalid value "y"; valid values: "fail", "inconclusive", "warn", "never"`,
				`input "comment": invalid value "z"; valid values: "always", "not-pass", "never" (true and false are the older spellings of always and never)`,
				`input "allow-fork-prs": invalid value "w"; valid values: "true", "True", "TRUE", "false", "False", "FALSE"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"INPUT_GITHUB-TOKEN": "ghs_secret"}
			for k, v := range tt.env {
				env[k] = v
			}
			in, err := ReadInputs(newAction(env, &bytes.Buffer{}))
			if err == nil {
				t.Fatalf("no error; inputs %+v", in)
			}
			if d := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); d != "" {
				t.Errorf("error lines (-want +got):\n%s", d)
			}
			if strings.Contains(err.Error(), "ghs_secret") {
				t.Error("the token leaked into the error")
			}
		})
	}
}

func tempEnvFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSetOutputs(t *testing.T) {
	path := tempEnvFile(t, "output", "earlier<<EOF\nkept\nEOF\n")
	var stdout bytes.Buffer
	a := newAction(map[string]string{"GITHUB_OUTPUT": path}, &stdout)
	err := SetOutputs(a, Outputs{
		Verdict:       "fail",
		Goodput:       "41.7",
		ITLP99ms:      "38.2",
		KVConcurrency: "112",
		ResultsDir:    "slogate-results",
		ReportPath:    "slogate-results/report.html",
		CommentURL:    "line one\nline two", // multi-line values use the heredoc form
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const d = "_GitHubActionsFileCommandDelimeter_"
	want := "earlier<<EOF\nkept\nEOF\n" +
		"verdict<<" + d + "\nfail\n" + d + "\n" +
		"goodput<<" + d + "\n41.7\n" + d + "\n" +
		"itl-p99-ms<<" + d + "\n38.2\n" + d + "\n" +
		"kv-concurrency<<" + d + "\n112\n" + d + "\n" +
		"results-dir<<" + d + "\nslogate-results\n" + d + "\n" +
		"report-path<<" + d + "\nslogate-results/report.html\n" + d + "\n" +
		"comment-url<<" + d + "\nline one\nline two\n" + d + "\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("GITHUB_OUTPUT (-want +got):\n%s", diff)
	}
	if stdout.Len() != 0 {
		t.Errorf("outputs went to stdout too: %q", stdout.String())
	}
}

func TestSetOutputsRefuses(t *testing.T) {
	// No GITHUB_OUTPUT: not in Actions; a sentinel the caller can ignore locally.
	if err := SetOutputs(newAction(map[string]string{}, &bytes.Buffer{}), Outputs{Verdict: "pass"}); !errors.Is(err, ErrNoEnvFile) {
		t.Errorf("without GITHUB_OUTPUT: %v, want ErrNoEnvFile", err)
	}
	// A value holding the fixed delimiter could forge outputs: refused, and nothing written.
	path := tempEnvFile(t, "output", "")
	a := newAction(map[string]string{"GITHUB_OUTPUT": path}, &bytes.Buffer{})
	err := SetOutputs(a, Outputs{Verdict: "pass", CommentURL: "x\n_GitHubActionsFileCommandDelimeter_\nverdict<<Z\npass"})
	if err == nil || !strings.Contains(err.Error(), `output "comment-url"`) {
		t.Errorf("delimiter in a value: %v", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("partial outputs written: %q", b)
	}
	// An unwritable file: an error, not a panic.
	a = newAction(map[string]string{"GITHUB_OUTPUT": filepath.Join(t.TempDir(), "no", "such", "dir")}, &bytes.Buffer{})
	if err := SetOutputs(a, Outputs{Verdict: "pass"}); err == nil || !strings.Contains(err.Error(), "unable to write command") {
		t.Errorf("unwritable GITHUB_OUTPUT: %v", err)
	}
}

func TestWriteSummary(t *testing.T) {
	path := tempEnvFile(t, "summary", "# earlier step\n")
	a := newAction(map[string]string{"GITHUB_STEP_SUMMARY": path}, &bytes.Buffer{})
	if err := WriteSummary(a, "## slogate: pass\n\n| metric | value |\n|---|---|"); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(a, "second"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# earlier step\n## slogate: pass\n\n| metric | value |\n|---|---|\nsecond\n"
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}

	tests := []struct {
		name    string
		env     map[string]string
		md      string
		wantIs  error
		wantErr string
	}{
		// Not in Actions.
		{"no GITHUB_STEP_SUMMARY", map[string]string{}, "x", ErrNoEnvFile, ""},
		// Over the runner's 1 MiB limit: the runner would drop it.
		{"too large", map[string]string{"GITHUB_STEP_SUMMARY": path}, strings.Repeat("x", MaxSummaryBytes+1), nil, "over GitHub's limit"},
		// Not UTF-8: GitHub would render garbage.
		{"invalid UTF-8", map[string]string{"GITHUB_STEP_SUMMARY": path}, "\xff\xfe", nil, "not valid UTF-8"},
		// A directory cannot be appended to: an error, not a panic.
		{"unwritable", map[string]string{"GITHUB_STEP_SUMMARY": t.TempDir()}, "x", nil, "unable to write command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteSummary(newAction(tt.env, &bytes.Buffer{}), tt.md)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("%v is not %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v does not contain %q", err, tt.wantErr)
			}
		})
	}
	if got2, _ := os.ReadFile(path); string(got2) != want {
		t.Errorf("a refused summary changed the file: %q", got2)
	}
}

func TestAnnotate(t *testing.T) {
	var out bytes.Buffer
	a := newAction(map[string]string{}, &out)
	Annotate(a, []Annotation{
		// The usual gate failure, pointing at the workload file.
		{Level: "error", Title: "goodput regressed", Message: "goodput 41.7 req/s < baseline 48.0 (-13%)", File: "slogate.yaml", Line: 12},
		// Server text with a newline, a '%' and '::': escaped, so it cannot end the
		// command early or start another one; '%' is not read as a format verb.
		{Level: "warning", Title: "engine: vllm, 0.6.3", Message: "error 100% bad\n::error::forged", File: "bench/a,b:c.yaml"},
		// A line without a file means nothing to GitHub: dropped.
		{Level: "notice", Message: "baseline is 40 days old", Line: 7},
		// No properties at all.
		{Level: "notice", Message: "drift: driver 550.54 -> 560.28 (expected)"},
		// An unknown level is shown as a warning rather than lost.
		{Level: "fatal", Message: "unknown level"},
	})
	golden(t, "annotations.golden", out.String())
	if strings.Count(out.String(), "\n") != 5 {
		t.Errorf("want exactly one line per annotation:\n%s", out.String())
	}
}
