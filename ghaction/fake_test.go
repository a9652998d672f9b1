package ghaction

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake GitHub REST API: a small stateful server on loopback that records every call
// (method, path, query, decoded JSON body) so tests can check the exact sequence, as
// go-github's own tests do. It is mounted under /api/v3/, the GitHub Enterprise Server
// layout, so every test also checks that the base path survives.

const (
	fakeToken  = "tok-123"
	fakePrefix = "/api/v3/"
	fakeOwner  = "acme"
	fakeRepo   = "serving"
	fakePR     = 7
)

type apiCall struct {
	Method string
	Path   string // escaped, without the /api/v3/ prefix
	Query  string // url.Values.Encode(): sorted keys
	Body   any    // the decoded JSON body; nil when there is none
}

type fault struct {
	status int
	header map[string]string
	body   string
	apply  bool // perform the call first, then answer with the fault: a write that landed although its answer was lost
}

type fakeComment struct {
	ID    int64
	Login string
	Body  string
}

type fakePull struct {
	Head, Base, URL string
}

type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	calls    []apiCall
	faults   map[string][]fault // "METHOD path" → answers to give before the real one
	login    string             // GET /user; "" answers 403 as for the workflow's GITHUB_TOKEN
	app      string             // GraphQL viewer login of an App installation token ("" answers 403)
	readOnly bool               // every write answers 403 as on a fork's pull request
	prGone   bool               // the pull request answers 404
	comments []fakeComment
	nextID   int64
	pageSize int
	refs     map[string]string // "heads/main" → commit sha
	commits  map[string]string // commit sha → tree sha
	nextSHA  int
	pulls    []fakePull
}

func newFake(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{
		t:        t,
		faults:   map[string][]fault{},
		nextID:   1000,
		pageSize: 100,
		refs:     map[string]string{},
		commits:  map[string]string{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// publisher returns a Publisher on the fake whose waits are recorded, not slept.
func (f *fakeGitHub) publisher(t *testing.T) (*Publisher, *[]time.Duration) {
	t.Helper()
	p, err := NewPublisher(fakeToken, f.srv.URL+"/api/v3", f.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	p.Owner, p.Repo = fakeOwner, fakeRepo
	var mu sync.Mutex
	var slept []time.Duration
	p.Sleep = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		slept = append(slept, d)
	}
	return p, &slept
}

func (f *fakeGitHub) fail(method, path string, ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := method + " " + path
	f.faults[k] = append(f.faults[k], ft)
}

func (f *fakeGitHub) addComment(login, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.comments = append(f.comments, fakeComment{ID: f.nextID, Login: login, Body: body})
	return f.nextID
}

func (f *fakeGitHub) snapshot() ([]apiCall, []fakeComment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...), append([]fakeComment(nil), f.comments...)
}

func (f *fakeGitHub) sha() string {
	f.nextSHA++
	return fmt.Sprintf("%040x", f.nextSHA)
}

func commentURL(id int64) string {
	return fmt.Sprintf("https://github.com/%s/%s/pull/%d#issuecomment-%d", fakeOwner, fakeRepo, fakePR, id)
}

func commentJSON(c fakeComment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"login": c.Login}, "html_url": commentURL(c.ID)}
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()

	path, ok := strings.CutPrefix(r.URL.EscapedPath(), fakePrefix)
	if r.URL.Path == "/api/graphql" {
		path, ok = "graphql", true // GitHub Enterprise Server's GraphQL endpoint
	}
	if !ok {
		f.t.Errorf("%s %s: not under %s (base URL lost its path)", r.Method, r.URL.Path, fakePrefix)
		http.Error(w, "bad prefix", http.StatusNotFound)
		return
	}
	c := apiCall{Method: r.Method, Path: path, Query: r.URL.Query().Encode()}
	raw, _ := io.ReadAll(r.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c.Body); err != nil {
			f.t.Errorf("%s %s: body is not JSON: %v: %q", r.Method, path, err, raw)
		}
	}
	if path != "graphql" { // the identity probe is checked by its own test, not in every call list
		f.calls = append(f.calls, c)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+fakeToken {
		f.t.Errorf("%s %s: Authorization %q", r.Method, path, got)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials"})
		return
	}

	k := r.Method + " " + path
	if q := f.faults[k]; len(q) > 0 {
		ft := q[0]
		f.faults[k] = q[1:]
		if ft.apply {
			f.route(httptest.NewRecorder(), r.Method, path, r.URL.Query(), c.Body)
		}
		for h, v := range ft.header {
			w.Header().Set(h, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ft.status)
		io.WriteString(w, ft.body)
		return
	}
	f.route(w, r.Method, path, r.URL.Query(), c.Body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

var (
	notFound    = map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
	notAllowed  = map[string]any{"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"}
	repoPrefix  = "repos/" + fakeOwner + "/" + fakeRepo + "/"
	commentsFor = fmt.Sprintf("%sissues/%d/comments", repoPrefix, fakePR)
)

func (f *fakeGitHub) route(w http.ResponseWriter, method, path string, q url.Values, body any) {
	in, _ := body.(map[string]any)
	str := func(k string) string { s, _ := in[k].(string); return s }
	write := method != http.MethodGet
	if write && f.readOnly {
		writeJSON(w, http.StatusForbidden, notAllowed)
		return
	}

	switch {
	case method == "POST" && path == "graphql":
		// An App installation token: GET /user refuses it, GraphQL's viewer names it.
		if f.app == "" {
			writeJSON(w, http.StatusForbidden, notAllowed)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"login": f.app}}})

	case method == "GET" && path == "user":
		if f.login == "" {
			writeJSON(w, http.StatusForbidden, notAllowed)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"login": f.login, "id": 1})

	case path == commentsFor && f.prGone:
		writeJSON(w, http.StatusNotFound, notFound)

	case method == "GET" && path == commentsFor:
		page, _ := strconv.Atoi(q.Get("page"))
		if page == 0 {
			page = 1
		}
		lo := (page - 1) * f.pageSize
		hi := min(lo+f.pageSize, len(f.comments))
		out := []map[string]any{}
		for i := lo; i < hi; i++ {
			out = append(out, commentJSON(f.comments[i]))
		}
		if hi < len(f.comments) {
			next := fmt.Sprintf("%s%s%s?page=%d&per_page=%s", f.srv.URL, fakePrefix, commentsFor, page+1, q.Get("per_page"))
			w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next))
		}
		writeJSON(w, http.StatusOK, out)

	case method == "POST" && path == commentsFor:
		f.nextID++
		c := fakeComment{ID: f.nextID, Login: f.identity(), Body: str("body")}
		f.comments = append(f.comments, c)
		writeJSON(w, http.StatusCreated, commentJSON(c))

	case method == "PATCH" && strings.HasPrefix(path, repoPrefix+"issues/comments/"):
		id, _ := strconv.ParseInt(strings.TrimPrefix(path, repoPrefix+"issues/comments/"), 10, 64)
		for i := range f.comments {
			if f.comments[i].ID == id {
				if !strings.EqualFold(f.comments[i].Login, f.identity()) {
					writeJSON(w, http.StatusForbidden, map[string]any{"message": "Must have admin rights"})
					return
				}
				f.comments[i].Body = str("body")
				writeJSON(w, http.StatusOK, commentJSON(f.comments[i]))
				return
			}
		}
		writeJSON(w, http.StatusNotFound, notFound)

	case method == "GET" && strings.HasPrefix(path, repoPrefix+"git/ref/"):
		ref := strings.TrimPrefix(path, repoPrefix+"git/ref/")
		sha, ok := f.refs[ref]
		if !ok {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ref": "refs/" + ref, "object": map[string]any{"sha": sha, "type": "commit"}})

	case method == "GET" && strings.HasPrefix(path, repoPrefix+"git/commits/"):
		sha := strings.TrimPrefix(path, repoPrefix+"git/commits/")
		tree, ok := f.commits[sha]
		if !ok {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "tree": map[string]any{"sha": tree}})

	case method == "POST" && path == repoPrefix+"git/blobs":
		writeJSON(w, http.StatusCreated, map[string]any{"sha": f.sha()})

	case method == "POST" && path == repoPrefix+"git/trees":
		writeJSON(w, http.StatusCreated, map[string]any{"sha": f.sha()})

	case method == "POST" && path == repoPrefix+"git/commits":
		sha := f.sha()
		tree, _ := in["tree"].(string)
		f.commits[sha] = tree
		writeJSON(w, http.StatusCreated, map[string]any{"sha": sha, "tree": map[string]any{"sha": tree}})

	case method == "POST" && path == repoPrefix+"git/refs":
		ref := strings.TrimPrefix(str("ref"), "refs/")
		if _, ok := f.refs[ref]; ok {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Reference already exists"})
			return
		}
		f.refs[ref] = str("sha")
		writeJSON(w, http.StatusCreated, map[string]any{"ref": "refs/" + ref, "object": map[string]any{"sha": str("sha")}})

	case method == "PATCH" && strings.HasPrefix(path, repoPrefix+"git/refs/"):
		ref := strings.TrimPrefix(path, repoPrefix+"git/refs/")
		if _, ok := f.refs[ref]; !ok {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Reference does not exist"})
			return
		}
		f.refs[ref] = str("sha")
		writeJSON(w, http.StatusOK, map[string]any{"ref": "refs/" + ref, "object": map[string]any{"sha": str("sha")}})

	case method == "GET" && path == repoPrefix+"pulls":
		out := []map[string]any{}
		for _, p := range f.pulls {
			if fakeOwner+":"+p.Head == q.Get("head") && p.Base == q.Get("base") {
				out = append(out, map[string]any{"html_url": p.URL})
			}
		}
		writeJSON(w, http.StatusOK, out)

	case method == "POST" && path == repoPrefix+"pulls":
		p := fakePull{Head: str("head"), Base: str("base"), URL: fmt.Sprintf("https://github.com/%s/%s/pull/%d", fakeOwner, fakeRepo, 100+len(f.pulls))}
		f.pulls = append(f.pulls, p)
		writeJSON(w, http.StatusCreated, map[string]any{"html_url": p.URL, "number": 100 + len(f.pulls) - 1})

	default:
		f.t.Errorf("fake GitHub: unexpected call %s %s", method, path)
		writeJSON(w, http.StatusNotFound, notFound)
	}
}

// identity is who the fake thinks the token is, for authoring comments.
func (f *fakeGitHub) identity() string {
	if f.login == "" && f.app != "" {
		return f.app
	}
	if f.login == "" {
		return "github-actions[bot]"
	}
	return f.login
}
