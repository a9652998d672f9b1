package ghaction

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func baseEnv(event, payload string) map[string]string {
	m := map[string]string{
		"GITHUB_REPOSITORY": "acme/serving",
		"GITHUB_EVENT_NAME": event,
		"GITHUB_RUN_ID":     "9001",
		"GITHUB_SHA":        "abcdef0123456789abcdef0123456789abcdef01",
		"GITHUB_REF":        "refs/pull/42/merge",
		"GITHUB_ACTOR":      "alice",
	}
	if payload != "" {
		m["GITHUB_EVENT_PATH"] = filepath.Join("testdata", "events", payload)
	}
	return m
}

func TestLoadContext(t *testing.T) {
	runURL := "https://github.com/acme/serving/actions/runs/9001"
	common := Context{
		Owner: "acme", Repo: "serving",
		SHA: "abcdef0123456789abcdef0123456789abcdef01", Ref: "refs/pull/42/merge",
		HeadSHA: "abcdef0123456789abcdef0123456789abcdef01",
		APIURL:  "https://api.github.com", ServerURL: "https://github.com", RunURL: runURL, Actor: "alice",
	}
	sha := func(n byte) string { return strings.Repeat(string(n), 40) }
	with := func(f func(c *Context)) *Context {
		c := common
		f(&c)
		return &c
	}
	tests := []struct {
		name       string
		env        map[string]string
		want       *Context
		wantErr    string
		wantRefuse bool // CheckForkSafety refuses with allow=false
	}{
		// The everyday case: a branch of the repository itself.
		{"same-repo pull request", baseEnv("pull_request", "pr_same_repo.json"),
			with(func(c *Context) {
				c.EventName, c.PRNumber, c.HeadRepo, c.BaseRepo = "pull_request", 42, "acme/serving", "acme/serving"
				// The payload's head and base commits, not GITHUB_SHA (the merge commit).
				c.HeadSHA, c.BaseSHA = sha('1'), sha('2')
			}), "", false},
		// A stranger's fork: refused by default.
		{"fork pull request", baseEnv("pull_request", "pr_fork.json"),
			with(func(c *Context) {
				c.EventName, c.PRNumber, c.IsFork, c.HeadRepo, c.BaseRepo = "pull_request", 43, true, "stranger/serving", "acme/serving"
				c.HeadSHA, c.BaseSHA = sha('3'), sha('2')
			}), "", true},
		// pull_request_target runs with a write token: a fork must be refused there too.
		{"fork pull_request_target", baseEnv("pull_request_target", "pr_fork.json"),
			with(func(c *Context) {
				c.EventName, c.PRNumber, c.IsFork, c.HeadRepo, c.BaseRepo = "pull_request_target", 43, true, "stranger/serving", "acme/serving"
				c.HeadSHA, c.BaseSHA = sha('3'), sha('2')
			}), "", true},
		// The head repository was deleted (null): nothing proves it was ours; fail closed.
		{"deleted head repository", baseEnv("pull_request", "pr_deleted_head.json"),
			with(func(c *Context) {
				c.EventName, c.PRNumber, c.IsFork, c.HeadRepo, c.BaseRepo = "pull_request", 44, true, "", "acme/serving"
				c.HeadSHA, c.BaseSHA = sha('4'), sha('2')
			}), "", true},
		// head.repo.fork is true, but head and base are the same repository (names differ
		// only in case): a branch-to-branch pull request inside a fork is not a fork PR.
		{"pull request inside a fork", func() map[string]string {
			m := baseEnv("pull_request", "pr_inside_fork.json")
			m["GITHUB_REPOSITORY"] = "stranger/serving"
			return m
		}(),
			with(func(c *Context) {
				c.Owner, c.RunURL = "stranger", "https://github.com/stranger/serving/actions/runs/9001"
				c.EventName, c.PRNumber, c.HeadRepo, c.BaseRepo = "pull_request", 3, "Stranger/serving", "stranger/serving"
				c.HeadSHA, c.BaseSHA = sha('5'), sha('6')
			}), "", false},
		// A push is not a pull request: no number, never refused.
		{"push", baseEnv("push", "push.json"),
			with(func(c *Context) { c.EventName = "push" }), "", false},
		// A release (baseline mode): no pull request either.
		{"release", baseEnv("release", "release.json"),
			with(func(c *Context) { c.EventName = "release" }), "", false},
		// GitHub Enterprise Server: the API and run URLs follow the server.
		{"GHES", func() map[string]string {
			m := baseEnv("push", "push.json")
			m["GITHUB_API_URL"] = "https://ghe.example.com/api/v3"
			m["GITHUB_SERVER_URL"] = "https://ghe.example.com"
			return m
		}(),
			with(func(c *Context) {
				c.EventName, c.APIURL, c.ServerURL = "push", "https://ghe.example.com/api/v3", "https://ghe.example.com"
				c.RunURL = "https://ghe.example.com/acme/serving/actions/runs/9001"
			}), "", false},
		// A local run outside Actions: empty but usable.
		{"local run", map[string]string{},
			&Context{APIURL: "https://api.github.com", ServerURL: "https://github.com"}, "", false},
		// A pull request whose payload is missing: fork status unknown, so an error.
		{"pull request without payload", baseEnv("pull_request", ""), nil, "GITHUB_EVENT_PATH is not set", false},
		// A pull request whose payload file cannot be read.
		{"pull request with unreadable payload", baseEnv("pull_request", "missing.json"), nil, "reading the event payload", false},
		// A payload that is not JSON.
		{"malformed payload", baseEnv("pull_request", "malformed.json"), nil, "malformed.json", false},
		// A pull_request event whose payload has no pull_request (a push payload).
		{"pull request event with a push payload", baseEnv("pull_request", "push.json"), nil, "without a pull_request number", false},
		// GITHUB_REPOSITORY must be owner/repo.
		{"bad GITHUB_REPOSITORY", func() map[string]string {
			m := baseEnv("push", "push.json")
			m["GITHUB_REPOSITORY"] = "serving"
			return m
		}(), nil, `GITHUB_REPOSITORY: invalid value "serving"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadContext(envFunc(tt.env), os.ReadFile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("context (-want +got):\n%s", d)
			}
			err = CheckForkSafety(got, false)
			if refused := err != nil; refused != tt.wantRefuse {
				t.Errorf("CheckForkSafety(allow=false) = %v, want refused=%v", err, tt.wantRefuse)
			}
			if err != nil && !errors.Is(err, ErrForkPR) {
				t.Errorf("refusal %v is not ErrForkPR", err)
			}
			if err := CheckForkSafety(got, true); err != nil {
				t.Errorf("CheckForkSafety(allow=true) = %v, want nil", err)
			}
		})
	}
}

// The refusal is read by a contributor wondering why nothing ran: pin its wording.
func TestForkRefusalMessage(t *testing.T) {
	var b strings.Builder
	for _, payload := range []string{"pr_fork.json", "pr_deleted_head.json"} {
		c, err := LoadContext(envFunc(baseEnv("pull_request", payload)), os.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(CheckForkSafety(c, false).Error())
		b.WriteString("\n")
	}
	golden(t, "fork_refusal.golden", b.String())
	for _, want := range []string{"not run", "self-hosted GPU runner", "allow-fork-prs: true", "workflow_run"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("refusal does not mention %q", want)
		}
	}
}

func TestCheckForkSafetyNilContext(t *testing.T) {
	if err := CheckForkSafety(nil, true); err == nil {
		t.Error("a nil context must not pass the fork check")
	}
}
