package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/slogate/slogate/internal/waittest"
)

// testTimeout bounds every request a test sends.
const testTimeout = 20 * time.Second

func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func stream(t *testing.T, c *Client, req *Request) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res := new(Result)
	c.Stream(ctx, req, res)
	return res
}

var plainReq = &Request{API: APICompletions, Model: "m", Prompt: "Once upon a time", MaxTokens: 20}

// checkTimes asserts the ordering every result must keep, whatever happened.
func checkTimes(t *testing.T, res *Result) {
	t.Helper()
	if res.Send <= 0 && res.Status != 0 {
		t.Errorf("Send %v: not recorded", res.Send)
	}
	if res.End < res.Send {
		t.Errorf("End %v before Send %v", res.End, res.Send)
	}
	if res.Chunks > 0 {
		if res.First < res.Send || res.Last < res.First || res.End < res.Last {
			t.Errorf("times out of order: send %v first %v last %v end %v", res.Send, res.First, res.Last, res.End)
		}
		if len(res.Gaps) != res.Chunks-1 {
			t.Errorf("%d gaps for %d chunks", len(res.Gaps), res.Chunks)
		}
		var sum time.Duration
		for _, g := range res.Gaps {
			sum += g
		}
		if sum != res.Last-res.First {
			t.Errorf("gaps sum to %v, Last-First is %v", sum, res.Last-res.First)
		}
	} else if res.First != 0 || res.Last != 0 || len(res.Gaps) != 0 {
		t.Errorf("no content chunks but First %v Last %v Gaps %v", res.First, res.Last, res.Gaps)
	}
}

// TestStreamFixtures replays the captured streams. The expected figures were counted
// by hand from the files: each has one or more data events that carry no text (a
// role-only first chunk, an empty finish chunk, a choices:[] usage chunk), which must
// not count as content chunks.
func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	type want struct {
		events       int // data events other than [DONE], for the record
		chunks       int
		prompt, outp int
		finish       string
	}
	fixtures := map[string]want{
		// role-only first chunk (content null), 20 tokens, an empty finish chunk,
		// then choices:[] with usage and timings.
		"sse_chat_llamacpp.txt": {events: 23, chunks: 20, prompt: 46, outp: 20, finish: "length"},
		// role and content in every chunk, content "" in the finish chunk, then
		// choices:[] with usage.
		"sse_chat_ollama.txt": {events: 32, chunks: 30, prompt: 5, outp: 30, finish: "length"},
		// text "" in the finish chunk, which also carries usage and timings.
		"sse_completions_llamacpp.txt": {events: 21, chunks: 20, prompt: 5, outp: 20, finish: "length"},
		// a zero usage in every chunk, text "" in the finish chunk, then choices:[]
		// with the real usage.
		"sse_completions_ollama.txt": {events: 42, chunks: 40, prompt: 5, outp: 40, finish: "length"},
	}
	variants := []struct {
		name string
		edit func(string) string
		// pieces > 0 writes the body in pieces of that many bytes, flushing each.
		pieces int
	}{
		{"as captured", func(s string) string { return s }, 0},
		// Windows-style line endings from a proxy.
		{"crlf", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }, 0},
		// A server that ends the body after the finish chunk without [DONE].
		{"no done", func(s string) string { return strings.Replace(s, "data: [DONE]\n\n", "", 1) }, 0},
		// Comments, event names and ids around the data lines are not data.
		{"comments and events", func(s string) string {
			return ": ping\n\nevent: message\nid: 1\nretry: 1000\n" + strings.ReplaceAll(s, "\n\ndata:", "\n\n: keep-alive\nevent: chunk\ndata:")
		}, 0},
		// Lines split across writes (and reads), CR and LF apart.
		{"seven byte writes", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }, 7},
	}
	names := fixtureFiles(t)
	for _, name := range names {
		base := filepath.Base(name)
		w, ok := fixtures[base]
		if !ok {
			t.Errorf("%s has no expected figures in this test", base)
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(raw), "\ndata: {") + 1; got != w.events {
			t.Errorf("%s: %d data events, the table says %d", base, got, w.events)
		}
		for _, v := range variants {
			t.Run(base+"/"+v.name, func(t *testing.T) {
				body := v.edit(string(raw))
				srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					if v.pieces == 0 {
						io.WriteString(rw, body)
						return
					}
					for i := 0; i < len(body); i += v.pieces {
						io.WriteString(rw, body[i:min(i+v.pieces, len(body))])
						rw.(http.Flusher).Flush()
					}
				})
				res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
				if !res.OK() {
					t.Fatalf("failed: %s: %s", res.ErrReason, res.ErrDetail)
				}
				got := want{events: w.events, chunks: res.Chunks, prompt: res.PromptTokens, outp: res.OutputTokens, finish: res.FinishReason}
				if got != w {
					t.Errorf("got %+v, want %+v", got, w)
				}
				if !res.UsageReported || res.Status != 200 {
					t.Errorf("UsageReported %v, Status %d", res.UsageReported, res.Status)
				}
				checkTimes(t, res)
			})
		}
	}
	if len(names) != len(fixtures) {
		t.Errorf("%d fixture files, %d rows", len(names), len(fixtures))
	}
}

// stall holds a handler until the client goes away. It reads the request body first:
// the server notices a closed connection only once it reads again.
func stall(r *http.Request) {
	io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(testTimeout):
	}
}

// sseBody writes data lines and flushes after each.
func sseBody(rw http.ResponseWriter, lines ...string) {
	rw.Header().Set("Content-Type", "text/event-stream")
	for _, l := range lines {
		io.WriteString(rw, l+"\n\n")
		rw.(http.Flusher).Flush()
	}
}

const (
	tok    = `data: {"choices":[{"index":0,"text":"a","finish_reason":null}]}`
	finish = `data: {"choices":[{"index":0,"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`
)

func TestStreamOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    ClientOptions
		timeout time.Duration // 0: testTimeout
		reason  string
		check   func(t *testing.T, res *Result)
	}{
		// The textbook stream.
		{name: "complete", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, tok, tok, finish, "data: [DONE]")
		}, check: func(t *testing.T, res *Result) {
			want := Result{Chunks: 3, PromptTokens: 4, OutputTokens: 3, UsageReported: true, FinishReason: "stop", Status: 200}
			got := Result{Chunks: res.Chunks, PromptTokens: res.PromptTokens, OutputTokens: res.OutputTokens, UsageReported: res.UsageReported, FinishReason: res.FinishReason, Status: res.Status}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Error(diff)
			}
		}},
		// A finish_reason then EOF without [DONE] is a complete response.
		{name: "finish without done", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, finish)
		}, check: wantChunks(1)},
		// A server without usage: the chunk count stands in, and says so.
		{name: "no usage", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, tok, `data: {"choices":[{"text":"","finish_reason":"length"}]}`, "data: [DONE]")
		}, check: func(t *testing.T, res *Result) {
			if res.UsageReported || res.OutputTokens != 2 || res.PromptTokens != 0 || res.FinishReason != "length" {
				t.Errorf("got %+v", res)
			}
		}},
		// The stream stalls after 3 tokens until the deadline: a timeout that keeps
		// what was measured.
		{name: "stall past the deadline", timeout: 500 * time.Millisecond, handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, tok, tok)
			stall(r)
		}, reason: ErrTimeout, check: func(t *testing.T, res *Result) {
			if res.Chunks != 3 || res.First <= 0 || res.OutputTokens != 3 {
				t.Errorf("chunks %d first %v output %d: measurements lost", res.Chunks, res.First, res.OutputTokens)
			}
			if res.End-res.Send < 400*time.Millisecond {
				t.Errorf("ended %v after send, before the 500ms deadline", res.End-res.Send)
			}
		}},
		// No response headers before the deadline.
		{name: "stall before headers", timeout: 300 * time.Millisecond, handler: func(rw http.ResponseWriter, r *http.Request) {
			stall(r)
		}, reason: ErrTimeout, check: wantChunks(0)},
		// The connection drops mid-stream (a crashed engine).
		{name: "connection dropped", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, tok)
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, reason: ErrDisconnect, check: wantChunks(2)},
		// The body ends cleanly but before any finish_reason or [DONE].
		{name: "clean end without finish", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, tok)
		}, reason: ErrDisconnect, check: wantChunks(2)},
		// vLLM reports a failure inside a 200 stream.
		{name: "error event", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, `data: {"error":{"object":"error","message":"out of KV cache blocks","type":"InternalServerError","code":500}}`, "data: [DONE]")
		}, reason: ErrStream, check: func(t *testing.T, res *Result) {
			wantDetail("out of KV cache blocks (InternalServerError, code 500)")(t, res)
			wantChunks(1)(t, res)
		}},
		// TGI's error is a string.
		{name: "error string", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, `data:{"error":"Request failed during generation: CUDA OOM","error_type":"generation"}`)
		}, reason: ErrStream, check: wantDetail("Request failed during generation: CUDA OOM")},
		// An HTTP error keeps the status and the start of the body.
		{name: "http 500", handler: func(rw http.ResponseWriter, r *http.Request) {
			http.Error(rw, "llama.cpp: failed to parse JSON", http.StatusInternalServerError)
		}, reason: "http_500", check: func(t *testing.T, res *Result) {
			wantDetail("llama.cpp: failed to parse JSON")(t, res)
			if res.Status != 500 {
				t.Errorf("Status %d", res.Status)
			}
		}},
		// A long error body with control characters is cut and cleaned.
		{name: "http 503 long body", handler: func(rw http.ResponseWriter, r *http.Request) {
			rw.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(rw, "\x1b[31mloading\x1b[0m\r\nfake log line\n"+strings.Repeat("é", 2000))
		}, reason: "http_503", check: func(t *testing.T, res *Result) {
			if len(res.ErrDetail) > 512 || !utf8.ValidString(res.ErrDetail) || strings.ContainsFunc(res.ErrDetail, unicode.IsControl) {
				t.Errorf("detail not capped or cleaned: %d bytes %q", len(res.ErrDetail), res.ErrDetail[:min(60, len(res.ErrDetail))])
			}
			if !strings.HasPrefix(res.ErrDetail, "[31mloading [0m  fake log line") {
				t.Errorf("detail %q", res.ErrDetail[:min(60, len(res.ErrDetail))])
			}
		}},
		// A body over MaxBodyBytes stops the read.
		{name: "body over the cap", opts: ClientOptions{MaxBodyBytes: 4096}, handler: func(rw http.ResponseWriter, r *http.Request) {
			lines := slices.Repeat([]string{tok}, 200)
			sseBody(rw, append(lines, finish)...)
		}, reason: ErrTooLarge, check: func(t *testing.T, res *Result) {
			if res.Chunks == 0 || res.Chunks >= 200 {
				t.Errorf("chunks %d: want some, not all", res.Chunks)
			}
		}},
		// A chunk that is not JSON.
		{name: "garbage chunk", handler: func(rw http.ResponseWriter, r *http.Request) {
			sseBody(rw, tok, `data: {"choices":[{"text":"a"`, finish)
		}, reason: ErrBadResponse, check: wantDetail(`unparseable chunk: {"choices":[{"text":"a"`)},
		// A server that ignored stream:true and answered one JSON object.
		{name: "not a stream", handler: func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			io.WriteString(rw, `{"choices":[{"text":"hello","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
		}, reason: ErrBadResponse, check: wantDetail("application/json")},
		// A redirect is not followed (a redirected POST would become a GET).
		{name: "redirect", handler: func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, "/elsewhere", http.StatusFound)
		}, reason: "http_302", check: wantDetail("redirected to /elsewhere")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			tc.opts.BaseURL = srv.URL
			timeout := tc.timeout
			if timeout == 0 {
				timeout = testTimeout
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var res Result
			NewClient(tc.opts).Stream(ctx, plainReq, &res)
			if res.ErrReason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", res.ErrReason, res.ErrDetail, tc.reason)
			}
			if tc.reason != "" && res.ErrDetail == "" {
				t.Errorf("no detail for %s", tc.reason)
			}
			checkTimes(t, &res)
			if tc.check != nil {
				tc.check(t, &res)
			}
		})
	}
}

func wantChunks(n int) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		if res.Chunks != n {
			t.Errorf("chunks %d, want %d", res.Chunks, n)
		}
	}
}

func wantDetail(sub string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		if !strings.Contains(res.ErrDetail, sub) {
			t.Errorf("detail %q does not contain %q", res.ErrDetail, sub)
		}
	}
}

// A server that keeps the connection open after [DONE] must not hold Stream until the
// deadline: the response is complete.
func TestStreamHeldOpenAfterDone(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		sseBody(rw, tok, finish, "data: [DONE]")
		stall(r)
	})
	start := time.Now()
	res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
	took := time.Since(start)
	if !res.OK() || res.Chunks != 1 {
		t.Fatalf("reason %q (%s), chunks %d", res.ErrReason, res.ErrDetail, res.Chunks)
	}
	if took > testTimeout/2 {
		t.Errorf("Stream returned after %v, held by the open connection", took)
	}
	checkTimes(t, res)
}

func TestStreamConnectRefused(t *testing.T) {
	t.Parallel()
	addr := waittest.HoldPort(t)
	res := stream(t, NewClient(ClientOptions{BaseURL: "http://" + addr}), plainReq)
	if res.ErrReason != ErrConnect || res.Status != 0 || res.ErrDetail == "" {
		t.Fatalf("reason %q status %d detail %q", res.ErrReason, res.Status, res.ErrDetail)
	}
	checkTimes(t, res)
}

func TestStreamCanceled(t *testing.T) {
	t.Parallel()
	sent := make(chan struct{})
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		sseBody(rw, tok)
		close(sent)
		stall(r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	go func() {
		<-sent
		time.Sleep(100 * time.Millisecond) // let the client read the chunk
		cancel()
	}()
	var res Result
	NewClient(ClientOptions{BaseURL: srv.URL}).Stream(ctx, plainReq, &res)
	if res.ErrReason != ErrCanceled || res.Chunks != 1 {
		t.Fatalf("reason %q (%s), chunks %d", res.ErrReason, res.ErrDetail, res.Chunks)
	}
	checkTimes(t, &res)
}

// TestStreamHugeLine sends a 10 MB line: the client must stop at MaxLineBytes without
// buffering the line. It is not parallel: it reads the process's allocation count.
func TestStreamHugeLine(t *testing.T) {
	// It measures the whole process (its heap, resident memory or goroutines): not
	// parallel.
	const lineSize = 10 << 20
	piece := bytes.Repeat([]byte("a"), 64<<10)
	wrote := make(chan int64, 1)
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		sseBody(rw, tok)
		io.WriteString(rw, `data: {"choices":[{"text":"`)
		var n int64
		for n < lineSize {
			k, err := rw.Write(piece)
			n += int64(k)
			if err != nil {
				break
			}
		}
		io.WriteString(rw, "\"}]}\n\n")
		wrote <- n
	})
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	stream(t, c, plainReq) // warm the connection pool and the reader pool
	<-wrote
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := stream(t, c, plainReq)
	runtime.ReadMemStats(&after)
	if res.ErrReason != ErrTooLarge || res.Chunks != 1 {
		t.Fatalf("reason %q (%s), chunks %d", res.ErrReason, res.ErrDetail, res.Chunks)
	}
	// The line buffer doubles from 16 KiB up to 1 MiB + 1: about 2 MiB allocated in
	// all. A reader that buffered the line would allocate over 10 MB.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes", alloc)
	if alloc > 5<<20 {
		t.Errorf("allocated %d bytes reading a %d-byte line with a 1 MiB cap", alloc, lineSize)
	}
	checkTimes(t, res)
}

// TestStreamGaps checks that each content chunk is timestamped when it arrives: the
// server sleeps 20 ms between chunks; a client that timestamped per buffer or at the
// end would show gaps near zero. It is not parallel, and its margins are wide: a
// client read that is late by d shortens the next gap by d (to zero when two chunks
// are read together), so two of the nine gaps may be short on a loaded machine.
func TestStreamGaps(t *testing.T) {
	t.Parallel()
	const n = 10
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < n; i++ {
			if i > 0 {
				// Relative sleeps: a late wake-up delays the rest instead of
				// sending two chunks at once to catch up.
				time.Sleep(20 * time.Millisecond)
			}
			io.WriteString(rw, tok+"\n\n")
			rw.(http.Flusher).Flush()
		}
		io.WriteString(rw, finish+"\n\ndata: [DONE]\n\n")
	})
	res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
	if !res.OK() || res.Chunks != n {
		t.Fatalf("reason %q, chunks %d", res.ErrReason, res.Chunks)
	}
	checkTimes(t, res)
	var sum time.Duration
	long := 0
	for _, g := range res.Gaps {
		sum += g
		if g >= 15*time.Millisecond {
			long++
		}
	}
	if long < len(res.Gaps)-2 {
		t.Errorf("%d of %d gaps >= 15ms for chunks sent 20 ms apart (gaps %v)", long, len(res.Gaps), res.Gaps)
	}
	if mean := sum / time.Duration(len(res.Gaps)); mean < 15*time.Millisecond || mean > 60*time.Millisecond {
		t.Errorf("mean gap %v, want 15-60ms (gaps %v)", mean, res.Gaps)
	}
}

// TestStreamGapsCoalesced: a server that writes ten events in one write (as one read
// delivers them to a client that woke late) gets ten distinct timestamps, each taken as
// its event is parsed: no gap is zero, none is long. A client that stamped each read
// would record nine zero gaps.
func TestStreamGapsCoalesced(t *testing.T) {
	t.Parallel()
	const n = 10
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, strings.Repeat(tok+"\n\n", n)+finish+"\n\ndata: [DONE]\n\n")
	})
	res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
	if !res.OK() || res.Chunks != n || len(res.Gaps) != n-1 {
		t.Fatalf("reason %q, chunks %d, gaps %d", res.ErrReason, res.Chunks, len(res.Gaps))
	}
	checkTimes(t, res)
	var sum time.Duration
	for i, g := range res.Gaps {
		if g <= 0 {
			t.Errorf("gap %d is %v for events parsed apart (gaps %v)", i, g, res.Gaps)
		}
		sum += g
	}
	// Parsing nine events takes microseconds; a second allows any stall of the machine.
	if sum > time.Second || res.Last-res.First != sum {
		t.Errorf("gaps sum to %v, last-first %v (gaps %v)", sum, res.Last-res.First, res.Gaps)
	}
}

func TestStreamAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-test-0123456789SECRET"
	var gotAuth []string
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		switch r.URL.Query().Get("case") {
		case "stream":
			sseBody(rw, `data: {"error":{"message":"key `+key+` is over quota"}}`)
		default:
			// Some gateways echo the key they rejected; this one straddles the
			// 512-byte cut, so a reader that cut first would leak its first half.
			http.Error(rw, strings.Repeat("x", 490)+" key: "+key, http.StatusUnauthorized)
		}
	})
	for _, q := range []string{"http", "stream"} {
		c := NewClient(ClientOptions{BaseURL: srv.URL, APIKey: key})
		c.completionsURL += "?case=" + q
		res := stream(t, c, plainReq)
		if res.OK() {
			t.Fatalf("%s: succeeded", q)
		}
		if strings.Contains(res.ErrDetail, key) || strings.Contains(res.ErrDetail, "SECRET") {
			t.Errorf("%s: the key is in ErrDetail: %q", q, res.ErrDetail)
		}
		if !strings.Contains(res.ErrDetail, "[redacted]") {
			t.Errorf("%s: detail %q: the echoed key was cut, not redacted", q, res.ErrDetail)
		}
	}
	if want := []string{"Bearer " + key, "Bearer " + key}; !slices.Equal(gotAuth, want) {
		t.Errorf("Authorization headers %q", gotAuth)
	}
	// No key: no header at all.
	gotAuth = nil
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	stream(t, c, plainReq)
	if len(gotAuth) != 1 || gotAuth[0] != "" {
		t.Errorf("Authorization without a key: %q", gotAuth)
	}
}

func TestStreamRequest(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, contentType, accept string
		body                              map[string]any
	}
	tests := []struct {
		name  string
		base  string // appended to the server URL
		extra map[string]any
		req   Request
		want  seen
	}{
		// Completions with neither ignore_eos nor min_tokens: neither is sent.
		{name: "completions", req: Request{API: APICompletions, Model: "m", Prompt: "hi", MaxTokens: 7},
			want: seen{path: "/v1/completions", body: map[string]any{
				"model": "m", "prompt": "hi", "max_tokens": 7.0, "stream": true,
				"stream_options": map[string]any{"include_usage": true}}}},
		// Chat sends messages; the forcing fields appear when set.
		{name: "chat forced length", base: "/", req: Request{API: APIChat, Model: "m", Prompt: "hi", MaxTokens: 7, MinTokens: 7, IgnoreEOS: true},
			want: seen{path: "/v1/chat/completions", body: map[string]any{
				"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 7.0,
				"min_tokens": 7.0, "ignore_eos": true, "stream": true,
				"stream_options": map[string]any{"include_usage": true}}}},
		// A base URL that already ends in /v1 (as OpenAI SDKs want it).
		{name: "base with v1", base: "/v1/", req: Request{API: APICompletions, Prompt: "hi"},
			want: seen{path: "/v1/completions", body: map[string]any{
				"model": "default-model", "prompt": "hi", "stream": true,
				"stream_options": map[string]any{"include_usage": true}}}},
		// A prefix before /v1 (a gateway route) is kept.
		{name: "gateway prefix", base: "/serving/llama/v1", req: Request{API: APIChat, Model: "m", Prompt: "hi"},
			want: seen{path: "/serving/llama/v1/chat/completions", body: map[string]any{
				"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": true,
				"stream_options": map[string]any{"include_usage": true}}}},
		// ExtraBody adds members and replaces standard ones.
		{name: "extra body", extra: map[string]any{"temperature": 0, "max_tokens": 99, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}},
			req: Request{API: APICompletions, Model: "m", Prompt: "hi", MaxTokens: 7},
			want: seen{path: "/v1/completions", body: map[string]any{
				"model": "m", "prompt": "hi", "max_tokens": 99.0, "stream": true, "temperature": 0.0,
				"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}}},
		// Escaping: quotes, backslashes, control characters, HTML, non-ASCII, and
		// invalid UTF-8 (sent as U+FFFD, as encoding/json would).
		{name: "escaping", req: Request{API: APICompletions, Model: `m"\`, Prompt: "a\"b\\c\n\t\x00\x1f<&>é😀\xff"},
			want: seen{path: "/v1/completions", body: map[string]any{
				"model": `m"\`, "prompt": "a\"b\\c\n\t\x00\x1f<&>é😀\ufffd", "stream": true,
				"stream_options": map[string]any{"include_usage": true}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got seen
			var raw []byte
			srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
				raw, _ = io.ReadAll(r.Body)
				got = seen{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept")}
				if err := json.Unmarshal(raw, &got.body); err != nil {
					t.Errorf("body %q: %v", raw, err)
				}
				sseBody(rw, tok, finish)
			})
			c := NewClient(ClientOptions{BaseURL: srv.URL + tc.base, Model: "default-model", ExtraBody: tc.extra})
			res := stream(t, c, &tc.req)
			if !res.OK() {
				t.Fatalf("%s: %s", res.ErrReason, res.ErrDetail)
			}
			tc.want.method, tc.want.contentType, tc.want.accept = "POST", "application/json", "text/event-stream"
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			// A replaced member appears once: servers differ on duplicate keys.
			for k := range tc.extra {
				if n := bytes.Count(raw, []byte(`"`+k+`":`)); n != 1 {
					t.Errorf("%q appears %d times in %s", k, n, raw)
				}
			}
		})
	}
}

func TestExtraBodyUnencodable(t *testing.T) {
	t.Parallel()
	c := NewClient(ClientOptions{BaseURL: "http://127.0.0.1:1", ExtraBody: map[string]any{"bad": func() {}}})
	res := stream(t, c, plainReq)
	if res.ErrReason != ErrConnect || !strings.Contains(res.ErrDetail, `"bad"`) {
		t.Errorf("reason %q detail %q", res.ErrReason, res.ErrDetail)
	}
}

// TestAppendJSONString compares the hand-written escaper with encoding/json on tricky
// and on every single-byte string.
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	inputs := []string{"", "plain", `"\`, "\u2028\u2029", "<script>&", "\xed\xa0\x80", "a\xffb", "\x7f", "\U0010ffff", "é\xc3"}
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"y")
	}
	for _, s := range inputs {
		enc := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Errorf("%q encodes to invalid JSON %s: %v", s, enc, err)
			continue
		}
		ref, _ := json.Marshal(s)
		var want string
		json.Unmarshal(ref, &want)
		if got != want {
			t.Errorf("%q round-trips to %q, encoding/json gives %q", s, got, want)
		}
	}
}

func TestEpoch(t *testing.T) {
	t.Parallel()
	wall := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) // no monotonic reading
	c := NewClient(ClientOptions{Epoch: wall})
	if !c.Epoch().Equal(wall) {
		t.Errorf("Epoch %v, want %v", c.Epoch(), wall)
	}
	if c.Epoch() == c.Epoch().Round(0) {
		t.Errorf("Epoch has no monotonic reading")
	}
	mono := time.Now()
	if got := NewClient(ClientOptions{Epoch: mono}).Epoch(); got != mono {
		t.Errorf("a monotonic epoch was changed: %v", got)
	}
	before := time.Now()
	if got := NewClient(ClientOptions{}).Epoch(); got.Before(before) || got == got.Round(0) {
		t.Errorf("default epoch %v", got)
	}
}

// TestStreamReuse runs requests one after another on one client and one Result: the
// connection and the reader are reused, and Reset clears the previous request.
func TestStreamReuse(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fail") != "" {
			http.Error(rw, "no", http.StatusBadRequest)
			return
		}
		sseBody(rw, tok, tok, finish, "data: [DONE]")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	var res Result
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		c.Stream(ctx, plainReq, &res)
		cancel()
		if !res.OK() || res.Chunks != 2 || len(res.Gaps) != 1 || res.Status != 200 {
			t.Fatalf("request %d: %+v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential requests: keep-alive broken", n)
	}
	c.completionsURL += "?fail=1"
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c.Stream(ctx, plainReq, &res)
	if res.ErrReason != "http_400" || res.Chunks != 0 || len(res.Gaps) != 0 || res.FinishReason != "" || res.UsageReported {
		t.Errorf("a failed request kept the previous result: %+v", res)
	}
}

func ExampleClient_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sseBody(rw, tok, tok, finish, "data: [DONE]")
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	var res Result
	c.Stream(context.Background(), &Request{API: APICompletions, Model: "m", Prompt: "hi", MaxTokens: 3}, &res)
	fmt.Println(res.OK(), res.Chunks, res.OutputTokens, res.UsageReported, res.FinishReason)
	// Output: true 2 3 true stop
}

// TestStreamMemoryPerOpenStream holds 200 streams open after their first chunk and
// measures the live heap they take, client and in-process server together: buffers sized
// for SSE (a few KiB per connection, not the 32 KiB read and 32 KiB write buffers of bulk
// transfer, over 80 KiB a stream with the line reader's) keep it well under 48 KiB.
func TestStreamMemoryPerOpenStream(t *testing.T) {
	// It measures the whole process (its heap, resident memory or goroutines): not
	// parallel.
	const n = 200
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, tok+"\n\n")
		rw.(http.Flusher).Flush()
		started.Done()
		<-release
		io.WriteString(rw, finish+"\n\ndata: [DONE]\n\n")
	})
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := live()
	results := make([]*Result, n)
	var done sync.WaitGroup
	for i := range n {
		done.Go(func() { results[i] = stream(t, c, plainReq) })
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // the clients read their first chunk
	during := live()
	close(release)
	done.Wait()
	for i, res := range results {
		if !res.OK() || res.Chunks != 1 {
			t.Fatalf("stream %d: reason %q, chunks %d", i, res.ErrReason, res.Chunks)
		}
	}
	per := (int64(during) - int64(before)) / n
	t.Logf("%d B of live heap per open stream", per)
	if per > 48<<10 {
		t.Errorf("%d B of live heap per open stream, want at most %d", per, 48<<10)
	}
}

// TestStreamGapsAllocatedOnce: the gaps of a full answer fit the buffer allocated before
// the stream, so that it never grows through a series of discarded copies.
func TestStreamGapsAllocatedOnce(t *testing.T) {
	t.Parallel()
	const n = 20
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, strings.Repeat(tok+"\n\n", n)+finish+"\n\ndata: [DONE]\n\n")
	})
	c := NewClient(ClientOptions{BaseURL: srv.URL})
	res := new(Result)
	c.Stream(t.Context(), &Request{API: APICompletions, Model: "m", Prompt: "p", MaxTokens: n}, res)
	if !res.OK() || len(res.Gaps) != n-1 || cap(res.Gaps) != n-1 {
		t.Errorf("reason %q, %d gaps in a buffer of %d, want %d in %d", res.ErrReason, len(res.Gaps), cap(res.Gaps), n-1, n-1)
	}
}
