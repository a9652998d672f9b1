package sim

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fixed-timing engine is the benchmark's oracle: its stream must be well-formed SSE
// with a Content-Length that matches, one event per token, usage at the end, and events
// no earlier than their schedule.
func TestFixedStream(t *testing.T) {
	t.Parallel()
	f := &Fixed{TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond}
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path, body, marker string
	}{
		{"/v1/completions", `{"prompt":"abcdefgh","max_tokens":5}`, `"text":" a"`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"abcdefgh"}],"max_tokens":5}`, `"content":" a"`},
	} {
		start := time.Now()
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: status %d, content type %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		cl, _ := strconv.Atoi(resp.Header.Get("Content-Length"))
		br := bufio.NewReader(resp.Body)
		var got []time.Duration
		var all strings.Builder
		for {
			line, err := br.ReadString('\n')
			all.WriteString(line)
			if strings.Contains(line, tc.marker) {
				got = append(got, time.Since(start))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		body := all.String()
		if len(body) != cl {
			t.Errorf("%s: Content-Length %d, body %d bytes", tc.path, cl, len(body))
		}
		if len(got) != 5 {
			t.Fatalf("%s: %d content events, want 5:\n%s", tc.path, len(got), body)
		}
		// Each token is due at TTFT + k × ITL after arrival: never earlier.
		for k, at := range got {
			if due := f.TTFT + time.Duration(k)*f.ITL; at < due {
				t.Errorf("%s: token %d at %v, before its due time %v", tc.path, k, at, due)
			}
		}
		if !strings.Contains(body, `"usage":{"prompt_tokens":2,"completion_tokens":5,"total_tokens":7}`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Errorf("%s: no usage or [DONE] at the end:\n%s", tc.path, body)
		}
	}
	// Every event written was counted with how late it went out, and reading the figures
	// starts them afresh.
	late := getLateness(t, srv.URL)
	if late.Writes != 10 || late.P99US > late.MaxUS || late.MaxUS > int64(time.Minute/time.Microsecond) {
		t.Errorf("lateness after two streams of 5 events: %+v", late)
	}
	if again := getLateness(t, srv.URL); again != (Lateness{}) {
		t.Errorf("lateness read twice: %+v the second time, want it reset", again)
	}
	f.wrote(30 * time.Millisecond)
	f.wrote(-time.Millisecond) // early (a clock step): on time, not negative
	if l := getLateness(t, srv.URL); l.Writes != 2 || l.MaxUS < 29_900 || l.MaxUS > 30_100 || l.P50US != 0 {
		t.Errorf("lateness of one event 30 ms late and one early: %+v", l)
	}

	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no max_tokens: status %d, want 400", resp.StatusCode)
	}
}

func getLateness(t *testing.T, url string) Lateness {
	t.Helper()
	resp, err := http.Get(url + "/fixed/lateness")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l Lateness
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l
}

// BenchmarkFixedEvents measures what the fixed-timing engine spends per event (one op):
// 16 clients stream 64-token answers with no waiting (TTFT and ITL 0), so that the
// figure is the engine's write path and its client's read, not the schedule. Run it with
//
//	go test -run '^$' -bench FixedEvents -benchmem ./sim/
func BenchmarkFixedEvents(b *testing.B) {
	const tokens, clients = 64, 16
	srv := httptest.NewServer((&Fixed{}).Handler())
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := `{"prompt":"The quick brown fox","max_tokens":` + strconv.Itoa(tokens) + `}`
	reqs := make(chan struct{}, 64)
	done := make(chan error, clients)
	for range clients {
		go func() {
			for range reqs {
				resp, err := c.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					done <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- nil
		}()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += tokens {
		reqs <- struct{}{}
	}
	close(reqs)
	for range clients {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
