package engine

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Streams go on the client's own HTTP/1.1 path where the platform can tell a closed
// connection from an idle one: one goroutine per stream (the caller's), where
// net/http's transport adds a reader and a writer per connection.
func TestStreamOneGoroutinePerStream(t *testing.T) {
	// It measures the whole process (its heap, resident memory or goroutines): not
	// parallel.
	if !peekSupported {
		t.Skip("the transport serves streams on this platform")
	}
	const n = 50
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		l := tok + "\n\n"
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(l), l)
		started.Done()
		<-release
		l = finish + "\n\ndata: [DONE]\n\n"
		fmt.Fprintf(c, "%x\r\n%s\r\n0\r\n\r\n", len(l), l)
	})
	c := NewClient(ClientOptions{BaseURL: srv.url()})
	defer c.CloseIdleConnections()
	before := runtime.NumGoroutine()
	var done sync.WaitGroup
	results := make([]*Result, n)
	for i := range n {
		done.Go(func() { results[i] = stream(t, c, plainReq) })
	}
	started.Wait()
	during := runtime.NumGoroutine()
	close(release)
	done.Wait()
	for i, res := range results {
		if !res.OK() || res.Chunks != 1 {
			t.Fatalf("stream %d: %s (%s), %d chunks", i, res.ErrReason, res.ErrDetail, res.Chunks)
		}
	}
	// Per stream: the caller's goroutine and the raw server's one; net/http's
	// transport would add two more.
	if per := float64(during-before) / n; per > 2.5 {
		t.Errorf("%.1f goroutines per open stream, want 2 (the caller's and the server's)", per)
	}
}

// Over TLS the path does the handshake itself and reuses the connection.
func TestStreamTLS(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sseBody(rw, tok, tok, finish, "data: [DONE]")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	defer c.CloseIdleConnections()
	if c.h1 != nil {
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		c.h1.tls.RootCAs = roots
	} else {
		c.hc.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	for i := range 3 {
		if res := stream(t, c, plainReq); !res.OK() || res.Chunks != 2 {
			t.Fatalf("request %d: %s (%s), %d chunks", i, res.ErrReason, res.ErrDetail, res.Chunks)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d TLS connections for 3 sequential requests: keep-alive broken", n)
	}
	// An untrusted certificate is a connection error.
	res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
	if res.ErrReason != ErrConnect || !strings.Contains(res.ErrDetail, "certificate") {
		t.Errorf("untrusted certificate: %s (%s)", res.ErrReason, res.ErrDetail)
	}
}

// Response headers without end are cut at 1 MiB; informational responses before the
// final one are passed over; a response with bytes after its end, or one that asks to
// close, leaves its connection unused.
func TestStreamResponseFraming(t *testing.T) {
	t.Parallel()
	t.Run("endless headers", func(t *testing.T) {
		srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
			if _, ok := s.read(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\n")
			line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
			for range 2000 {
				if _, err := io.WriteString(c, line); err != nil {
					return
				}
			}
		})
		res := stream(t, NewClient(ClientOptions{BaseURL: srv.url()}), plainReq)
		if res.ErrReason != ErrConnect || !strings.Contains(res.ErrDetail, "exceeded") {
			t.Errorf("reason %q (%s)", res.ErrReason, res.ErrDetail)
		}
	})
	t.Run("early hints then a stream", func(t *testing.T) {
		srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
			for {
				if _, ok := s.read(br); !ok {
					return
				}
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
				respond(c)
			}
		})
		c := NewClient(ClientOptions{BaseURL: srv.url()})
		defer c.CloseIdleConnections()
		for i := range 2 {
			if res := stream(t, c, plainReq); !res.OK() || res.Chunks != 2 || res.Status != 200 {
				t.Fatalf("request %d: %s (%s), status %d, %d chunks", i, res.ErrReason, res.ErrDetail, res.Status, res.Chunks)
			}
		}
		if n := srv.accepted.Load(); n != 1 {
			t.Errorf("%d connections for 2 sequential requests", n)
		}
	})
	for _, tc := range []struct {
		name, after string
	}{
		{"bytes after the response", "HTTP/1.1 200 OK\r\n"},
		{"connection close", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				for {
					if _, ok := s.read(br); !ok {
						return
					}
					if tc.after == "" {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\n\r\n"+tok+"\n\n"+finish+"\n\ndata: [DONE]\n\n")
						return
					}
					// One write: the stray bytes are in the client's socket by the
					// time it has read the response, not on their way while the
					// connection is already taken for the next request (a race the
					// client cannot see, and which made this test flap).
					io.WriteString(c, response()+tc.after)
				}
			})
			c := NewClient(ClientOptions{BaseURL: srv.url()})
			defer c.CloseIdleConnections()
			for i := range 2 {
				if res := stream(t, c, plainReq); !res.OK() {
					t.Fatalf("request %d: %s (%s)", i, res.ErrReason, res.ErrDetail)
				}
			}
			if n := srv.accepted.Load(); n != 2 {
				t.Errorf("%d connections for 2 requests: a connection was reused after %s", n, tc.name)
			}
		})
	}
}

// A request whose context ends while its response streams is cut at once, and its
// connection is not reused.
func TestStreamH1CanceledNotReused(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		for {
			p, ok := s.read(br)
			if !ok {
				return
			}
			if p == "stall" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				l := tok + "\n\n"
				fmt.Fprintf(c, "%x\r\n%s\r\n", len(l), l)
				time.Sleep(2 * time.Second)
				return
			}
			respond(c)
		}
	})
	c := NewClient(ClientOptions{BaseURL: srv.url()})
	defer c.CloseIdleConnections()
	ctx, cancel := contextWithTimeout(300 * time.Millisecond)
	defer cancel()
	var res Result
	start := time.Now()
	c.Stream(ctx, &Request{API: APICompletions, Prompt: "stall", MaxTokens: 20}, &res)
	if res.ErrReason != ErrTimeout || res.Chunks != 1 || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("reason %q (%s), %d chunks, after %v", res.ErrReason, res.ErrDetail, res.Chunks, time.Since(start))
	}
	if res := stream(t, c, plainReq); !res.OK() {
		t.Fatalf("next request: %s (%s)", res.ErrReason, res.ErrDetail)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections: the timed-out one was reused", n)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
