//go:build !linux

package waittest

import (
	"net"
	"testing"
)

// HoldPort returns a loopback port the system gave out and took back (GivenBackPort):
// where ports cannot be shared, the engine binds it later.
func HoldPort(t testing.TB) string {
	t.Helper()
	return GivenBackPort(t)
}

// Listen listens on addr.
func Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// DieWithParent does nothing where there is no parent-death signal.
func DieWithParent() {}

// YieldCPU does nothing where threads' priorities are not set one by one.
func YieldCPU() {}
