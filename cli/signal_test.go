//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// slogateCmd is this test binary acting as slogate with args (TestMain, SLOGATE_TEST_MAIN),
// its output in the returned buffer, with env added.
func slogateCmd(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "SLOGATE_TEST_MAIN="+strings.Join(args, "\x1f")), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// exitWithin waits at most d for cmd to end and returns its exit code; it kills cmd and
// fails the test when it does not end in time.
func exitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration, out *bytes.Buffer) (int, time.Duration) {
	t.Helper()
	t0 := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), time.Since(t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, time.Since(t0)
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("slogate did not end within %s:\n%s", d, out)
	}
	return -1, 0
}

// TestSignalEndsABlockedSlogate: slogate blocked where no context reaches (the open of a
// FIFO that has no writer, as a read of one was before every reader checked what it
// opens) ends with exit 3 within the grace period of the first SIGTERM, saying so, and at
// once at a second one.
func TestSignalEndsABlockedSlogate(t *testing.T) {
	t.Parallel()
	long(t)
	for _, second := range []bool{false, true} {
		fifo := t.TempDir() + "/w.json"
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd, out := slogateCmd(t, []string{"SLOGATE_TEST_BLOCK_ON=" + fifo}, "version")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it reach the open; a signal before it is handled the same way.
		time.Sleep(500 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if second {
			time.Sleep(200 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
		}
		code, took := exitWithin(t, cmd, SignalGrace+30*time.Second, out)
		if code != ExitFailure {
			t.Errorf("second signal %v: exit %d after %s, want 3\n%s", second, code, took, out)
		}
		want := "still running " + SignalGrace.String() + " after terminated: exiting now (exit 3)"
		if second {
			want = "terminated again: exiting now (exit 3)"
			if took >= SignalGrace {
				t.Errorf("a second signal took %s to end slogate, want less than the grace of %s", took, SignalGrace)
			}
		}
		if !strings.Contains(out.String(), "stopping; what was measured is being written") || !strings.Contains(out.String(), want) {
			t.Errorf("second signal %v: output lacks %q:\n%s", second, want, out)
		}
	}
}

// TestWatchSignals: the first signal cancels the command's context and exits nothing;
// the second exits 3; without a second, the end of the grace does; a command that
// returns in the grace period is left to return its own code.
func TestWatchSignals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		second, early bool
		wantExit      int32
	}{
		{"second signal", true, false, ExitFailure},
		{"grace over", false, false, ExitFailure},
		{"returned in time", false, true, -1},
	} {
		sigs, done := make(chan os.Signal, 2), make(chan struct{})
		ctx, cancel := context.WithCancelCause(context.Background())
		var exited atomic.Int32
		exited.Store(-1)
		ended := make(chan struct{})
		var errb bytes.Buffer
		go func() {
			watchSignals(sigs, done, cancel, &errb, 300*time.Millisecond, func(code int) { exited.Store(int32(code)) })
			close(ended)
		}()
		sigs <- syscall.SIGTERM
		<-ctx.Done()
		if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "interrupted by terminated") {
			t.Errorf("%s: the command's context ended with %v", c.name, cause)
		}
		switch {
		case c.second:
			sigs <- syscall.SIGINT
		case c.early:
			close(done)
		}
		select {
		case <-ended:
		case <-time.After(time.Minute):
			t.Fatalf("%s: watchSignals did not return", c.name)
		}
		if got := exited.Load(); got != c.wantExit {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, got, c.wantExit, &errb)
		}
	}
}
