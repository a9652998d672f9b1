package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
)

// The cli tests mostly wait on engines (simulated ones, in the test binary or started as
// processes), so they run in parallel: every test calls t.Parallel() but those marked
// quiet, and TestMain raises -parallel (testParallel) unless the command line sets it.
//
// A quiet test's assertion needs a machine that keeps its schedule: a sweep's capacity,
// the skew of synchronized starts. It does not call t.Parallel(), so it runs alone in
// this binary, before any parallel test starts (Go runs the sequential tests first). The
// statistical suites of gate/ that may run beside it in another test binary lower their
// own CPU priority (gate's TestMain). A quiet test that finds the machine too busy to
// judge retries once, then fails with what it measured (retryQuiet): it never passes by
// skipping.

// testParallel is the cli tests' default -parallel: each waits on its own engine for
// most of its time (the package's tests use about 45 CPU seconds in 8.5 minutes of
// waiting when run one at a time). Under -race the tests cost several times the CPU,
// and with 16 at once the load generators' and engines' timings got noisy enough that
// A/B and repeat jobs no longer decided what they decide on a quieter machine.
func testParallel() int {
	if waittest.Race {
		return 6
	}
	return 16
}

// quiet marks t as a test that needs a quiet machine: it runs alone in this binary (it
// never calls t.Parallel). It is a marker, for readers and for grep.
func quiet(t *testing.T) { t.Helper() }

// long marks a test that takes five seconds or more (an A/B or calibration job of many
// blocks or runs, a sweep, a CI job end to end): -short, the quick loop while editing,
// skips it; go test without -short runs it.
func long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("takes 5 s or more: runs without -short")
	}
}

// retryQuiet runs try once, and once more if it returns a reason the machine was too
// busy to judge; a second such reason fails the test with both.
func retryQuiet(t *testing.T, try func(try int) (busy string)) {
	t.Helper()
	first := try(1)
	if first == "" {
		return
	}
	t.Logf("the machine was too busy to judge (%s): once more", first)
	if second := try(2); second != "" {
		t.Fatalf("the machine was too busy to judge, twice: %s; then %s", first, second)
	}
}

// clientLimited checks a sweep that the load generator could not keep: it must refuse
// to report a capacity, exit 3 and say so. It returns why the machine was too busy
// (the worst step's dispatch lag) or "" when the sweep was not client-limited.
func clientLimited(t *testing.T, code int, sw *result.Sweep) string {
	t.Helper()
	if code != ExitFailure || sw.Bound != result.BoundClient {
		return ""
	}
	if sw.MaxSustainableRPS != nil {
		t.Fatalf("client-limited sweep reported %g req/s", *sw.MaxSustainableRPS)
	}
	lag := 0.0
	for _, st := range sw.Steps {
		lag = max(lag, st.DispatchLagP99ms)
	}
	return fmt.Sprintf("the sweep was client-limited: dispatch lag p99 %.1f ms at its worst step", lag)
}

// cmdDeadline bounds one command a test runs: the longest, an A/B job of 20 blocks,
// takes about a minute on a loaded 2-core machine.
const cmdDeadline = 4 * time.Minute

// cmdCtx is the context of one command a test runs (a.run): past cmdDeadline the
// command is interrupted, as a SIGTERM would, and the test fails saying so, instead of
// waiting on an engine that never answers until go test kills the whole binary.
func cmdCtx(t *testing.T) context.Context {
	t.Helper()
	return waittest.Context(t, cmdDeadline, "a slogate command to finish")
}
