// Package waittest holds what the tests that wait on engines share: a higher default
// -parallel for packages whose tests mostly wait, loopback ports held for a test until
// the engine it starts binds them, engines that die with the test binary, and deadlines
// that say what a test was waiting for.
package waittest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// Main runs a package's tests with -test.parallel at parallel unless the command line
// set it, and exits with their status. It is for packages whose tests spend their time
// waiting on engines and clocks, not on the CPU.
func Main(m *testing.M, parallel int) {
	SetParallel(parallel)
	os.Exit(m.Run())
}

// SetParallel sets -test.parallel to n unless the command line set it.
func SetParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(n))
	}
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
