package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// LaunchSpec is an engine that slogate starts itself (target.start in the workload file).
type LaunchSpec struct {
	Command      []string
	Env          []string // KEY=VALUE added to this process's environment
	BaseURL      string   // where the engine will answer
	ReadyTimeout time.Duration
	Log          io.Writer // the engine's stdout and stderr; nil keeps only a tail
}

// Process is a started engine.
type Process struct {
	cmd     *exec.Cmd
	tail    *tailBuffer
	done    chan struct{}
	waitErr error
	// StartDuration is how long the engine took from exec to its first 200 on /v1/models:
	// its cold start, reported apart from the measured window.
	StartDuration time.Duration
}

// Launch starts the engine and waits until it answers /v1/models with 200, the ready
// timeout passes, or the process exits. On failure the process is stopped and the error
// quotes the end of its output.
func Launch(ctx context.Context, s LaunchSpec) (*Process, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("target.start.command is empty")
	}
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = 20 * time.Minute
	}
	p := &Process{tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	var out io.Writer = p.tail
	if s.Log != nil {
		out = io.MultiWriter(s.Log, p.tail)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that stopping it also stops the workers it forks.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the engine %q: %w", s.Command[0], err)
	}
	p.cmd = cmd
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()

	ready := time.NewTimer(s.ReadyTimeout)
	defer ready.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	url := baseURL(s.BaseURL) + "/v1/models"
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err == nil {
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					p.StartDuration = time.Since(start)
					return p, nil
				}
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("the engine exited before it was ready (%v); its last output:\n%s", p.waitErr, p.tail.String())
		case <-ready.C:
			p.Stop()
			return nil, fmt.Errorf("the engine was not ready at %s after %s (target.start.ready_timeout); its last output:\n%s", url, s.ReadyTimeout, p.tail.String())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop asks the engine's process group to terminate, and kills it after 30 s.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return CleanText(string(bytes.TrimSpace(t.buf)), 4096)
}
