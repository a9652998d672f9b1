package waittest

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// While a test holds a port nothing answers there and no plain listener gets it; an
// engine that listens with Listen serves on it.
func TestHoldPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ports are shared only on Linux")
	}
	addr := HoldPort(t)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("a connection to the held %s was accepted", addr)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("a plain listener was given the held %s", addr)
	}
	l, err := Listen(addr)
	if err != nil {
		t.Fatalf("the engine's listener on %s: %v", addr, err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("the engine listening on %s did not answer: %v", addr, err)
	}
	c.Close()
}

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// A context whose deadline passes fails the test, naming what it waited for; one that
// ends with the test fails nothing.
func TestContext(t *testing.T) {
	r := &recorder{TB: t}
	ctx := Context(r, 20*time.Millisecond, "the engine to answer")
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context outlived its deadline")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.errs)
		r.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.mu.Lock()
	errs := r.errs
	r.mu.Unlock()
	if len(errs) != 1 || errs[0] != "still waiting after 20ms for the engine to answer" {
		t.Errorf("reported %q", errs)
	}

	t.Run("ends in time", func(t *testing.T) {
		q := &recorder{TB: t}
		// Cleanups run last first: this one after Context's own has ended the context.
		t.Cleanup(func() {
			time.Sleep(10 * time.Millisecond)
			q.mu.Lock()
			defer q.mu.Unlock()
			if len(q.errs) != 0 {
				t.Errorf("reported %q", q.errs)
			}
		})
		Context(q, time.Hour, "nothing")
	})
}
