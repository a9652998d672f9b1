//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/sim"
)

// TestStartRefusesAPortAlreadyServed (finding 5): with another engine already serving
// target.url's port, target.start is refused before its command runs, exit 2 naming
// the address; nothing is measured.
func TestStartRefusesAPortAlreadyServed(t *testing.T) {
	t.Parallel()
	other := startSim(t, sim.Options{Seed: 1})
	marker := filepath.Join(t.TempDir(), "started")
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: "+other+"\n  api: completions\n  start:\n    command: [sh, -c, \"touch "+marker+"; exec sleep 30\"]\n    ready_timeout: 20s", 1)
	dir := t.TempDir()
	a, _, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", dir})
	addr := strings.TrimPrefix(other, "http://")
	if code != ExitBadInput || !strings.Contains(errb.String(), "something already serves "+addr) {
		t.Errorf("exit %d, want 2 saying that %s is already served:\n%s", code, addr, errb)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the start command ran")
	}
	if _, err := os.Stat(filepath.Join(dir, "small.json")); err == nil {
		t.Error("a record was written: the other engine was measured")
	}
}

// TestStartHelperHoldingStdoutDoesNotHang (finding 6): a start command that leaves a
// helper in its own session holding the engine's output open does not hold slogate
// after the run: the record is written and the command returns, long before the helper
// ends.
func TestStartHelperHoldingStdoutDoesNotHang(t *testing.T) {
	t.Parallel()
	long(t)
	addr := waittest.HoldPort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	helper := "setsid sh -c 'echo $$ > " + pidFile + "; exec sleep 600' & exec \\\"$0\\\""
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://"+addr+"\n  api: completions\n  start:\n    command: [sh, -c, \""+helper+"\", "+self+"]\n    env: {SLOGATE_TEST_SIM_ADDR: \""+addr+"\"}\n    ready_timeout: 60s", 1)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	start := time.Now()
	done := make(chan int, 1)
	go func() { done <- a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", dir}) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("slogate run has not returned in 3 minutes: it waits on the helper's output\n%s", errb)
	}
	took := time.Since(start)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("the helper did not start: %v", err)
	}
	t.Logf("the run took %v beside a helper that sleeps 600 s", took.Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(dir, "small.json")); err != nil {
		t.Error(err)
	}
}

// TestSecretsInTheURLAndTheStartCommandAreNeverWritten (finding 9): the password of
// target.url and the value of a start.command flag named like a key are in no record,
// journal or line of output; the command is echoed with the value redacted.
func TestSecretsInTheURLAndTheStartCommandAreNeverWritten(t *testing.T) {
	t.Parallel()
	const urlSecret, cmdSecret = "sk-urlpass-8c1f", "sk-cmdkey-51be"
	addr := waittest.HoldPort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://ops:"+urlSecret+"@"+addr+"\n  api: completions\n  start:\n    command: ["+self+", --api-key, "+cmdSecret+", --port, \"1\"]\n    env: {SLOGATE_TEST_SIM_ADDR: \""+addr+"\"}\n    ready_timeout: 60s", 1)
	cfg = strings.Replace(cfg, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", dir})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	if !strings.Contains(errb.String(), "--api-key [redacted] --port 1") {
		t.Errorf("the start command is not echoed with its key redacted:\n%s", errb)
	}
	written := map[string]string{"stdout": out.String(), "stderr": errb.String()}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		written[e.Name()] = string(b)
	}
	if _, ok := written["small.json"]; !ok {
		t.Fatalf("no record in %s", dir)
	}
	for name, text := range written {
		for _, s := range []string{urlSecret, cmdSecret} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q", name, s)
			}
		}
	}
	if !strings.Contains(written["small.json"], "ops:"+"[redacted]@") && !strings.Contains(written["small.json"], "ops:%5Bredacted%5D@") {
		t.Errorf("the record's target does not show the redacted URL:\n%.600s", written["small.json"])
	}
}
