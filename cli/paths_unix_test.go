//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/fsafe/fsafetest"
	"github.com/slogate/slogate/result"
)

// TestNoPathHangsACommand: every command that takes a path, given a FIFO (whose open
// waits for a writer) or /dev/zero (whose read never ends) where it reads a file, ends
// at once with exit 2, naming the path and what it is; so does every command given a
// socket, a directory or a loop of links there: one exit code for each class of bad
// path, whichever command reads it. Each runs as its own process with a deadline,
// since a reader that blocks would take the test binary with it.
func TestNoPathHangsACommand(t *testing.T) {
	t.Parallel()
	for kind, make := range map[string]func(bad string) error{
		"named pipe":                        func(bad string) error { return syscall.Mkfifo(bad, 0o644) },
		"device":                            func(bad string) error { return os.Symlink("/dev/zero", bad) },
		"socket":                            func(bad string) error { return os.Symlink(fsafetest.UnixSocket(t), bad) },
		"directory":                         func(bad string) error { return os.Mkdir(bad, 0o755) },
		"too many levels of symbolic links": func(bad string) error { return os.Symlink(bad, bad) },
	} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bad := filepath.Join(dir, "w.json")
			if err := make(bad); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, tinyConfig)
			// A results directory whose manifest names the bad file as its record.
			results := filepath.Join(dir, "results")
			os.MkdirAll(results, 0o755)
			if err := os.Symlink(bad, filepath.Join(results, "small.json")); err != nil {
				t.Fatal(err)
			}
			man, _ := json.Marshal(result.Manifest{Schema: result.ManifestSchema, Records: []result.ManifestEntry{{File: "small.json", Workload: "small", Trial: 1}}})
			os.WriteFile(filepath.Join(results, result.ManifestName), man, 0o644)
			// A results directory whose gate.json is the bad file.
			reported := filepath.Join(dir, "reported")
			os.MkdirAll(reported, 0o755)
			os.Symlink(bad, filepath.Join(reported, "gate.json"))
			// A baselines directory whose baseline is the bad file.
			baselines := filepath.Join(dir, "baselines")
			os.MkdirAll(filepath.Join(baselines, "small"), 0o755)
			os.Symlink(bad, filepath.Join(baselines, "small", "cpu.json"))
			out := filepath.Join(dir, "out")
			for _, args := range [][]string{
				{"run", "-c", bad, "--target", "http://127.0.0.1:9", "-o", out},
				{"gate", "-c", cfg, "-r", results},
				{"gate", "-c", bad, "-r", results},
				{"baseline", "update", "-c", cfg, "-r", results, "--baselines", filepath.Join(dir, "nb")},
				{"calibrate", "-c", bad, "--runs", "2", "-o", out},
				{"ab", "-c", bad, "-o", out},
				{"plan", "-c", bad},
				{"audit", "-c", cfg, "-r", bad},
				{"report", "-r", reported},
				{"import", "--from", "vllm", bad, "-c", cfg, "-w", "small", "-o", out},
				{"export", "--csv", bad},
				{"merge", "-o", filepath.Join(dir, "merged.json"), bad},
				{"capacity", "-r", bad},
				{"sweep", "-c", bad, "-w", "small"},
			} {
				cmd, buf := slogateCmd(t, nil, args...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				code, took := exitWithin(t, cmd, 30*time.Second, buf)
				msg := buf.String()
				if code != ExitBadInput || !strings.Contains(msg, kind) || !strings.Contains(msg, dir) {
					t.Errorf("slogate %s: exit %d after %s, want 2 naming the path and %q:\n%s", strings.Join(args, " "), code, took.Round(time.Millisecond), kind, msg)
				}
			}
			// The Action reads the workflow's event file.
			cmd, buf := slogateCmd(t, []string{"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH=" + bad,
				"GITHUB_REPOSITORY=o/r", "INPUT_CONFIG=" + cfg, "INPUT_MODE=run", "GITHUB_OUTPUT=" + filepath.Join(dir, "output")}, "ci")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code, _ := exitWithin(t, cmd, 30*time.Second, buf); code != ExitBadInput || !strings.Contains(buf.String(), kind) {
				t.Errorf("slogate ci with the event file a %s: exit %d, want 2 naming it:\n%s", kind, code, buf)
			}
		})
	}
}
