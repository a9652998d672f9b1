package ghaction

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// GitRunner runs git with args in dir and returns its standard output; exec.Command in
// production, a fake in tests.
type GitRunner func(ctx context.Context, dir string, args ...string) ([]byte, error)

// FileCommit is the commit that last changed a file.
type FileCommit struct {
	SHA  string
	Date time.Time
	// Shallow: the clone is shallow (actions/checkout fetches one commit by default), so
	// SHA is the oldest commit fetched and the file may be older.
	Shallow bool
}

// LastCommit finds the commit that last changed path (relative to dir or absolute).
func LastCommit(ctx context.Context, git GitRunner, dir, path string) (FileCommit, error) {
	out, err := git(ctx, dir, "log", "-1", "--format=%H %cI", "--", path)
	if err != nil {
		return FileCommit{}, fmt.Errorf("git log: %w", err)
	}
	line := strings.TrimSpace(string(out))
	if line == "" {
		return FileCommit{}, fmt.Errorf("%s is not committed", path)
	}
	sha, date, ok := strings.Cut(line, " ")
	if !ok {
		return FileCommit{}, fmt.Errorf("git log: unexpected output %q", line)
	}
	t, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return FileCommit{}, fmt.Errorf("git log: date %q: %v", date, err)
	}
	fc := FileCommit{SHA: sha, Date: t.UTC()}
	if out, err := git(ctx, dir, "rev-parse", "--is-shallow-repository"); err == nil && strings.TrimSpace(string(out)) == "true" {
		fc.Shallow = true
	}
	return fc, nil
}
