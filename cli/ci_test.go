package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/sim"
)

// fakeGitHub is the part of GitHub's REST API that `slogate ci` uses, on loopback.
type fakeGitHub struct {
	mu       sync.Mutex
	comments []ghComment
	calls    []string
	srv      *httptest.Server
}

type ghComment struct {
	ID      int64  `json:"id"`
	Body    string `json:"body"`
	User    ghUser `json:"user"`
	HTMLURL string `json:"html_url"`
}

type ghUser struct {
	Login string `json:"login"`
}

var commentPath = regexp.MustCompile(`^/repos/acme/serving/issues/comments/(\d+)$`)

func newFakeGitHub(t *testing.T) *fakeGitHub {
	g := &fakeGitHub{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.calls = append(g.calls, r.Method+" "+r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Body string `json:"body"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/user":
			// The default GITHUB_TOKEN cannot read /user.
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"message":"Resource not accessible by integration"}`))
		case r.Method == "GET" && r.URL.Path == "/repos/acme/serving/issues/7/comments":
			json.NewEncoder(w).Encode(g.comments)
		case r.Method == "POST" && r.URL.Path == "/repos/acme/serving/issues/7/comments":
			id := int64(100 + len(g.comments))
			c := ghComment{ID: id, Body: body.Body, User: ghUser{"github-actions[bot]"}, HTMLURL: fmt.Sprintf("https://github.com/acme/serving/pull/7#issuecomment-%d", id)}
			g.comments = append(g.comments, c)
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(c)
		case r.Method == "PATCH" && commentPath.MatchString(r.URL.Path):
			id, _ := strconv.ParseInt(commentPath.FindStringSubmatch(r.URL.Path)[1], 10, 64)
			for i := range g.comments {
				if g.comments[i].ID == id {
					g.comments[i].Body = body.Body
					json.NewEncoder(w).Encode(g.comments[i])
					return
				}
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// fakeGit answers git log with a fixed commit, as a checkout where the baseline was
// committed would.
func fakeGit(_ context.Context, _ string, args ...string) ([]byte, error) {
	if len(args) > 0 && args[0] == "log" {
		return []byte("feedc0ffee0012345678 2026-11-20T10:00:00+01:00\n"), nil
	}
	return []byte("false\n"), nil
}

func TestCIEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	dir := t.TempDir()
	// A lag bound of 30 s and loose rules on the steadiest metrics: this test is about the
	// Action's flow, not the machine's timers or a p99 on a loaded machine.
	cfg := strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1) +
		"gate:\n  baselines: baselines\n  drift: {tool.version: ignore}\n  rules:\n    goodput: {direction: higher, tolerance: 50%}\n    error_rate: {max: 5%}\n"
	if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := newFakeGitHub(t)
	prEvent := filepath.Join(dir, "pr.json")
	os.WriteFile(prEvent, []byte(`{"pull_request":{"number":7,"head":{"sha":"0123456789abcdef","repo":{"full_name":"acme/serving","fork":false}},"base":{"sha":"fedcba9876543210","repo":{"full_name":"acme/serving"}}}}`), 0o644)
	pushEvent := filepath.Join(dir, "push.json")
	os.WriteFile(pushEvent, []byte(`{"ref":"refs/heads/main"}`), 0o644)

	extra := map[string]string{} // further INPUT_ variables
	ci := func(mode, event, eventPath, token string) (int, string, string, map[string]string) {
		t.Helper()
		outFile, sumFile := filepath.Join(dir, "out-"+mode), filepath.Join(dir, "summary-"+mode)
		env := map[string]string{
			"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": mode, "INPUT_TARGET": url, "INPUT_GITHUB-TOKEN": token,
			"INPUT_WORKING-DIRECTORY": dir, "GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": "acme/serving",
			"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": eventPath, "GITHUB_OUTPUT": outFile, "GITHUB_STEP_SUMMARY": sumFile,
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42", "GITHUB_SHA": "0123456789abcdef",
		}
		for k, v := range extra {
			env[k] = v
		}
		os.Remove(outFile)
		a, out, errb := testApp(t)
		a.getenv = func(k string) string { return env[k] }
		a.git = fakeGit
		code := a.run(cmdCtx(t), []string{"ci"})
		outputs := map[string]string{}
		data, _ := os.ReadFile(outFile)
		// name<<DELIM\nvalue\nDELIM blocks.
		lines := strings.Split(string(data), "\n")
		for i := 0; i+1 < len(lines); i++ {
			if k, _, ok := strings.Cut(lines[i], "<<"); ok {
				outputs[k] = lines[i+1]
			}
		}
		sum, _ := os.ReadFile(sumFile)
		return code, out.String() + errb.String(), string(sum), outputs
	}

	// 1. On a push, mode baseline writes the baselines (no token: no pull request opened).
	code, log, _, _ := ci("baseline", "push", pushEvent, "")
	if code != ExitOK {
		t.Fatalf("baseline: exit %d\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "baselines", "small", "sim.json")); err != nil {
		t.Fatalf("baseline not written: %v\n%s", err, log)
	}
	// The refresh starts the baseline's history: one line, kind baseline, at GITHUB_SHA.
	hist, err := os.ReadFile(filepath.Join(dir, "baselines", "small", "sim.history.jsonl"))
	if err != nil || strings.Count(string(hist), "\n") != 1 || !strings.Contains(string(hist), `"kind":"baseline"`) || !strings.Contains(string(hist), `"commit":"0123456789abcdef"`) || !strings.Contains(string(hist), `"goodput":`) {
		t.Fatalf("history after the refresh: %v\n%s", err, hist)
	}

	// 1b. A gate on a push to main adds a line to the history (kind main).
	mainEvent := filepath.Join(dir, "main.json")
	os.WriteFile(mainEvent, []byte(`{"ref":"refs/heads/main"}`), 0o644)
	extra["GITHUB_REF"] = "refs/heads/main"
	if code, log, _, _ := ci("gate", "push", mainEvent, ""); code != ExitOK {
		t.Fatalf("gate on main: exit %d\n%s", code, log)
	}
	delete(extra, "GITHUB_REF")
	hist, _ = os.ReadFile(filepath.Join(dir, "baselines", "small", "sim.history.jsonl"))
	if strings.Count(string(hist), "\n") != 2 || !strings.Contains(string(hist), `"kind":"main"`) {
		t.Fatalf("history after a run of main:\n%s", hist)
	}

	// 2. On the pull request, mode gate runs, gates, writes every file, then comments once.
	code, log, summary, outputs := ci("gate", "pull_request", prEvent, "tok-1")
	if code != ExitOK {
		t.Fatalf("gate: exit %d\n%s", code, log)
	}
	for _, f := range []string{"small.json", "gate.json", "comment.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, "slogate-out", f)); err != nil {
			t.Errorf("slogate-out/%s: %v", f, err)
		}
	}
	if v := outputs["verdict"]; v != "pass" && v != "improved" && v != "warn" {
		t.Errorf("verdict output %q; outputs %v\n%s", v, outputs, log)
	}
	if outputs["results-dir"] == "" || outputs["report-path"] == "" || outputs["goodput"] == "" || outputs["itl-p99-ms"] == "" || outputs["kv-concurrency"] == "" {
		t.Errorf("outputs %v", outputs)
	}
	if !strings.Contains(outputs["comment-url"], "issuecomment-100") {
		t.Errorf("comment-url %q", outputs["comment-url"])
	}
	if !strings.Contains(summary, "slogate") || !strings.Contains(summary, "<code>small</code>") {
		t.Errorf("summary:\n%s", summary)
	}
	// The job says what it held the machine for: in gate.json and in the comment. A
	// run of 40 requests at 20 req/s lasts about 2 s.
	var gj gate.Result
	if raw, err := os.ReadFile(filepath.Join(dir, "slogate-out", "gate.json")); err != nil || json.Unmarshal(raw, &gj) != nil || !(gj.GPUMinutes > 0.01 && gj.GPUMinutes < 2) {
		t.Errorf("gate.json gpu_minutes %v (%v)", gj.GPUMinutes, err)
	}
	// Every rule's values give the ratio shown beside them: gate.json, the log's table,
	// the comment and the report.
	md, _ := os.ReadFile(filepath.Join(dir, "slogate-out", "comment.md"))
	html, _ := os.ReadFile(filepath.Join(dir, "slogate-out", "report.html"))
	checkShownRatios(t, gj, log, string(md), string(html))
	if !strings.Contains(summary, "GPU time of this job: ") {
		t.Errorf("the comment does not say the job's GPU time:\n%s", summary)
	}
	gh.mu.Lock()
	if len(gh.comments) != 1 || !strings.HasPrefix(gh.comments[0].Body, "<!-- slogate:sticky:") {
		t.Fatalf("comments after one run: %+v", gh.comments)
	}
	posted := gh.comments[0].Body
	gh.mu.Unlock()
	for _, want := range []string{"Compared head [`0123456789ab`](https://github.com/acme/serving/commit/0123456789abcdef) against base [`fedcba987654`]",
		"[HTML report](https://github.com/acme/serving/actions/runs/42#artifacts)", "last changed in [`feedc0ffee00`]"} {
		if !strings.Contains(posted, want) {
			t.Errorf("comment lacks %q:\n%s", want, posted)
		}
	}

	// 2b. slogate report renders, from the files alone, exactly what ci wrote and posted.
	out := filepath.Join(dir, "slogate-out")
	mdFile, htmlFile := filepath.Join(dir, "again.md"), filepath.Join(dir, "again.html")
	a, stdout, errb := testApp(t)
	a.now = func() time.Time { return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) } // never read
	if code := a.run(cmdCtx(t), []string{"report", "-r", out, "--markdown", mdFile, "--html", htmlFile}); code != ExitOK {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, errb)
	}
	for _, f := range [][2]string{{"comment.md", mdFile}, {"report.html", htmlFile}} {
		want, _ := os.ReadFile(filepath.Join(out, f[0]))
		got, _ := os.ReadFile(f[1])
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("slogate report's %s differs from ci's (%d bytes, want %d)", f[0], len(got), len(want))
		}
	}
	if want, _ := os.ReadFile(filepath.Join(out, "comment.md")); string(want) != posted {
		t.Errorf("comment.md differs from the posted comment")
	}

	// 3. A second run updates the same comment: still one.
	code, log, _, _ = ci("gate", "pull_request", prEvent, "tok-1")
	if code != ExitOK {
		t.Fatalf("second gate: exit %d\n%s", code, log)
	}
	gh.mu.Lock()
	if len(gh.comments) != 1 || gh.comments[0].Body == "" {
		t.Fatalf("comments after two runs: %d", len(gh.comments))
	}
	defer gh.mu.Unlock()
	patched := false
	for _, c := range gh.calls {
		patched = patched || strings.HasPrefix(c, "PATCH /repos/acme/serving/issues/comments/100")
	}
	if !patched {
		t.Errorf("no PATCH of comment 100; calls %v", gh.calls)
	}

	// 4. comment: not-pass still updates the existing comment, whatever the verdict (a
	// pass must not leave a stale one), and on a pass creates none where there is none.
	extra["INPUT_COMMENT"] = "not-pass"
	gh.calls = nil
	gh.mu.Unlock()
	code, log, _, outputs = ci("gate", "pull_request", prEvent, "tok-1")
	gh.mu.Lock()
	if code != ExitOK || len(gh.comments) != 1 || !slices.Contains(gh.calls, "PATCH /repos/acme/serving/issues/comments/100") {
		t.Errorf("not-pass with a comment: exit %d, %d comments, calls %v\n%s", code, len(gh.comments), gh.calls, log)
	}
	gh.comments = nil
	gh.mu.Unlock()
	code, log, _, outputs = ci("gate", "pull_request", prEvent, "tok-1")
	gh.mu.Lock()
	wantComments := 1
	if outputs["verdict"] == "pass" {
		wantComments = 0
	}
	if code != ExitOK || len(gh.comments) != wantComments {
		t.Errorf("not-pass without a comment, verdict %s: %d comments, want %d\n%s", outputs["verdict"], len(gh.comments), wantComments, log)
	}
}

func TestCIRefusesForkPullRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ev := filepath.Join(dir, "fork.json")
	os.WriteFile(ev, []byte(`{"pull_request":{"number":7,"head":{"repo":{"full_name":"stranger/serving","fork":true}},"base":{"repo":{"full_name":"acme/serving"}}}}`), 0o644)
	sumFile := filepath.Join(dir, "summary")
	env := map[string]string{"INPUT_CONFIG": "does-not-matter.yaml", "GITHUB_REPOSITORY": "acme/serving", "GITHUB_EVENT_NAME": "pull_request",
		"GITHUB_EVENT_PATH": ev, "GITHUB_STEP_SUMMARY": sumFile, "GITHUB_OUTPUT": filepath.Join(dir, "out")}
	a, _, errb := testApp(t)
	a.getenv = func(k string) string { return env[k] }
	if code := a.run(cmdCtx(t), []string{"ci"}); code != ExitFailure {
		t.Fatalf("exit %d, want 3\n%s", code, errb)
	}
	sum, _ := os.ReadFile(sumFile)
	if !strings.Contains(errb.String(), "allow-fork-prs") || !strings.Contains(string(sum), "not run") {
		t.Errorf("stderr %q\nsummary %q", errb, sum)
	}
}
