package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
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
	// StartDuration is how long the engine took from exec to being ready (Startup.Ready):
	// its cold start, reported apart from the measured window.
	StartDuration time.Duration
	// Startup is how the start went, step by step.
	Startup Startup
	log     *StartLog
	baseURL string
}

// Startup is one start of an engine, seen from outside (times from exec) and as its own
// log tells it.
type Startup struct {
	// StartedAt is the wall clock at exec.
	StartedAt time.Time
	// Port is when the engine's port first accepted a TCP connection. vLLM binds it only
	// after its engine is initialized; llama.cpp binds it first and answers 503 while it
	// loads.
	Port time.Duration
	// Health is when /health first answered 200; 0 when the engine has no /health (it
	// answered 404 or 405).
	Health time.Duration
	// Model is when /v1/models first answered 200 listing a model: ready to serve.
	Model time.Duration
	// FirstToken is when the first generated text of a first request arrived (FirstToken
	// fills it); 0 until then, and when that request failed (FirstTokenError says why).
	FirstToken      time.Duration
	FirstTokenError string
	// Phases are the steps the engine's own output named while it started.
	Phases []StartPhase
}

// Ready is when the engine was ready: /health answered 200, or, for an engine without
// /health, /v1/models listed a model.
func (s Startup) Ready() time.Duration {
	if s.Health > 0 {
		return s.Health
	}
	return s.Model
}

// Launch starts the engine and waits until it answers /v1/models with 200 listing a
// model and, where it has /health, /health with 200; or the ready timeout passes, or
// the process exits. On failure the process is
// stopped and the error quotes the end of its output. On the way it times the port's
// first accepted connection and /health's first 200, and reads the startup phases its
// output names (StartLog).
func Launch(ctx context.Context, s LaunchSpec) (*Process, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("target.start.command is empty")
	}
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = 20 * time.Minute
	}
	p := &Process{tail: &tailBuffer{max: 4096}, done: make(chan struct{}), baseURL: baseURL(s.BaseURL)}
	base := p.baseURL
	hostport := hostPort(base)
	// The engine this start makes must be the one measured: a server already answering
	// at the port would pass every readiness probe while the engine started loads (or
	// fails), and the run would measure it instead.
	if hostport != "" {
		if c, err := net.DialTimeout("tcp", hostport, time.Second); err == nil {
			c.Close()
			return nil, &PortBusyError{Addr: hostport}
		}
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	start := time.Now()
	p.log = NewStartLog(start, nil)
	out := []io.Writer{p.tail, p.log}
	if s.Log != nil {
		out = append(out, s.Log)
	}
	w := io.MultiWriter(out...)
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so that stopping it also stops the workers it forks.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A helper that leaves its own session keeps the output pipe open after the engine
	// has exited: Wait stops reading it this long after the exit instead of waiting on it.
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the engine %q: %w", s.Command[0], err)
	}
	p.Startup.StartedAt = start
	p.cmd = cmd
	started.add(cmd.Process.Pid)
	go func() { p.waitErr = cmd.Wait(); started.remove(cmd.Process.Pid); close(p.done) }()

	ready := time.NewTimer(s.ReadyTimeout)
	defer ready.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	noHealth := false
	for {
		st := &p.Startup
		if st.Port == 0 && hostport != "" {
			if c, err := net.DialTimeout("tcp", hostport, time.Second); err == nil {
				c.Close()
				st.Port = time.Since(start)
			}
		}
		if st.Port > 0 && st.Health == 0 && !noHealth {
			switch code := probe(ctx, client, base+"/health"); code {
			case 0, http.StatusServiceUnavailable:
				// No answer yet, or loading (llama.cpp answers 503 until its model is
				// loaded): ask again.
			case http.StatusOK:
				st.Health = time.Since(start)
			default:
				noHealth = true // 404, 405: no /health to wait for
			}
		}
		// An engine with /health is ready when it says so: llama.cpp lists its model
		// (the alias it was given) while /health still answers 503.
		if st.Port > 0 && (st.Health > 0 || noHealth) && listsModel(ctx, client, base+"/v1/models") {
			select {
			case <-p.done:
				// Whatever answered, it is not the process this start made.
				return nil, fmt.Errorf("the engine exited (%v) while %s answered: whatever serves there is not the engine target.start started (its command must run in the foreground for the engine's life); its last output:\n%s", p.waitErr, base, p.tail.String())
			default:
			}
			st.Model = time.Since(start)
			st.Phases = p.log.Phases()
			p.StartDuration = st.Ready()
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("the engine exited before it was ready (%v); its last output:\n%s", p.waitErr, p.tail.String())
		case <-ready.C:
			p.Stop()
			return nil, fmt.Errorf("the engine was not ready at %s after %s (target.start.ready_timeout); its last output:\n%s", base+"/v1/models", s.ReadyTimeout, p.tail.String())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(pollInterval(time.Since(start))):
		}
	}
}

// pollInterval is the wait between two readiness probes: short while the engine is young,
// so that a start of a second is timed to a few percent, and at most 250 ms, so that a
// start of minutes is not probed thousands of times.
func pollInterval(elapsed time.Duration) time.Duration {
	return min(250*time.Millisecond, max(10*time.Millisecond, elapsed/50))
}

// probe is the status of a GET of u, 0 when none came.
func probe(ctx context.Context, c *http.Client, u string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}

// listsModel reports whether GET u (/v1/models) answers 200 with at least one model: an
// engine may answer the route before its model is in the list.
func listsModel(ctx context.Context, c *http.Client, u string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
		// Ollama's native list, for a base URL without /v1 support.
		Models []json.RawMessage `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return false
	}
	return len(list.Data)+len(list.Models) > 0
}

// FirstToken sends one short streaming request, req, and records in Startup when its
// first generated text arrived, counted from exec: how long a user of a freshly started
// engine waits for a first token. A failed request leaves FirstToken 0 and says why in
// FirstTokenError; it does not fail the start, as the measured run judges the engine.
func (p *Process) FirstToken(ctx context.Context, req *Request, apiKey string) {
	c := NewClient(ClientOptions{BaseURL: p.baseURL, APIKey: apiKey, Model: req.Model, Epoch: p.Startup.StartedAt})
	defer c.CloseIdleConnections()
	var res Result
	c.Stream(ctx, req, &res)
	switch {
	case res.First > 0:
		p.Startup.FirstToken = res.First
	case res.ErrReason != "":
		p.Startup.FirstTokenError = res.ErrReason
		if res.ErrDetail != "" {
			p.Startup.FirstTokenError += ": " + res.ErrDetail
		}
	default:
		p.Startup.FirstTokenError = "no generated text"
	}
}

// Stop asks the engine's process group to terminate, and kills it after 30 s. It waits
// a bounded time: a process the kernel cannot kill at once (stuck in a driver) is left
// to it rather than holding slogate.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		// The group may hold workers that outlive the leader's exit.
		_ = syscall.Kill(pgid, syscall.SIGKILL)
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(waitDelay + 10*time.Second):
		}
	}
}

// stopGrace is how long Stop waits for the engine to end on SIGTERM; waitDelay how long
// Wait reads a started process's output after it exited.
const (
	stopGrace = 30 * time.Second
	waitDelay = 2 * time.Second
)

// PortBusyError says that something already answered at the port target.start's engine
// is to serve on, before it was started.
type PortBusyError struct{ Addr string }

func (e *PortBusyError) Error() string {
	return fmt.Sprintf("something already serves %s before target.start runs: the run would measure it, not the engine it starts; stop it, or give target.url a free port", e.Addr)
}

// started holds the process groups of the engines Launch started that have not ended, so
// that a process that must end at once (a second signal) leaves no engine holding a GPU.
var started = &groups{pids: map[int]bool{}}

type groups struct {
	mu   sync.Mutex
	pids map[int]bool
}

func (g *groups) add(pid int)    { g.mu.Lock(); g.pids[pid] = true; g.mu.Unlock() }
func (g *groups) remove(pid int) { g.mu.Lock(); delete(g.pids, pid); g.mu.Unlock() }

// KillStarted kills the process group of every engine Launch started that has not ended,
// without waiting: for a process about to exit without stopping them in turn.
func KillStarted() {
	started.mu.Lock()
	defer started.mu.Unlock()
	for pid := range started.pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
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
