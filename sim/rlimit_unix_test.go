//go:build unix

package sim

import (
	"syscall"
	"testing"
	"time"
)

// raiseNoFile raises the soft open-files limit to at least need (up to the hard limit).
func raiseNoFile(tb testing.TB, need uint64) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Fatal(err)
	}
	if l.Cur >= need {
		return
	}
	if l.Max < need {
		tb.Skipf("RLIMIT_NOFILE hard limit %d < %d needed: raise it (ulimit -Hn)", l.Max, need)
	}
	l.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Fatalf("raise RLIMIT_NOFILE to %d: %v", need, err)
	}
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
