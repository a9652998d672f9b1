// Command fakegh is the GitHub REST API as far as slogate's sticky pull-request comment
// uses it, on loopback, for scripts/action-test.sh. It answers like github.com does for a
// workflow's default token: GET /user is 403 "Resource not accessible by integration", so
// the tool must fall back to github-actions[bot] as its identity; the pull request's
// comments are listed in pages with Link headers; comments are created and updated. Every
// call is recorded, and the state is written to files after each call, so that the script
// can assert on it after the runner has exited. With -readonly every write is refused with
// 403, as GitHub refuses the read-only token of a pull request from a fork (scripts/e2e.sh
// runs `slogate ci` against it directly as well).
//
//	fakegh serve -state DIR -token T -repo OWNER/NAME -pr N [-seed N] [-addr 127.0.0.1:0] [-readonly]
//	fakegh lookalike -state DIR        # ask the server to copy our comment as someone else's
//	fakegh stats -state DIR            # print KEY=VALUE facts about the calls and comments
//	fakegh summary -log ACT.JSON       # print the job summary from act's --json log
//
// The job summary is GitHub's too, but act keeps no file of it: it empties the summary
// file before every step and deletes it with the job. It logs each step's summary
// instead, which is where `summary` reads it from.
// It lives under testdata so that `go build ./...` and `go vet ./...` leave it alone.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	botLogin      = "github-actions[bot]" // the author of comments made with the default token
	reviewerLogin = "octocat"             // the author of the seeded and look-alike comments
	maxPerPage    = 100                   // GitHub's cap on per_page
	defPerPage    = 30                    // GitHub's default per_page
	stickyPrefix  = "<!-- slogate:sticky:"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("fakegh: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: fakegh serve|lookalike|stats|summary [flags]")
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "lookalike":
		err = lookalike(os.Args[2:])
	case "stats":
		err = stats(os.Args[2:], os.Stdout)
	case "summary":
		err = summary(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q; expected serve, lookalike, stats or summary", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

type user struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

type comment struct {
	ID        int64     `json:"id"`
	NodeID    string    `json:"node_id"`
	Body      string    `json:"body"`
	User      user      `json:"user"`
	HTMLURL   string    `json:"html_url"`
	IssueURL  string    `json:"issue_url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Edits counts PATCHes; not a GitHub field, kept so stats can tell an update in place
	// from a delete-and-create.
	Edits int `json:"x_edits"`
}

// call is one request as the server saw it.
type call struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query,omitempty"`
	Status int    `json:"status"`
	Auth   string `json:"auth"` // ok | missing | wrong
	Route  string `json:"route"`
}

type server struct {
	mu       sync.Mutex
	dir      string
	token    string
	owner    string
	repo     string
	pr       int
	nextID   int64
	comments []*comment
	calls    []call
	start    time.Time
	readonly bool // writes are refused, as with a fork's read-only token
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	dir := fs.String("state", "", "directory for addr, calls.json and comments.json (required)")
	token := fs.String("token", "", "the token every call must carry (required)")
	repo := fs.String("repo", "acme/serving", "OWNER/NAME of the repository")
	pr := fs.Int("pr", 1, "number of the pull request")
	seed := fs.Int("seed", 0, "comments by someone else to start with (over 100 forces a second page)")
	readonly := fs.Bool("readonly", false, "refuse every write with 403, as GitHub refuses a fork pull request's read-only token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *token == "" {
		return errors.New("serve: -state and -token are required")
	}
	owner, name, ok := strings.Cut(*repo, "/")
	if !ok {
		return fmt.Errorf("serve: -repo %q: want OWNER/NAME", *repo)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	s := &server{dir: *dir, token: *token, owner: owner, repo: name, pr: *pr, nextID: 1000, start: time.Now().UTC().Truncate(time.Second), readonly: *readonly}
	for i := 0; i < *seed; i++ {
		s.add(reviewerLogin, fmt.Sprintf("review note %d: looks fine", i+1))
	}
	if err := s.persist(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// The address is written last and atomically: its presence means the server answers.
	if err := writeAtomic(filepath.Join(*dir, "addr"), []byte(ln.Addr().String()+"\n")); err != nil {
		return err
	}
	log.Printf("serving %s/%s pull request #%d on http://%s (%d seeded comments)", owner, name, *pr, ln.Addr(), *seed)
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}

func (s *server) add(login, body string) *comment {
	s.nextID++
	at := s.start.Add(time.Duration(s.nextID) * time.Second)
	c := &comment{
		ID:        s.nextID,
		NodeID:    fmt.Sprintf("IC_fake%d", s.nextID),
		Body:      body,
		User:      user{Login: login, ID: int64(len(login)), Type: userType(login)},
		HTMLURL:   fmt.Sprintf("https://github.com/%s/%s/pull/%d#issuecomment-%d", s.owner, s.repo, s.pr, s.nextID),
		IssueURL:  fmt.Sprintf("https://api.github.com/repos/%s/%s/issues/%d", s.owner, s.repo, s.pr),
		CreatedAt: at,
		UpdatedAt: at,
	}
	s.comments = append(s.comments, c)
	return c
}

func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") {
		return "Bot"
	}
	return "User"
}

var (
	reUser      = regexp.MustCompile(`^/user$`)
	reComments  = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments$`)
	reComment   = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/comments/([0-9]+)$`)
	reLookalike = regexp.MustCompile(`^/_fake/lookalike$`)
)

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	c := call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: s.auth(r)}
	c.Route = s.route(rec, r, c.Auth)
	c.Status = rec.status
	s.calls = append(s.calls, c)
	if err := s.persist(); err != nil {
		log.Printf("persisting state: %v", err)
	}
}

func (s *server) auth(r *http.Request) string {
	h := r.Header.Get("Authorization")
	switch {
	case h == "":
		return "missing"
	case h == "Bearer "+s.token || h == "token "+s.token:
		return "ok"
	}
	return "wrong"
}

// route answers the request and names the route it took.
func (s *server) route(w http.ResponseWriter, r *http.Request, auth string) string {
	p := r.URL.Path
	if reLookalike.MatchString(p) && r.Method == http.MethodPost {
		return s.lookalike(w)
	}
	if auth != "ok" {
		writeJSON(w, http.StatusUnauthorized, apiError("Bad credentials"))
		return "unauthorized"
	}
	if s.readonly && (r.Method == http.MethodPost || r.Method == http.MethodPatch) && (reComments.MatchString(p) || reComment.MatchString(p)) {
		// A pull request from a fork gets a read-only token: GitHub answers writes so.
		writeJSON(w, http.StatusForbidden, apiError("Resource not accessible by integration"))
		return "write-readonly"
	}
	switch {
	case reUser.MatchString(p) && r.Method == http.MethodGet:
		// What the workflow's GITHUB_TOKEN gets: it is an installation token, not a user.
		writeJSON(w, http.StatusForbidden, apiError("Resource not accessible by integration"))
		return "get-user"
	case (p == "/graphql" || p == "/api/graphql") && r.Method == http.MethodPost:
		// The tool asks GraphQL's viewer when /user is refused; the workflow token
		// is refused there too here, so it falls back to github-actions[bot].
		writeJSON(w, http.StatusForbidden, apiError("Resource not accessible by integration"))
		return "graphql-viewer"
	case reComments.MatchString(p):
		m := reComments.FindStringSubmatch(p)
		if !s.isOurs(m[1], m[2], m[3]) {
			writeJSON(w, http.StatusNotFound, apiError("Not Found"))
			return "unknown-issue"
		}
		switch r.Method {
		case http.MethodGet:
			s.list(w, r)
			return "list-comments"
		case http.MethodPost:
			body, err := readBody(r)
			if err != nil {
				writeJSON(w, http.StatusUnprocessableEntity, apiError(err.Error()))
				return "create-comment-invalid"
			}
			writeJSON(w, http.StatusCreated, s.add(botLogin, body))
			return "create-comment"
		}
	case reComment.MatchString(p) && r.Method == http.MethodPatch:
		m := reComment.FindStringSubmatch(p)
		id, _ := strconv.ParseInt(m[3], 10, 64)
		c := s.find(id)
		if c == nil || m[1] != s.owner || m[2] != s.repo {
			writeJSON(w, http.StatusNotFound, apiError("Not Found"))
			return "update-unknown-comment"
		}
		if c.User.Login != botLogin {
			// The token may only edit its own comments, as on GitHub.
			writeJSON(w, http.StatusForbidden, apiError("Resource not accessible by integration"))
			return "update-foreign-comment"
		}
		body, err := readBody(r)
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, apiError(err.Error()))
			return "update-comment-invalid"
		}
		c.Body = body
		c.Edits++
		c.UpdatedAt = c.UpdatedAt.Add(time.Minute)
		writeJSON(w, http.StatusOK, c)
		return "update-comment"
	}
	writeJSON(w, http.StatusNotFound, apiError("Not Found"))
	return "unknown"
}

func (s *server) isOurs(owner, repo, num string) bool {
	return owner == s.owner && repo == s.repo && num == strconv.Itoa(s.pr)
}

func (s *server) find(id int64) *comment {
	for _, c := range s.comments {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// list pages through the comments as GitHub does, oldest first, with a Link header.
func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = defPerPage
	}
	per = min(per, maxPerPage)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((len(s.comments)+per-1)/per, 1)
	lo := min((page-1)*per, len(s.comments))
	hi := min(lo+per, len(s.comments))
	var links []string
	link := func(n int, rel string) {
		u := fmt.Sprintf("http://%s%s?per_page=%d&page=%d", r.Host, r.URL.Path, per, n)
		links = append(links, fmt.Sprintf("<%s>; rel=%q", u, rel))
	}
	if page < last {
		link(page+1, "next")
		link(last, "last")
	}
	if page > 1 {
		link(1, "first")
		link(page-1, "prev")
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	out := s.comments[lo:hi]
	if out == nil {
		out = []*comment{}
	}
	writeJSON(w, http.StatusOK, out)
}

// lookalike copies the newest sticky comment of ours as a reviewer's comment, as when a
// reviewer quotes it whole: the marker is in it, the author is not us.
func (s *server) lookalike(w http.ResponseWriter) string {
	for i := len(s.comments) - 1; i >= 0; i-- {
		c := s.comments[i]
		if c.User.Login == botLogin && strings.Contains(c.Body, stickyPrefix) {
			writeJSON(w, http.StatusCreated, s.add(reviewerLogin, c.Body))
			return "fake-lookalike"
		}
	}
	writeJSON(w, http.StatusNotFound, apiError("no sticky comment to copy"))
	return "fake-lookalike-none"
}

func readBody(r *http.Request) (string, error) {
	var in struct {
		Body *string `json:"body"`
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return "", fmt.Errorf("Problems parsing JSON: %v", err)
	}
	if in.Body == nil {
		return "", errors.New(`"body" wasn't supplied`)
	}
	if n := len([]rune(*in.Body)); n > 65536 {
		return "", fmt.Errorf("body is too long (maximum is 65536 characters), got %d", n)
	}
	return *in.Body, nil
}

func apiError(msg string) map[string]string {
	return map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *server) persist() error {
	calls, err := json.MarshalIndent(s.calls, "", "  ")
	if err != nil {
		return err
	}
	comments, err := json.MarshalIndent(s.comments, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(s.dir, "calls.json"), calls); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.dir, "comments.json"), comments)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func lookalike(args []string) error {
	fs := flag.NewFlagSet("lookalike", flag.ContinueOnError)
	dir := fs.String("state", "", "the server's state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addr, err := os.ReadFile(filepath.Join(*dir, "addr"))
	if err != nil {
		return err
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Post("http://"+strings.TrimSpace(string(addr))+"/_fake/lookalike", "application/json", bytes.NewReader(nil))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("lookalike: %s: %s", resp.Status, b)
	}
	return nil
}

// stats prints facts the script asserts on, one KEY=VALUE a line, keys sorted.
func stats(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	dir := fs.String("state", "", "the server's state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var calls []call
	var comments []comment
	if err := readJSON(filepath.Join(*dir, "calls.json"), &calls); err != nil {
		return err
	}
	if err := readJSON(filepath.Join(*dir, "comments.json"), &comments); err != nil {
		return err
	}
	facts := map[string]string{}
	count := map[string]int{}
	var unauth, unknown []string
	maxPage := 0
	for _, c := range calls {
		count[c.Route]++
		if c.Auth != "ok" && !strings.HasPrefix(c.Route, "fake-") {
			unauth = append(unauth, c.Method+" "+c.Path+" ("+c.Auth+")")
		}
		if strings.HasPrefix(c.Route, "unknown") || strings.HasSuffix(c.Route, "-invalid") || strings.Contains(c.Route, "foreign") {
			unknown = append(unknown, c.Method+" "+c.Path+" -> "+strconv.Itoa(c.Status)+" "+c.Route)
		}
		if c.Route == "list-comments" {
			q := c.Query
			for _, kv := range strings.Split(q, "&") {
				if v, ok := strings.CutPrefix(kv, "page="); ok {
					n, _ := strconv.Atoi(v)
					maxPage = max(maxPage, n)
				}
			}
			maxPage = max(maxPage, 1)
		}
	}
	bot, sticky, lookalikes, lookalikesEdited, edits := 0, 0, 0, 0, 0
	for _, c := range comments {
		isSticky := strings.Contains(c.Body, stickyPrefix)
		switch {
		case c.User.Login == botLogin:
			bot++
			if isSticky {
				sticky++
				edits += c.Edits
			}
		case isSticky:
			lookalikes++
			if c.Edits > 0 {
				lookalikesEdited++
			}
		}
	}
	facts["calls"] = strconv.Itoa(len(calls))
	facts["creates"] = strconv.Itoa(count["create-comment"])
	facts["updates"] = strconv.Itoa(count["update-comment"])
	facts["readonly_refusals"] = strconv.Itoa(count["write-readonly"])
	facts["user_lookups"] = strconv.Itoa(count["get-user"])
	facts["list_calls"] = strconv.Itoa(count["list-comments"])
	facts["list_max_page"] = strconv.Itoa(maxPage)
	facts["bot_comments"] = strconv.Itoa(bot)
	facts["sticky_comments"] = strconv.Itoa(sticky)
	facts["sticky_edits"] = strconv.Itoa(edits)
	facts["lookalikes"] = strconv.Itoa(lookalikes)
	facts["lookalikes_edited"] = strconv.Itoa(lookalikesEdited)
	facts["unauthorized"] = strconv.Itoa(len(unauth))
	facts["unexpected"] = strconv.Itoa(len(unknown))
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s=%s\n", k, facts[k])
	}
	for _, u := range unauth {
		fmt.Fprintf(w, "# unauthorized call: %s\n", u)
	}
	for _, u := range unknown {
		fmt.Fprintf(w, "# unexpected call: %s\n", u)
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// summary prints the job summary act logged with --json: the content of every
// {"command":"summary"} entry, each once. A composite action's step is logged twice (the
// step inside the action, then the step that uses the action, reading the same file).
func summary(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	path := fs.String("log", "", "act's output with --json (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			Command string `json:"command"`
			Content string `json:"content"`
		}
		// Lines that are not JSON (a panic, a message from a step's child) are skipped.
		if json.Unmarshal(line, &e) != nil || e.Command != "summary" || seen[e.Content] {
			continue
		}
		seen[e.Content] = true
		if _, err := io.WriteString(w, e.Content); err != nil {
			return err
		}
	}
	return nil
}
