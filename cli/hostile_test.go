package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
)

// fakeEngine is a small vLLM-like server whose endpoints a test replaces one by one,
// to play the engine that misbehaves in exactly one way.
type fakeEngine struct {
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	srv      *httptest.Server
	// release unblocks handlers that stall; closed at cleanup so the server can stop.
	release chan struct{}
}

const fakeMetricsPage = "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n" +
	"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n" +
	"# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1\n"

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	e := &fakeEngine{handlers: map[string]http.HandlerFunc{}, release: make(chan struct{})}
	e.handlers["/v1/models"] = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"m","owned_by":"vllm","max_model_len":4096}]}`)
	}
	e.handlers["/version"] = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"version":"0.9.0"}`) }
	e.handlers["/metrics"] = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, fakeMetricsPage) }
	e.handlers["/tokenize"] = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"count":`+fmt.Sprint(r.ContentLength/4+1)+`}`)
	}
	e.handlers["/v1/completions"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 3 {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"hi \"}]}\n\n")
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		h := e.handlers[r.URL.Path]
		e.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(func() {
		close(e.release)
		e.srv.CloseClientConnections()
		e.srv.Close()
	})
	return e
}

func (e *fakeEngine) handle(path string, h http.HandlerFunc) {
	e.mu.Lock()
	e.handlers[path] = h
	e.mu.Unlock()
}

// stallAfterHeaders answers 200 with its headers and then nothing until the test ends.
func (e *fakeEngine) stallAfterHeaders(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-e.release:
	case <-r.Context().Done():
	}
}

const fakeConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: m}
workloads:
  - name: w
    seed: 1
    requests: 5
    arrival: {process: constant, rate: 50}
    prompt_tokens: {dist: fixed, value: 10}
    output_tokens: {dist: fixed, value: 3}
    timeout: 5s
`

// runFake runs `slogate run` against e with short probe deadlines and a bound on the
// whole test, so that a hang fails the test instead of holding it until go test's
// own timeout.
func runFake(t *testing.T, e *fakeEngine, cfg string, extra ...string) (code int, stderr string, dir string) {
	t.Helper()
	dir = t.TempDir()
	a, out, errb := testApp(t)
	// Short enough that a stall is found within the test's deadline, long enough that a
	// local server answering on a machine loaded by the parallel tests is not taken for
	// one (300 ms was missed there).
	a.probeTimeout = 1500 * time.Millisecond
	a.preflightTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"run", "-c", writeConfig(t, cfg), "--target", e.srv.URL, "-o", dir}, extra...)
	done := make(chan int, 1)
	go func() { done <- a.run(ctx, args) }()
	select {
	case code = <-done:
	case <-time.After(25 * time.Second):
		t.Fatalf("slogate run hangs\nstderr:\n%s", errb)
	}
	if ctx.Err() != nil {
		t.Fatalf("slogate run ended only by the test's deadline\nstdout:\n%s\nstderr:\n%s", out, errb)
	}
	return code, errb.String(), dir
}

func TestRunStalledEngineEndpoints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path string
		// record: a record is written (the stall happened after the preflight).
		record bool
	}{
		// Detection reads /metrics for vLLM's KV capacity: headers, then silence.
		{"metrics during detection", "/metrics", false},
		// The version probe stalls before the metrics page is read.
		{"version during detection", "/version", false},
		// Calibration's first tokenize call is taken and never answered.
		{"tokenize during calibration", "/tokenize", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFakeEngine(t)
			e.handle(c.path, e.stallAfterHeaders)
			start := time.Now()
			code, stderr, dir := runFake(t, e, fakeConfig)
			if code != ExitFailure {
				t.Fatalf("exit %d, want %d\n%s", code, ExitFailure, stderr)
			}
			if !strings.Contains(stderr, "engine stalled") || !strings.Contains(stderr, c.path) {
				t.Errorf("the stall is not reported with its endpoint %s:\n%s", c.path, stderr)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("took %s: the deadlines do not bound the preflight", el)
			}
			rec, err := result.Read(filepath.Join(dir, "w.json"))
			if c.record != (err == nil) {
				t.Fatalf("record written %v, want %v (%v)", err == nil, c.record, err)
			}
			if c.record && (!rec.Incomplete || !strings.Contains(rec.IncompleteReason, c.path) || len(rec.Requests) != 0) {
				t.Errorf("record incomplete %v (%q), %d requests", rec.Incomplete, rec.IncompleteReason, len(rec.Requests))
			}
		})
	}
}

func TestRunMetricsStallMidRunIsNoted(t *testing.T) {
	t.Parallel()
	e := newFakeEngine(t)
	var n sync.Mutex
	scrapes := 0
	// Identification and the first scrape get the page; every later scrape stalls.
	e.handle("/metrics", func(w http.ResponseWriter, r *http.Request) {
		n.Lock()
		scrapes++
		k := scrapes
		n.Unlock()
		if k <= 2 {
			fmt.Fprint(w, fakeMetricsPage)
			return
		}
		e.stallAfterHeaders(w, r)
	})
	cfg := strings.Replace(fakeConfig, "target: {api: completions, engine: auto}",
		"target: {api: completions, engine: auto, metrics: {interval: 100ms}}", 1)
	cfg = strings.Replace(cfg, "requests: 5\n    arrival: {process: constant, rate: 50}", "requests: 30\n    arrival: {process: constant, rate: 10}", 1)
	code, stderr, dir := runFake(t, e, cfg)
	if code != ExitOK && code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rec, err := result.Read(filepath.Join(dir, "w.json"))
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	var note string
	for _, s := range rec.Notes {
		if strings.HasPrefix(s, "engine metrics:") && strings.Contains(s, "timed out") {
			note = s
		}
	}
	if note == "" {
		t.Fatalf("no note of the timed-out scrapes: %q", rec.Notes)
	}
}

func TestRunClosedLoopAgainstFailingEngineStops(t *testing.T) {
	t.Parallel()
	e := newFakeEngine(t)
	e.handle("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	})
	cfg := strings.Replace(fakeConfig, "requests: 5\n    arrival: {process: constant, rate: 50}",
		"duration: 20s\n    arrival: {process: closed, users: 4}", 1)
	start := time.Now()
	code, stderr, dir := runFake(t, e, cfg)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailure, stderr)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("ran %s against an engine failing every request", el)
	}
	rec, err := result.Read(filepath.Join(dir, "w.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !rec.Incomplete || !strings.Contains(rec.IncompleteReason, "consecutive requests failed") {
		t.Errorf("incomplete %v %q", rec.Incomplete, rec.IncompleteReason)
	}
	// The burst stops it: a few hundred at most, never thousands.
	if n := len(rec.Requests); n == 0 || n > 500 {
		t.Errorf("%d requests kept", n)
	}
}

func TestRunEveryRequestFailedIsFailure(t *testing.T) {
	t.Parallel()
	e := newFakeEngine(t)
	e.handle("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	})
	code, stderr, dir := runFake(t, e, fakeConfig)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "engine failed every request: 5 of 5 failed (5 http_500)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "w.json")); err != nil {
		t.Errorf("record lost: %v", err)
	}
}

func TestRunOutputDirectoryProbedFirst(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "taken")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{
		"/proc/slogate-out",            // a file system that takes no new files
		file,                           // a file where the directory should be
		filepath.Join(file, "results"), // a directory under a file
	} {
		t.Run(dir, func(t *testing.T) {
			e := newFakeEngine(t)
			var sent sync.Mutex
			requests := 0
			e.handle("/v1/models", func(w http.ResponseWriter, r *http.Request) {
				sent.Lock()
				requests++
				sent.Unlock()
				http.NotFound(w, r)
			})
			a, _, errb := testApp(t)
			code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, fakeConfig), "--target", e.srv.URL, "-o", dir})
			if code != ExitBadInput || !strings.Contains(errb.String(), "the output directory "+dir+" cannot be written") {
				t.Errorf("exit %d, want %d\n%s", code, ExitBadInput, errb)
			}
			if requests != 0 {
				t.Errorf("the engine was reached %d times before the directory was checked", requests)
			}
		})
	}
}

// A directory that took the manifest before the run but fails at the end (here it is
// replaced by a file mid-run) loses nothing: the record goes to the temporary directory
// and the message says where.
func TestRunRecordKeptWhenOutputFailsAtTheEnd(t *testing.T) {
	t.Parallel()
	e := newFakeEngine(t)
	dir := filepath.Join(t.TempDir(), "out")
	var once sync.Once
	complete := e.handlers["/v1/completions"]
	e.handle("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			os.RemoveAll(dir)
			os.WriteFile(dir, []byte("not a directory"), 0o644)
		})
		complete(w, r)
	})
	tmp := t.TempDir()
	a, _, errb := testApp(t)
	a.tempDirFunc = func() string { return tmp }
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, fakeConfig), "--target", e.srv.URL, "-o", dir})
	if code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	matches, _ := filepath.Glob(filepath.Join(tmp, "slogate-*-w.json"))
	if len(matches) != 1 || !strings.Contains(errb.String(), "the record is in "+matches[0]) {
		t.Fatalf("records in %s: %v\n%s", tmp, matches, errb)
	}
	rec, err := result.Read(matches[0])
	if err != nil || len(rec.Requests) != 5 {
		t.Fatalf("kept record: %v, %d requests", err, len(rec.Requests))
	}
}

// Records an earlier run left in the output directory are not judged as this run's.
func TestGateJudgesOnlyTheLastRun(t *testing.T) {
	t.Parallel()
	e := newFakeEngine(t)
	cfg := strings.Replace(fakeConfig, "    seed: 1\n", "    seed: 1\n    repeats: 2\n", 1)
	cfgPath := writeConfig(t, cfg)
	dir := t.TempDir()
	a, _, errb := testApp(t)
	a.probeTimeout = 2 * time.Second
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfgPath, "--target", e.srv.URL, "-o", dir}); code != ExitOK && code != ExitFailure {
		t.Fatalf("first run: exit %d\n%s", code, errb)
	}
	// The second run repeats once: w.t1.json and w.t2.json of the first stay behind.
	one := strings.Replace(cfg, "    repeats: 2\n", "", 1)
	if err := os.WriteFile(cfgPath, []byte(one), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfgPath, "--target", e.srv.URL, "-o", dir}); code != ExitOK && code != ExitFailure {
		t.Fatalf("second run: exit %d\n%s", code, errb)
	}
	recs, stale, err := result.ReadRun(dir)
	if err != nil || len(recs) != 1 || len(stale) != 2 {
		t.Fatalf("read %d records, %d stale (%v), want 1 and 2 (%v)", len(recs), len(stale), stale, err)
	}
	// Without the manifest the directory holds three trials of a workload that repeats
	// once: an error, not a verdict.
	if err := os.Remove(filepath.Join(dir, result.ManifestName)); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	code := a.run(cmdCtx(t), []string{"gate", "-c", cfgPath, "-r", dir})
	if code != ExitBadInput || !strings.Contains(errb.String(), `workload "w": 3 run records with trials [1 1 2], but repeats is 1`) {
		t.Errorf("exit %d, want %d\n%s", code, ExitBadInput, errb)
	}
}

// A bad --target is bad input with the valid forms, as the same value in target.url is.
func TestRunBadTarget(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"ftp://x", "%zz", "http://", "127.0.0.1:8000"} {
		t.Run(target, func(t *testing.T) {
			a, _, errb := testApp(t)
			code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, fakeConfig), "--target", target, "-o", t.TempDir()})
			want := fmt.Sprintf(`invalid target %q: expected an http:// or https:// URL such as "http://127.0.0.1:8000"`, target)
			if code != ExitBadInput || !strings.Contains(errb.String(), want) {
				t.Errorf("exit %d, want %d and %q\n%s", code, ExitBadInput, want, errb)
			}
			// The same value in the file gives the same code and the same valid forms.
			cfg := strings.Replace(fakeConfig, "target: {", "target: {url: \""+target+"\", ", 1)
			a, _, errb = testApp(t)
			code = a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "-o", t.TempDir()})
			if code != ExitBadInput || !strings.Contains(errb.String(), `expected an http:// or https:// URL such as "http://127.0.0.1:8000"`) {
				t.Errorf("target.url: exit %d\n%s", code, errb)
			}
		})
	}
}

// An engine that echoes the API key in every field it returns never gets it into a
// record, the terminal or a log.
func TestRunRedactsPlantedAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-planted-SECRET-7f3a9c"
	e := newFakeEngine(t)
	e.handle("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":[{"id":"m","owned_by":"vllm","root":"%s","max_model_len":4096},{"id":"other-%s","owned_by":"vllm"}]}`, key, key)
	})
	e.handle("/version", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, `{"version":"0.9.0+%s"}`, key) })
	var mu sync.Mutex
	scrapes := 0
	e.handle("/metrics", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		scrapes++
		k := scrapes
		mu.Unlock()
		if k == 1 {
			fmt.Fprintf(w, "%svllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\",key=\"%s\"} 1\n", fakeMetricsPage, key)
			return
		}
		fmt.Fprintf(w, "vllm:num_requests_waiting{key=\"%s\"} not-a-number-%s\n", key, key)
	})
	e.handle("/tokenize", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad key "+key, http.StatusBadRequest)
	})
	var n sync.Mutex
	calls := 0
	e.handle("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		n.Lock()
		calls++
		c := calls
		n.Unlock()
		if c%2 == 0 {
			http.Error(w, `{"error":{"message":"invalid key `+key+`"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"%s\"}]}\n\n", key)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"%s\"}]}\n\ndata: [DONE]\n\n", key)
	})
	cfg := strings.Replace(fakeConfig, "target: {api: completions, engine: auto}",
		"target: {api: completions, engine: auto, api_key_env: SERVING_KEY, metrics: {interval: 50ms}}", 1)
	cfg = strings.Replace(cfg, "requests: 5\n    arrival: {process: constant, rate: 50}", "requests: 10\n    arrival: {process: constant, rate: 20}", 1)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	env := map[string]string{"SERVING_KEY": key}
	a.getenv = func(k string) string { return env[k] }
	code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, cfg), "--target", e.srv.URL, "-o", dir})
	if code != ExitOK && code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	rec, err := result.Read(filepath.Join(dir, "w.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Engine.Version, result.Redacted) {
		t.Errorf("engine.version %q: the planted key was not seen, so this test tests nothing", rec.Engine.Version)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if strings.Contains(string(data), key) {
			t.Errorf("%s holds the API key", f)
		}
	}
	if strings.Contains(out.String()+errb.String(), key) {
		t.Errorf("the API key reached the terminal:\n%s\n%s", out, errb)
	}
}
