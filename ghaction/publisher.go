package ghaction

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Publisher writes to one repository through the GitHub REST API. It is not safe for
// concurrent use: it remembers the token's identity after the first lookup.
type Publisher struct {
	Client      *github.Client
	Owner, Repo string
	// Sleep waits between retries; time.Sleep when nil. Tests record the waits instead.
	Sleep func(time.Duration)
	// MaxRetries is how many times one call is retried: 0 means DefaultMaxRetries, a
	// negative value disables retries.
	MaxRetries int
	// Author, when set, is the login whose comments are ours, instead of the token's own
	// identity. An app installation token needs it ("my-app[bot]"): GET /user refuses
	// such a token, and the fallback assumes the workflow's GITHUB_TOKEN.
	Author string
	// Now is the clock used to turn a rate-limit reset time into a wait; time.Now when nil.
	Now func() time.Time

	login string // the resolved identity
}

const (
	// DefaultMaxRetries is the retry count when Publisher.MaxRetries is 0.
	DefaultMaxRetries = 3
	// MaxRetryWait caps any single wait. A rate limit that resets later than this fails
	// the call instead: a CI job blocked for an hour helps nobody, and the results are
	// already on disk and in the job summary.
	MaxRetryWait = 60 * time.Second
	// The first backoff after a 5xx; it doubles on each retry.
	baseBackoff = time.Second
	// The login behind the workflow's GITHUB_TOKEN, which cannot call GET /user.
	actionsBot = "github-actions[bot]"
)

// ErrReadOnlyToken marks a write refused with 403: the token can read but not write the
// pull request, as on a pull request from a fork (or a workflow without
// `permissions: pull-requests: write`). The caller turns it into a warning; the summary
// and the files still carry the result. The API error is wrapped alongside it.
var ErrReadOnlyToken = errors.New("the GitHub token cannot write to this pull request (read-only token: a pull request from a fork, or the workflow lacks `permissions: pull-requests: write`)")

// NewPublisher returns a Publisher authenticated with token against apiURL (the value of
// GITHUB_API_URL: https://api.github.com, https://HOST/api/v3 on GitHub Enterprise
// Server, or a fake on loopback). Owner and Repo are left for the caller to set.
// httpClient may be nil.
func NewPublisher(token, apiURL string, httpClient *http.Client) (*Publisher, error) {
	if token == "" {
		return nil, errors.New("github-token is empty: pass `github-token: ${{ github.token }}` to post to GitHub")
	}
	if apiURL == "" {
		apiURL = "https://api.github.com"
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q: want an absolute http(s) URL", apiURL)
	}
	// go-github resolves paths against BaseURL and refuses one without the trailing
	// slash; without it the /api/v3 of GitHub Enterprise Server would be dropped.
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	c := github.NewClient(httpClient).WithAuthToken(token)
	c.BaseURL = u
	return &Publisher{Client: c}, nil
}

func (p *Publisher) check() error {
	if p == nil || p.Client == nil {
		return errors.New("publisher: no GitHub client")
	}
	if p.Owner == "" || p.Repo == "" {
		return errors.New("publisher: repository owner and name are not set")
	}
	return nil
}

func (p *Publisher) maxRetries() int {
	switch {
	case p.MaxRetries < 0:
		return 0
	case p.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return p.MaxRetries
}

func (p *Publisher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Publisher) wait(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		p.Sleep(d)
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryWait decides, from the error's type, whether a failed call is worth repeating and
// after how long. giveUp explains a refusal to wait that the caller should report.
func (p *Publisher) retryWait(err error, attempt int) (wait time.Duration, retry bool, giveUp error) {
	backoff := baseBackoff << attempt
	if backoff > MaxRetryWait || backoff <= 0 {
		backoff = MaxRetryWait
	}
	capped := func(d time.Duration, what string) (time.Duration, bool, error) {
		if d > MaxRetryWait {
			return 0, false, fmt.Errorf("%s: GitHub asks to wait %v, more than the %v slogate waits", what, d.Round(time.Second), MaxRetryWait)
		}
		if d <= 0 {
			d = backoff
		}
		return d, true, nil
	}

	var rle *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &rle):
		// The primary limit: nothing succeeds before the reset; a second of margin for
		// clock skew between the runner and GitHub.
		return capped(rle.Rate.Reset.Sub(p.now())+time.Second, "rate limit exhausted")
	case errors.As(err, &abuse):
		if abuse.RetryAfter != nil {
			return capped(*abuse.RetryAfter, "secondary rate limit")
		}
		// GitHub's guidance when no Retry-After is given: wait at least a minute.
		return MaxRetryWait, true, nil
	case errors.As(err, &er) && er.Response != nil:
		code := er.Response.StatusCode
		if code == http.StatusTooManyRequests || code == http.StatusForbidden {
			// A secondary limit can come as 429, or as a 403 that go-github does not
			// recognise; either way only a Retry-After header makes it retryable, so
			// that a plain permission 403 fails at once.
			if d, ok := parseRetryAfter(er.Response.Header.Get("Retry-After"), p.now()); ok {
				return capped(d, "secondary rate limit")
			}
			if code == http.StatusTooManyRequests {
				return backoff, true, nil
			}
			return 0, false, nil
		}
		if code >= 500 && code <= 599 {
			return backoff, true, nil
		}
	}
	return 0, false, nil
}

// parseRetryAfter reads either form of the header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now), true
	}
	return 0, false
}

// call runs one idempotent API call, retrying what retryWait allows.
func call[T any](ctx context.Context, p *Publisher, what string, fn func() (T, *github.Response, error)) (T, *github.Response, error) {
	for attempt := 0; ; attempt++ {
		v, resp, err := fn()
		if err == nil {
			return v, resp, nil
		}
		if ctx.Err() != nil {
			return v, resp, fmt.Errorf("%s: %w", what, err)
		}
		d, retry, giveUp := p.retryWait(err, attempt)
		if giveUp != nil {
			return v, resp, fmt.Errorf("%s: %w: %w", what, giveUp, err)
		}
		if !retry || attempt >= p.maxRetries() {
			return v, resp, fmt.Errorf("%s: %w", what, err)
		}
		if werr := p.wait(ctx, d); werr != nil {
			return v, resp, fmt.Errorf("%s: %w (while waiting to retry after: %w)", what, werr, err)
		}
	}
}

// writeErr classifies a failed write: a plain 403 (not a rate limit, which has its own
// types) means the token is read-only here.
func writeErr(what string, err error) error {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden &&
		er.Response.Header.Get("Retry-After") == "" {
		return fmt.Errorf("%w: %s: %w", ErrReadOnlyToken, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// identity is the login whose comments are ours: Author when set, else the token's own
// login from GET /user. The workflow's GITHUB_TOKEN gets 403 "Resource not accessible by
// integration" there, and its comments are written by github-actions[bot].
func (p *Publisher) identity(ctx context.Context) (string, error) {
	if p.Author != "" {
		return p.Author, nil
	}
	if p.login != "" {
		return p.login, nil
	}
	u, _, err := call(ctx, p, "finding the token's identity (GET /user)", func() (*github.User, *github.Response, error) {
		return p.Client.Users.Get(ctx, "")
	})
	var er *github.ErrorResponse
	switch {
	case err == nil && u.GetLogin() != "":
		p.login = u.GetLogin()
	case err == nil:
		return "", errors.New("finding the token's identity (GET /user): the answer has no login")
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden &&
		er.Response.Header.Get("Retry-After") == "":
		// An installation token (the workflow's GITHUB_TOKEN, a GitHub App's) cannot
		// read /user; GraphQL's viewer names the bot it acts as. Where that fails too,
		// the workflow's token is assumed: set comment-author for any other identity.
		if login := p.viewerLogin(ctx); login != "" {
			p.login = login
		} else {
			p.login = actionsBot
		}
	default:
		return "", err
	}
	return p.login, nil
}

// viewerLogin asks GraphQL for the token's login; "" when it cannot tell.
func (p *Publisher) viewerLogin(ctx context.Context) string {
	u := *p.Client.BaseURL
	// GraphQL lives at /graphql on api.github.com and at /api/graphql on GitHub
	// Enterprise Server, whose REST base is /api/v3/.
	if strings.HasSuffix(u.Path, "/api/v3/") {
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "graphql"
	} else {
		u.Path += "graphql"
	}
	req, err := p.Client.NewRequest(http.MethodPost, u.String(), map[string]string{"query": "query { viewer { login } }"})
	if err != nil {
		return ""
	}
	var out struct {
		Data struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		} `json:"data"`
	}
	if _, err := p.Client.Do(ctx, req, &out); err != nil {
		return ""
	}
	return out.Data.Viewer.Login
}
