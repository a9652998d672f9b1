package loadgen

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

func baseConfig(s engine.Streamer, src Source, epoch time.Time) Config {
	return Config{Streamer: s, Source: src, Epoch: epoch, API: engine.APICompletions, Model: "m", Timeout: 10 * time.Second}
}

// run bounds every test's run time: a hung run fails instead of hanging the suite.
func run(t *testing.T, cfg Config) *Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Interrupted {
		t.Fatalf("run interrupted (took longer than the test's bound)")
	}
	return out
}

func lagsUS(rs []result.Request) []int64 {
	out := make([]int64, len(rs))
	for k, q := range rs {
		out[k] = q.SendUS - q.SchedUS
	}
	return out
}

func ttftsUS(rs []result.Request) []int64 {
	out := make([]int64, len(rs))
	for k, q := range rs {
		out[k] = q.FirstUS - q.SchedUS
	}
	return out
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	open := &fakeSource{arrivals: constant(10, 3)}
	good := baseConfig(newFake(epoch, 0, 1, 0, false), open, epoch)
	tests := []struct {
		name string
		edit func(*Config)
		want []string // substrings of the joined error; none: valid
	}{
		// The baseline: a valid open-loop config is accepted.
		{"valid open", func(*Config) {}, nil},
		// A valid closed loop bounded by duration only (Requests 0 means no count limit).
		{"valid closed by duration", func(c *Config) { c.Closed, c.Users, c.Duration = true, 2, time.Second }, nil},
		// Every problem is reported at once, not just the first.
		{"all missing", func(c *Config) { *c = Config{} }, []string{"no Streamer", "no Source", "Epoch", "API", "Timeout"}},
		// A request without a timeout could hang the run forever and never count as an error.
		{"no timeout", func(c *Config) { c.Timeout = 0 }, []string{"Timeout 0s"}},
		// An unknown API would send to a path the engine does not serve.
		{"bad api", func(c *Config) { c.API = "embeddings" }, []string{`API "embeddings"`}},
		{"negative warmup", func(c *Config) { c.Warmup, c.WarmupConcurrency = -1, -2 }, []string{"Warmup -1", "WarmupConcurrency -2"}},
		// A closed loop with no users sends nothing.
		{"closed no users", func(c *Config) { c.Closed, c.Requests = true, 5 }, []string{"0 users"}},
		// A closed loop with no stop condition would run until interrupted.
		{"closed no stop", func(c *Config) { c.Closed, c.Users = true, 1 }, []string{"needs Requests or Duration"}},
		// An open loop with an empty schedule measures nothing.
		{"open no arrivals", func(c *Config) { c.Source = &fakeSource{} }, []string{"no arrivals"}},
		// Out-of-order arrivals mean a broken generator; sending them would reorder silently.
		{"open unsorted", func(c *Config) {
			c.Source = &fakeSource{arrivals: []time.Duration{0, 2 * time.Second, time.Second}}
		}, []string{"arrival 2 at 1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, _, err := cfg.check()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// Run itself refuses a bad config before sending anything.
	if _, err := Run(t.Context(), Config{}); err == nil {
		t.Fatal("Run accepted an empty config")
	}
}

func TestOpenLoopSchedule(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := newFake(epoch, 2*time.Millisecond, 3, time.Millisecond, false)
	src := &fakeSource{arrivals: constant(200, 100)} // 5 ms apart: whole microseconds
	out := run(t, baseConfig(f, src, epoch))

	if len(out.Measured) != 100 || out.Warmup != nil {
		t.Fatalf("got %d measured, %d warm-up; want 100, 0", len(out.Measured), len(out.Warmup))
	}
	// The client's goroutines' lateness over the window is recorded (a hundred sends
	// and their readers woke up in it).
	if l := out.ReaderLag; l == nil || !(0 <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("reader lag %+v", l)
	}
	base := out.Measured[0].SchedUS
	var endMax int64
	for i, q := range out.Measured {
		if q.I != i {
			t.Fatalf("request %d has index %d", i, q.I)
		}
		// The schedule is absolute: offsets equal the arrivals exactly.
		if got, want := q.SchedUS-base, src.arrivals[i].Microseconds(); got != want {
			t.Errorf("request %d scheduled at +%dµs, want +%dµs", i, got, want)
		}
		// Never sent early.
		if q.SendUS < q.SchedUS {
			t.Errorf("request %d sent %dµs before its scheduled time", i, q.SchedUS-q.SendUS)
		}
		if q.Error != "" || q.Chunks != 3 || len(q.ITLUS) != 2 || q.OutputTokens != 3 || q.NoUsage {
			t.Errorf("request %d: error %q chunks %d itl %v tokens %d no_usage %v", i, q.Error, q.Chunks, q.ITLUS, q.OutputTokens, q.NoUsage)
		}
		if q.Class != "chat" || q.PromptTarget != 100+i || q.OutputTarget != 7 || q.Finish != "length" {
			t.Errorf("request %d: class %q targets %d/%d finish %q", i, q.Class, q.PromptTarget, q.OutputTarget, q.Finish)
		}
		if !(q.SchedUS <= q.FirstUS && q.FirstUS <= q.LastUS && q.LastUS <= q.EndUS) {
			t.Errorf("request %d: timeline out of order: %+v", i, q)
		}
		endMax = max(endMax, q.EndUS)
	}
	if out.Window.StartUS != base || out.Window.EndUS != endMax {
		t.Errorf("window %+v, want [%d, %d]", out.Window, base, endMax)
	}
	// A client that cannot keep a schedule falls further behind with every arrival: at
	// 10% too slow it is 25 ms late by the 50th. A loaded machine's stalls do not add
	// up (under -race beside a compile the median read 9 ms once; on a quiet machine
	// it is well under 1 ms).
	if p50 := median(lagsUS(out.Measured)); p50 > 25_000 {
		t.Errorf("dispatch lag p50 %dµs, want < 25 ms", p50)
	}
	if len(out.InFlight) < 3 {
		t.Errorf("in-flight series has %d samples over a 0.5 s window", len(out.InFlight))
	}
	for _, s := range out.InFlight {
		if s.TUS < base-1000 || s.TUS > endMax+1000_000 || s.V < 0 {
			t.Errorf("in-flight sample %+v outside the window [%d, %d]", s, base, endMax)
		}
	}
}

// TestCoordinatedOmission drives a server that serves one request at a time for 20 ms
// (capacity 50 req/s). Open loop at 100 req/s: the queue grows and TTFT, measured from
// the scheduled time, grows with it. Closed loop with one user: the same server looks
// flat at 20 ms, which is exactly what the closed loop hides.
func TestCoordinatedOmission(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	const service = 20 * time.Millisecond

	f := newFake(epoch, service, 1, 0, true)
	out := run(t, baseConfig(f, &fakeSource{arrivals: constant(100, 40)}, epoch))
	ttft := ttftsUS(out.Measured)
	first, last := median(ttft[:5]), median(ttft[len(ttft)-5:])
	// Expected about 40 ms and 410 ms.
	if last < 4*first || last < 200_000 {
		t.Errorf("open loop against a saturated server: TTFT first %dµs, last %dµs; want the last ≫ the first", first, last)
	}
	var peak float64
	for _, s := range out.InFlight {
		peak = max(peak, s.V)
	}
	if peak < 5 {
		t.Errorf("in-flight peaked at %v; the queue should be visible", peak)
	}
	// The server is the bottleneck, not the client: sends stay on schedule. A dispatcher
	// that waited on responses would send as late as the queue makes requests wait
	// (hundreds of ms by the end); a loaded machine's scheduler, under -race beside other
	// test binaries, delays sends by a few ms (3.2 ms p50 seen). A tenth of the queueing
	// tells the two apart.
	if p50, queued := median(lagsUS(out.Measured)), last-first; p50*10 > queued {
		t.Errorf("dispatch lag p50 %dµs while the server queued requests %dµs: over a tenth of it, the dispatcher waited on responses", p50, queued)
	}

	f = newFake(epoch, service, 1, 0, true)
	cfg := baseConfig(f, &fakeSource{}, epoch)
	cfg.Closed, cfg.Users, cfg.Requests = true, 1, 20
	out = run(t, cfg)
	ttft = ttftsUS(out.Measured)
	p50 := median(ttft)
	if p50 < 15_000 || p50 > 80_000 {
		t.Errorf("closed loop TTFT p50 %dµs, want ≈ 20 ms", p50)
	}
	first, last = median(ttft[:5]), median(ttft[len(ttft)-5:])
	if last > 2*first+10_000 {
		t.Errorf("closed loop TTFT grew from %dµs to %dµs; want flat", first, last)
	}
}

func TestClosedLoop(t *testing.T) {
	t.Parallel()
	epoch := time.Now()

	t.Run("users and requests", func(t *testing.T) {
		f := newFake(epoch, 5*time.Millisecond, 2, time.Millisecond, false)
		src := &fakeSource{}
		cfg := baseConfig(f, src, epoch)
		cfg.Closed, cfg.Users, cfg.Requests = true, 3, 30
		out := run(t, cfg)
		if len(out.Measured) != 30 || f.calls.Load() != 30 {
			t.Fatalf("sent %d (recorded %d), want 30", f.calls.Load(), len(out.Measured))
		}
		for i, q := range out.Measured {
			if q.I != i || q.Error != "" {
				t.Errorf("request %d: index %d error %q", i, q.I, q.Error)
			}
			if q.SendUS-q.SchedUS > 5000 {
				t.Errorf("request %d: closed-loop lag %dµs; sched is when the user decided to send", i, q.SendUS-q.SchedUS)
			}
		}
		if m := f.maxActive(); m > 3 || m < 2 {
			t.Errorf("server saw %d concurrent requests from 3 users", m)
		}
		// Each user asks for think times before its 2nd, 3rd, ... request, in order.
		for u, ns := range src.thinkCalls {
			for k, n := range ns {
				if n != k+1 {
					t.Errorf("user %d: think times asked for %v, want 1, 2, 3, ...", u, ns)
					break
				}
			}
		}
	})

	t.Run("think time", func(t *testing.T) {
		const think = 15 * time.Millisecond
		f := newFake(epoch, 2*time.Millisecond, 1, 0, false)
		cfg := baseConfig(f, &fakeSource{think: think}, epoch)
		cfg.Closed, cfg.Users, cfg.Requests = true, 1, 6
		out := run(t, cfg)
		for k := 1; k < len(out.Measured); k++ {
			// Both times are truncated to microseconds: allow one.
			if gap := out.Measured[k].SendUS - out.Measured[k-1].EndUS; gap < think.Microseconds()-1 {
				t.Errorf("request %d sent %dµs after the previous end; think time is %v", k, gap, think)
			}
		}
	})

	t.Run("duration", func(t *testing.T) {
		const d = 150 * time.Millisecond
		f := newFake(epoch, 20*time.Millisecond, 1, 0, false)
		cfg := baseConfig(f, &fakeSource{think: 5 * time.Millisecond}, epoch)
		cfg.Closed, cfg.Users, cfg.Duration = true, 2, d
		out := run(t, cfg)
		if n := len(out.Measured); n < 4 || n > 30 {
			t.Errorf("%d requests in %v with 2 users at ~25 ms each", n, d)
		}
		for _, q := range out.Measured {
			if q.SchedUS >= out.Window.StartUS+d.Microseconds() {
				t.Errorf("request %d sent at +%dµs, after the %v duration", q.I, q.SchedUS-out.Window.StartUS, d)
			}
			if q.Error != "" {
				t.Errorf("request %d: %q; in-flight requests finish when the duration ends", q.I, q.Error)
			}
		}
	})
}

func TestRequestFields(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	tests := []struct {
		name      string
		api       string
		ignoreEOS bool
		wantMin   int
	}{
		// ignore_eos forces the length: min_tokens must equal max_tokens.
		{"ignore eos", engine.APIChat, true, 7},
		// Without it min_tokens is not sent (0), letting the model stop early.
		{"natural stop", engine.APICompletions, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(epoch, 0, 1, 0, false)
			cfg := baseConfig(f, &fakeSource{}, epoch)
			cfg.API, cfg.Model, cfg.IgnoreEOS = tt.api, "llama", tt.ignoreEOS
			cfg.Closed, cfg.Users, cfg.Requests = true, 1, 1
			run(t, cfg)
			want := engine.Request{API: tt.api, Model: "llama", Prompt: "measured 0", MaxTokens: 7, MinTokens: tt.wantMin, IgnoreEOS: tt.ignoreEOS}
			if !reflect.DeepEqual(f.last, want) {
				t.Errorf("sent %+v, want %+v", f.last, want)
			}
		})
	}
}

func TestWarmup(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := newFake(epoch, 5*time.Millisecond, 1, 0, false)
	cfg := baseConfig(f, &fakeSource{arrivals: constant(100, 5)}, epoch)
	cfg.Warmup = 3
	var observeStartedAfter int64 = -1
	observed := false
	cfg.Observe = func(ctx context.Context) {
		observeStartedAfter = f.finished.Load()
		<-ctx.Done()
		observed = true
	}
	out := run(t, cfg)

	if len(out.Warmup) != 3 || len(out.Measured) != 5 {
		t.Fatalf("%d warm-up, %d measured; want 3, 5", len(out.Warmup), len(out.Measured))
	}
	for k, q := range out.Warmup {
		if q.I != k || q.Class != "warm" || q.OutputTarget != 3 {
			t.Errorf("warm-up %d: %+v", k, q)
		}
		if q.EndUS > out.Window.StartUS {
			t.Errorf("warm-up %d ended at %d, after the window opened at %d", k, q.EndUS, out.Window.StartUS)
		}
		// Sequential by default: the first one meets a cold engine alone.
		if k > 0 && q.SendUS < out.Warmup[k-1].EndUS {
			t.Errorf("warm-up %d sent before warm-up %d ended", k, k-1)
		}
	}
	for _, q := range out.Measured {
		if q.Class != "chat" {
			t.Errorf("measured request %d has class %q", q.I, q.Class)
		}
	}
	if observeStartedAfter < 3 {
		t.Errorf("Observe started after %d finished requests; the window opens after the 3 warm-ups", observeStartedAfter)
	}
	if !observed {
		t.Error("Run returned before Observe saw its context canceled")
	}

	// Concurrent warm-up uses up to WarmupConcurrency connections.
	f = newFake(epoch, 10*time.Millisecond, 1, 0, false)
	cfg = baseConfig(f, &fakeSource{arrivals: constant(100, 1)}, epoch)
	cfg.Warmup, cfg.WarmupConcurrency = 8, 4
	out = run(t, cfg)
	if len(out.Warmup) != 8 || f.maxActive() > 4 || f.maxActive() < 2 {
		t.Errorf("%d warm-ups with up to %d concurrent; want 8 with at most 4", len(out.Warmup), f.maxActive())
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	tests := []struct {
		name   string
		cfg    func(Config) Config
		warmup bool // interrupted during the warm-up
	}{
		// The dispatcher stops at once and in-flight requests are canceled.
		{"open", func(c Config) Config { c.Source = &fakeSource{arrivals: constant(100, 200)}; return c }, false},
		// Users stop sending and their requests in flight are canceled.
		{"closed", func(c Config) Config {
			c.Source, c.Closed, c.Users, c.Requests = &fakeSource{}, true, 4, 1000
			return c
		}, false},
		// Nothing measured yet: the warm-up done so far is still returned.
		{"warm-up", func(c Config) Config {
			c.Source, c.Warmup = &fakeSource{arrivals: constant(100, 10)}, 10
			return c
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(epoch, 120*time.Millisecond, 1, 0, false)
			cfg := tt.cfg(baseConfig(f, nil, epoch))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// Interrupt once some request has finished and another is in flight (not
			// after a fixed time: on a loaded machine the dispatcher may have sent
			// nothing new by then, and nothing would be in flight to cancel).
			go func() {
				for ctx.Err() == nil {
					f.mu.Lock()
					inFlight := f.active
					f.mu.Unlock()
					if f.finished.Load() >= 2 && inFlight >= 1 {
						cancel()
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()
			out, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Interrupted {
				t.Fatal("not marked interrupted")
			}
			got := out.Measured
			if tt.warmup {
				got = out.Warmup
				if len(out.Measured) != 0 {
					t.Errorf("%d measured requests after an interrupted warm-up", len(out.Measured))
				}
			}
			if int64(len(got)) != f.calls.Load() {
				t.Errorf("%d requests recorded, %d sent: every sent request must be present", len(got), f.calls.Load())
			}
			canceled := 0
			for _, q := range got {
				switch q.Error {
				case "":
				case engine.ErrCanceled:
					canceled++
				default:
					t.Errorf("request %d: error %q, want none or canceled", q.I, q.Error)
				}
			}
			if canceled == 0 || canceled == len(got) && !tt.warmup {
				t.Errorf("%d of %d canceled; want the in-flight ones only", canceled, len(got))
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := newFake(epoch, time.Second, 1, 0, false)
	cfg := baseConfig(f, &fakeSource{}, epoch)
	cfg.Closed, cfg.Users, cfg.Requests, cfg.Timeout = true, 2, 2, 30*time.Millisecond
	out := run(t, cfg)
	for _, q := range out.Measured {
		if q.Error != engine.ErrTimeout {
			t.Errorf("request %d: error %q, want timeout", q.I, q.Error)
		}
		if d := q.EndUS - q.SendUS; d < 25_000 || d > 500_000 {
			t.Errorf("request %d took %dµs with a 30 ms timeout", q.I, d)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, reason string
		ctxErr       error
		want         string
	}{
		// A success stays a success, whatever happened to the run afterwards.
		{"ok", "", context.Canceled, ""},
		// No context involved: the Streamer's reason stands.
		{"plain disconnect", engine.ErrDisconnect, nil, engine.ErrDisconnect},
		// The run was interrupted: the broken stream is not the server's fault.
		{"interrupted", engine.ErrDisconnect, context.Canceled, engine.ErrCanceled},
		// The request's deadline passed: a timeout, never a connect error.
		{"deadline", engine.ErrConnect, context.DeadlineExceeded, engine.ErrTimeout},
		// What the server said itself is kept even if the run ended meanwhile.
		{"http status", "http_503", context.Canceled, "http_503"},
		{"stream error", engine.ErrStream, context.DeadlineExceeded, engine.ErrStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := engine.Result{ErrReason: tt.reason}
			classify(&res, tt.ctxErr)
			if res.ErrReason != tt.want {
				t.Errorf("got %q, want %q", res.ErrReason, tt.want)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := newFake(epoch, 2*time.Millisecond, 1, 0, false)
	cfg := baseConfig(f, &fakeSource{arrivals: constant(100, 60)}, epoch) // 0.6 s
	cfg.Warmup = 2
	var mu sync.Mutex
	var calls []Progress
	cfg.Progress = func(p Progress) {
		if !mu.TryLock() {
			t.Error("Progress called concurrently")
			return
		}
		calls = append(calls, p)
		mu.Unlock()
	}
	run(t, cfg)
	mu.Lock()
	defer mu.Unlock()
	var warm, measured []Progress
	for _, p := range calls {
		if p.Warmup {
			if len(measured) > 0 {
				t.Error("warm-up progress after the measured phase began")
			}
			warm = append(warm, p)
		} else {
			measured = append(measured, p)
		}
	}
	if len(warm) == 0 || warm[len(warm)-1].Done != 2 || warm[len(warm)-1].Total != 2 {
		t.Errorf("warm-up progress %+v; want a last report with 2 of 2 done", warm)
	}
	if len(measured) < 2 || len(measured) > 10 {
		t.Fatalf("%d measured-phase reports over 0.6 s; want one per 200 ms and a last one", len(measured))
	}
	lastP := measured[len(measured)-1]
	if lastP.Done != 60 || lastP.Total != 60 || lastP.Errors != 0 || lastP.InFlight != 0 {
		t.Errorf("last report %+v", lastP)
	}
	for k := 1; k < len(measured); k++ {
		if measured[k].Done < measured[k-1].Done || measured[k].Elapsed < measured[k-1].Elapsed {
			t.Errorf("progress went backwards: %+v then %+v", measured[k-1], measured[k])
		}
	}
}

func TestPacer(t *testing.T) {
	t.Parallel()
	for _, mode := range []pacing{pacePrecise, paceSpin, paceTimer} {
		t.Run(mode.String(), func(t *testing.T) {
			p := newPacer(time.Now(), mode)
			for _, ahead := range []time.Duration{0, 300 * time.Microsecond, 2 * time.Millisecond, 8 * time.Millisecond} {
				due := p.now() + ahead
				if !p.wait(t.Context(), due) {
					t.Error("wait failed without cancellation")
				}
				if now := p.now(); now < due {
					t.Errorf("woke %v early", due-now)
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			if p.wait(ctx, p.now()+time.Hour) {
				t.Error("wait for an hour returned true after cancellation")
			}
		})
	}
}

// dyingStreamer serves the first `alive` requests, then refuses every connection, as an
// engine that crashed mid-run.
type dyingStreamer struct {
	epoch time.Time
	alive int64
	n     atomic.Int64
}

func (d *dyingStreamer) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	res.Reset()
	res.Send = time.Since(d.epoch)
	if d.n.Add(1) > d.alive {
		res.ErrReason = engine.ErrConnect
		res.End = time.Since(d.epoch)
		return
	}
	res.First, res.Last = time.Since(d.epoch), time.Since(d.epoch)
	res.Chunks, res.OutputTokens, res.UsageReported, res.FinishReason = 1, 1, true, "length"
	res.End = time.Since(d.epoch)
}

func TestStopsWhenTheEngineIsGone(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	// 2,000 arrivals at 200/s would take 10 s; the engine dies after 30 requests and the
	// run stops after 20 refused connections in a row.
	src := &fakeSource{arrivals: constant(200, 2000)}
	cfg := baseConfig(&dyingStreamer{epoch: epoch, alive: 30}, src, epoch)
	cfg.StopAfterConnectErrors = 20
	out := run(t, cfg)
	if out.Stopped == "" || !strings.Contains(out.Stopped, "consecutive requests failed to connect") {
		t.Fatalf("Stopped %q", out.Stopped)
	}
	ok, refused := 0, 0
	for _, r := range out.Measured {
		switch r.Error {
		case "":
			ok++
		case engine.ErrConnect:
			refused++
		}
	}
	// Every request served before the crash is kept; the run stopped long before the
	// schedule's end (a few requests may have been in flight when it stopped).
	if ok != 30 || refused < 20 || len(out.Measured) > 200 {
		t.Errorf("%d served, %d refused, %d measured", ok, refused, len(out.Measured))
	}
}

// subMicroStreamer reports events parsed less than a microsecond apart, as when one read
// delivers several.
type subMicroStreamer struct{ epoch time.Time }

func (s subMicroStreamer) Stream(ctx context.Context, req *engine.Request, res *engine.Result) {
	res.Send = time.Since(s.epoch)
	res.First = res.Send + time.Millisecond
	res.Gaps = append(res.Gaps, 300*time.Nanosecond, 1500*time.Nanosecond)
	res.Chunks = 3
	res.Last = res.First + 1800*time.Nanosecond
	res.End = res.Last
	res.OutputTokens, res.PromptTokens, res.UsageReported = 3, 10, true
	res.FinishReason = "length"
}

// TestRecordGapsNeverZero: a gap the client measured is never written as 0 µs (rounded
// up to whole microseconds), so that events parsed apart never read as arriving at once.
func TestRecordGapsNeverZero(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	src := &fakeSource{arrivals: constant(1000, 5)}
	out := run(t, baseConfig(subMicroStreamer{epoch}, src, epoch))
	for _, q := range out.Measured {
		if len(q.ITLUS) != 2 || q.ITLUS[0] != 1 || q.ITLUS[1] != 2 {
			t.Errorf("request %d: itl_us %v for gaps of 300 ns and 1.5 µs, want [1 2]", q.I, q.ITLUS)
		}
	}
}
