//go:build unix

package report

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadMeta refuses a FIFO (an open would block) and /dev/zero (a read never ends).
func TestReadMetaRefusesFIFOAndDevZero(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "report-meta.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, kind := range map[string]string{fifo: "named pipe", "/dev/zero": "character device"} {
		if _, err := ReadMeta(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), kind) {
			t.Errorf("ReadMeta(%s) = %v, want the path and %q", p, err, kind)
		}
	}
}
