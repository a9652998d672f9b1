package waittest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// HoldPort binds a loopback port for the rest of t without listening on it, and returns
// its address. Until something listens there a connection to it is refused, so it is
// also an address nothing answers on; and while it is held no other socket (a test's
// outgoing connection, another test's engine) is given the port. An engine that the
// test starts serves on it with Listen, which shares the port (SO_REUSEPORT): the port
// is bound by the process that serves it, where a port picked, given back and bound
// later could be taken in between.
func HoldPort(t testing.TB) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("holding a loopback port: socket: %v", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		unix.Close(fd)
		t.Fatalf("holding a loopback port: SO_REUSEPORT: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		t.Fatalf("holding a loopback port: bind: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		t.Fatalf("holding a loopback port: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}

// Listen listens on addr, sharing its port with the test that holds it (HoldPort).
func Listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}

// DieWithParent makes an engine that the test binary started as a child of itself die
// when the process that started it does (a parent-death signal), so that a test binary
// that panics or is killed leaves no engine behind. Engines run in their own process
// group, which the parent's death does not reach.
func DieWithParent() {
	ppid := os.Getppid()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// The parent may have died between the two reads of the parent's pid.
	if os.Getppid() != ppid {
		os.Exit(1)
	}
}

// YieldCPU sets every thread of this process to the lowest CPU priority (nice 19), for
// test binaries that are pure arithmetic beside others that keep schedules to the
// millisecond. Linux keeps a nice value per thread, and a new thread takes its creator's:
// the runtime's later threads are made by these ones. It lists the threads twice, for
// any made while it ran.
func YieldCPU() {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = unix.Setpriority(unix.PRIO_PROCESS, tid, 19)
			}
		}
	}
}
