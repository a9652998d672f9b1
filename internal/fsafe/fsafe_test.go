//go:build unix

package fsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slogate/slogate/internal/fsafe/fsafetest"
)

// specials makes a named pipe, a socket and a directory in a temporary directory and
// returns them with /dev/zero, each with the word its error must hold.
func specials(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := fsafetest.UnixSocket(t)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		fifo:        "named pipe (FIFO)",
		link:        "named pipe (FIFO)", // a link is judged by what it names
		"/dev/zero": "character device",
		sock:        "socket",
		dir:         "directory",
	}
}

func TestReadersRefuseWhatIsNotARegularFile(t *testing.T) {
	readers := map[string]func(string) error{
		"Open": func(p string) error {
			f, err := Open(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"ReadFile":    func(p string) error { _, err := ReadFile(p); return err },
		"ReadLimited": func(p string) error { _, err := ReadLimited(p, 1<<20); return err },
		"DirFS.Open": func(p string) error {
			f, err := DirFS(filepath.Dir(p)).Open(filepath.Base(p))
			if err == nil {
				f.Close()
			}
			return err
		},
		"fs.ReadFile(DirFS)": func(p string) error {
			_, err := fs.ReadFile(DirFS(filepath.Dir(p)), filepath.Base(p))
			return err
		},
	}
	for path, kind := range specials(t) {
		for name, read := range readers {
			err := read(path)
			if strings.HasPrefix(name, "DirFS.Open") && kind == "directory" {
				if err != nil {
					t.Errorf("%s(%s): %v, want a directory to open", name, path, err)
				}
				continue
			}
			if !IsNotRegular(err) {
				t.Errorf("%s(%s) = %v, want a NotRegularError", name, path, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, kind) {
				t.Errorf("%s(%s) = %q, want the path and %q", name, path, msg, kind)
			}
		}
	}
}

func TestReadDirRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "d")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, list := range []func() error{
		func() error { _, err := ReadDir(fifo); return err },
		func() error { _, err := fs.ReadDir(DirFS(filepath.Dir(fifo)), "d"); return err },
	} {
		if err := list(); !IsNotRegular(err) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("ReadDir(FIFO) = %v, want a NotRegularError", err)
		}
	}
}

func TestRegularFilesRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.json"), nil, 0o644)
	if b, err := ReadFile(p); err != nil || string(b) != "{}" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if b, err := fs.ReadFile(DirFS(dir), "r.json"); err != nil || string(b) != "{}" {
		t.Fatalf("fs.ReadFile(DirFS) = %q, %v", b, err)
	}
	entries, err := fs.ReadDir(DirFS(dir), ".")
	if err != nil || len(entries) != 2 || entries[0].Name() != "a.json" {
		t.Fatalf("ReadDir = %v, %v, want a.json, r.json", entries, err)
	}
	if _, err := ReadLimited(p, 1); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("ReadLimited over the limit = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile(missing) = %v, want ErrNotExist", err)
	}
	if _, err := DirFS(dir).Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("DirFS.Open(../x) = %v, want ErrInvalid", err)
	}
}

// A FIFO put in place between the stat and the open (the race) neither blocks the open
// nor is read: what was opened is checked.
func TestOpenCheckedRefusesAFIFOSwappedIn(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "w.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openChecked(fifo, true)
	if err == nil {
		f.Close()
	}
	if !IsNotRegular(err) || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("openChecked(FIFO) = %v, want a NotRegularError", err)
	}
}
