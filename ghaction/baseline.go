package ghaction

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
)

// OpenBaselinePR commits files (repository-relative path → content) on top of base as a
// single commit on branch, and opens a pull request from branch into base; when an open
// one already exists for that branch, its URL is returned instead.
//
// It goes through the git data API (ref → blobs → tree → commit → ref), so no checkout
// and no git binary are needed. The branch belongs to the tool: when it exists it is
// moved to the new commit with force, replacing an earlier baseline proposal that was
// not merged. Every call is retried as in Upsert; each is idempotent (blobs, trees and
// commits are content-addressed, the ref update sets an absolute value).
func (p *Publisher) OpenBaselinePR(ctx context.Context, base string, branch string, files map[string][]byte, title, body string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	if err := checkBranch("base", base); err != nil {
		return "", err
	}
	if err := checkBranch("branch", branch); err != nil {
		return "", err
	}
	if base == branch {
		return "", fmt.Errorf("baseline pull request: branch %q is the base branch", branch)
	}
	if len(files) == 0 {
		return "", errors.New("baseline pull request: no files to commit")
	}
	if strings.TrimSpace(title) == "" {
		return "", errors.New("baseline pull request: empty title")
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentChars {
		return "", fmt.Errorf("baseline pull request: body is %d characters, over GitHub's limit of %d", n, MaxCommentChars)
	}
	paths := make([]string, 0, len(files))
	for f := range files {
		if f == "" || path.IsAbs(f) || path.Clean(f) != f || f == ".." || strings.HasPrefix(f, "../") || strings.Contains(f, `\`) {
			return "", fmt.Errorf("baseline pull request: file path %q: want a clean path relative to the repository root", f)
		}
		paths = append(paths, f)
	}
	// Sorted, so the calls (and the tree) are the same on every run.
	sort.Strings(paths)

	o, r := p.Owner, p.Repo
	baseRef, _, err := call(ctx, p, fmt.Sprintf("reading branch %q", base), func() (*github.Reference, *github.Response, error) {
		return p.Client.Git.GetRef(ctx, o, r, "heads/"+base)
	})
	if err != nil {
		return "", err
	}
	baseSHA := baseRef.GetObject().GetSHA()
	baseCommit, _, err := call(ctx, p, fmt.Sprintf("reading commit %s", baseSHA), func() (*github.Commit, *github.Response, error) {
		return p.Client.Git.GetCommit(ctx, o, r, baseSHA)
	})
	if err != nil {
		return "", err
	}

	entries := make([]*github.TreeEntry, 0, len(paths))
	for _, f := range paths {
		// Base64 carries any bytes; utf-8 would mangle a file that is not text.
		blob, _, err := call(ctx, p, fmt.Sprintf("uploading %s", f), func() (*github.Blob, *github.Response, error) {
			return p.Client.Git.CreateBlob(ctx, o, r, &github.Blob{
				Content:  github.String(base64.StdEncoding.EncodeToString(files[f])),
				Encoding: github.String("base64"),
			})
		})
		if err != nil {
			return "", writeErr("creating the baseline commit", err)
		}
		entries = append(entries, &github.TreeEntry{
			Path: github.String(f),
			Mode: github.String("100644"),
			Type: github.String("blob"),
			SHA:  github.String(blob.GetSHA()),
		})
	}
	tree, _, err := call(ctx, p, "creating the tree", func() (*github.Tree, *github.Response, error) {
		return p.Client.Git.CreateTree(ctx, o, r, baseCommit.GetTree().GetSHA(), entries)
	})
	if err != nil {
		return "", writeErr("creating the baseline commit", err)
	}
	commit, _, err := call(ctx, p, "creating the commit", func() (*github.Commit, *github.Response, error) {
		return p.Client.Git.CreateCommit(ctx, o, r, &github.Commit{
			Message: github.String(title),
			Tree:    &github.Tree{SHA: tree.SHA},
			Parents: []*github.Commit{{SHA: github.String(baseSHA)}},
		}, nil)
	})
	if err != nil {
		return "", writeErr("creating the baseline commit", err)
	}

	ref := &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}
	_, _, err = call(ctx, p, fmt.Sprintf("reading branch %q", branch), func() (*github.Reference, *github.Response, error) {
		return p.Client.Git.GetRef(ctx, o, r, "heads/"+branch)
	})
	var er *github.ErrorResponse
	switch {
	case err == nil:
		_, _, err = call(ctx, p, fmt.Sprintf("moving branch %q", branch), func() (*github.Reference, *github.Response, error) {
			return p.Client.Git.UpdateRef(ctx, o, r, ref, true)
		})
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound:
		_, _, err = call(ctx, p, fmt.Sprintf("creating branch %q", branch), func() (*github.Reference, *github.Response, error) {
			return p.Client.Git.CreateRef(ctx, o, r, ref)
		})
	}
	if err != nil {
		return "", writeErr("pushing the baseline branch", err)
	}

	open, _, err := call(ctx, p, "listing open pull requests", func() ([]*github.PullRequest, *github.Response, error) {
		return p.Client.PullRequests.List(ctx, o, r, &github.PullRequestListOptions{State: "open", Head: o + ":" + branch, Base: base})
	})
	if err != nil {
		return "", err
	}
	if len(open) > 0 {
		return open[0].GetHTMLURL(), nil
	}
	pr, _, err := call(ctx, p, "opening the pull request", func() (*github.PullRequest, *github.Response, error) {
		return p.Client.PullRequests.Create(ctx, o, r, &github.NewPullRequest{
			Title: github.String(title),
			Head:  github.String(branch),
			Base:  github.String(base),
			Body:  github.String(body),
		})
	})
	if err != nil {
		return "", writeErr("opening the baseline pull request", err)
	}
	return pr.GetHTMLURL(), nil
}

// checkBranch rejects names git would refuse (git check-ref-format), so the mistake is
// reported before anything is uploaded.
func checkBranch(what, b string) error {
	bad := b == "" || b == "@" || strings.ContainsAny(b, " ~^:?*[\\\t\r\n") ||
		strings.Contains(b, "..") || strings.Contains(b, "@{") || strings.Contains(b, "//") ||
		strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasPrefix(b, "-") ||
		strings.HasSuffix(b, ".") || strings.HasSuffix(b, ".lock") || strings.HasPrefix(b, "refs/")
	if bad {
		return fmt.Errorf("baseline pull request: %s branch name %q is not a valid git branch name", what, b)
	}
	return nil
}
