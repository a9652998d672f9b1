//go:build unix

// Package fsafetest makes, for tests, the paths that slogate must refuse to read or
// write: links, named pipes, sockets, devices.
package fsafetest

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// UnixSocket listens on a Unix socket for the rest of t and returns its path. The path
// is in a short directory of its own (a socket's path is limited to about 100 bytes,
// which a test's temporary directory may exceed).
func UnixSocket(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return path
}

// Hazards makes in dir what no write may follow or replace, each mapped to the words
// its refusal names (fsafe.Kind): a link to victim (a file whose content must survive),
// a named pipe, a socket and, where the test may make one, a character device (the null
// device's numbers, made here, never the machine's own).
func Hazards(t testing.TB, dir, victim string) map[string]string {
	t.Helper()
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{link: "symbolic link", fifo: "named pipe (FIFO)", UnixSocket(t): "socket"}
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		nodes[dev] = "character device"
	} else {
		t.Logf("no character device made (%v): the other kinds are checked", err)
	}
	return nodes
}
