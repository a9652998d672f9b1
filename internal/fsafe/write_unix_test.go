//go:build unix

package fsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/fsafe/fsafetest"
)

// writeSpecials makes, in a temporary directory, what a write must refuse and leave as
// it was (fsafetest.Hazards, with a link to nowhere and a directory besides), each
// mapped to the kind its error names, and the file the link names.
func writeSpecials(t *testing.T) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := fsafetest.Hazards(t, dir, victim)
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out[dangling], out[sub] = "symbolic link", "directory"
	return out, victim
}

// TestWritersRefuseWhatIsNotARegularFile: WriteFile, Create and CheckWritable refuse
// every special path with a *NotRegularError that names it and its kind, without
// waiting on a pipe, and leave it as it was: the link still a link, its target's
// content unchanged.
func TestWritersRefuseWhatIsNotARegularFile(t *testing.T) {
	specials, victim := writeSpecials(t)
	writers := map[string]func(string) error{
		"WriteFile": func(p string) error { return WriteFile(p, []byte("new\n")) },
		"Create": func(p string) error {
			f, err := Create(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"CheckWritable": CheckWritable,
	}
	for name, write := range writers {
		for p, kind := range specials {
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- write(p) }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s(%s) has not returned in 10 s", name, p)
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s(%s): %v, want a *NotRegularError naming it as %s", name, p, err, kind)
			}
			after, err := os.Lstat(p)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("%s(%s): the path changed: %v, mode %v, was %v", name, p, err, after, before.Mode())
			}
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(victim), ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteFileReplacesARegularFile: a regular file is replaced whole; a path that
// does not exist is made, with its directories.
func TestWriteFileReplacesARegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "r.json")
	for _, data := range []string{"first, longer\n", "second\n"} {
		if err := WriteFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Fatalf("read back %q, %v; want %q", b, err, data)
		}
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("Create left %d bytes of the old file", st.Size())
	}
	f.Close()
	if err := CheckWritable(filepath.Join(dir, "new", "x.json")); err != nil {
		t.Errorf("CheckWritable of a new path: %v", err)
	}
}

// TestOwnDirAndProbe: CheckOwnDir refuses a link to a directory and a file, accepts a
// directory or nothing; ProbeDir refuses a file where a directory should be.
func TestOwnDirAndProbe(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, ok := range map[string]bool{real: true, filepath.Join(dir, "absent"): true, link: false, file: false} {
		err := CheckOwnDir(p)
		if (err == nil) != ok || (!ok && !IsNotRegular(err)) {
			t.Errorf("CheckOwnDir(%s): %v, want ok %v", p, err, ok)
		}
	}
	if err := ProbeDir(file); !IsNotRegular(err) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("ProbeDir of a file: %v", err)
	}
	if err := ProbeDir(link); err != nil {
		t.Errorf("ProbeDir of a link to a directory (the caller's choice): %v", err)
	}
	if _, err := os.Stat(filepath.Join(real, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ProbeDir left a file: %v", err)
	}
}
