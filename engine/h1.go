package engine

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The client's own HTTP/1.1 path for streaming requests. net/http's transport runs two
// goroutines per connection (a reader and a writer) besides the caller's, hands every
// request and response between them over channels, and allocates a request, its header
// maps and a response per call: thousands of open streams cost tens of KiB each and a
// share of the client's CPU that shows in its timestamps. Here a request is one write of
// bytes built into a pooled buffer, the response is parsed by http.ReadResponse (status
// line, headers, chunked or Content-Length bodies, trailers) from a small bufio.Reader
// on the connection, and the caller's goroutine is the only one per stream.
//
// It keeps the transport's discipline: a request goes out once; it is resent on another
// connection only when the connection failed before any byte of it was written (the
// dialer's checks in conn.go), and a connection is reused only when its previous
// response was read to its end, the server did not ask to close it, and nothing more
// arrived after it. It is used where the socket can be asked whether the server closed
// it (peekSupported): elsewhere only a goroutine reading an idle connection would see
// it, which is what net/http's transport does.

// maxResponseHeaderBytes bounds a response's status line and headers, as net/http's
// transport does by default.
const maxResponseHeaderBytes = 1 << 20

// idleConnTimeout: an idle connection older than this is closed instead of reused.
const idleConnTimeout = 90 * time.Second

// maxResends bounds the resends of one request on connections found closed before a
// byte was written (each takes another idle connection or a fresh one).
const maxResends = 64

// A long-past deadline interrupts a blocked read or write when a request's context ends.
var pastDeadline = time.Unix(1, 0)

// h1Pool holds the idle connections of the HTTP/1.1 path.
type h1Pool struct {
	origin string      // scheme://host[:port] of the base URL, as written
	host   string      // the Host header
	addr   string      // host:port to dial
	tls    *tls.Config // nil for http
	dialer *dialer

	mu   sync.Mutex
	idle []*h1Conn // most recently used last
}

// h1Conn is one connection of the HTTP/1.1 path.
type h1Conn struct {
	raw  *conn    // the tracked TCP connection
	nc   net.Conn // raw, or TLS over it
	lim  limitReader
	br   *bufio.Reader
	idle time.Time // when it was put back
}

// limitReader fails reads once left bytes were read, so that a response's headers
// cannot grow without bound while http.ReadResponse reads them.
type limitReader struct {
	r    io.Reader
	left int64
}

var errHeadersTooLarge = fmt.Errorf("server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errHeadersTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// newH1Pool returns the pool for base (http or https), or nil when base is not one the
// path handles (the transport serves it then).
func newH1Pool(base string, d *dialer) *h1Pool {
	if !peekSupported || d == nil {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	p := &h1Pool{origin: u.Scheme + "://" + u.Host, host: u.Host, addr: d.addr, dialer: d}
	if u.Scheme == "https" {
		p.tls = &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}}
	}
	return p
}

// get returns an idle connection (reused true) or a fresh one: a spare dialed ahead, or
// one dialed now.
func (p *h1Pool) get(ctx context.Context) (hc *h1Conn, reused bool, err error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		hc = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(hc.idle) <= idleConnTimeout {
			p.mu.Unlock()
			return hc, true, nil
		}
		hc.nc.Close()
	}
	p.mu.Unlock()
	nc, err := p.dialer.DialContext(ctx, p.dialer.network, p.addr)
	if err != nil {
		return nil, false, err
	}
	raw := nc.(*conn)
	hc = &h1Conn{raw: raw, nc: raw}
	if p.tls != nil {
		tc := tls.Client(raw, p.tls)
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			return nil, false, err
		}
		hc.nc = tc
	}
	hc.lim.r = hc.nc
	hc.br = bufio.NewReaderSize(&hc.lim, 2<<10)
	return hc, false, nil
}

func (p *h1Pool) put(hc *h1Conn) {
	hc.idle = time.Now()
	p.mu.Lock()
	p.idle = append(p.idle, hc)
	p.mu.Unlock()
}

// closeIdle closes the idle connections.
func (p *h1Pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, hc := range idle {
		hc.nc.Close()
	}
}

// h1Bufs pools request buffers (head and body, written at once).
var h1Bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendHead writes the request line and headers for a body of n bytes.
func (c *Client) appendHead(b []byte, target string, n int, closeConn bool) []byte {
	b = append(b, "POST "...)
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.h1.host...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, "\r\nAccept: text/event-stream\r\n"...)
	if c.auth != nil {
		b = append(b, "Authorization: "...)
		b = append(b, c.auth[0]...)
		b = append(b, "\r\n"...)
	}
	if closeConn {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "Content-Type: application/json\r\n\r\n"...)
}

// streamH1 is Stream on the HTTP/1.1 path; target is the request URI.
func (c *Client) streamH1(ctx context.Context, target string, req *Request, res *Result) {
	bp, mp := h1Bufs.Get().(*[]byte), h1Bufs.Get().(*[]byte)
	// The buffers go back once the request is written, not when the stream ends: an
	// open stream holds none.
	release := func() {
		for _, p := range []*[]byte{bp, mp} {
			if p != nil && cap(*p) <= 64<<10 { // never keep a buffer a huge prompt grew
				*p = (*p)[:0]
				h1Bufs.Put(p)
			}
		}
		bp, mp = nil, nil
	}
	defer func() { release() }()
	// The body first, to learn its length; then the head and the body together, so that
	// the request is one write.
	*bp = c.appendBody((*bp)[:0], req)
	closeConn := c.dialer.closesAfterResponses()
	*mp = c.appendHead((*mp)[:0], target, len(*bp), closeConn)
	*mp = append(*mp, *bp...)
	out := *mp

	res.Send = c.now()
	var hc *h1Conn
	var stop func() bool
	for attempt := 0; ; attempt++ {
		var reused bool
		var err error
		hc, reused, err = c.h1.get(ctx)
		if err != nil {
			if r := ctxReason(ctx, err); r != "" {
				c.fail(res, r, "no response headers: "+err.Error())
			} else {
				c.fail(res, ErrConnect, err.Error())
			}
			return
		}
		if attempt > 0 {
			res.Retries++
		}
		if !reused && !hc.raw.ahead {
			res.Dial += hc.raw.dialTime
		}
		nc := hc.nc
		stop = context.AfterFunc(ctx, func() { nc.SetDeadline(pastDeadline) })
		n, err := hc.nc.Write(out)
		if err == nil {
			release()
			break
		}
		stop()
		hc.nc.Close()
		if n == 0 && reused && attempt < maxResends && (errors.Is(err, errPeerClosed) || errors.Is(err, errNoReuse)) {
			continue // never written, so never read: another connection
		}
		if r := ctxReason(ctx, err); r != "" {
			c.fail(res, r, "no response headers: "+err.Error())
		} else {
			c.fail(res, ErrConnect, err.Error())
		}
		return
	}
	if !closeConn && c.dialer.closesAfterResponses() {
		// Learned during this request: drop the idle connections now rather than
		// refuse them one by one.
		c.h1.closeIdle()
	}
	reuse := false
	defer func() {
		if reuse && stop() {
			hc.nc.SetDeadline(time.Time{})
			c.h1.put(hc)
			return
		}
		stop()
		hc.nc.Close()
	}()

	hc.lim.left = maxResponseHeaderBytes
	resp, err := readResponse(hc.br)
	hc.lim.left = 1 << 62 // the body's caps are the line reader's
	if err != nil {
		if r := ctxReason(ctx, err); r != "" {
			c.fail(res, r, "no response headers: "+err.Error())
		} else {
			c.fail(res, ErrConnect, err.Error())
		}
		return
	}
	// Reusable once the body was read to its end, with nothing after it.
	reusable := func() bool {
		return !resp.Close && !closeConn && hc.br.Buffered() == 0 && ctx.Err() == nil
	}
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		c.failStatus(res, resp)
		reuse = drained(hc, resp.Body) && reusable()
		return
	}
	defer checkUsage(req, res)
	res.ChunkLimit = MaxChunks(req.MaxTokens)
	if n := min(req.MaxTokens, maxGapsHint) - 1; cap(res.Gaps) < n {
		res.Gaps = make([]time.Duration, 0, n)
	}
	if c.readStream(ctx, resp.Body, resp.Header.Get("Content-Type"), res) {
		// Read on to the end of the body so that the connection can be reused, but not
		// for long: what follows [DONE] is not part of the response, and a server that
		// holds the stream open must not hold the caller.
		reuse = drained(hc, resp.Body) && reusable()
	} else {
		// A success that did not end with [DONE] ended at the body's end (a
		// finish_reason, then EOF).
		reuse = res.OK() && reusable()
	}
}

// drained reads what is left of body, at most maxDrain bytes for at most drainWait,
// and reports whether it reached the body's end.
func drained(hc *h1Conn, body io.Reader) bool {
	hc.nc.SetReadDeadline(time.Now().Add(drainWait))
	_, err := io.CopyN(io.Discard, body, maxDrain)
	return err == io.EOF
}

// readResponse reads a final response, passing over informational ones (100 Continue,
// 103 Early Hints), as the transport does.
func readResponse(br *bufio.Reader) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode < 100 {
			return resp, nil
		}
	}
}
