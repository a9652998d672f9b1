package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpCall sends method path with no body and returns the status and body.
func httpCall(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	hr, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestSleepAndWake: the vLLM sleep cycle over HTTP. A sleep takes its configured time,
// after which /is_sleeping says so and a generation request is refused with 503 and the
// engine's error object, while /v1/models still answers; the wake takes its time too and
// leaves the prefix cache empty, so the prompt that hit before the sleep hits nothing.
func TestSleepAndWake(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Swap = Swap{SleepMode: true, DevMode: true, SleepTime: 150 * time.Millisecond, WakeTime: 250 * time.Millisecond}
	r, c, ctx := start(t, o)
	prompt := "A" + words(99)[1:]
	send := func() streamResult {
		return post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: prompt, MaxTokens: 4, IgnoreEOS: true, Stream: true})
	}
	sleeping := func() bool {
		t.Helper()
		st, body := httpCall(t, c, http.MethodGet, r.URL+"/is_sleeping")
		var v struct {
			IsSleeping *bool `json:"is_sleeping"`
		}
		if st != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.IsSleeping == nil {
			t.Fatalf("GET /is_sleeping: %d %s", st, body)
		}
		return *v.IsSleeping
	}
	for range 2 {
		if res := send(); res.Err != nil || res.OutputTokens() != 4 {
			t.Fatalf("awake: err %v tokens %d", res.Err, res.OutputTokens())
		}
	}
	if r.Server.Stats().PrefixHits == 0 || r.Server.Stats().CachedBlocks == 0 {
		t.Fatal("the repeated prompt did not hit the cache before the sleep")
	}
	if sleeping() {
		t.Fatal("an engine just started says it is sleeping")
	}

	t0 := time.Now()
	if st, body := httpCall(t, c, http.MethodPost, r.URL+"/sleep?level=1"); st != http.StatusOK || body != "" {
		t.Fatalf("POST /sleep: %d %q, want 200 and no body", st, body)
	}
	// The sleep answers once done: never before its time (a lower bound holds on any
	// machine).
	if d := time.Since(t0); d < o.Swap.SleepTime {
		t.Errorf("the sleep answered after %v, before its %v", d, o.Swap.SleepTime)
	}
	if !sleeping() {
		t.Fatal("/is_sleeping says false after the sleep")
	}
	res := send()
	if res.Status != http.StatusServiceUnavailable || !strings.Contains(string(res.Body), `"type":"ServiceUnavailableError"`) || !strings.Contains(string(res.Body), "sleeping") {
		t.Fatalf("a request to a sleeping engine: %d %s", res.Status, res.Body)
	}
	if st, _ := httpCall(t, c, http.MethodGet, r.URL+"/v1/models"); st != http.StatusOK {
		t.Errorf("/v1/models while sleeping: %d, want 200 (the API server stays up)", st)
	}

	t0 = time.Now()
	if st, body := httpCall(t, c, http.MethodPost, r.URL+"/wake_up"); st != http.StatusOK || body != "" {
		t.Fatalf("POST /wake_up: %d %q", st, body)
	}
	if d := time.Since(t0); d < o.Swap.WakeTime {
		t.Errorf("the wake answered after %v, before its %v", d, o.Swap.WakeTime)
	}
	if sleeping() {
		t.Fatal("/is_sleeping says true after the wake")
	}
	if n := r.Server.Stats().CachedBlocks; n != 0 {
		t.Fatalf("%d blocks cached after the wake, want none", n)
	}
	hits := r.Server.Stats().PrefixHits
	if res := send(); res.Err != nil || res.OutputTokens() != 4 {
		t.Fatalf("woken: err %v tokens %d", res.Err, res.OutputTokens())
	}
	if h := r.Server.Stats().PrefixHits; h != hits {
		t.Errorf("the prompt hit %d tokens after the wake, want none: waking restores the KV cache empty", h-hits)
	}
	// A wake with vLLM's tags, of an engine already awake, is a quick no-op.
	if st, body := httpCall(t, c, http.MethodPost, r.URL+"/wake_up?tags=weights&tags=kv_cache"); st != http.StatusOK {
		t.Errorf("wake with tags: %d %s", st, body)
	}
}

// TestSleepEndpointsNeedTheirFlags: the engine's own refusals, which an A/B job reports
// before measuring anything.
func TestSleepEndpointsNeedTheirFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		swap       Swap
		method     string
		path       string
		wantStatus int
		wantBody   string
	}{
		// vLLM registers the routes only with VLLM_SERVER_DEV_MODE=1.
		{"no dev mode: no route", Swap{SleepMode: true}, http.MethodGet, "/is_sleeping", http.StatusNotFound, ""},
		{"no dev mode: no sleep", Swap{SleepMode: true}, http.MethodPost, "/sleep", http.StatusNotFound, ""},
		// Dev mode serves the routes; without --enable-sleep-mode the sleep is refused.
		{"no sleep mode", Swap{DevMode: true}, http.MethodPost, "/sleep?level=1", http.StatusBadRequest, "--enable-sleep-mode"},
		{"dev mode alone answers the probe", Swap{DevMode: true}, http.MethodGet, "/is_sleeping", http.StatusOK, `{"is_sleeping":false}`},
		{"a level that is no number", Swap{DevMode: true, SleepMode: true}, http.MethodPost, "/sleep?level=deep", http.StatusBadRequest, `level \"deep\"`},
		{"a wake tag vLLM does not know", Swap{DevMode: true, SleepMode: true}, http.MethodPost, "/wake_up?tags=all", http.StatusBadRequest, `tag \"all\"`},
		// SGLang without --enable-memory-saver accepts the release and frees nothing;
		// its server info is where that shows.
		{"release without the memory saver is a no-op", Swap{}, http.MethodPost, "/release_memory_occupation", http.StatusOK, "null"},
		{"server info says the memory saver is off", Swap{}, http.MethodGet, "/server_info", http.StatusOK, `"enable_memory_saver":false`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := tinyOpts()
			o.Swap = c.swap
			r, hc, ctx := start(t, o)
			st, body := httpCall(t, hc, c.method, r.URL+c.path)
			if st != c.wantStatus || !strings.Contains(body, c.wantBody) {
				t.Fatalf("%s %s: %d %s, want %d with %q", c.method, c.path, st, body, c.wantStatus, c.wantBody)
			}
			// Whatever was refused, the engine still serves.
			if res := post(ctx, hc, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 2, Stream: true}); res.Err != nil || res.Status != http.StatusOK {
				t.Fatalf("after %s %s: %d %v", c.method, c.path, res.Status, res.Err)
			}
		})
	}
}

// TestMemoryReleaseAndResume: SGLang's release with the memory saver on puts the engine
// aside until the resume, which leaves the prefix cache empty.
func TestMemoryReleaseAndResume(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Swap = Swap{MemorySaver: true, SleepTime: 50 * time.Millisecond, WakeTime: 100 * time.Millisecond}
	r, c, ctx := start(t, o)
	prompt := "A" + words(99)[1:]
	send := func() streamResult {
		return post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: prompt, MaxTokens: 4, IgnoreEOS: true, Stream: true})
	}
	if res := send(); res.Err != nil {
		t.Fatal(res.Err)
	}
	if st, body := httpCall(t, c, http.MethodGet, r.URL+"/server_info"); !strings.Contains(body, `"enable_memory_saver":true`) {
		t.Fatalf("server info %d %s", st, body)
	}
	if st, body := httpCall(t, c, http.MethodPost, r.URL+"/release_memory_occupation"); st != http.StatusOK || body != "null" {
		t.Fatalf("release: %d %q", st, body)
	}
	if res := send(); res.Status != http.StatusServiceUnavailable || !strings.Contains(string(res.Body), "memory released") {
		t.Fatalf("a request while released: %d %s", res.Status, res.Body)
	}
	t0 := time.Now()
	if st, body := httpCall(t, c, http.MethodPost, r.URL+"/resume_memory_occupation"); st != http.StatusOK || body != "null" {
		t.Fatalf("resume: %d %q", st, body)
	}
	if d := time.Since(t0); d < o.Swap.WakeTime {
		t.Errorf("the resume answered after %v, before its %v", d, o.Swap.WakeTime)
	}
	hits := r.Server.Stats().PrefixHits
	if res := send(); res.Err != nil || res.OutputTokens() != 4 {
		t.Fatalf("resumed: %v", res.Err)
	}
	if h := r.Server.Stats().PrefixHits; h != hits {
		t.Errorf("the prompt hit %d tokens after the resume, want none", h-hits)
	}
}

// TestWakeOutlivesItsClient: a client that gives up on a long wake leaves the engine
// waking (it still refuses requests), and closing the engine ends the wake.
func TestWakeOutlivesItsClient(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Swap = Swap{SleepMode: true, DevMode: true, WakeTime: time.Hour}
	r, c, _ := start(t, o)
	if st, _ := httpCall(t, c, http.MethodPost, r.URL+"/sleep"); st != http.StatusOK {
		t.Fatalf("sleep: %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/wake_up", nil)
	if resp, err := c.Do(hr); err == nil {
		resp.Body.Close()
		t.Fatalf("a wake of an hour answered %d", resp.StatusCode)
	}
	if st, body := httpCall(t, c, http.MethodGet, r.URL+"/is_sleeping"); body != `{"is_sleeping":true}` {
		t.Fatalf("during the wake: %d %s", st, body)
	}
	r.Close() // must not wait for the hour
}

// TestSwapFixtures: the simulator answers each exchange of testdata/engines/swap/ as the
// engine does (status, and the body's fields), in the order an A/B job sends them.
func TestSwapFixtures(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Swap = Swap{SleepMode: true, DevMode: true, MemorySaver: true}
	r, c, _ := start(t, o)
	off, offc, _ := start(t, tinyOpts())
	for _, f := range []struct {
		name string
		url  string
		hc   *http.Client
	}{
		{"vllm_is_sleeping_awake.txt", r.URL, c},
		{"vllm_sleep.txt", r.URL, c},
		{"vllm_is_sleeping_asleep.txt", r.URL, c},
		{"vllm_wake_up.txt", r.URL, c},
		{"sglang_server_info.txt", r.URL, c},
		{"sglang_release.txt", r.URL, c},
		{"sglang_resume.txt", r.URL, c},
		// Without dev mode the route is not there (the body is Go's 404, not FastAPI's).
		{"vllm_no_dev_mode.txt", off.URL, offc},
	} {
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "engines", "swap", f.name))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(raw), "--- request\n")
		reqPart, respPart, _ := strings.Cut(rest, "--- response ")
		line, reqBody, _ := strings.Cut(reqPart, "\n")
		status, wantBody, _ := strings.Cut(respPart, "\n")
		method, path, _ := strings.Cut(line, " ")
		hr, _ := http.NewRequest(method, f.url+path, strings.NewReader(strings.TrimSpace(reqBody)))
		resp, err := f.hc.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strconv.Itoa(resp.StatusCode) != strings.TrimSpace(status) {
			t.Errorf("%s: status %d, want %s", f.name, resp.StatusCode, status)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			continue
		}
		want, got := strings.TrimSpace(wantBody), strings.TrimSpace(string(b))
		if want == "" || got == "" {
			if want != got {
				t.Errorf("%s: body %q, want %q", f.name, got, want)
			}
			continue
		}
		var wv, gv any
		if json.Unmarshal([]byte(want), &wv) != nil || json.Unmarshal([]byte(got), &gv) != nil {
			t.Errorf("%s: body %q, want JSON like %q", f.name, got, want)
			continue
		}
		if wm, ok := wv.(map[string]any); ok {
			gm, _ := gv.(map[string]any)
			for k, v := range wm {
				if gm[k] != v {
					t.Errorf("%s: %s is %v, want %v", f.name, k, gm[k], v)
				}
			}
		} else if wv != gv {
			t.Errorf("%s: body %q, want %q", f.name, got, want)
		}
	}
}
