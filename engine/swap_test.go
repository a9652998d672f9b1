package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exchange is one request and its response, from testdata/engines/swap/.
type exchange struct {
	Method, Path, ReqBody string
	Status                int
	Body                  string
}

// readExchange parses a fixture: comment lines, "--- request" (method and path, then the
// body), "--- response STATUS" (then the body).
func readExchange(t *testing.T, name string) exchange {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "engines", "swap", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "--- request\n")
	req, resp, ok2 := strings.Cut(rest, "--- response ")
	if !ok || !ok2 {
		t.Fatalf("%s: want --- request and --- response sections", name)
	}
	line, reqBody, _ := strings.Cut(req, "\n")
	status, body, _ := strings.Cut(resp, "\n")
	var x exchange
	x.Method, x.Path, _ = strings.Cut(line, " ")
	x.ReqBody, x.Body = strings.TrimSpace(reqBody), strings.TrimSpace(body)
	if x.Status, err = strconv.Atoi(strings.TrimSpace(status)); err != nil {
		t.Fatalf("%s: status %q", name, status)
	}
	return x
}

// serveExchange answers x, and fails the test on any other request.
func serveExchange(t *testing.T, x exchange) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != x.Method || r.URL.RequestURI() != x.Path || strings.TrimSpace(string(b)) != x.ReqBody {
			t.Errorf("got %s %s %q, want %s %s %q", r.Method, r.URL.RequestURI(), b, x.Method, x.Path, x.ReqBody)
			http.NotFound(w, r)
			return
		}
		if x.Body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(x.Status)
		io.WriteString(w, x.Body)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestSwapClientFixtures drives each call against the engine's answer read from its
// source: the exact request (method, path, body) and what the client makes of the answer.
func TestSwapClientFixtures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		fixture string
		call    func(*SwapClient) error
		want    string // "" for success, else a part of the error
		bad     bool   // the error is a SwapUnsupportedError (bad input)
	}{
		{"vllm_is_sleeping_awake.txt", func(s *SwapClient) error {
			if asleep, err := s.IsSleeping(ctx); err != nil || asleep {
				return errors.New("awake engine read as asleep")
			}
			return nil
		}, "", false},
		{"vllm_is_sleeping_asleep.txt", func(s *SwapClient) error {
			if asleep, err := s.IsSleeping(ctx); err != nil || !asleep {
				return errors.New("sleeping engine read as awake")
			}
			return nil
		}, "", false},
		{"vllm_sleep.txt", func(s *SwapClient) error { return s.Sleep(ctx, 1, time.Minute) }, "", false},
		{"vllm_wake_up.txt", func(s *SwapClient) error { return s.WakeUp(ctx, time.Minute) }, "", false},
		// A server without VLLM_SERVER_DEV_MODE: the error names the endpoint and both
		// things the server needs.
		{"vllm_no_dev_mode.txt", func(s *SwapClient) error { _, err := s.IsSleeping(ctx); return err },
			`(GET /is_sleeping): HTTP 404 "{\"detail\": \"Not Found\"}": the server must run with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1`, true},
		{"sglang_release.txt", func(s *SwapClient) error { return s.ReleaseMemory(ctx, time.Minute) }, "", false},
		{"sglang_resume.txt", func(s *SwapClient) error { return s.ResumeMemory(ctx, time.Minute) }, "", false},
		{"sglang_server_info.txt", func(s *SwapClient) error { return s.MemorySaver(ctx) }, "", false},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			x := readExchange(t, c.fixture)
			err := c.call(&SwapClient{BaseURL: serveExchange(t, x)})
			var un *SwapUnsupportedError
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			case c.bad != errors.As(err, &un):
				t.Fatalf("error %v: SwapUnsupportedError %v, want %v", err, !c.bad, c.bad)
			}
		})
	}
}

// TestSwapClientFailures: what is the deployment's to fix (bad input) against what is
// the engine's failure.
func TestSwapClientFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	serve := func(h http.HandlerFunc) *SwapClient {
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		return &SwapClient{BaseURL: ts.URL}
	}
	// SGLang without the memory saver: the server info says so.
	err := serve(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"enable_memory_saver": false}`)
	}).MemorySaver(ctx)
	var un *SwapUnsupportedError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "--enable-memory-saver") || un.Endpoint != "GET /server_info" {
		t.Errorf("memory saver off: %v", err)
	}
	// An older SGLang answers /get_server_info only.
	if err := serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/get_server_info" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"enable_memory_saver": true}`)
	}).MemorySaver(ctx); err != nil {
		t.Errorf("older SGLang: %v", err)
	}
	// A sleep refused by a server started without --enable-sleep-mode is bad input.
	if err := serve(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": "sleep mode is not enabled"}`, http.StatusBadRequest)
	}).Sleep(ctx, 1, time.Minute); !errors.As(err, &un) || !strings.Contains(err.Error(), "POST /sleep?level=1") {
		t.Errorf("sleep refused: %v", err)
	}
	// A wake that fails inside the engine, or never ends, is the engine's failure.
	if err := serve(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "CUDA error", http.StatusInternalServerError)
	}).WakeUp(ctx, time.Minute); err == nil || errors.As(err, &un) || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("wake failed in the engine: %v", err)
	}
	release := make(chan struct{})
	defer close(release)
	err = serve(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}).WakeUp(ctx, 50*time.Millisecond)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "POST") || !strings.Contains(err.Error(), "/wake_up") {
		t.Errorf("a wake that never ends: %v", err)
	}
}
