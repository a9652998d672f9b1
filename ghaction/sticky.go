package ghaction

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
)

// MaxCommentChars is GitHub's limit on a comment body, in characters.
const MaxCommentChars = 65536

// maxCommentPages bounds the listing: 1,000 pages of 100 comments is far beyond any real
// pull request, and a server that never stops paging must not hang the job.
const maxCommentPages = 1000

// Marker returns the hidden marker for a sticky comment: an HTML comment the renderer
// puts in the body. Characters outside [A-Za-z0-9._:/-] become '_' and "--" (which may
// not appear inside an HTML comment) is broken up, so any key gives a valid marker.
func Marker(key string) string {
	if key == "" {
		key = "default"
	}
	b := []byte(key)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("._:/-", c) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	k := string(b)
	for strings.Contains(k, "--") {
		k = strings.ReplaceAll(k, "--", "-_")
	}
	return "<!-- slogate:sticky:" + k + " -->"
}

func checkMarker(marker string) error {
	inner, ok := strings.CutPrefix(marker, "<!--")
	if ok {
		inner, ok = strings.CutSuffix(inner, "-->")
	}
	if !ok || strings.TrimSpace(inner) == "" || strings.Contains(inner, "--") || strings.ContainsAny(marker, "\r\n") {
		return fmt.Errorf("sticky comment marker %q: want a one-line HTML comment such as %q", marker, Marker("KEY"))
	}
	return nil
}

// DuplicateCommentsError reports that more than one sticky comment of ours was found
// (left by an older version, or by two jobs racing). The oldest was updated and its URL
// returned; the others are left in place, since deleting comments is not this tool's to
// decide. It is a warning: see IsWarning.
type DuplicateCommentsError struct {
	Author string
	Kept   int64
	Others []int64
}

func (e *DuplicateCommentsError) Error() string {
	ids := make([]string, len(e.Others))
	for i, id := range e.Others {
		ids[i] = fmt.Sprint(id)
	}
	return fmt.Sprintf("found %d sticky comments by %s with the same marker: updated the oldest (id %d); the others (id %s) were left in place and can be deleted",
		len(e.Others)+1, e.Author, e.Kept, strings.Join(ids, ", "))
}

// IsWarning reports whether an error from Upsert leaves the job's result intact: the
// token was read-only, or duplicates were found (the comment was still updated).
func IsWarning(err error) bool {
	var dup *DuplicateCommentsError
	return errors.Is(err, ErrReadOnlyToken) || errors.As(err, &dup)
}

// Upsert makes body the one sticky comment on pull request pr. The comment is found by
// marker (which body must contain) and by author (the token's identity, or Author), so a
// look-alike by someone else (a reviewer quoting ours) is never touched. It returns the
// comment's URL and whether it was created.
//
// The update is retried in place; a create is not: after a create fails the comments are
// listed again, because a create that timed out or answered 5xx may still have landed,
// and a blind retry would duplicate it.
func (p *Publisher) Upsert(ctx context.Context, pr int, marker, body string) (url string, created bool, err error) {
	return p.upsert(ctx, pr, marker, body, true)
}

// UpdateSticky is Upsert that never creates: it updates our sticky comment when there is
// one and otherwise does nothing (url ""). Comment mode not-pass uses it on a pass, so that
// a comment left by an earlier failure does not go on saying "fail".
func (p *Publisher) UpdateSticky(ctx context.Context, pr int, marker, body string) (url string, err error) {
	url, _, err = p.upsert(ctx, pr, marker, body, false)
	return url, err
}

func (p *Publisher) upsert(ctx context.Context, pr int, marker, body string, create bool) (url string, created bool, err error) {
	if err := p.check(); err != nil {
		return "", false, err
	}
	if pr <= 0 {
		return "", false, fmt.Errorf("sticky comment: invalid pull request number %d", pr)
	}
	if err := checkMarker(marker); err != nil {
		return "", false, err
	}
	if !strings.Contains(body, marker) {
		return "", false, fmt.Errorf("sticky comment: the body does not contain its marker %q, so it could never be found again", marker)
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentChars {
		return "", false, fmt.Errorf("sticky comment: body is %d characters, over GitHub's limit of %d (the renderer should have truncated it)", n, MaxCommentChars)
	}
	author, err := p.identity(ctx)
	if err != nil {
		return "", false, err
	}

	for attempt := 0; ; attempt++ {
		ours, err := p.findSticky(ctx, pr, marker, author)
		if err != nil {
			return "", false, err
		}
		if len(ours) > 0 {
			keep := ours[0]
			c, _, err := call(ctx, p, fmt.Sprintf("updating comment %d", keep.GetID()), func() (*github.IssueComment, *github.Response, error) {
				return p.Client.Issues.EditComment(ctx, p.Owner, p.Repo, keep.GetID(), &github.IssueComment{Body: github.String(body)})
			})
			if err != nil {
				return "", false, writeErr("updating the sticky comment", err)
			}
			if len(ours) > 1 {
				dup := &DuplicateCommentsError{Author: author, Kept: keep.GetID()}
				for _, o := range ours[1:] {
					dup.Others = append(dup.Others, o.GetID())
				}
				return c.GetHTMLURL(), false, dup
			}
			return c.GetHTMLURL(), false, nil
		}
		if !create {
			return "", false, nil
		}

		c, _, err := p.Client.Issues.CreateComment(ctx, p.Owner, p.Repo, pr, &github.IssueComment{Body: github.String(body)})
		if err == nil {
			return c.GetHTMLURL(), true, nil
		}
		d, retry, giveUp := p.retryWait(err, attempt)
		switch {
		case giveUp != nil:
			return "", false, fmt.Errorf("creating the sticky comment: %w: %w", giveUp, err)
		case !retry || attempt >= p.maxRetries() || ctx.Err() != nil:
			return "", false, writeErr("creating the sticky comment", err)
		}
		if werr := p.wait(ctx, d); werr != nil {
			return "", false, fmt.Errorf("creating the sticky comment: %w (while waiting to retry after: %w)", werr, err)
		}
	}
}

// findSticky lists every comment of the pull request and returns ours, oldest first.
func (p *Publisher) findSticky(ctx context.Context, pr int, marker, author string) ([]*github.IssueComment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var ours []*github.IssueComment
	for pages := 0; ; pages++ {
		if pages == maxCommentPages {
			return nil, fmt.Errorf("listing comments of pull request #%d: more than %d pages", pr, maxCommentPages)
		}
		cs, resp, err := call(ctx, p, fmt.Sprintf("listing comments of pull request #%d", pr), func() ([]*github.IssueComment, *github.Response, error) {
			return p.Client.Issues.ListComments(ctx, p.Owner, p.Repo, pr, opts)
		})
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if strings.Contains(c.GetBody(), marker) && strings.EqualFold(c.GetUser().GetLogin(), author) {
				ours = append(ours, c)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		if resp.NextPage <= opts.Page {
			return nil, fmt.Errorf("listing comments of pull request #%d: pagination went from page %d back to %d", pr, opts.Page, resp.NextPage)
		}
		opts.Page = resp.NextPage
	}
	// Ids grow with creation time; the API's order is not relied on.
	sort.Slice(ours, func(i, j int) bool { return ours[i].GetID() < ours[j].GetID() })
	return ours, nil
}
