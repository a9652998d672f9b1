package ghaction

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	baseSHA  = "b000000000000000000000000000000000000000"
	baseTree = "7000000000000000000000000000000000000000"
	branch   = "slogate/baseline-v1.4.0"
)

func sha(n int) string { return fmt.Sprintf("%040x", n) }

func baselineFake(t *testing.T) *fakeGitHub {
	f := newFake(t)
	f.login = "slogate-bot"
	f.refs["heads/main"] = baseSHA
	f.commits[baseSHA] = baseTree
	return f
}

var baselineFiles = map[string][]byte{
	"baselines/llama-8b.json": []byte(`{"goodput": 48.0}`),
	"baselines/bin.dat":       {0x00, 0xff, 0x10}, // not text: must survive byte for byte
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// The calls that build the commit, identical on every run: files in sorted order.
func commitCalls() []apiCall {
	return []apiCall{
		{Method: "GET", Path: "repos/acme/serving/git/ref/heads/main"},
		{Method: "GET", Path: "repos/acme/serving/git/commits/" + baseSHA},
		{Method: "POST", Path: "repos/acme/serving/git/blobs", Body: map[string]any{"content": b64(baselineFiles["baselines/bin.dat"]), "encoding": "base64"}},
		{Method: "POST", Path: "repos/acme/serving/git/blobs", Body: map[string]any{"content": b64(baselineFiles["baselines/llama-8b.json"]), "encoding": "base64"}},
		{Method: "POST", Path: "repos/acme/serving/git/trees", Body: map[string]any{
			"base_tree": baseTree,
			"tree": []any{
				map[string]any{"path": "baselines/bin.dat", "mode": "100644", "type": "blob", "sha": sha(1)},
				map[string]any{"path": "baselines/llama-8b.json", "mode": "100644", "type": "blob", "sha": sha(2)},
			},
		}},
		{Method: "POST", Path: "repos/acme/serving/git/commits", Body: map[string]any{
			"message": "Refresh baselines for v1.4.0",
			"tree":    sha(3),
			"parents": []any{baseSHA},
		}},
	}
}

var pullsQuery = "base=main&head=acme%3Aslogate%2Fbaseline-v1.4.0&state=open"

func TestOpenBaselinePRCreatesBranchAndPR(t *testing.T) {
	f := baselineFake(t)
	p, slept := f.publisher(t)
	url, err := p.OpenBaselinePR(testCtx(t), "main", branch, baselineFiles, "Refresh baselines for v1.4.0", "Baselines measured on release v1.4.0.")
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://github.com/acme/serving/pull/100"; url != want {
		t.Errorf("url %q, want %q", url, want)
	}
	want := append(commitCalls(),
		apiCall{Method: "GET", Path: "repos/acme/serving/git/ref/heads/slogate/baseline-v1.4.0"},
		apiCall{Method: "POST", Path: "repos/acme/serving/git/refs", Body: map[string]any{"ref": "refs/heads/" + branch, "sha": sha(4)}},
		apiCall{Method: "GET", Path: "repos/acme/serving/pulls", Query: pullsQuery},
		apiCall{Method: "POST", Path: "repos/acme/serving/pulls", Body: map[string]any{
			"title": "Refresh baselines for v1.4.0", "head": branch, "base": "main", "body": "Baselines measured on release v1.4.0.",
		}},
	)
	checkCalls(t, f, want)
	checkSlept(t, slept, nil)
	if f.refs["heads/"+branch] != sha(4) {
		t.Errorf("branch points at %q, want the new commit %q", f.refs["heads/"+branch], sha(4))
	}
}

// A second release before the first proposal was merged: the branch is moved (forced)
// and the open pull request is reused, not duplicated.
func TestOpenBaselinePRReusesBranchAndOpenPR(t *testing.T) {
	f := baselineFake(t)
	f.refs["heads/"+branch] = sha(99)
	f.pulls = []fakePull{{Head: branch, Base: "main", URL: "https://github.com/acme/serving/pull/55"}}
	p, _ := f.publisher(t)
	url, err := p.OpenBaselinePR(testCtx(t), "main", branch, baselineFiles, "Refresh baselines for v1.4.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if url != "https://github.com/acme/serving/pull/55" {
		t.Errorf("url %q, want the open pull request", url)
	}
	want := append(commitCalls(),
		apiCall{Method: "GET", Path: "repos/acme/serving/git/ref/heads/slogate/baseline-v1.4.0"},
		apiCall{Method: "PATCH", Path: "repos/acme/serving/git/refs/heads/slogate/baseline-v1.4.0", Body: map[string]any{"sha": sha(4), "force": true}},
		apiCall{Method: "GET", Path: "repos/acme/serving/pulls", Query: pullsQuery},
	)
	checkCalls(t, f, want)
	if f.refs["heads/"+branch] != sha(4) {
		t.Errorf("branch points at %q, want %q", f.refs["heads/"+branch], sha(4))
	}
}

func TestOpenBaselinePRRetriesAndFailures(t *testing.T) {
	// A 502 on a blob upload is retried: blobs are content-addressed, so a repeat is harmless.
	t.Run("blob 502 retried", func(t *testing.T) {
		f := baselineFake(t)
		f.fail("POST", "repos/acme/serving/git/blobs", fault{status: 502})
		p, slept := f.publisher(t)
		if _, err := p.OpenBaselinePR(testCtx(t), "main", branch, baselineFiles, "t", ""); err != nil {
			t.Fatal(err)
		}
		checkSlept(t, slept, []time.Duration{time.Second})
	})
	// A read-only token (release from a workflow without contents: write): the warning type.
	t.Run("read-only token", func(t *testing.T) {
		f := baselineFake(t)
		f.readOnly = true
		p, _ := f.publisher(t)
		_, err := p.OpenBaselinePR(testCtx(t), "main", branch, baselineFiles, "t", "")
		if !errors.Is(err, ErrReadOnlyToken) {
			t.Errorf("error %v, want ErrReadOnlyToken", err)
		}
	})
	// The base branch does not exist: a plain error naming it, nothing uploaded.
	t.Run("missing base", func(t *testing.T) {
		f := baselineFake(t)
		p, _ := f.publisher(t)
		_, err := p.OpenBaselinePR(testCtx(t), "trunk", branch, baselineFiles, "t", "")
		if err == nil || !strings.Contains(err.Error(), `reading branch "trunk"`) || errors.Is(err, ErrReadOnlyToken) {
			t.Errorf("error %v", err)
		}
		checkCalls(t, f, []apiCall{{Method: "GET", Path: "repos/acme/serving/git/ref/heads/trunk"}})
	})
}

func TestOpenBaselinePRRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name, base, branch string
		files              map[string][]byte
		title              string
		wantErr            string
	}{
		// Committing to the base itself would bypass review.
		{"branch is base", "main", "main", baselineFiles, "t", "is the base branch"},
		// Nothing to propose.
		{"no files", "main", branch, nil, "t", "no files"},
		// A path escaping the repository.
		{"path escapes", "main", branch, map[string][]byte{"../etc/passwd": nil}, "t", `file path "../etc/passwd"`},
		// An absolute path.
		{"absolute path", "main", branch, map[string][]byte{"/baselines/a.json": nil}, "t", "want a clean path"},
		// An unclean path would create odd tree entries.
		{"unclean path", "main", branch, map[string][]byte{"baselines//a.json": nil}, "t", "want a clean path"},
		// git refuses such branch names; say so before uploading anything.
		{"bad branch name", "main", "slogate/bad name", baselineFiles, "t", "not a valid git branch name"},
		{"dot-dot branch", "main", "a..b", baselineFiles, "t", "not a valid git branch name"},
		// A pull request needs a title.
		{"no title", "main", branch, baselineFiles, " ", "empty title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := baselineFake(t)
			p, _ := f.publisher(t)
			_, err := p.OpenBaselinePR(testCtx(t), tt.base, tt.branch, tt.files, tt.title, "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			checkCalls(t, f, nil)
		})
	}
}
