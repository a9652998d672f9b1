package ghaction

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Context is what the workflow run is about, read from the runner's environment and the
// event payload.
type Context struct {
	Owner, Repo string // from GITHUB_REPOSITORY
	EventName   string
	PRNumber    int  // 0 when the event is not about a pull request
	IsFork      bool // the pull request's head is not the base repository (see LoadContext)
	HeadRepo    string
	BaseRepo    string
	SHA, Ref    string
	// HeadSHA and BaseSHA are the pull request's head and base commits (GITHUB_SHA is
	// the merge commit on a pull_request event); on other events HeadSHA is GITHUB_SHA.
	HeadSHA, BaseSHA string
	APIURL           string
	ServerURL        string
	RunURL           string
	Actor            string
}

// FullName is "owner/repo".
func (c *Context) FullName() string { return c.Owner + "/" + c.Repo }

// IsPullRequest reports whether the event runs code from a pull request's head:
// pull_request and pull_request_target.
func (c *Context) IsPullRequest() bool {
	return c.EventName == "pull_request" || c.EventName == "pull_request_target"
}

// The part of the event payload that matters here. Repo is a pointer because GitHub sends
// null when the head repository has been deleted.
type eventPayload struct {
	PullRequest *struct {
		Number int `json:"number"`
		Head   struct {
			SHA  string       `json:"sha"`
			Repo *payloadRepo `json:"repo"`
		} `json:"head"`
		Base struct {
			SHA  string       `json:"sha"`
			Repo *payloadRepo `json:"repo"`
		} `json:"base"`
	} `json:"pull_request"`
}

type payloadRepo struct {
	FullName string `json:"full_name"`
	Fork     bool   `json:"fork"`
}

// LoadContext reads the workflow context. getenv and readFile are os.Getenv and
// os.ReadFile in production.
//
// A pull request is from a fork when its head repository differs from its base
// repository (names compared case-insensitively, as GitHub does). The payload's
// head.repo.fork flag alone does not decide: it is true for a branch-to-branch pull
// request inside a fork, which runs no stranger's code. A head repository that was
// deleted (null in the payload) counts as a fork: nothing proves it was ours, and the
// check fails closed.
//
// An empty GITHUB_REPOSITORY is accepted (a local run) and leaves Owner and Repo empty;
// a pull-request event without a readable payload is an error, since its fork status
// would be unknown.
func LoadContext(getenv func(string) string, readFile func(string) ([]byte, error)) (*Context, error) {
	c := &Context{
		EventName: getenv("GITHUB_EVENT_NAME"),
		SHA:       getenv("GITHUB_SHA"),
		Ref:       getenv("GITHUB_REF"),
		APIURL:    getenv("GITHUB_API_URL"),
		ServerURL: getenv("GITHUB_SERVER_URL"),
		Actor:     getenv("GITHUB_ACTOR"),
	}
	c.HeadSHA = c.SHA
	if c.APIURL == "" {
		c.APIURL = "https://api.github.com"
	}
	if c.ServerURL == "" {
		c.ServerURL = "https://github.com"
	}
	if full := getenv("GITHUB_REPOSITORY"); full != "" {
		owner, repo, ok := strings.Cut(full, "/")
		if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
			return nil, fmt.Errorf("GITHUB_REPOSITORY: invalid value %q; want \"owner/repo\"", full)
		}
		c.Owner, c.Repo = owner, repo
	}
	if id := getenv("GITHUB_RUN_ID"); id != "" && c.Owner != "" {
		c.RunURL = strings.TrimSuffix(c.ServerURL, "/") + "/" + c.FullName() + "/actions/runs/" + id
	}

	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		if c.IsPullRequest() {
			return nil, fmt.Errorf("event %q: GITHUB_EVENT_PATH is not set, so whether the pull request comes from a fork is unknown", c.EventName)
		}
		return c, nil
	}
	data, err := readFile(path)
	if err != nil {
		if c.IsPullRequest() {
			return nil, fmt.Errorf("event %q: reading the event payload: %w", c.EventName, err)
		}
		return c, nil
	}
	var ev eventPayload
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("event payload %s: %w", path, err)
	}
	if !c.IsPullRequest() {
		return c, nil
	}
	pr := ev.PullRequest
	if pr == nil || pr.Number <= 0 {
		return nil, fmt.Errorf("event payload %s: event %q without a pull_request number", path, c.EventName)
	}
	c.PRNumber = pr.Number
	if pr.Head.SHA != "" {
		c.HeadSHA = pr.Head.SHA
	}
	c.BaseSHA = pr.Base.SHA
	if pr.Base.Repo != nil {
		c.BaseRepo = pr.Base.Repo.FullName
	}
	if c.BaseRepo == "" && c.Owner != "" {
		c.BaseRepo = c.FullName()
	}
	if pr.Head.Repo != nil {
		c.HeadRepo = pr.Head.Repo.FullName
	}
	c.IsFork = c.HeadRepo == "" || !strings.EqualFold(c.HeadRepo, c.BaseRepo)
	return c, nil
}

// ErrForkPR marks the refusal to run a fork's pull request; the caller exits 3.
var ErrForkPR = errors.New("pull request from a fork")

// CheckForkSafety refuses a pull request from a fork unless allow is set.
func CheckForkSafety(ctx *Context, allow bool) error {
	if ctx == nil {
		return errors.New("fork check: no workflow context")
	}
	if !ctx.IsPullRequest() || !ctx.IsFork || allow {
		return nil
	}
	head := strconv.Quote(ctx.HeadRepo)
	if ctx.HeadRepo == "" {
		head = "a deleted repository"
	}
	return fmt.Errorf("%w: the workload was not run. Pull request #%d (%s) comes from %s, not from %q. "+
		"slogate runs on a self-hosted GPU runner, and by default it does not run a stranger's code there: "+
		"the pull request's code and configuration would execute on your machine with its network and credentials. "+
		"To opt in, set `allow-fork-prs: true` on the slogate step (after requiring approval for outside contributors), "+
		"or use two workflows: one on `pull_request` that runs the benchmark on an isolated runner and uploads the results as an artifact, "+
		"and one on `workflow_run` that downloads them and posts the comment",
		ErrForkPR, ctx.PRNumber, ctx.EventName, head, ctx.BaseRepo)
}
