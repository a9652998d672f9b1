//go:build unix

package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/internal/fsafe/fsafetest"
	"github.com/slogate/slogate/result"
)

// countedEngine is a fake engine that counts the completions it was sent.
func countedEngine(t *testing.T) (*fakeEngine, *atomic.Int64) {
	t.Helper()
	e := newFakeEngine(t)
	var sent atomic.Int64
	complete := e.handlers["/v1/completions"]
	e.handle("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		complete(w, r)
	})
	return e, &sent
}

// unchanged fails t unless path is still the node it was (same file, same mode).
func unchanged(t *testing.T, what, path string, before os.FileInfo) {
	t.Helper()
	after, err := os.Lstat(path)
	if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
		t.Errorf("%s: %s was replaced or changed: %v, %v (was %v)", what, path, err, after, before.Mode())
	}
}

// TestRunNeverWritesThroughALinkOrIntoAPipe (findings 1 and 2): a journal or record
// path in the output directory that is a link to another file, a named pipe or a
// device is refused before a request is sent, exit 2 naming it; the link's target
// keeps its content.
func TestRunNeverWritesThroughALinkOrIntoAPipe(t *testing.T) {
	t.Parallel()
	scratch := t.TempDir()
	victim := filepath.Join(scratch, "victim")
	if err := os.WriteFile(victim, []byte("the runner's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for node, kind := range fsafetest.Hazards(t, scratch, victim) {
		for _, name := range []string{"w.journal.jsonl", "w.json"} {
			e, sent := countedEngine(t)
			dir := t.TempDir()
			at := filepath.Join(dir, name)
			// The node itself where slogate writes: a link is made to point where the
			// scratch link points; a pipe, socket or device is linked to by a hard
			// link where the file system allows, else by the same node made anew.
			if kind == "symbolic link" {
				if err := os.Symlink(victim, at); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Link(node, at); err != nil {
				if err := os.Symlink(node, at); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.Lstat(at)
			a, _, errb := testApp(t)
			code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, fakeConfig), "--target", e.srv.URL, "-o", dir})
			if code != ExitBadInput || !strings.Contains(errb.String(), at) || sent.Load() != 0 {
				t.Errorf("%s as %s: exit %d, %d requests sent; want 2, none sent, naming %s:\n%s", name, kind, code, sent.Load(), at, errb)
			}
			unchanged(t, name+" as "+kind, at, before)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "the runner's file\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// TestOutputFlagsNeverReplaceANode (finding 3): merge -o, gate --json, export -o and
// report --markdown/--html given a link, a named pipe, a socket or a device exit 2
// naming it, before reading their inputs, and leave it as it was.
func TestOutputFlagsNeverReplaceANode(t *testing.T) {
	t.Parallel()
	scratch := t.TempDir()
	victim := filepath.Join(scratch, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := gatetest.Record(1, gatetest.Spec{Requests: 20, OutputTokens: 8})
	recPath := filepath.Join(t.TempDir(), "w.json")
	if err := result.Write(recPath, rec); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, tinyConfig)
	for node, kind := range fsafetest.Hazards(t, scratch, victim) {
		before, _ := os.Lstat(node)
		for _, args := range [][]string{
			{"merge", "-o", node, recPath},
			{"export", "--csv", recPath, "-o", node},
			{"export", "--vllm", recPath, "-o", node},
			{"gate", "-c", cfg, "-r", filepath.Dir(recPath), "--json", node},
			{"report", "-r", filepath.Dir(recPath), "--markdown", node},
			{"report", "-r", filepath.Dir(recPath), "--html", node},
		} {
			a, _, errb := testApp(t)
			code := a.run(cmdCtx(t), args)
			if code != ExitBadInput || !strings.Contains(errb.String(), node) || !strings.Contains(errb.String(), kind) {
				t.Errorf("slogate %s: exit %d, want 2 naming %s as %s:\n%s", strings.Join(args, " "), code, node, kind, errb)
			}
			unchanged(t, args[0], node, before)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// TestMeasuringCommandsCheckOutputsFirst (finding 4): sweep, calibrate and ab with an
// output directory that cannot take a file, and calibrate --append on a truncated
// baseline or with an unwritable baselines directory, exit 2 before a request is sent.
func TestMeasuringCommandsCheckOutputsFirst(t *testing.T) {
	t.Parallel()
	const sweepable = fakeConfig + "    slo: {ttft: {p99: 1s}}\n"
	cfgDir := t.TempDir()
	truncated := filepath.Join(cfgDir, "baselines", "w", "cpu.json")
	os.MkdirAll(filepath.Dir(truncated), 0o755)
	if err := os.WriteFile(truncated, []byte(`{"schema": "slogate.baseline/v1", "workl`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := "/proc/slogate-out" // a file system that takes no new files
	for _, c := range []struct {
		name string
		args func(cfg, url string) []string
		want string
	}{
		{"sweep", func(cfg, url string) []string {
			return []string{"sweep", "-c", cfg, "-w", "w", "--target", url, "-o", bad, "--step-duration", "1s"}
		}, "the output directory " + bad},
		{"calibrate", func(cfg, url string) []string {
			return []string{"calibrate", "-c", cfg, "--target", url, "--runs", "2", "-o", bad}
		}, "the output directory " + bad},
		{"ab", func(cfg, url string) []string {
			return []string{"ab", "-c", cfg, "--baseline-target", url, "--candidate-target", url, "--blocks", "4", "-o", bad}
		}, "the output directory " + bad},
		{"calibrate --append, truncated baseline", func(cfg, url string) []string {
			return []string{"calibrate", "-c", cfg, "--target", url, "--runs", "1", "--append", "--baselines", filepath.Dir(filepath.Dir(truncated)), "-o", t.TempDir()}
		}, truncated},
		{"calibrate, unwritable baselines", func(cfg, url string) []string {
			return []string{"calibrate", "-c", cfg, "--target", url, "--runs", "2", "--baselines", bad, "-o", t.TempDir()}
		}, "the baselines directory " + bad},
	} {
		e, sent := countedEngine(t)
		a, _, errb := testApp(t)
		code := a.run(cmdCtx(t), c.args(writeConfig(t, sweepable), e.srv.URL))
		if code != ExitBadInput || !strings.Contains(errb.String(), c.want) || sent.Load() != 0 {
			t.Errorf("%s: exit %d, %d requests sent; want 2, none sent, saying %q:\n%s", c.name, code, sent.Load(), c.want, errb)
		}
	}
}

// TestCIRefusesACommittedLinkUnderSlogateOut (finding 2, through the Action): a pull
// request that commits slogate-out as a link to another directory, or a link inside
// slogate-out where a journal goes, makes `slogate ci` exit 2 before a request is
// sent; the link's target is untouched.
func TestCIRefusesACommittedLinkUnderSlogateOut(t *testing.T) {
	t.Parallel()
	for _, inside := range []bool{false, true} {
		e, sent := countedEngine(t)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(fakeConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "pr.json"), []byte(`{"pull_request":{"number":7,"head":{"repo":{"full_name":"acme/serving","fork":false}},"base":{"repo":{"full_name":"acme/serving"}}}}`), 0o644)
		elsewhere := t.TempDir()
		victim := filepath.Join(elsewhere, "w.journal.jsonl")
		os.WriteFile(victim, []byte("the runner's file\n"), 0o644)
		link := filepath.Join(dir, "slogate-out")
		target := elsewhere
		if inside {
			os.Mkdir(link, 0o755)
			link, target = filepath.Join(link, "w.journal.jsonl"), victim
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		code, log, _ := ciStep(t, map[string]string{
			"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": "run", "INPUT_TARGET": e.srv.URL, "INPUT_WORKING-DIRECTORY": dir,
			"GITHUB_REPOSITORY": "acme/serving", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": filepath.Join(dir, "pr.json"),
		})
		if code != ExitBadInput || !strings.Contains(log, link) || !strings.Contains(log, "symbolic link") || sent.Load() != 0 {
			t.Errorf("link inside %v: exit %d, %d sent; want 2 naming %s as a link, none sent:\n%s", inside, code, sent.Load(), link, log)
		}
		if b, _ := os.ReadFile(victim); string(b) != "the runner's file\n" {
			t.Errorf("link inside %v: the link's target now holds %q", inside, b)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
			t.Errorf("link inside %v: the linked directory now holds %d entries", inside, len(entries))
		}
	}
}
