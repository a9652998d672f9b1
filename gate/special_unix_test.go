//go:build unix

package gate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slogate/slogate/internal/fsafe"
)

// The baseline store's readers (baselines, calibrations, sweeps, history) refuse a FIFO
// (an open would block) and /dev/zero (a read never ends), naming the path and its type.
func TestStoreRefusesFIFOAndDevZero(t *testing.T) {
	for _, kind := range []string{"fifo", "zero"} {
		dir := t.TempDir()
		mk := func(rel string) {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Dir(p), 0o755)
			var err error
			if kind == "fifo" {
				err = syscall.Mkfifo(p, 0o644)
			} else {
				err = os.Symlink("/dev/zero", p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		mk(RelPath("w", "hw"))
		mk(SweepRelPath("w", "hw"))
		mk(HistoryRelPath("w", "hw"))
		s := DirStore(dir)
		readers := map[string]func() error{
			"Lookup":      func() error { _, _, err := s.Lookup("w", "hw"); return err },
			"LookupSweep": func() error { _, _, err := s.LookupSweep("w", "hw"); return err },
			"History":     func() error { _, err := s.History("w", "hw"); return err },
			"Load":        func() error { _, err := Load(s.FS, RelPath("w", "hw")); return err },
			"AppendHistory": func() error {
				_, err := AppendHistory(dir, "w", "hw", HistoryEntry{})
				return err
			},
		}
		for name, read := range readers {
			err := read()
			if !fsafe.IsNotRegular(err) || !strings.Contains(err.Error(), dir) {
				t.Errorf("%s with %s: %v, want a NotRegularError naming the path", name, kind, err)
			}
		}
		if cal, _ := s.CalibrationOf("w", "hw"); cal != nil {
			t.Errorf("CalibrationOf with %s: %v, want none", kind, cal)
		}
	}
}
