//go:build unix

package result

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Every reader of records refuses a FIFO (an open would block) and /dev/zero (a read
// never ends), naming the path and what it is.
func TestReadersRefuseFIFOAndDevZero(t *testing.T) {
	for _, kind := range []string{"named pipe", "character device"} {
		dir := t.TempDir()
		p := filepath.Join(dir, "w.json")
		if kind == "named pipe" {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		man := filepath.Join(t.TempDir(), ManifestName)
		if err := os.Symlink(p, man); err != nil {
			t.Fatal(err)
		}
		readers := map[string]func() error{
			"Read":          func() error { _, err := Read(p); return err },
			"ReadSweep":     func() error { _, err := ReadSweep(p); return err },
			"ReadDir":       func() error { _, err := ReadDir(dir); return err },
			"ReadSweepsDir": func() error { _, err := ReadSweepsDir(dir); return err },
			"ReadRun":       func() error { _, _, err := ReadRun(dir); return err },
			"ReadManifest":  func() error { _, err := ReadManifest(filepath.Dir(man)); return err },
			"ReadDir(FIFO)": func() error { _, err := ReadDir(p); return err },
		}
		for name, read := range readers {
			err := read()
			if err == nil || !strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), dir) && !strings.Contains(err.Error(), ManifestName) {
				t.Errorf("%s with a %s: %v, want its path and %q", name, kind, err, kind)
			}
		}
	}
}
