package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is an HTTP/1.1 server written by hand, so that it can misbehave the way real
// engines do with connections. serve handles one connection; received counts each
// prompt the server read.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	received map[string]int
}

func newRawServer(t *testing.T, serve func(s *rawServer, c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, received: map[string]int{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			wg.Go(func() {
				defer c.Close()
				serve(s, c, bufio.NewReader(c))
			})
		}
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

// read reads one request and counts its prompt; false at EOF or on a broken request.
func (s *rawServer) read(br *bufio.Reader) (string, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return "", false
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return "", false
	}
	var b struct{ Prompt string }
	json.Unmarshal(body, &b)
	s.mu.Lock()
	s.received[b.Prompt]++
	s.mu.Unlock()
	return b.Prompt, true
}

func (s *rawServer) count(prompt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[prompt]
}

// respond writes a complete streamed response that advertises keep-alive (HTTP/1.1, no
// Connection: close), as llama-server does.
func respond(c net.Conn) { io.WriteString(c, response()) }

// response is what respond writes.
func response() string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, l := range []string{tok, tok, finish, "data: [DONE]"} {
		l += "\n\n"
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(l), l)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// A server that closes the connection after every streamed response while advertising
// keep-alive: the next request on that connection must be retried on a fresh one (it was
// never read), never counted as an error, never sent twice.
func TestStreamServerClosesAfterResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// linger: the server closes that long after a response, or as soon as the next
		// request arrives, without reading it (the race the client loses when it reuses
		// the connection first).
		linger, probe time.Duration
	}{
		{name: "closes at once", linger: 0},
		{name: "closes when the next request arrives", linger: 300 * time.Millisecond, probe: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				if _, ok := s.read(br); !ok {
					return
				}
				respond(c)
				if tc.linger > 0 {
					c.SetReadDeadline(time.Now().Add(tc.linger))
					br.Peek(1) // returns when the next request arrives, or at the deadline
				}
			})
			c := NewClient(ClientOptions{BaseURL: srv.url()})
			if tc.probe > 0 {
				c.dialer.reuseProbe = tc.probe
			}
			defer c.CloseIdleConnections()
			var sent []string
			var mu sync.Mutex
			one := func(p string) {
				res := stream(t, c, &Request{API: APICompletions, Model: "m", Prompt: p, MaxTokens: 20})
				if !res.OK() {
					t.Errorf("%s: %s (%s): a connection the server closed counted as an error", p, res.ErrReason, res.ErrDetail)
				}
				mu.Lock()
				sent = append(sent, p)
				mu.Unlock()
			}
			for i := range 24 {
				one(fmt.Sprintf("seq %d", i))
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 6 {
						one(fmt.Sprintf("conc %d-%d", g, i))
					}
				})
			}
			wg.Wait()
			for _, p := range sent {
				if n := srv.count(p); n != 1 {
					t.Errorf("%s reached the server %d times", p, n)
				}
			}
			if !strings.Contains(c.ConnNote(), "closes the connection after its responses") {
				t.Errorf("ConnNote %q: the server's habit was not learned", c.ConnNote())
			}
		})
	}
}

// A server that reads the second request on a connection and then dies: that request
// may have been acted on, so it is an error, and it is never sent again.
func TestStreamServerDiesAfterReading(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); !ok {
			return
		}
		respond(c)
		s.read(br) // read the next request whole, then close without answering
	})
	c := NewClient(ClientOptions{BaseURL: srv.url()})
	defer c.CloseIdleConnections()
	if res := stream(t, c, &Request{API: APICompletions, Prompt: "first", MaxTokens: 20}); !res.OK() {
		t.Fatalf("first: %s %s", res.ErrReason, res.ErrDetail)
	}
	res := stream(t, c, &Request{API: APICompletions, Prompt: "second", MaxTokens: 20})
	if res.OK() || res.Retries != 0 {
		t.Errorf("second: reason %q, %d retries: a request the server read must fail, once", res.ErrReason, res.Retries)
	}
	time.Sleep(200 * time.Millisecond) // room for a resend, were there one
	if n := srv.count("second"); n != 1 {
		t.Errorf("the request the server read reached it %d times", n)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections: the request was resent on another", n)
	}
}

// A connection dialed inside a request is reported with the request; connections dialed
// ahead are not, and the note says how many were dialed.
func TestPrepareConns(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) { sseBody(rw, tok, finish, "data: [DONE]") })
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	first := stream(t, c, plainReq)
	second := stream(t, c, plainReq)
	if !first.OK() || first.Dial <= 0 || second.Dial != 0 {
		t.Errorf("dial of the first request %v (%s), of the second %v: want the first only", first.Dial, first.ErrReason, second.Dial)
	}
	c.CloseIdleConnections()

	c = NewClient(ClientOptions{BaseURL: srv.URL})
	defer c.CloseIdleConnections()
	note := c.PrepareConns(context.Background(), 3)
	if !strings.HasPrefix(note, "connections: 3 dialed before the measured window") {
		t.Errorf("note %q", note)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if res := stream(t, c, plainReq); !res.OK() || res.Dial != 0 {
				t.Errorf("request on a connection dialed ahead: %s, dial %v", res.ErrReason, res.Dial)
			}
		})
	}
	wg.Wait()
	// A caller's HTTP client is left alone.
	if note := NewClient(ClientOptions{BaseURL: srv.URL, HTTPClient: http.DefaultClient}).PrepareConns(context.Background(), 2); note != "" {
		t.Errorf("note %q with a caller's client", note)
	}
}

// Connections dialed ahead for a closed loop of many users are all taken at once: the
// spares redialed in the background are bounded (32), not as many again inside
// the measured window.
func TestPrepareConnsBoundsRefill(t *testing.T) {
	t.Parallel()
	const n = 60
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); !ok {
			return
		}
		started.Done()
		<-release
		respond(c)
	})
	c := NewClient(ClientOptions{BaseURL: srv.url()})
	defer c.CloseIdleConnections()
	c.PrepareConns(context.Background(), n)
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			if res := stream(t, c, plainReq); !res.OK() {
				t.Errorf("%s (%s)", res.ErrReason, res.ErrDetail)
			}
		})
	}
	started.Wait()
	// Room for the background dials to land.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && srv.accepted.Load() < n+maxSpares {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	done.Wait()
	if got := srv.accepted.Load(); got > n+maxSpares {
		t.Errorf("%d connections accepted for %d streams dialed ahead: the spares were redialed without bound", got, n)
	}
}
