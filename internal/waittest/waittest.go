// Package waittest holds what the tests that wait on engines share: a higher default
// -parallel for packages whose tests mostly wait, loopback ports held for a test until
// the engine it starts binds them, engines that die with the test binary, and deadlines
// that say what a test was waiting for.
package waittest

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// Main runs a package's tests with -test.parallel at parallel and -test.timeout at
// timeout, each unless the command line set it, and exits with their status. It is for
// packages whose tests spend their time waiting on engines and clocks, not on the CPU:
// more of them at once, and a whole-binary deadline a few times what the package takes
// on a loaded 2-core machine under -race, so that a hang fails in minutes, naming the
// tests still running and where every goroutine waits, instead of at go test's 10.
func Main(m *testing.M, parallel int, timeout time.Duration) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if !isSet("test.parallel") {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
	}
	// go test passes its own default, -test.timeout=10m0s, when -timeout is not given.
	if f := flag.Lookup("test.timeout"); f != nil && (!isSet("test.timeout") || f.Value.String() == goTestTimeout) {
		_ = flag.Set("test.timeout", timeout.String())
	}
	os.Exit(m.Run())
}

// goTestTimeout is the -test.timeout that go test passes when its -timeout is not given.
const goTestTimeout = "10m0s"

// isSet says whether the command line set the flag name.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Context is a context for one wait of t: it ends after d, or when t ends. When d passes
// first, t fails saying what it waited for: an engine that never answers fails the test
// by name instead of holding it until go test's own limit.
func Context(t testing.TB, d time.Duration, what string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.DeadlineExceeded {
			t.Errorf("still waiting after %v for %s", d, what)
		}
	})
	t.Cleanup(func() { stop(); cancel() })
	return ctx
}

// ManyTrials marks a test that measures a decision rule over many seeded trials: pure
// arithmetic whose inner loops the race detector does not instrument (gate/stats's
// kernels), ten times slower under -race for nothing it could find there. Under -race it
// skips, and under -short (the quick loop while editing); `go test ./...` runs it, and so
// does .ci/run, once, without -race.
func ManyTrials(t testing.TB) {
	t.Helper()
	if Race {
		t.Skip("seeded many-trial statistics: run without -race (go test ./... and .ci/run do)")
	}
	if testing.Short() {
		t.Skip("seeded many-trial statistics: run without -short")
	}
}

// GivenBackPort is a loopback address the system gave out and took back, for an engine
// that binds its port itself and cannot share it with HoldPort's held socket (a real
// llama-server). Another socket may take the port in between: use HoldPort where the
// engine can share it.
func GivenBackPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// MainYield runs a package's tests at the lowest CPU priority (YieldCPU) and exits with
// their status: for packages of pure arithmetic, so that they take only what the timing
// tests in other binaries beside them leave.
func MainYield(m *testing.M) {
	YieldCPU()
	os.Exit(m.Run())
}
