package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/ghaction"
)

// TestHelpListsEachFlagOnce: every command's -h exits 0 (merge used to exit 2), lists each
// flag once with its aliases (not -c and -config apart), and states a default once.
func TestHelpListsEachFlagOnce(t *testing.T) {
	t.Parallel()
	for _, name := range sortedKeys(commands()) {
		a, _, errb := testApp(t)
		args := []string{name, "-h"}
		if name == "baseline" {
			args = []string{name, "update", "-h"}
		}
		if code := a.run(cmdCtx(t), args); code != ExitOK {
			t.Errorf("%s -h: exit %d, want 0", name, code)
		}
		help := errb.String()
		for _, l := range strings.Split(help, "\n") {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("%s -h: two defaults in %q", name, l)
			}
			if strings.Contains(l, "(same as -") && strings.HasPrefix(strings.TrimSpace(l), "workload") {
				t.Errorf("%s -h: an alias listed on its own: %q", name, l)
			}
		}
		if strings.Contains(help, "\n  -config ") || strings.Contains(help, "\n  --config file\n") {
			t.Errorf("%s -h lists --config apart from -c:\n%s", name, help)
		}
	}
	// baseline -h is its one subcommand's help, flags and all (it printed none).
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"baseline", "-h"}); code != ExitOK || !strings.Contains(errb.String(), "-c, --config file") || !strings.Contains(errb.String(), "--baselines") {
		t.Errorf("baseline -h: exit %d, no flags listed:\n%s", code, errb)
	}
	a, _, errb = testApp(t)
	a.run(cmdCtx(t), []string{"capacity", "-h"})
	if h := errb.String(); strings.Contains(h, "(default 0%)") || !strings.Contains(h, "-c, --config file") || !strings.Contains(h, "-r, --record record") {
		t.Errorf("capacity -h:\n%s", h)
	}
}

// TestCIHelpListsEveryMode: ci -h describes every mode the Action runs (it listed four
// of six).
func TestCIHelpListsEveryMode(t *testing.T) {
	t.Parallel()
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"ci", "-h"}); code != ExitOK {
		t.Fatalf("ci -h: exit %d", code)
	}
	for _, m := range ghaction.Modes {
		if !regexp.MustCompile(`(?m)^  ` + m + ` +\S`).MatchString(errb.String()) {
			t.Errorf("ci -h does not describe mode %q:\n%s", m, errb)
		}
	}
}

// TestCompletion: each shell's script is produced; bash's parses and completes commands
// and flags (zsh and fish are checked with their own shells when installed).
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, sh := range shells {
		a, out, _ := testApp(t)
		if code := a.run(cmdCtx(t), []string{"completion", sh}); code != ExitOK || !strings.Contains(out.String(), "results") || !strings.Contains(out.String(), "report") {
			t.Fatalf("completion %s: exit %d\n%s", sh, code, out)
		}
		path := filepath.Join(t.TempDir(), "c."+sh)
		os.WriteFile(path, out.Bytes(), 0o644)
		if _, err := exec.LookPath(sh); err != nil {
			continue
		}
		if sh != "bash" {
			if b, err := exec.Command(sh, "-n", path).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, b)
			}
			continue
		}
		script := `source ` + path + `
COMP_WORDS=(slogate rep); COMP_CWORD=1; _slogate; echo "${COMPREPLY[*]}"
COMP_WORDS=(slogate gate --js); COMP_CWORD=2; _slogate; echo "${COMPREPLY[*]}"`
		b, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || string(b) != "report\n--json\n" {
			t.Errorf("bash completion: %v, got %q", err, b)
		}
	}
	a, _, _ := testApp(t)
	if code := a.run(cmdCtx(t), []string{"completion", "powershell"}); code != ExitBadInput {
		t.Errorf("completion powershell: exit %d, want 2", code)
	}
}

// TestSimSaysWhatTheDefaultProfileServes: started without --profile, the simulator says
// that its default profile serves 1,024 tokens a request and which profile serves a
// realistic workload; with --profile it does not.
func TestSimSaysWhatTheDefaultProfileServes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"sim", "--addr", "127.0.0.1:0"}, true},
		{[]string{"sim", "--addr", "127.0.0.1:0", "--profile", "tiny"}, false},
	} {
		ctx, cancel := context.WithTimeout(cmdCtx(t), 300*time.Millisecond)
		a, _, errb := testApp(t)
		code := a.run(ctx, c.args)
		cancel()
		note := "default profile tiny: at most 1024 tokens of prompt and output a request; --profile llama-8b-h100 serves 8192"
		if code != ExitOK || strings.Contains(errb.String(), note) != c.want || !strings.Contains(errb.String(), "serving on") {
			t.Errorf("%v: exit %d, want 0 and the note %v:\n%s", c.args, code, c.want, errb)
		}
	}
}
