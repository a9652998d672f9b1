package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Connections. A request resent after the server may have read it would be served twice
// and measured once, and a request that fails because the server had already closed its
// connection is not an engine error. Go's transport retries a request on another
// connection only when nothing of it was written (nothingWrittenError); it never retries
// a POST whose bytes were written, even to a connection the server had closed, because
// it cannot know whether the server read them. Some servers (llama.cpp's llama-server)
// close the connection after every streamed response while advertising keep-alive, so
// the next request on that pooled connection races the server's FIN.
//
// The dialer here wraps each connection to close that race without ever sending a
// request twice:
//
//   - Before the first byte of a request on a reused connection, the connection is
//     checked: if the server has closed it (its FIN was read, or on Linux the socket
//     shows EOF), the write fails with nothing written, which Go's transport retries on
//     another connection. The request was provably never read. Once bytes are written,
//     any failure is the request's error, sent once.
//   - The server's habit is learned. Until it is known, the first reuse of a connection
//     waits until reuseProbe has passed since the previous response's last byte, long
//     enough for a server that closes after each response to have done so. A server that
//     closed (there, or while the connection was idle within closeWindow of a response)
//     "closes after responses": every later request carries Connection: close and goes on
//     a fresh connection. A connection that survived the wait shows a server that keeps
//     connections, and reuse goes on without waiting.
//   - Connections are dialed ahead (PrepareConns) so that setting one up does not land in
//     a measured request's TTFT; a request that did dial inside its own latency says how
//     long it took (Result.Dial).

// Server habits.
const (
	habitUnknown int32 = iota
	habitKeeps
	habitCloses
)

// Defaults of the connection discipline.
const (
	// reuseProbe is how long the first reuse of a connection waits after the previous
	// response, while the server's habit is unknown.
	reuseProbe = 10 * time.Millisecond
	// closeWindow: a server that closes an idle connection this soon after a response
	// closes after responses (an idle timeout is longer).
	closeWindow = time.Second
	// spareMaxAge: a connection dialed ahead and unused for longer is not handed out
	// (servers close idle connections; llama.cpp after 5 s).
	spareMaxAge = 3 * time.Second
	// predialParallel bounds the dials PrepareConns runs at once.
	predialParallel = 8
	// maxSpares bounds the spares kept (refilled in the background) once PrepareConns
	// dialed its connections: a run that took them all at once (a closed loop of
	// thousands of users) must not dial as many again inside its measured window.
	maxSpares = 32
)

// errPeerClosed fails a write, before any byte, on a connection the server has closed.
var errPeerClosed = errors.New("the server closed the connection before the request was written")

// errNoReuse fails a write, before any byte, on a used connection to a server that
// closes connections after its responses.
var errNoReuse = errors.New("the server closes connections after responses: not reused")

// dialer dials and tracks the client's connections.
type dialer struct {
	d          net.Dialer
	network    string // "tcp"
	addr       string // host:port of the base URL
	habit      atomic.Int32
	reuseProbe time.Duration

	mu        sync.Mutex
	spares    []*conn
	target    int // spares to keep once PrepareConns asked for them
	refilling int // dials in flight to refill spares
	closed    bool
}

func newDialer(addr string) *dialer {
	return &dialer{
		d:          net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		network:    "tcp",
		addr:       addr,
		reuseProbe: reuseProbe,
	}
}

// closesAfterResponses reports whether the server was seen closing connections after
// its responses.
func (d *dialer) closesAfterResponses() bool { return d.habit.Load() == habitCloses }

// DialContext hands out a spare connection dialed ahead when one is fresh, else dials.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network == d.network && addr == d.addr {
		if c := d.takeSpare(); c != nil {
			return c, nil
		}
	}
	return d.dial(ctx, network, addr, false)
}

func (d *dialer) dial(ctx context.Context, network, addr string, ahead bool) (*conn, error) {
	start := time.Now()
	nc, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &conn{Conn: nc, d: d, dialTime: now.Sub(start), ahead: ahead, born: now, peerGone: make(chan struct{})}, nil
}

// takeSpare returns a fresh spare, closing stale ones, and starts dialing replacements.
func (d *dialer) takeSpare() *conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.spares) > 0 {
		c := d.spares[0]
		d.spares = slices.Delete(d.spares, 0, 1)
		if time.Since(c.born) > spareMaxAge || peek(c.Conn) != peekIdle {
			c.Close()
			continue
		}
		d.refillLocked()
		return c
	}
	d.refillLocked()
	return nil
}

// refillLocked dials in the background toward target spares.
func (d *dialer) refillLocked() {
	for !d.closed && len(d.spares)+d.refilling < d.target {
		d.refilling++
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, err := d.dial(ctx, d.network, d.addr, true)
			cancel()
			d.mu.Lock()
			defer d.mu.Unlock()
			d.refilling--
			if err != nil {
				return // the request that needs one will dial, and say so
			}
			if d.closed {
				c.Close()
				return
			}
			d.spares = append(d.spares, c)
		}()
	}
}

// prepare dials n spares now (keeping those already fresh), waits for them, and keeps
// up to maxSpares of them from then on. It describes what it did.
func (d *dialer) prepare(ctx context.Context, n int) string {
	if n <= 0 {
		return ""
	}
	d.mu.Lock()
	d.closed = false
	d.target = min(n, maxSpares)
	fresh := d.spares[:0]
	for _, c := range d.spares {
		if time.Since(c.born) <= spareMaxAge && peek(c.Conn) == peekIdle {
			fresh = append(fresh, c)
		} else {
			c.Close()
		}
	}
	d.spares = fresh
	need := n - len(d.spares) - d.refilling
	d.mu.Unlock()
	if need <= 0 {
		return ""
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		times []time.Duration
		last  error
	)
	sem := make(chan struct{}, predialParallel)
	for range need {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := d.dial(ctx, d.network, d.addr, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				last = err
				return
			}
			times = append(times, c.dialTime)
			d.mu.Lock()
			d.spares = append(d.spares, c)
			d.mu.Unlock()
		})
	}
	wg.Wait()
	if len(times) == 0 {
		return fmt.Sprintf("connections: none of %d could be dialed ahead (%v): requests dial inside their latency", need, last)
	}
	slices.Sort(times)
	s := fmt.Sprintf("connections: %d dialed before the measured window (dial p50 %.2f ms, max %.2f ms)",
		len(times), ms(times[len(times)/2]), ms(times[len(times)-1]))
	if last != nil {
		s += fmt.Sprintf("; %d failed (%v)", need-len(times), last)
	}
	return s
}

// closeSpares closes the spares and stops refilling.
func (d *dialer) closeSpares() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.target = 0
	for _, c := range d.spares {
		c.Close()
	}
	d.spares = nil
}

func ms(t time.Duration) float64 { return float64(t) / float64(time.Millisecond) }

// conn is one tracked connection.
type conn struct {
	net.Conn
	d        *dialer
	dialTime time.Duration // how long the dial took
	ahead    bool          // dialed ahead, not inside a request
	born     time.Time

	mu        sync.Mutex
	readSince bool      // bytes were read since the last write: the next write starts a request
	lastRead  time.Time // when the last bytes were read
	used      bool      // a request was written (the transport reuses it from then on)
	byUs      bool      // Close was called here
	gone      sync.Once
	peerGone  chan struct{} // closed when a read saw the server end the connection
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	now := time.Now()
	c.mu.Lock()
	if n > 0 {
		c.readSince, c.lastRead = true, now
	}
	idle := c.readSince // nothing written since the last response bytes
	last, byUs := c.lastRead, c.byUs
	c.mu.Unlock()
	if err != nil && n == 0 && !byUs {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return n, err
		}
		c.gone.Do(func() { close(c.peerGone) })
		if idle && now.Sub(last) < closeWindow {
			c.d.habit.Store(habitCloses)
		}
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	reuse := c.readSince
	c.readSince = false
	c.used = true
	last := c.lastRead
	c.mu.Unlock()
	if reuse {
		if err := c.beforeReuse(last); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// beforeReuse runs before the first byte of a request on a connection that served one:
// it fails the write (nothing written, so the transport retries elsewhere) when the
// server has closed the connection, waiting first for the server's verdict while its
// habit is unknown.
func (c *conn) beforeReuse(lastRead time.Time) error {
	if c.closedByPeer() {
		if time.Since(lastRead) < closeWindow {
			// Closed this soon after a response: as a read that saw it would conclude.
			c.d.habit.Store(habitCloses)
		}
		return errPeerClosed
	}
	switch c.d.habit.Load() {
	case habitKeeps:
		return nil
	case habitCloses:
		// It will close this one too, perhaps while the request is on its way.
		c.Close()
		return errNoReuse
	}
	if wait := c.d.reuseProbe - time.Since(lastRead); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-c.peerGone:
		case <-t.C:
		}
		t.Stop()
	}
	if c.closedByPeer() {
		c.d.habit.Store(habitCloses)
		return errPeerClosed
	}
	c.d.habit.CompareAndSwap(habitUnknown, habitKeeps)
	return nil
}

// closedByPeer reports whether the server has ended the connection, as far as reads (or
// the socket itself, where it can be asked) show.
func (c *conn) closedByPeer() bool {
	select {
	case <-c.peerGone:
		return true
	default:
	}
	return peek(c.Conn) == peekClosed
}

func (c *conn) Close() error {
	c.mu.Lock()
	c.byUs = true
	c.mu.Unlock()
	return c.Conn.Close()
}

// peek results.
const (
	peekIdle   = iota // nothing to read, still open (or the platform cannot tell)
	peekClosed        // the server closed it, or it failed
	peekData          // bytes are waiting
)
