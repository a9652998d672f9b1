package sim

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
)

// lockedBuffer is a bytes.Buffer the server writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartTime: with a start time the simulator refuses connections until its phases
// have passed, as vLLM binds its port only after its engine is initialized, and prints
// each phase in vLLM's format, which slogate's startup parser reads.
func TestStartTime(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- Serve(ctx, addr, Options{StartTime: 300 * time.Millisecond}, &log) }()
	defer func() { cancel(); <-done }()
	var up time.Duration
	for up == 0 {
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("not listening after 30 s; log:\n%s", log.String())
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			up = time.Since(t0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if up < 300*time.Millisecond {
		t.Errorf("accepted a connection after %s, before its 300 ms start", up)
	}
	var names []string
	for line := range strings.SplitSeq(log.String(), "\n") {
		if name, _, ok := engine.ParseStartLine(line); ok {
			names = append(names, name)
		}
	}
	want := []string{engine.PhaseWeights, engine.PhaseModelLoad, engine.PhaseCompile, engine.PhaseGraphCapture, engine.PhaseEngineInit}
	if strings.Join(names, " ") != strings.Join(want, " ") || !strings.Contains(log.String(), "Starting vLLM API server 0 on http://"+addr) {
		t.Errorf("phases %v, want %v; log:\n%s", names, want, log.String())
	}
}

// TestStartTimeInterrupted: a start interrupted before it ends returns at once, without
// listening.
func TestStartTimeInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := Serve(ctx, "127.0.0.1:0", Options{StartTime: time.Hour}, &lockedBuffer{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("returned after %s", d)
	}
}
