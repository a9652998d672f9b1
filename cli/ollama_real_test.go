package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/ghaction"
	"github.com/slogate/slogate/result"
)

// The real pipeline (run, baseline update, gate, ci) against a real Ollama server serving
// stories260K.gguf, started by scripts/real-engine-test.sh (docs/real-engine.md). The
// simulator proves the logic; these tests prove the tool against what users run. They are
// skipped unless SLOGATE_OLLAMA_URL names the server.
//
// TestOllamaRealFailures kills the server: it must stay the last test of the package to
// run against it (Go runs a package's tests in source order).

// realPinned is the pinned workload file, relative to this package's directory.
const realPinned = "../testdata/ollama/slogate.yaml"

// realWorkload is the workload's name in realPinned.
const realWorkload = "ollama-smoke"

// realModelID is how Ollama lists the model scripts/ollama.sh creates.
const realModelID = "stories260k:latest"

// realCmdTimeout bounds each command: a 30 s run, with room for a loaded machine.
const realCmdTimeout = 3 * time.Minute

// realServer is the Ollama server under test.
type realServer struct {
	url      string
	parallel int    // its OLLAMA_NUM_PARALLEL, which Ollama does not expose
	pid      int    // 0 when SLOGATE_OLLAMA_PID is unset
	log      string // its log file; "" when SLOGATE_OLLAMA_LOG is unset
}

func realOllamaServer(t *testing.T) realServer {
	t.Helper()
	url := os.Getenv("SLOGATE_OLLAMA_URL")
	if url == "" {
		t.Skip("SLOGATE_OLLAMA_URL is not set: no real Ollama server to test against (scripts/real-engine-test.sh starts one)")
	}
	s := realServer{url: strings.TrimRight(url, "/"), parallel: 2, log: os.Getenv("SLOGATE_OLLAMA_LOG")}
	if v := os.Getenv("SLOGATE_OLLAMA_PARALLEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLOGATE_OLLAMA_PARALLEL=%q: want a positive integer", v)
		}
		s.parallel = n
	}
	if v := os.Getenv("SLOGATE_OLLAMA_PID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("SLOGATE_OLLAMA_PID=%q: want a process id", v)
		}
		s.pid = n
	}
	return s
}

// realApp is testApp with env as its whole environment, plus the server's parallelism,
// which the Ollama adapter reads from OLLAMA_NUM_PARALLEL.
func realApp(t *testing.T, s realServer, env map[string]string) (*app, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	a, out, errb := testApp(t)
	all := map[string]string{"OLLAMA_NUM_PARALLEL": strconv.Itoa(s.parallel)}
	for k, v := range env {
		all[k] = v
	}
	a.getenv = func(k string) string { return all[k] }
	return a, out, errb
}

// realRun runs one command with a bounded time.
func realRun(a *app, args ...string) int {
	ctx, cancel := context.WithTimeout(context.Background(), realCmdTimeout)
	defer cancel()
	return a.run(ctx, args)
}

// realConfig copies the pinned workload file into dir, with each edit (old → new)
// applied once, and returns its path. gate.baselines resolves against dir.
func realConfig(t *testing.T, dir string, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile(realPinned)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("%s has no %q to edit", realPinned, edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	p := filepath.Join(dir, "slogate.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOllamaRealPipeline(t *testing.T) {
	quiet(t)
	s := realOllamaServer(t)
	// wd plays the repository of the Action: slogate.yaml, baselines/ beside it, and
	// slogate-out/ written by ci.
	wd := t.TempDir()
	cfg := realConfig(t, wd)
	runDir := filepath.Join(t.TempDir(), "run")
	baselines := filepath.Join(wd, "baselines")

	var rec *result.Record
	if !t.Run("run", func(t *testing.T) { rec = checkRealRun(t, s, cfg, runDir) }) {
		t.FailNow()
	}
	if !t.Run("baseline-then-gate", func(t *testing.T) { checkRealBaselineGate(t, s, rec, cfg, runDir, baselines) }) {
		t.FailNow()
	}
	t.Run("ci", func(t *testing.T) { checkRealCI(t, s, wd) })
}

// checkRealRun runs the pinned workload and checks the record against what the engine
// said and against the metric definitions (DESIGN §4).
func checkRealRun(t *testing.T, s realServer, cfg, runDir string) *result.Record {
	a, out, errb := realApp(t, s, nil)
	code := realRun(a, "run", "-c", cfg, "--target", s.url, "-o", runDir)
	t.Logf("slogate run: exit %d\n%s%s", code, out, errb)
	path := filepath.Join(runDir, realWorkload+".json")
	rec, err := result.Read(path)
	if err != nil {
		t.Fatalf("exit %d and no record: %v", code, err)
	}
	sum := rec.Summary
	if sum.ClientSaturated {
		// Not hidden: a saturated load generator measured itself, not the engine.
		t.Fatalf("the load generator could not keep the schedule on this machine: dispatch lag p50 %.3f ms, p99 %.3f ms, max %.3f ms (bound %.0f ms); the run measured the client, not the engine",
			sum.DispatchLagms.P50, sum.DispatchLagms.P99, sum.DispatchLagms.Max, rec.MaxDispatchLagMS)
	}
	if code != ExitOK {
		t.Fatalf("exit %d, want 0 (incomplete %v: %q)", code, rec.Incomplete, rec.IncompleteReason)
	}

	// Identity: what the server said about itself.
	if e := rec.Engine; e == nil || e.Name != "ollama" || e.Version != "0.6.5" || e.ModelID != realModelID {
		t.Errorf("engine %+v, want ollama 0.6.5 serving %s", e, realModelID)
	}
	if rec.Model != realModelID || rec.Environment["engine.name"] != "ollama" || rec.Environment["engine.version"] != "0.6.5" || rec.Environment["model.id"] != realModelID {
		t.Errorf("model %q, environment %v", rec.Model, rec.Environment)
	}

	const want = 120
	if sum.Requests != want || sum.Completed != want || len(rec.Requests) != want {
		t.Fatalf("requests %d, completed %d, records %d, errors %v; want %d each and no errors at this low rate",
			sum.Requests, sum.Completed, len(rec.Requests), sum.Errors, want)
	}
	for _, n := range rec.Notes {
		if strings.Contains(n, "no usage") {
			t.Errorf("note %q: the server's usage must be in every stream", n)
		}
	}
	var gaps, zeroGaps int64
	for i := range rec.Requests {
		r := &rec.Requests[i]
		// Output tokens come from the server's usage (stream_options.include_usage), not
		// from counting chunks; a chunk carries at least one token.
		if r.NoUsage || r.OutputTokens < 1 || r.OutputTokens > r.OutputTarget || r.Chunks < 1 || r.Chunks > r.OutputTokens {
			t.Errorf("request %d: %d output tokens (no_usage %v) in %d chunks, max_tokens %d", r.I, r.OutputTokens, r.NoUsage, r.Chunks, r.OutputTarget)
			continue
		}
		ttft, _ := r.TTFTUS()
		e2e, _ := r.E2EUS()
		tpot, ok := r.TPOTUS()
		if r.SendUS < r.SchedUS || r.FirstUS <= r.SendUS || ttft <= 0 || (r.OutputTokens > 1 && (!ok || tpot <= 0)) {
			t.Errorf("request %d: sched %d send %d first %d: TTFT %d µs, TPOT %.1f µs, want both positive", r.I, r.SchedUS, r.SendUS, r.FirstUS, ttft, tpot)
		}
		// E2E = TTFT + (n−1)·TPOT by the definition of TPOT: what holds here is that the
		// record's times and token count are one consistent timeline.
		if d := math.Abs(float64(e2e) - (float64(ttft) + float64(r.OutputTokens-1)*tpot)); d > 1000 {
			t.Errorf("request %d: E2E %d µs, TTFT %d + (%d−1) × TPOT %.1f differ by %.0f µs", r.I, e2e, ttft, r.OutputTokens, tpot, d)
		}
		// Chunks read together share a timestamp, so a gap may be 0 at a thousand tokens
		// a second; none is negative, and together they span first..last (first and last
		// are truncated to the microsecond and each gap is rounded up to one, so the sum
		// may differ from the span by up to one microsecond a gap).
		var span int64
		for _, g := range r.ITLUS {
			if g < 0 {
				t.Errorf("request %d: negative gap %d µs", r.I, g)
			}
			if g == 0 {
				zeroGaps++
			}
			span += g
		}
		if d := r.LastUS - r.FirstUS - span; len(r.ITLUS) != r.Chunks-1 || d < -int64(len(r.ITLUS))-1 || d > int64(len(r.ITLUS))+1 {
			t.Errorf("request %d: %d gaps summing to %d µs for %d chunks spanning %d µs", r.I, len(r.ITLUS), span, r.Chunks, r.LastUS-r.FirstUS)
		}
		gaps += int64(len(r.ITLUS))
	}
	if sum.TTFTms.P50 <= 0 || sum.TPOTms.P50 <= 0 || sum.ITLms.Mean <= 0 || sum.ITLms.P99 <= 0 || sum.ITLms.Count != gaps {
		t.Errorf("TTFT p50 %.3f ms, TPOT p50 %.3f ms, ITL mean %.3f p99 %.3f ms over %d gaps (want %d): want all positive",
			sum.TTFTms.P50, sum.TPOTms.P50, sum.ITLms.Mean, sum.ITLms.P99, sum.ITLms.Count, gaps)
	}

	// Little's law at a low rate: the client's in-flight counter agrees with arrivals ×
	// time in the system.
	if l := sum.LittleLaw; l == nil || l.Flagged {
		t.Errorf("little_law %+v: want present and within 10%%", l)
	}
	// Ollama reports no KV capacity: it is derived from /api/show and the parallelism,
	// and the record says so.
	if k := sum.KVConcurrency; k == nil || !strings.HasPrefix(k.Source, "derived") || k.CapacityTokens != int64(2048*s.parallel) || k.Value < 1 {
		t.Errorf("kv_concurrency %+v: want a capacity derived from num_ctx 2048 × parallel %d", k, s.parallel)
	}

	ll := sum.LittleLaw
	if ll == nil {
		ll = &result.LittleLaw{}
	}
	t.Logf("measured: TTFT p50 %.1f p95 %.1f ms; TPOT p50 %.2f p95 %.2f ms; ITL p50 %.2f p99 %.2f max %.1f ms (%d gaps, %d of them 0); E2E p50 %.1f p99 %.1f ms; %.2f req/s, %.0f output tokens/s; dispatch lag p99 %.3f ms max %.3f ms; in flight mean %.3f (Little %.3f predicted, %.1f%% off); early stops %d",
		sum.TTFTms.P50, sum.TTFTms.P95, sum.TPOTms.P50, sum.TPOTms.P95, sum.ITLms.P50, sum.ITLms.P99, sum.ITLms.Max, gaps, zeroGaps,
		sum.E2Ems.P50, sum.E2Ems.P99, sum.ThroughputRPS, sum.OutputTokensPS, sum.DispatchLagms.P99, sum.DispatchLagms.Max,
		ll.MeasuredInFlight, ll.PredictedInFlight, 100*ll.Deviation, sum.EarlyStops)
	return rec
}

// checkRealBaselineGate makes the run the baseline, then gates the same run against it:
// every ratio must be exactly 1.
func checkRealBaselineGate(t *testing.T, s realServer, rec *result.Record, cfg, runDir, baselines string) {
	a, out, errb := realApp(t, s, nil)
	if code := realRun(a, "baseline", "update", "-c", cfg, "-r", runDir, "--baselines", baselines); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s%s", code, out, errb)
	}
	want := filepath.Join(baselines, realWorkload, "cpu.json")
	if _, err := os.Stat(want); err != nil || !strings.Contains(out.String(), "engine ollama 0.6.5") {
		t.Fatalf("baseline update wrote no %s (%v):\n%s", want, err, out)
	}

	jsonOut := filepath.Join(t.TempDir(), "gate.json")
	a, out, errb = realApp(t, s, nil)
	code := realRun(a, "gate", "-c", cfg, "-r", runDir, "--baselines", baselines, "--json", jsonOut)
	t.Logf("slogate gate: exit %d\n%s%s", code, out, errb)
	if code != ExitOK {
		t.Fatalf("gate of the baseline's own run: exit %d, want 0", code)
	}
	res := realGateJSON(t, jsonOut)
	if res.Verdict != gate.Pass || len(res.Workloads) != 1 {
		t.Fatalf("verdict %q over %d workloads, want pass over 1", res.Verdict, len(res.Workloads))
	}
	w := res.Workloads[0]
	if w.BaselinePath == "" || w.Reason != "" || w.WorkloadHash != rec.WorkloadHash || w.BaselineHash != rec.WorkloadHash {
		t.Errorf("workload %s: baseline %q (hash %s, run %s), reason %q: want compared with the baseline of this run's hash %s",
			w.Name, w.BaselinePath, w.BaselineHash, w.WorkloadHash, w.Reason, rec.WorkloadHash)
	}
	relative := 0
	for _, m := range w.Metrics {
		if m.Verdict != gate.Pass {
			t.Errorf("%s: verdict %q, want pass", m.Metric, m.Verdict)
		}
		if m.Metric == "goodput" && (m.Candidate == nil || *m.Candidate != rec.Summary.GoodputRPS) {
			t.Errorf("goodput: candidate %s, the record says %g", realPtr(m.Candidate), rec.Summary.GoodputRPS)
		}
		if m.Direction == "" {
			continue // an absolute limit: no ratio
		}
		relative++
		if m.Ratio == nil || *m.Ratio != 1 {
			t.Errorf("%s: ratio %v (baseline %v, candidate %v), want exactly 1: the baseline was made from this run", m.Metric, realPtr(m.Ratio), realPtr(m.Baseline), realPtr(m.Candidate))
		}
	}
	if relative == 0 {
		t.Error("no relative rule was compared")
	}
	for _, d := range w.Drift {
		if d.Drifted() {
			t.Errorf("drift %+v between a run and its own baseline", d)
		}
	}
}

func realPtr(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

func realGateJSON(t *testing.T, path string) *gate.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &res
}

// checkRealCI runs the Action's entry point twice on a pull request, against the real
// engine, the baseline made above and a fake GitHub API: one sticky comment, created
// then updated.
func checkRealCI(t *testing.T, s realServer, wd string) {
	gh := newRealGitHub(t)
	// A reviewer quoting our marker: never ours to update.
	marker := ghaction.Marker("slogate.yaml")
	lookalike := "quoting the bot:\n" + marker
	gh.add("octocat", lookalike)

	event := filepath.Join(t.TempDir(), "event.json")
	payload := `{"action":"synchronize","number":7,"pull_request":{"number":7,` +
		`"head":{"repo":{"full_name":"acme/serving","fork":false}},"base":{"repo":{"full_name":"acme/serving","fork":false}}}}`
	if err := os.WriteFile(event, []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, wantVerb := range []string{http.MethodPost, http.MethodPatch} {
		files := t.TempDir()
		outputs, summary := filepath.Join(files, "output"), filepath.Join(files, "summary.md")
		for _, f := range []string{outputs, summary} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a, out, errb := realApp(t, s, map[string]string{
			"INPUT_CONFIG":            "slogate.yaml",
			"INPUT_MODE":              "gate",
			"INPUT_TARGET":            s.url,
			"INPUT_GITHUB-TOKEN":      "ghs_fake",
			"INPUT_COMMENT":           "true",
			"INPUT_FAIL-ON":           "fail",
			"INPUT_WORKING-DIRECTORY": wd,
			"GITHUB_API_URL":          gh.srv.URL,
			"GITHUB_EVENT_NAME":       "pull_request",
			"GITHUB_EVENT_PATH":       event,
			"GITHUB_REPOSITORY":       "acme/serving",
			"GITHUB_RUN_ID":           "42",
			"GITHUB_OUTPUT":           outputs,
			"GITHUB_STEP_SUMMARY":     summary,
		})
		code := realRun(a, "ci")
		t.Logf("slogate ci #%d: exit %d\n%s%s", i+1, code, out, errb)
		gj := filepath.Join(wd, "slogate-out", "gate.json")
		if code != ExitOK {
			t.Fatalf("ci #%d: exit %d, want 0 (a fresh run gated against the baseline)", i+1, code)
		}
		res := realGateJSON(t, gj)
		if len(res.Workloads) != 1 || res.Workloads[0].BaselinePath == "" || res.Workloads[0].Reason != "" {
			t.Errorf("ci #%d: gate.json %+v: want the workload compared with its baseline", i+1, res.Workloads)
		}
		outs := realOutputs(t, outputs)
		if v := outs["verdict"]; v != string(res.Verdict) || (v != "pass" && v != "warn" && v != "improved") {
			t.Errorf("ci #%d: verdict output %q (gate.json %q), want pass, warn or improved", i+1, v, res.Verdict)
		}
		if outs["comment-url"] == "" || outs["goodput"] == "" || outs["itl-p99-ms"] == "" || outs["kv-concurrency"] == "" {
			t.Errorf("ci #%d: outputs %v", i+1, outs)
		}
		if st, err := os.Stat(summary); err != nil || st.Size() == 0 {
			t.Errorf("ci #%d: step summary empty (%v)", i+1, err)
		}
		for _, f := range []string{"report.html", "comment.md", realWorkload + ".json"} {
			if st, err := os.Stat(filepath.Join(wd, "slogate-out", f)); err != nil || st.Size() == 0 {
				t.Errorf("ci #%d: slogate-out/%s: %v", i+1, f, err)
			}
		}

		ours := gh.byAuthor("github-actions[bot]")
		calls := gh.count(wantVerb)
		if len(ours) != 1 || !strings.Contains(ours[0], marker) || calls != 1 || gh.count(http.MethodPost) != 1 {
			t.Errorf("ci #%d: %d comments of ours (want 1 with the marker), %d %s calls (want 1), %d POST in all (want 1); calls: %v",
				i+1, len(ours), calls, wantVerb, gh.count(http.MethodPost), gh.log())
		}
		if others := gh.byAuthor("octocat"); len(others) != 1 || others[0] != lookalike {
			t.Errorf("ci #%d: the reviewer's comment was touched: %q", i+1, others)
		}
	}
	if bad := gh.unexpected(); len(bad) > 0 {
		t.Errorf("calls the fake GitHub does not serve: %v", bad)
	}
}

// realOutputs parses a GITHUB_OUTPUT file: name=value lines and name<<DELIM heredocs.
func realOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok {
			var val []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				val = append(val, lines[i])
			}
			outs[name] = strings.Join(val, "\n")
		} else if name, val, ok := strings.Cut(lines[i], "="); ok {
			outs[name] = val
		}
	}
	return outs
}

// realGitHub serves what the sticky comment needs, as GitHub answers the workflow's
// token: GET /user is refused (403), so comments are ours when github-actions[bot] wrote
// them.
type realGitHub struct {
	srv      *httptest.Server
	mu       sync.Mutex
	comments []realComment
	calls    []string // "METHOD path"
	bad      []string
	nextID   int64
}

type realComment struct {
	ID     int64
	Author string
	Body   string
}

var (
	realListPath = regexp.MustCompile(`^/repos/acme/serving/issues/7/comments$`)
	realEditPath = regexp.MustCompile(`^/repos/acme/serving/issues/comments/(\d+)$`)
)

func newRealGitHub(t *testing.T) *realGitHub {
	g := &realGitHub{nextID: 100}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *realGitHub) add(author, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	g.comments = append(g.comments, realComment{ID: g.nextID, Author: author, Body: body})
}

func (g *realGitHub) json(id int64) map[string]any {
	for _, c := range g.comments {
		if c.ID == id {
			return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"login": c.Author},
				"html_url": fmt.Sprintf("https://github.example/acme/serving/pull/7#issuecomment-%d", c.ID)}
		}
	}
	return nil
}

func (g *realGitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, r.Method+" "+r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	reply := func(status int, v any) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer ghs_fake" {
		g.bad = append(g.bad, r.Method+" "+r.URL.Path+" without the token")
		reply(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	var body struct {
		Body string `json:"body"`
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/user",
		r.Method == http.MethodPost && r.URL.Path == "/graphql":
		// The workflow token reads neither /user nor GraphQL's viewer.
		reply(http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
	case r.Method == http.MethodGet && realListPath.MatchString(r.URL.Path):
		list := []map[string]any{}
		for _, c := range g.comments {
			list = append(list, g.json(c.ID))
		}
		reply(http.StatusOK, list)
	case r.Method == http.MethodPost && realListPath.MatchString(r.URL.Path):
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Body == "" {
			reply(http.StatusUnprocessableEntity, map[string]string{"message": "no body"})
			return
		}
		g.nextID++
		g.comments = append(g.comments, realComment{ID: g.nextID, Author: "github-actions[bot]", Body: body.Body})
		reply(http.StatusCreated, g.json(g.nextID))
	case r.Method == http.MethodPatch && realEditPath.MatchString(r.URL.Path):
		id, _ := strconv.ParseInt(realEditPath.FindStringSubmatch(r.URL.Path)[1], 10, 64)
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Body == "" {
			reply(http.StatusUnprocessableEntity, map[string]string{"message": "no body"})
			return
		}
		for i := range g.comments {
			if g.comments[i].ID == id {
				g.comments[i].Body = body.Body
				reply(http.StatusOK, g.json(id))
				return
			}
		}
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
	default:
		g.bad = append(g.bad, r.Method+" "+r.URL.Path)
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

func (g *realGitHub) byAuthor(login string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.comments {
		if c.Author == login {
			out = append(out, c.Body)
		}
	}
	return out
}

func (g *realGitHub) count(method string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.calls {
		if strings.HasPrefix(c, method+" ") && strings.Contains(c, "/comments") {
			n++
		}
	}
	return n
}

func (g *realGitHub) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

func (g *realGitHub) unexpected() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.bad...)
}

// TestOllamaRealFailures checks the documented exit codes when the engine is not there,
// serves another model, or dies mid-run, and that nothing measured is lost. The last case
// kills the server: nothing may run against it afterwards.
func TestOllamaRealFailures(t *testing.T) {
	quiet(t)
	s := realOllamaServer(t)

	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		dir := filepath.Join(t.TempDir(), "out")
		a, _, errb := realApp(t, s, nil)
		code := realRun(a, "run", "-c", realConfig(t, t.TempDir()), "--target", dead, "-o", dir)
		if code != ExitFailure || !strings.Contains(errb.String(), "engine unreachable") {
			t.Errorf("exit %d, want 3; stderr %q", code, errb)
		}
		// Nothing was measured, so there is no record to keep.
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %d files, want none", dir, len(ents))
		}
	})

	t.Run("wrong-model", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		cfg := realConfig(t, t.TempDir(), "name: stories260k", "name: stories15m")
		a, _, errb := realApp(t, s, nil)
		code := realRun(a, "run", "-c", cfg, "--target", s.url, "-o", dir)
		want := `the engine serves model "stories260k:latest", but model.name pins "stories15m"`
		if code != ExitFailure || !strings.Contains(errb.String(), want) {
			t.Errorf("exit %d, want 3; stderr %q lacks %q", code, errb, want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %d files, want none", dir, len(ents))
		}
	})

	t.Run("killed-mid-run", func(t *testing.T) { checkRealKilled(t, s) })
}

// checkRealKilled runs a 12 s workload, kills the engine (the server and its model runner,
// as a crash or an OOM kill would) after 3 s, and checks that the run fails with exit 3
// and keeps every request the engine completed.
func checkRealKilled(t *testing.T, s realServer) {
	if s.pid == 0 {
		t.Skip("SLOGATE_OLLAMA_PID is not set: no server process to kill")
	}
	// The same workload for 12 s instead of 30, so that most of it comes after the kill.
	cfg := realConfig(t, t.TempDir(), "requests: 120", "requests: 48")
	dir := filepath.Join(t.TempDir(), "out")
	var logStart int64
	if s.log != "" {
		if st, err := os.Stat(s.log); err == nil {
			logStart = st.Size()
		}
	}
	a, out, errb := realApp(t, s, nil)
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- realRun(a, "run", "-c", cfg, "--target", s.url, "-o", dir) }()

	time.Sleep(3 * time.Second)
	killed := time.Now()
	// The runner first: killed alone, the server would start another one.
	victims := append(realChildPIDs(s.pid), s.pid)
	for _, pid := range victims {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("kill %d: %v", pid, err)
		}
	}
	t.Logf("killed pids %v %.1f s after the run began", victims, killed.Sub(start).Seconds())

	var code int
	select {
	case code = <-done:
	case <-time.After(realCmdTimeout + 10*time.Second):
		t.Fatal("the run did not end after the engine was killed")
	}
	t.Logf("slogate run: exit %d\n%s%s", code, out, errb)
	rec, err := result.Read(filepath.Join(dir, realWorkload+".json"))
	if err != nil {
		t.Fatalf("exit %d and no record: what was measured before the kill is lost: %v", code, err)
	}
	sum := rec.Summary
	t.Logf("record: %d requests, %d completed, errors %v, incomplete %v (%q)", sum.Requests, sum.Completed, sum.Errors, rec.Incomplete, rec.IncompleteReason)
	if code != ExitFailure {
		t.Errorf("exit %d, want 3: the engine died mid-run", code)
	}
	if !rec.Incomplete && sum.Errors["connect"] == 0 {
		t.Errorf("the record is neither incomplete nor counts connection errors: errors %v", sum.Errors)
	}
	if sum.Requests != len(rec.Requests) || sum.Completed == 0 || sum.Completed == sum.Requests {
		t.Errorf("%d requests recorded (summary %d), %d completed: want those before the kill completed and the rest failed", len(rec.Requests), sum.Requests, sum.Completed)
	}
	// Times in the record count from an epoch taken after rec.Start.
	killUS := killed.Sub(rec.Start).Microseconds()
	for _, r := range rec.Requests {
		switch {
		case r.OK() && r.EndUS > killUS+100_000:
			t.Errorf("request %d completed %d ms after the kill", r.I, (r.EndUS-killUS)/1000)
		case !r.OK() && r.EndUS < killUS-100_000 && r.Error != "timeout":
			t.Errorf("request %d failed (%s: %s) %d ms before the kill", r.I, r.Error, r.ErrorDetail, (killUS-r.EndUS)/1000)
		}
	}
	// The server's own log: every request it answered in full is in the record.
	if s.log == "" {
		t.Log("SLOGATE_OLLAMA_LOG is not set: the record is not compared with the server's log")
		return
	}
	data, err := os.ReadFile(s.log)
	if err != nil || int64(len(data)) < logStart {
		t.Fatalf("reading the server log: %v", err)
	}
	served := 0
	for _, line := range strings.Split(string(data[logStart:]), "\n") {
		if strings.Contains(line, "| 200 |") && strings.Contains(line, `"/v1/completions"`) {
			served++
		}
	}
	warm := 0
	if rec.Warmup != nil {
		warm = rec.Warmup.Requests
		for _, n := range rec.Warmup.Errors {
			warm -= n
		}
	}
	t.Logf("the server's log: %d completions answered in full during the run; the record: %d warm-up and %d measured successes", served, warm, sum.Completed)
	// A request whose answer was written but not yet logged when the kill came may be
	// in the record only.
	if got := warm + sum.Completed; got != served && got != served+1 {
		t.Errorf("the server answered %d requests in full; the record has %d warm-up and %d measured successes", served, warm, sum.Completed)
	}
}

// realChildPIDs lists the processes whose parent is pid (Linux /proc); nil elsewhere.
func realChildPIDs(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
				kids = append(kids, n)
			}
		}
	}
	return kids
}
