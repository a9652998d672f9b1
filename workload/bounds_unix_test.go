//go:build unix

package workload

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Data files named in a config are regular files of bounded size: a device, a FIFO or a
// huge file is refused with what it is, before it is read.
func TestDataFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is what matters, nothing is written.
	if err := os.Truncate(big, MaxDataFileBytes+1); err != nil {
		t.Fatal(err)
	}
	cfg := func(trace, lengths string) string {
		return "version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 1\n" +
			"    arrival: {process: trace, trace: " + trace + "}\n" +
			"    prompt_tokens: {dist: empirical, file: " + lengths + "}\n    output_tokens: 8\n"
	}
	tests := []struct {
		name, trace, lengths, want string
	}{
		{"a trace from /dev/zero", "/dev/zero", big, "cannot read trace /dev/zero: not a regular file: a character device"},
		{"lengths from /dev/urandom", big, "/dev/urandom", "/dev/urandom: not a regular file: a character device"},
		{"a FIFO (would block the open)", fifo, big, "not a regular file: a named pipe (FIFO)"},
		{"a file over the limit", big, big, "over the limit of 67108864 bytes (64 MiB)"},
		{"a directory", dir, big, "not a regular file: a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(path, []byte(cfg(tt.trace, tt.lengths)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n got: %v\nwant: …%s…", err, tt.want)
			}
		})
	}
}
