//go:build linux

package loadgen

import (
	"syscall"
	"time"
)

const (
	havePreciseSleep = true
	prSetTimerSlack  = 29 // PR_SET_TIMERSLACK, linux/prctl.h
)

// fineSleep sleeps the current thread with nanosleep after setting the thread's timer
// slack to 1 ns (the default, 50 µs, is added to every sleep). The slack is set each
// time because the goroutine is not locked to its thread: a locked goroutine pays two
// thread switches (~40 µs measured) for every yield of the spin that follows. A thread
// that keeps the 1 ns slack afterwards only wakes more precisely. While the thread
// sleeps, the runtime hands its P to other goroutines.
func fineSleep(d time.Duration) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller re-checks the clock
}
