package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// runner holds what every phase shares.
type runner struct {
	ctx  context.Context
	cfg  Config
	pool sync.Pool // *slot: request and result buffers reused across requests
	// srcMu serializes calls into the Source, which need not be safe for concurrent use
	// (the warm-up workers, the open-loop prefetcher and closed-loop users all call it).
	srcMu sync.Mutex
	// abort stops the run early (an engine that went away); connectFails counts the
	// consecutive requests that failed to connect.
	abort        context.CancelCauseFunc
	connectFails atomic.Int64
	// failStreak counts the consecutive requests that failed for any reason.
	failStreak atomic.Int64
}

// errFailureBurst is the cause of a run stopped because every recent request failed.
type errFailureBurst struct {
	n      int
	reason string
}

func (e errFailureBurst) Error() string {
	return fmt.Sprintf("engine failing: %d consecutive requests failed (last: %s)", e.n, e.reason)
}

// errEngineGone is the cause of a run stopped because the engine stopped answering.
type errEngineGone struct{ n int }

func (e errEngineGone) Error() string {
	return fmt.Sprintf("engine stopped answering: %d consecutive requests failed to connect", e.n)
}

// slot is one request's reusable buffers.
type slot struct {
	req engine.Request
	res engine.Result
}

func newRunner(ctx context.Context, cfg Config) *runner {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &runner{ctx: ctx, cfg: cfg, abort: cancel}
	r.pool.New = func() any { return new(slot) }
	return r
}

func (r *runner) now() time.Duration { return time.Since(r.cfg.Epoch) }

func (r *runner) item(i int, warm bool) workload.Item {
	r.srcMu.Lock()
	defer r.srcMu.Unlock()
	if warm {
		return r.cfg.Source.WarmupRequest(i)
	}
	return r.cfg.Source.Request(i)
}

func (r *runner) think(u, n int) time.Duration {
	r.srcMu.Lock()
	defer r.srcMu.Unlock()
	return r.cfg.Source.ThinkTime(u, n)
}

// do sends one request scheduled at sched and writes its timeline to out. The phase's
// in-flight count was raised by the caller at sched time; do lowers it.
func (r *runner) do(ph *phase, i int, item workload.Item, sched time.Duration, out *result.Request) {
	r.doWith(ph, i, item, sched, out, nil)
	r.finished(ph, out)
}

// finished hands a finished request to Config.Finished.
func (r *runner) finished(ph *phase, q *result.Request) {
	if r.cfg.Finished != nil {
		r.cfg.Finished(ph.warm, q)
	}
}

// doWith is do for a turn of a session when t is set: the request carries t's messages,
// and the answer's text and end come back in t.
func (r *runner) doWith(ph *phase, i int, item workload.Item, sched time.Duration, out *result.Request, t *turnIO) {
	s := r.pool.Get().(*slot)
	s.res.Reset()
	s.req = engine.Request{
		API:       r.cfg.API,
		Model:     r.cfg.Model,
		Prompt:    item.Prompt,
		MaxTokens: item.OutputTokens,
		IgnoreEOS: r.cfg.IgnoreEOS,
	}
	if r.cfg.IgnoreEOS {
		s.req.MinTokens = item.OutputTokens
	}
	if t != nil {
		s.req.Messages, s.req.CaptureText = t.msgs, true
	}
	rctx, cancel := context.WithTimeout(r.ctx, r.cfg.Timeout)
	before := r.now()
	r.cfg.Streamer.Stream(rctx, &s.req, &s.res)
	after := r.now()
	classify(&s.res, rctx.Err())
	cancel()
	if n := r.cfg.StopAfterConnectErrors; n > 0 {
		if s.res.ErrReason == engine.ErrConnect {
			if k := r.connectFails.Add(1); k >= int64(n) {
				r.abort(errEngineGone{int(k)})
			}
		} else if s.res.ErrReason != engine.ErrCanceled {
			r.connectFails.Store(0)
		}
	}
	if n := r.cfg.StopAfterFailures; n > 0 && s.res.ErrReason != engine.ErrCanceled {
		if s.res.ErrReason != "" {
			if k := r.failStreak.Add(1); k >= int64(n) {
				r.abort(errFailureBurst{int(k), s.res.ErrReason})
			}
		} else {
			r.failStreak.Store(0)
		}
	}

	res := &s.res
	if res.Send == 0 {
		res.Send = before // a Streamer that failed before stamping anything
	}
	if res.End == 0 {
		res.End = after
	}
	*out = result.Request{
		I:            i,
		Class:        item.Class,
		Task:         item.Task,
		SchedUS:      sched.Microseconds(),
		SendUS:       res.Send.Microseconds(),
		FirstUS:      res.First.Microseconds(),
		LastUS:       res.Last.Microseconds(),
		EndUS:        res.End.Microseconds(),
		PromptTarget: item.PromptTokens,
		OutputTarget: item.OutputTokens,
		PromptTokens: res.PromptTokens,
		OutputTokens: res.OutputTokens,
		NoUsage:      !res.UsageReported,
		UsageFlag:    res.UsageFlag,
		DialUS:       ceilUS(res.Dial),
		Retries:      res.Retries,
		Chunks:       res.Chunks,
		Finish:       res.FinishReason,
		Error:        res.ErrReason,
		ErrorDetail:  res.ErrDetail,
	}
	if res.CachedReported {
		c := res.CachedTokens
		out.CachedTokens = &c
	}
	if len(res.Gaps) > 0 {
		itl := make([]int64, len(res.Gaps))
		for k, g := range res.Gaps {
			itl[k] = ceilUS(g) // a gap under a microsecond is not recorded as none
		}
		out.ITLUS = itl
	}
	for _, k := range res.ChunkTokens {
		if k > 1 {
			out.ChunkTokens = slices.Clone(res.ChunkTokens)
			break
		}
	}
	failed := !res.OK()
	if t != nil {
		t.text, t.end = string(res.Text), res.End
		s.req.Messages = nil
	}
	s.req.Prompt = "" // do not pin the prompt while pooled
	r.pool.Put(s)
	ph.finish(failed)
}

// classify names a failure that the request's context caused, whatever the Streamer
// made of the broken connection: an interrupted run is "canceled" (not a server
// failure), a passed deadline is "timeout" (an error, never a success). What the server
// itself said (an HTTP status, an error in the stream, a bad body) is kept.
func classify(res *engine.Result, ctxErr error) {
	if res.ErrReason == "" || ctxErr == nil {
		return
	}
	switch {
	case strings.HasPrefix(res.ErrReason, "http_"),
		res.ErrReason == engine.ErrStream,
		res.ErrReason == engine.ErrTooLarge,
		res.ErrReason == engine.ErrBadResponse,
		res.ErrReason == engine.ErrOverrun,
		res.ErrReason == engine.ErrEmpty:
		return
	case ctxErr == context.DeadlineExceeded:
		res.ErrReason = engine.ErrTimeout
	default:
		res.ErrReason = engine.ErrCanceled
	}
}

// warmup sends the warm-up requests with WarmupConcurrency workers and waits for all.
func (r *runner) warmup() []result.Request {
	n := r.cfg.Warmup
	if n == 0 {
		return nil
	}
	recs := make([]result.Request, n)
	ph := r.startPhase(true, n, r.now(), false)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.cfg.WarmupConcurrency, n) {
		wg.Go(func() {
			for r.ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				item := r.item(i, true)
				sched := r.now()
				ph.inflight.Add(1)
				r.do(ph, i, item, sched, &recs[i])
			}
		})
	}
	wg.Wait()
	ph.stop()
	// Every index taken was sent, and indices are taken in order.
	return recs[:min(int(next.Load()), n)]
}

// open dispatches the measured requests at windowStart + arrivals[i], never waiting on
// a response: each request runs in its own goroutine, and latency counts from its
// scheduled time, so a slow server (or a slow client) shows as queueing, not as a lower
// rate. Requests already due (the dispatcher fell behind) go out back to back and their
// lag shows in send − sched.
func (r *runner) open(ph *phase, windowStart time.Duration, arrivals []time.Duration, items <-chan workload.Item) []result.Request {
	var recs []result.Request
	if r.cfg.Spill == nil {
		recs = make([]result.Request, len(arrivals))
	}
	var wg sync.WaitGroup
	sent := 0
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		p := newPacer(r.cfg.Epoch, r.cfg.pacing)
		for i, a := range arrivals {
			due := windowStart + a
			if !p.wait(r.ctx, due) {
				return
			}
			var item workload.Item
			select {
			case item = <-items:
			case <-r.ctx.Done():
				return
			}
			ph.inflight.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if recs == nil {
					var q result.Request
					r.do(ph, i, item, due, &q)
					return
				}
				r.do(ph, i, item, due, &recs[i])
			}()
			sent = i + 1
		}
	}()
	<-dispatched
	wg.Wait()
	if recs == nil {
		return nil
	}
	return recs[:sent]
}

// unspill reads the measured requests back from Config.Spill and puts them in the order
// the Outcome holds them: by index, or session by session and turn by turn, numbered in
// that order, as sessions numbers them.
func (r *runner) unspill() ([]result.Request, error) {
	all, err := r.cfg.Spill()
	if r.cfg.Sessions != nil {
		slices.SortStableFunc(all, func(a, b result.Request) int { return cmp.Or(a.Session-b.Session, a.Turn-b.Turn) })
		for k := range all {
			all[k].I = k
		}
	} else {
		slices.SortStableFunc(all, func(a, b result.Request) int { return a.I - b.I })
	}
	return all, err
}

// prefetch produces the measured items in order ahead of the dispatcher, so that prompt
// synthesis never delays a send. It stops at n items or when stop is closed.
func (r *runner) prefetch(n int, stop <-chan struct{}) <-chan workload.Item {
	ch := make(chan workload.Item, 256)
	go func() {
		defer close(ch)
		for i := range n {
			select {
			case ch <- r.item(i, false):
			case <-stop:
				return
			}
		}
	}()
	return ch
}

// closed runs Users users until Requests are sent or Duration has elapsed.
func (r *runner) closed(ph *phase, windowStart time.Duration) []result.Request {
	var deadline time.Duration
	if r.cfg.Duration > 0 {
		deadline = windowStart + r.cfg.Duration
	}
	var next atomic.Int64
	per := make([][]result.Request, r.cfg.Users)
	var wg sync.WaitGroup
	for u := range r.cfg.Users {
		wg.Go(func() {
			t := time.NewTimer(time.Hour)
			t.Stop()
			for n := 0; ; n++ {
				if n > 0 {
					if d := r.think(u, n); d > 0 && !r.pause(t, d, deadline) {
						return
					}
				}
				if r.ctx.Err() != nil || (deadline > 0 && r.now() >= deadline) {
					return
				}
				i := int(next.Add(1) - 1)
				if r.cfg.Requests > 0 && i >= r.cfg.Requests {
					return
				}
				item := r.item(i, false)
				// The user decides to send now: the closed loop has no schedule to fall
				// behind, which is why it hides queueing.
				sched := r.now()
				ph.inflight.Add(1)
				if r.cfg.Spill != nil {
					var q result.Request
					r.do(ph, i, item, sched, &q)
					continue
				}
				per[u] = append(per[u], result.Request{})
				r.do(ph, i, item, sched, &per[u][len(per[u])-1])
			}
		})
	}
	wg.Wait()
	var all []result.Request
	for _, p := range per {
		all = append(all, p...)
	}
	slices.SortFunc(all, func(a, b result.Request) int { return a.I - b.I })
	return all
}

// pause thinks for d, cut short by the deadline (nothing is sent after it) or by ctx; it
// reports whether the user should go on.
func (r *runner) pause(t *time.Timer, d, deadline time.Duration) bool {
	stopAtDeadline := false
	if deadline > 0 {
		if left := deadline - r.now(); left < d {
			d, stopAtDeadline = max(left, 0), true
		}
	}
	t.Reset(d)
	select {
	case <-t.C:
		return !stopAtDeadline
	case <-r.ctx.Done():
		t.Stop()
		return false
	}
}

// phase counts one phase's requests and samples its in-flight series.
type phase struct {
	r                *runner
	warm             bool
	total            int
	start            time.Duration
	sampling         bool
	inflight         atomic.Int64
	done, errs       atomic.Int64
	stopc, monitored chan struct{}
	samples          []result.Sample
}

func (r *runner) startPhase(warm bool, total int, start time.Duration, sampling bool) *phase {
	ph := &phase{r: r, warm: warm, total: total, start: start, sampling: sampling,
		stopc: make(chan struct{}), monitored: make(chan struct{})}
	go ph.monitor()
	return ph
}

func (ph *phase) finish(failed bool) {
	if failed {
		ph.errs.Add(1)
	}
	ph.done.Add(1)
	ph.inflight.Add(-1)
}

func (ph *phase) monitor() {
	defer close(ph.monitored)
	var sampleC, progressC <-chan time.Time
	if ph.sampling {
		ph.sample()
		t := time.NewTicker(ph.r.cfg.SampleEvery)
		defer t.Stop()
		sampleC = t.C
	}
	if ph.r.cfg.Progress != nil {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		progressC = t.C
	}
	for {
		select {
		case <-ph.stopc:
			return
		case <-sampleC:
			ph.sample()
		case <-progressC:
			ph.report()
		}
	}
}

func (ph *phase) sample() {
	ph.samples = append(ph.samples, result.Sample{TUS: ph.r.now().Microseconds(), V: float64(ph.inflight.Load())})
}

func (ph *phase) report() {
	ph.r.cfg.Progress(Progress{
		Warmup:   ph.warm,
		Done:     int(ph.done.Load()),
		Total:    ph.total,
		Errors:   int(ph.errs.Load()),
		InFlight: int(ph.inflight.Load()),
		Elapsed:  ph.r.now() - ph.start,
	})
}

// stop ends the monitor, takes a last sample and a last progress report, and returns
// the series.
func (ph *phase) stop() []result.Sample {
	close(ph.stopc)
	<-ph.monitored
	if ph.sampling {
		ph.sample()
	}
	if ph.r.cfg.Progress != nil {
		ph.report()
	}
	return ph.samples
}

// ceilUS rounds up to whole microseconds, so that a dial that happened never reads 0.
func ceilUS(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
