package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

// closingServer answers each request with a streamed response that advertises keep-alive
// and then closes the connection, as llama-server does. It counts the prompts it read.
func closingServer(t *testing.T) (url string, count func(string) int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				body, _ := io.ReadAll(req.Body)
				var b struct{ Prompt string }
				json.Unmarshal(body, &b)
				mu.Lock()
				seen[b.Prompt]++
				mu.Unlock()
				var w strings.Builder
				w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				for _, l := range []string{
					`data: {"choices":[{"text":"a","finish_reason":null}]}`,
					`data: {"choices":[{"text":"b","finish_reason":null}]}`,
					`data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
					`data: [DONE]`,
				} {
					l += "\n\n"
					fmt.Fprintf(&w, "%x\r\n%s\r\n", len(l), l)
				}
				w.WriteString("0\r\n\r\n")
				io.WriteString(c, w.String())
			})
		}
	})
	return "http://" + ln.Addr().String(), func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[p]
	}
}

// A run against a server that closes after every response: no errors, no request sent
// twice, connections dialed before the window, and the record says what the server does.
func TestRunServerClosesAfterResponse(t *testing.T) {
	t.Parallel()
	url, count := closingServer(t)
	c := engine.NewClient(engine.ClientOptions{BaseURL: url, Model: "m"})
	for _, closed := range []bool{false, true} {
		cfg := Config{Streamer: c, Source: &fakeSource{arrivals: constant(200, 60)}, Epoch: c.Epoch(),
			API: engine.APICompletions, Model: "m", Timeout: 20 * time.Second, Warmup: 3}
		if closed {
			cfg.Closed, cfg.Users, cfg.Requests = true, 4, 60
		}
		out := run(t, cfg)
		s := result.Summarize(out.Measured, result.SummaryInput{Window: out.Window})
		if s.Completed != 60 || len(s.Errors) != 0 {
			t.Errorf("closed %v: completed %d of 60, errors %v", closed, s.Completed, s.Errors)
		}
		for _, q := range append(out.Warmup, out.Measured...) {
			if q.Error != "" {
				t.Errorf("request %d: %s (%s)", q.I, q.Error, q.ErrorDetail)
			}
		}
		notes := strings.Join(out.Notes, "\n")
		for _, want := range []string{"dialed before the measured window", "closes the connection after its responses"} {
			if !strings.Contains(notes, want) {
				t.Errorf("closed %v: notes %q lack %q", closed, out.Notes, want)
			}
		}
		dials := 0
		for _, q := range out.Measured {
			if q.DialUS > 0 {
				dials++
			}
		}
		t.Logf("closed %v: %d of 60 measured requests dialed inside the window; notes %q", closed, dials, out.Notes)
		if got := s.Connections; (dials > 0) != (got != nil) || got != nil && got.Dials != dials {
			t.Errorf("summary connections %+v for %d in-window dials", got, dials)
		}
	}
	// Every prompt reached the server exactly once (the sources reuse prompts between
	// the two runs: twice in all).
	for i := range 60 {
		if n := count(fmt.Sprintf("measured %d", i)); n != 2 {
			t.Errorf("measured %d reached the server %d times, want once per run", i, n)
		}
	}
}

// An open loop dials ahead the requests it will have in flight (rate × the warm-up's
// median duration, half again for bursts), at least 32, at most its requests.
func TestOpenConns(t *testing.T) {
	t.Parallel()
	// A cold start (the first), two of 0.3 s, and a failure that does not count.
	warm := []result.Request{{SchedUS: 0, EndUS: 20_000_000}, {SchedUS: 0, EndUS: 300_000}, {SchedUS: 0, EndUS: 300_000}, {Error: "timeout", SchedUS: 0, EndUS: 60_000_000}}
	for _, tc := range []struct {
		name     string
		arrivals []time.Duration
		warm     []result.Request
		want     int
	}{
		{"1000 req/s of 0.3 s: 300 in flight, 450 dialed", constant(1000, 5000), warm, 451},
		{"no warm-up: the floor", constant(1000, 5000), nil, 32},
		{"few requests: no more than there are", constant(1000, 20), warm, 20},
		{"slow rate: the floor", constant(10, 100), warm, 32},
	} {
		if got := openConns(tc.arrivals, tc.warm); got < tc.want-2 || got > tc.want+2 {
			t.Errorf("%s: %d connections, want about %d", tc.name, got, tc.want)
		}
	}
}
