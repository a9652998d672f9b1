// Package loadgen owns when requests are sent: the open-loop dispatcher (an absolute
// schedule, latency measured from the scheduled time, dispatch lag recorded per request),
// closed-loop users, the warm-up phase, per-request timelines, the client-side in-flight
// series, and the hook that samples server metrics during the measured window.
//
// It knows nothing of Markdown, baselines or statistics: it hands timelines to result.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Source is what loadgen needs from a workload.Generator (which satisfies it).
type Source interface {
	// Arrivals are the open-loop scheduled offsets from the start of the measured
	// window, ascending; nil for a closed loop.
	Arrivals() []time.Duration
	Request(i int) workload.Item
	WarmupRequest(i int) workload.Item
	// ThinkTime is the pause of closed-loop user u before its n-th request (0-based).
	// It is asked for n ≥ 1 only: every user sends its first request at once.
	ThinkTime(u, n int) time.Duration
}

var _ Source = (*workload.Generator)(nil)

// Config says what to send, to whom, and when.
type Config struct {
	Streamer engine.Streamer
	Source   Source
	// Epoch is the same epoch the Streamer stamps Result times against; every time in
	// the Outcome is an offset from it. It must carry a monotonic reading (time.Now()).
	Epoch time.Time

	API, Model string
	// IgnoreEOS sends ignore_eos and min_tokens = max_tokens, forcing the output length.
	IgnoreEOS bool
	// Timeout bounds each request; a request that passes it is an error. Required.
	Timeout time.Duration

	// Warmup requests are sent before the measured window, all finished before it opens.
	Warmup int
	// WarmupConcurrency defaults to 1: sequential, so the first request measures the
	// engine's cold start alone.
	WarmupConcurrency int

	// Closed selects the closed loop: Users users that each send, wait for the whole
	// response, think, and send again. It stops after Requests sends or once Duration
	// has elapsed (whichever is set and comes first); requests in flight then finish.
	// The open loop sends len(Source.Arrivals()) requests and ignores both.
	Closed   bool
	Users    int
	Requests int
	Duration time.Duration

	// Connections is how many connections to dial before the measured window, when the
	// Streamer manages its own (engine.Client), so that no measured request pays for a
	// dial. 0: Users for the closed loop; for the open loop the requests it will have in
	// flight, from the schedule's rate and the warm-up's durations (openConns).
	Connections int

	// SampleEvery is the interval of the client in-flight series; default 100ms.
	SampleEvery time.Duration
	// Progress, when set, is called at most every 200ms during each phase and once at
	// the end of it, never concurrently.
	Progress func(Progress)
	// StopAfterConnectErrors stops the run when that many requests in a row failed to
	// connect: the engine is gone, and sending the rest of a long schedule to a closed
	// port measures nothing. 0 never stops.
	StopAfterConnectErrors int
	// StopAfterFailures stops the run when that many requests in a row failed for any
	// reason (an engine answering 500 at once lets a closed loop send thousands a
	// second, measuring nothing and growing the record without bound). 0 never stops.
	StopAfterFailures int
	// StartAt, when set, anchors the open-loop schedule to a wall-clock time: arrival
	// offsets count from it, not from the end of the warm-up. Shards of one run on several
	// machines given the same StartAt send one arrival process. The window waits for it
	// after the warm-up; a warm-up that ends after it makes the start late (recorded in
	// Outcome.Start), and the requests already due then go out at once, their lag
	// counted against latency as always.
	StartAt time.Time
	// Observe, when set, is started when the measured window opens; its context is
	// canceled when the window closes and Run waits for it to return.
	Observe func(ctx context.Context)
	// OpenWindow, when set, is called once the warm-up has ended and before the first
	// measured request is sent (the engine sampler's first scrape, so that counter deltas
	// cover exactly the measured requests).
	OpenWindow func(ctx context.Context)

	// Sessions, when set, makes the measured phase multi-turn: Source.Arrivals are the
	// sessions' starts (open loop) and each session sends its turns one after another
	// (closed loop), turn n when turn n-1 has ended and its think time has passed, with
	// the whole history. Warm-up requests are Source.WarmupRequest, as for any workload.
	Sessions SessionSource
	// TurnRetries is how often a session sends a failed turn again (the same messages)
	// before the turn fails; each send is a request of its own (Request.Attempt).
	TurnRetries int
	// ContinueAfterFailure keeps a session going past a turn that failed (its message is
	// dropped from the history): a task judged by its last call. Otherwise a failed turn
	// ends its session.
	ContinueAfterFailure bool

	// Finished, when set, is called as each request (warm-up or measured) finishes, with
	// its timeline as the Outcome will hold it, from the goroutine that sent it
	// (concurrently with others): the hook that writes each request to disk as it ends,
	// so that a crash loses nothing measured. It must not keep q.
	Finished func(warmup bool, q *result.Request)

	// Spill, when set, keeps the measured requests out of this process's memory while
	// the run is measured: each is handed to Finished, which must be set and keep it
	// (measure's journal writes it to disk), and is then dropped. Once the window has
	// closed, Run calls Spill for all of them (in any order) and puts them in index
	// order into Outcome.Measured. The client's memory then stays flat over the run's
	// length, and so does the collector's work: a run of an hour is measured as its
	// first minute was. An error from Spill stops the run as incomplete (Outcome.Stopped).
	Spill func() ([]result.Request, error)

	// pacing selects how the open-loop dispatcher waits; the zero value is the most
	// accurate one this platform offers. Benchmarks compare the others.
	pacing pacing
}

// connManager is what a Streamer that manages its own connections offers
// (engine.Client): dialing ahead, what the server does with connections, and closing
// what is left when the run ends.
type connManager interface {
	PrepareConns(ctx context.Context, n int) string
	ConnNote() string
	CloseIdleConnections()
}

var _ connManager = (*engine.Client)(nil)

// Progress is a snapshot of the running phase.
type Progress struct {
	Warmup   bool // the warm-up phase; the measured phase otherwise
	Done     int  // requests finished, errors included
	Total    int  // requests the phase will send; 0 when bounded by Duration only
	Errors   int
	InFlight int
	Elapsed  time.Duration // since the phase began
}

// Outcome is what a run measured.
type Outcome struct {
	// Warmup and Measured are in index order. Times are microseconds from Epoch; the
	// measured requests' latencies count from SchedUS, the scheduled time.
	Warmup, Measured []result.Request
	// Window runs from the first scheduled measured request to the end of the last one.
	Window   result.Window
	InFlight []result.Sample
	// Interrupted: ctx was canceled. Requests never sent are absent; those in flight are
	// recorded with error "canceled"; everything else measured is kept.
	Interrupted bool
	// Stopped says why the run stopped early on its own (StopAfterConnectErrors,
	// StopAfterFailures); "" when
	// it did not. What was measured is kept, as for an interruption.
	Stopped string
	// Notes are facts about the run the record must carry (result.RequestNotes of the
	// measured requests, how connections were set up).
	Notes []string
	// ReaderLag is how late the client's goroutines ran when they could (the Go
	// runtime's scheduling latency) over the measured window, in ms; nil when unknown.
	ReaderLag *result.LagSummary
	// Start is how the window opened against Config.StartAt; nil without one.
	Start *result.StartSync
	// ScheduleZeroUS is the time the schedule's offsets count from (µs from Epoch): the
	// arrival at offset a was due at ScheduleZeroUS + a.
	ScheduleZeroUS int64
}

// Defaults.
const (
	DefaultSampleEvery = 100 * time.Millisecond
	progressEvery      = 200 * time.Millisecond
)

// Run sends the warm-up requests, then the measured ones, and returns their timelines.
// It returns an error only for a bad Config: engine failures are per-request data.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	cfg, arrivals, err := cfg.check()
	if err != nil {
		return nil, err
	}
	r := newRunner(ctx, cfg)
	out := &Outcome{}
	// Taken before the warm-up, so that the collection its allocation sets off is not
	// in the window.
	holdGCFloor()
	var items <-chan workload.Item
	if !cfg.Closed && cfg.Sessions == nil {
		// Started before the warm-up so that its buffer is full when the window opens.
		stop := make(chan struct{})
		defer close(stop)
		items = r.prefetch(len(arrivals), stop)
	}

	defer r.abort(nil)
	conns, _ := cfg.Streamer.(connManager)
	if conns != nil {
		defer conns.CloseIdleConnections()
		conns.PrepareConns(r.ctx, min(cfg.WarmupConcurrency, cfg.Warmup))
	}
	out.Warmup = r.warmup()
	if r.ctx.Err() != nil {
		out.Interrupted = ctx.Err() != nil
		if cause := context.Cause(r.ctx); !out.Interrupted && cause != nil {
			out.Stopped = cause.Error()
		}
		start := r.now().Microseconds()
		out.Window = result.Window{StartUS: start, EndUS: start}
		return out, nil
	}

	if conns != nil {
		n := cfg.Connections
		if n == 0 && cfg.Closed {
			n = cfg.Users
		} else if n == 0 {
			n = openConns(arrivals, out.Warmup)
		}
		if note := conns.PrepareConns(r.ctx, n); note != "" {
			out.Notes = append(out.Notes, note)
		}
	}

	if cfg.OpenWindow != nil {
		cfg.OpenWindow(r.ctx)
	}
	var obsDone chan struct{}
	obsCtx, obsCancel := context.WithCancel(r.ctx)
	if cfg.Observe != nil {
		obsDone = make(chan struct{})
		go func() {
			defer close(obsDone)
			cfg.Observe(obsCtx)
		}()
	}

	windowStart := r.now()
	if !cfg.StartAt.IsZero() && !cfg.Closed {
		// Wall-clock arithmetic on purpose: StartAt carries no monotonic reading, and the
		// machines agree (within NTP) on wall time only.
		due := cfg.StartAt.Sub(cfg.Epoch)
		if wait := due - r.now(); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
			}
		}
		opened := r.now()
		out.Start = &result.StartSync{
			StartAt:  cfg.StartAt.UTC(),
			OpenedAt: cfg.Epoch.Add(opened).Round(0).UTC(),
			LateMS:   max(0, float64(opened-due)) / float64(time.Millisecond),
		}
		windowStart = due
	}
	out.ScheduleZeroUS = windowStart.Microseconds()
	total := len(arrivals)
	if cfg.Closed {
		total = cfg.Requests
	} else if cfg.Sessions != nil {
		total = r.sessionTurns(len(arrivals))
	}
	sched := startSchedLatency()
	ph := r.startPhase(false, total, windowStart, true)
	if cfg.Closed {
		out.Measured = r.closed(ph, windowStart)
	} else if cfg.Sessions != nil {
		var notes []string
		out.Measured, notes = r.sessions(ph, windowStart, arrivals)
		out.Notes = append(out.Notes, notes...)
	} else {
		out.Measured = r.open(ph, windowStart, arrivals, items)
	}
	out.InFlight = ph.stop()
	out.ReaderLag = sched.summary()

	obsCancel()
	if obsDone != nil {
		<-obsDone
	}
	// Read back once the engine is no longer observed: a long run's journal takes a
	// while to read, and that time is not the window's.
	var spillErr error
	if cfg.Spill != nil {
		out.Measured, spillErr = r.unspill()
	}

	out.Interrupted = ctx.Err() != nil
	if cause := context.Cause(r.ctx); !out.Interrupted && cause != nil && cause != context.Canceled {
		out.Stopped = cause.Error()
	}
	if spillErr != nil {
		out.Stopped = "the measured requests could not be read back from where they were written as they finished: " + spillErr.Error()
	}
	out.Window = window(out.Measured, windowStart, arrivals, cfg.Closed)
	out.Notes = append(out.Notes, result.RequestNotes(out.Measured)...)
	if conns != nil {
		if note := conns.ConnNote(); note != "" {
			out.Notes = append(out.Notes, note)
		}
	}
	return out, nil
}

// openConns is how many connections an open loop dials ahead: the requests it will have
// in flight by Little's law (the schedule's rate × the warm-up's median duration) with half
// again for bursts, at least 32 and at most the requests or maxOpenConns. Connections
// dialed inside the window would land in its requests' latency, and cost the client and
// the engine CPU while it is measured.
func openConns(arrivals []time.Duration, warm []result.Request) int {
	n := 32
	var d []int64
	for _, q := range warm {
		if q.Error == "" && q.EndUS > q.SchedUS {
			d = append(d, q.EndUS-q.SchedUS)
		}
	}
	if span := arrivals[len(arrivals)-1] - arrivals[0]; len(d) > 0 && span > 0 {
		// The median, not the mean: the first warm-up request may carry a cold start.
		slices.Sort(d)
		rate := float64(len(arrivals)-1) / span.Seconds()
		n = max(n, int(math.Ceil(1.5*rate*float64(d[len(d)/2])/1e6)))
	}
	return min(n, len(arrivals), maxOpenConns)
}

// maxOpenConns bounds the connections an open loop dials ahead by itself.
const maxOpenConns = 10000

// window runs from the first scheduled measured request (the open loop's first arrival,
// even if it was never sent) to the end of the last one.
func window(rs []result.Request, windowStart time.Duration, arrivals []time.Duration, closed bool) result.Window {
	start := windowStart.Microseconds()
	if !closed {
		start = (windowStart + arrivals[0]).Microseconds()
	} else if len(rs) > 0 {
		start = rs[0].SchedUS
		for _, q := range rs {
			start = min(start, q.SchedUS)
		}
	}
	w := result.Window{StartUS: start, EndUS: start}
	for _, q := range rs {
		w.EndUS = max(w.EndUS, q.EndUS)
	}
	return w
}

// check validates cfg, reporting every problem at once, and fills the defaults.
func (cfg Config) check() (Config, []time.Duration, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.Streamer == nil {
		bad("loadgen: no Streamer")
	}
	if cfg.Source == nil {
		bad("loadgen: no Source")
	}
	if cfg.Epoch.IsZero() {
		bad("loadgen: Epoch is not set")
	}
	if cfg.API != engine.APIChat && cfg.API != engine.APICompletions {
		bad("loadgen: API %q: expected %q or %q", cfg.API, engine.APIChat, engine.APICompletions)
	}
	if cfg.Spill != nil && cfg.Finished == nil {
		bad("loadgen: Spill without Finished: the measured requests would be kept nowhere")
	}
	if cfg.Timeout <= 0 {
		bad("loadgen: Timeout %v: every request needs a timeout above zero", cfg.Timeout)
	}
	if cfg.Warmup < 0 {
		bad("loadgen: Warmup %d is negative", cfg.Warmup)
	}
	if cfg.WarmupConcurrency < 0 {
		bad("loadgen: WarmupConcurrency %d is negative", cfg.WarmupConcurrency)
	}
	if cfg.SampleEvery < 0 {
		bad("loadgen: SampleEvery %v is negative", cfg.SampleEvery)
	}
	var arrivals []time.Duration
	if cfg.Closed {
		if cfg.Users <= 0 {
			bad("loadgen: closed loop with %d users: expected at least 1", cfg.Users)
		}
		if cfg.Requests < 0 || cfg.Duration < 0 {
			bad("loadgen: closed loop with Requests %d and Duration %v: neither may be negative", cfg.Requests, cfg.Duration)
		} else if cfg.Requests == 0 && cfg.Duration == 0 {
			bad("loadgen: closed loop needs Requests or Duration to stop")
		}
	} else if cfg.Source != nil {
		arrivals = cfg.Source.Arrivals()
		if len(arrivals) == 0 {
			bad("loadgen: open loop with no arrivals")
		}
		for i, a := range arrivals {
			if a < 0 || (i > 0 && a < arrivals[i-1]) {
				bad("loadgen: arrival %d at %v: arrivals must be ascending offsets from zero", i, a)
				break
			}
		}
	}
	if cfg.WarmupConcurrency == 0 {
		cfg.WarmupConcurrency = 1
	}
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = DefaultSampleEvery
	}
	return cfg, arrivals, errors.Join(errs...)
}
