package sim

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Finish reasons a stream can end with.
const (
	finNone   int32 = iota
	finStop         // a seeded end of sequence before max_tokens
	finLength       // max_tokens reached
)

// stream is the part of a sequence shared with the connection that carries it. The
// engine only adds to tokens and pokes notify (never blocking); the connection takes
// whatever has accumulated, so a slow client receives several tokens per chunk and
// never stalls the step loop.
type stream struct {
	tokens atomic.Int64 // produced, not yet taken by the connection
	finish atomic.Int32 // set after the last token was added
	notify chan struct{}
}

func (st *stream) poke() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// take returns the tokens produced since the last call and the finish reason, reading
// the reason first so that a finished stream is never reported with tokens left behind.
func (st *stream) take() (n int, fin int32) {
	fin = st.finish.Load()
	n = int(st.tokens.Swap(0))
	if fin == finNone {
		if fin = st.finish.Load(); fin != finNone {
			n += int(st.tokens.Swap(0))
		}
	}
	return n, fin
}

type seqState uint8

const (
	stateNew seqState = iota
	stateWaiting
	stateRunning
	stateDone
)

// seq is one request inside the engine. Fields after stream belong to the step loop.
type seq struct {
	stream
	prompt    int   // prompt tokens
	stopAt    int   // output tokens at which the sequence ends
	stopFin   int32 // finish reason when it does
	state     seqState
	ctx       int // prompt + generated: tokens whose KV the sequence needs
	computed  int // tokens whose KV is computed (reset by preemption)
	generated int
	blocks    int
	sched     int // tokens scheduled in the current step
	prefilled bool
	aborted   bool
	last      bool // its final token is in the current step's emission

	// firstHits is the prompt tokens taken from the prefix cache at the first admission
	// (vLLM's num_cached_tokens: a re-admission after preemption leaves it as it was);
	// -1 until then. Written by the loop, read by the handler once the stream finished.
	firstHits atomic.Int64

	hashes  []uint64  // chained hashes of the prompt's full blocks (prefixcache.go)
	cached  []*cblock // blocks held through the prefix cache (part of blocks)
	nextReg int       // next prompt block to register once computed
}

func newSeq(prompt, stopAt int, stopFin int32) *seq {
	s := &seq{
		stream:  stream{notify: make(chan struct{}, 1)},
		prompt:  prompt,
		stopAt:  stopAt,
		stopFin: stopFin,
		ctx:     prompt,
	}
	s.firstHits.Store(-1)
	return s
}

// deque is the waiting queue: FCFS at the back, preempted sequences at the front.
type deque struct {
	buf  []*seq
	head int
}

func (d *deque) len() int      { return len(d.buf) - d.head }
func (d *deque) front() *seq   { return d.buf[d.head] }
func (d *deque) at(i int) *seq { return d.buf[d.head+i] }

func (d *deque) popFront() *seq {
	s := d.buf[d.head]
	d.buf[d.head] = nil
	d.head++
	if d.head == len(d.buf) {
		d.buf, d.head = d.buf[:0], 0
	}
	return s
}

func (d *deque) pushBack(s *seq) {
	if d.head > 0 && len(d.buf) == cap(d.buf) && d.head*2 >= len(d.buf) {
		n := copy(d.buf, d.buf[d.head:])
		clear(d.buf[n:])
		d.buf, d.head = d.buf[:n], 0
	}
	d.buf = append(d.buf, s)
}

func (d *deque) pushFront(s *seq) {
	if d.head == 0 {
		room := max(16, d.len()/2)
		nb := make([]*seq, room+d.len(), room+d.len()+16)
		copy(nb[room:], d.buf[d.head:])
		d.buf, d.head = nb, room
	}
	d.head--
	d.buf[d.head] = s
}

func (d *deque) remove(s *seq) bool {
	for i := d.head; i < len(d.buf); i++ {
		if d.buf[i] == s {
			copy(d.buf[i:], d.buf[i+1:])
			d.buf[len(d.buf)-1] = nil
			d.buf = d.buf[:len(d.buf)-1]
			return true
		}
	}
	return false
}

// Stats are the engine's counters, published at the end of every step.
type Stats struct {
	Running     int // sequences in the batch
	Waiting     int // sequences in the waiting queue
	MaxRunning  int // most sequences ever running at once
	UsedBlocks  int
	NumBlocks   int
	Preemptions int64
	// Prefix cache, in tokens as vLLM counts them: tokens looked up at admission, and
	// those found cached (skipping prefill); CachedBlocks are the blocks cached now.
	PrefixQueries int64
	PrefixHits    int64
	CachedBlocks  int

	Requests         int64 // sequences handed to the engine
	Finished         int64 // sequences that reached their end
	Aborted          int64 // sequences dropped because their connection ended first
	PromptTokens     int64 // prompt tokens of sequences that produced their first token
	GenerationTokens int64

	Steps     int64
	Modelled  time.Duration // Σ modelled step durations
	Deviation time.Duration // Σ |actual − modelled| step durations
	LagSum    time.Duration // Σ lateness of step ends behind the absolute timeline
	LagMax    time.Duration
	// Work is Σ wall time the step loop spent scheduling and handing out tokens: its own
	// overhead, which must stay a small fraction of Modelled.
	Work    time.Duration
	lagHist [len(lagBounds) + 1]int64
}

// Distortion is the mean relative error of actual step durations against modelled ones:
// how much the simulator's own overhead (and the host) distorts the timing it models.
func (s Stats) Distortion() float64 {
	if s.Modelled <= 0 {
		return 0
	}
	return float64(s.Deviation) / float64(s.Modelled)
}

// MeanLag is the mean lateness of a step end behind its deadline.
func (s Stats) MeanLag() time.Duration {
	if s.Steps == 0 {
		return 0
	}
	return s.LagSum / time.Duration(s.Steps)
}

// lagBounds are the buckets of slogate_sim:step_lag_seconds, in seconds.
var lagBounds = [...]float64{0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 1}

// scheduler is the continuous-batching engine model. One goroutine (loop) owns
// everything but the inbox and the published stats; per-step work is O(running).
type scheduler struct {
	p        Profile
	slowdown float64
	rng      *rand.Rand // step jitter
	noise    *RunNoise  // between-run noise; nil for none
	born     time.Time  // the engine's start, the origin of the noise's drift and stalls

	// Owned by the loop.
	running []*seq
	waiting deque
	free    int
	emit    []*seq
	st      Stats
	pc      prefixCache

	mu       sync.Mutex // guards the inbox
	inAdd    []*seq
	inAbort  []*seq
	spareAdd []*seq
	spareAb  []*seq
	inReset  []chan struct{}
	wake     chan struct{}

	statMu sync.Mutex
	pub    Stats

	// paused holds the step loop before its next step (tests use it to let thousands
	// of streams arrive before any is scheduled).
	paused atomic.Bool

	quit chan struct{}
	done chan struct{}
}

func newScheduler(p Profile, slowdown float64, seed int64) *scheduler {
	e := &scheduler{
		p:        p,
		pc:       newPrefixCache(true),
		slowdown: slowdown,
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x5eed_57e9)),
		free:     p.NumBlocks,
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		born:     time.Now(),
	}
	e.st.NumBlocks = p.NumBlocks
	e.pub = e.st
	return e
}

func (e *scheduler) start() { go e.loop() }

func (e *scheduler) close() {
	select {
	case <-e.quit:
	default:
		close(e.quit)
	}
	<-e.done
}

func (e *scheduler) pause(on bool) {
	e.paused.Store(on)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *scheduler) submit(s *seq) {
	e.mu.Lock()
	e.inAdd = append(e.inAdd, s)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// abort drops a sequence whose connection has gone; it is picked up at the next step.
func (e *scheduler) abort(s *seq) {
	e.mu.Lock()
	e.inAbort = append(e.inAbort, s)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// resetPrefixCache empties the prefix cache at the loop's next turn and waits for it;
// false when the engine stopped first.
func (e *scheduler) resetPrefixCache() bool {
	done := make(chan struct{})
	e.mu.Lock()
	e.inReset = append(e.inReset, done)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	select {
	case <-done:
		return true
	case <-e.quit:
		return false
	}
}

func (e *scheduler) stats() Stats {
	e.statMu.Lock()
	defer e.statMu.Unlock()
	return e.pub
}

func (e *scheduler) publish() {
	e.st.Running, e.st.Waiting = len(e.running), e.waiting.len()
	e.st.UsedBlocks = e.p.NumBlocks - e.free
	e.st.CachedBlocks = len(e.pc.blocks)
	e.statMu.Lock()
	e.pub = e.st
	e.statMu.Unlock()
}

// drain moves the inbox into the waiting queue, double-buffering so that a steady
// arrival rate allocates nothing.
func (e *scheduler) drain() {
	e.mu.Lock()
	add, ab := e.inAdd, e.inAbort
	e.inAdd, e.inAbort = e.spareAdd[:0], e.spareAb[:0]
	resets := e.inReset
	e.inReset = nil
	e.mu.Unlock()
	for _, done := range resets {
		e.pc.reset()
		close(done)
	}
	for _, s := range add {
		s.state = stateWaiting
		e.waiting.pushBack(s)
		e.st.Requests++
	}
	for _, s := range ab {
		switch s.state {
		case stateWaiting:
			e.waiting.remove(s)
			s.state = stateDone
			e.st.Aborted++
		case stateRunning:
			s.aborted = true // released at the start of the next plan
		}
	}
	clear(add)
	clear(ab)
	e.spareAdd, e.spareAb = add[:0], ab[:0]
}

func (e *scheduler) loop() {
	defer close(e.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline, lastEnd time.Time
	idle := true
	for {
		e.drain()
		if e.paused.Load() || len(e.running) == 0 && e.waiting.len() == 0 {
			e.publish()
			idle = true
			select {
			case <-e.wake:
				continue
			case <-e.quit:
				return
			}
		}
		if idle {
			// A new busy period starts a new timeline: idle time is not lag.
			deadline = time.Now()
			lastEnd = deadline
			idle = false
		}
		w0 := time.Now()
		decodes, prefill := e.plan()
		e.st.Work += time.Since(w0)
		dt := e.stepDuration(decodes, prefill)
		deadline = deadline.Add(dt)
		if !e.sleepUntil(timer, deadline) {
			return
		}
		now := time.Now()
		e.record(dt, now.Sub(lastEnd), now.Sub(deadline))
		lastEnd = now
		// Publish first, so that a client that has read its last token sees counters
		// that include it.
		e.publish()
		e.deliver()
		e.st.Work += time.Since(now)
	}
}

// stepDuration applies the slowdown and the seeded jitter to the modelled step time.
func (e *scheduler) stepDuration(decodes, prefill int) time.Duration {
	d := float64(e.p.StepTime(decodes, prefill)) * e.slowdown
	if e.p.Jitter > 0 {
		d *= 1 + e.p.Jitter*(2*e.rng.Float64()-1)
	}
	if e.noise != nil {
		at := time.Since(e.born)
		d = d*e.noise.Factor(at) + float64(e.noise.StallsUntil(at))
	}
	return time.Duration(d)
}

func (e *scheduler) record(modelled, actual, lag time.Duration) {
	e.st.Steps++
	e.st.Modelled += modelled
	dev := actual - modelled
	if dev < 0 {
		dev = -dev
	}
	e.st.Deviation += dev
	lag = max(lag, 0)
	e.st.LagSum += lag
	e.st.LagMax = max(e.st.LagMax, lag)
	i := 0
	for i < len(lagBounds) && lag.Seconds() > lagBounds[i] {
		i++
	}
	e.st.lagHist[i]++
}

// sleepUntil waits for the step's deadline on the absolute timeline. A timer that fires
// late makes this step look long and the next one short (its deadline does not move),
// so lateness never accumulates into drift; it shows in the lag metric instead.
func (e *scheduler) sleepUntil(t *time.Timer, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		select {
		case <-e.quit:
			return false
		default:
			return true
		}
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-e.quit:
		t.Stop()
		return false
	}
}

// deliver emits the tokens of the step that just ended to their streams.
func (e *scheduler) deliver() {
	for _, s := range e.emit {
		s.tokens.Add(1)
		if s.last {
			s.finish.Store(s.stopFin)
		}
		s.poke()
	}
	clear(e.emit)
	e.emit = e.emit[:0]
}

// plan schedules one step and applies its effect on the sequences; the tokens it
// produces wait in e.emit until the step's end. It returns the step's decoding
// sequences and prefill tokens, the inputs of the step-time model.
func (e *scheduler) plan() (decodes, prefill int) {
	B := e.p.BlockSize
	e.compact(func(s *seq) bool {
		if !s.aborted {
			return true
		}
		e.release(s)
		e.st.Aborted++
		return false
	})

	budget := e.p.MaxNumBatchedTokens
	// Decodes first: they count against the token budget before any prefill.
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		if s.ctx-s.computed != 1 {
			continue
		}
		if s.blocks*B < s.computed+1 {
			// Crossing a block boundary: take a free block, or preempt the most
			// recently admitted sequence (possibly this one) until one is free.
			for e.free == 0 {
				v := e.running[len(e.running)-1]
				e.running[len(e.running)-1] = nil
				e.running = e.running[:len(e.running)-1]
				e.preempt(v)
				if v == s {
					break
				}
			}
			if s.state != stateRunning {
				break
			}
			s.blocks++
			e.alloc(1)
		}
		s.sched = 1
		budget--
		decodes++
	}
	// Chunked prefill of running sequences, in admission order.
	for _, s := range e.running {
		if budget == 0 {
			break
		}
		if r := s.ctx - s.computed; r > 1 {
			n := min(r, budget)
			s.sched = n
			budget -= n
			prefill += n
		}
	}
	// Admission, FCFS: the head waits (and blocks the queue) until its prompt fits.
	for budget > 0 && len(e.running) < e.p.MaxNumSeqs && e.waiting.len() > 0 {
		h := e.waiting.front()
		// Cached blocks from the start of the prompt skip prefill; at least the last
		// token is computed, to sample from.
		hit := e.pc.match(h.hashes, (h.ctx-1)/B)
		taken := 0 // hit blocks no one holds: they are free blocks until taken
		for _, b := range hit {
			if b.ref == 0 {
				taken++
			}
		}
		need := e.p.BlocksFor(h.ctx+1) - len(hit)
		if need+taken > e.free {
			break
		}
		e.waiting.popFront()
		h.state = stateRunning
		for _, b := range hit {
			if e.pc.acquire(b) {
				e.free--
			}
		}
		e.alloc(need)
		h.blocks = need + len(hit)
		h.cached = append(h.cached[:0], hit...)
		h.nextReg = len(hit)
		h.computed = len(hit) * B
		e.st.PrefixQueries += int64(h.ctx)
		e.st.PrefixHits += int64(len(hit) * B)
		if h.firstHits.Load() < 0 {
			h.firstHits.Store(int64(len(hit) * B))
		}
		e.running = append(e.running, h)
		n := min(h.ctx-h.computed, budget)
		h.sched = n
		budget -= n
		prefill += n
	}
	e.st.MaxRunning = max(e.st.MaxRunning, len(e.running))

	// Apply: a sequence whose KV is complete after this step samples one token.
	e.compact(func(s *seq) bool {
		if s.sched == 0 {
			return true
		}
		s.computed += s.sched
		s.sched = 0
		for s.nextReg < len(s.hashes) && (s.nextReg+1)*B <= s.computed {
			if b, ok := e.pc.register(s.hashes[s.nextReg]); ok {
				s.cached = append(s.cached, b)
			}
			s.nextReg++
		}
		if s.computed < s.ctx {
			return true
		}
		s.generated++
		s.ctx++
		e.st.GenerationTokens++
		if !s.prefilled {
			s.prefilled = true
			e.st.PromptTokens += int64(s.prompt)
		}
		e.emit = append(e.emit, s)
		if s.generated < s.stopAt {
			return true
		}
		s.last = true
		e.release(s)
		e.st.Finished++
		return false
	})
	return decodes, prefill
}

// compact keeps the running sequences for which keep is true, in order.
func (e *scheduler) compact(keep func(*seq) bool) {
	j := 0
	for _, s := range e.running {
		if keep(s) {
			e.running[j] = s
			j++
		}
	}
	clear(e.running[j:])
	e.running = e.running[:j]
}

func (e *scheduler) release(s *seq) {
	e.freeBlocks(s)
	s.state = stateDone
}

// freeBlocks returns a sequence's blocks: its cached ones to the prefix cache (free once
// no one holds them), the rest to the free pool. Cached blocks are released from the
// last to the first, so that eviction takes a prompt's tail before its head, as vLLM
// does: a head evicted first would leave the rest of the chain unreachable.
func (e *scheduler) freeBlocks(s *seq) {
	for i := len(s.cached) - 1; i >= 0; i-- {
		if e.pc.releaseBlock(s.cached[i]) {
			e.free++
		}
	}
	e.free += s.blocks - len(s.cached)
	clear(s.cached)
	s.cached = s.cached[:0]
	s.blocks = 0
}

// alloc takes n free blocks (the caller checked e.free): never-cached ones first, then
// the least recently released cached ones, evicting them.
func (e *scheduler) alloc(n int) {
	if uncached := e.free - e.pc.evictable(); n > uncached {
		e.pc.evict(n - uncached)
	}
	e.free -= n
}

// preempt frees a running sequence's blocks and puts it at the front of the waiting
// queue; on re-admission it prefills its prompt and generated tokens again.
func (e *scheduler) preempt(s *seq) {
	e.st.Preemptions++
	if s.aborted {
		e.release(s)
		e.st.Aborted++
		return
	}
	e.freeBlocks(s)
	s.computed = 0
	s.sched = 0
	s.state = stateWaiting
	e.waiting.pushFront(s)
}
