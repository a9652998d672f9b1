package loadgen

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssKB is this process's resident memory in kB (/proc/self/status VmRSS).
func rssKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return n
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// The ballast must move the collector's goal, not the process's resident memory, however
// many runs hold it.
//
// It measures a process of its own, started for it: a process holds the ballast from
// its first Run on, so in the test binary's process an earlier test may have allocated
// it already, and nothing would be measured.
func TestGCFloorIsNotResident(t *testing.T) {
	t.Parallel()
	if os.Getenv("SLOGATE_TEST_GCFLOOR_CHILD") == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGCFloorIsNotResident$", "-test.v")
		cmd.Env = append(os.Environ(), "SLOGATE_TEST_GCFLOOR_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGCFloorIsNotResident") {
			t.Fatalf("the measuring process: %v\n%s", err, out)
		}
		return
	}
	runtime.GC()
	before := rssKB(t)
	var stats runtime.MemStats
	for range 3 {
		holdGCFloor()
		runtime.GC()
		runtime.ReadMemStats(&stats)
		if got := GCFloorHeld(); got != GCFloor {
			t.Fatalf("GCFloorHeld() = %d, want %d", got, GCFloor)
		}
		if stats.HeapAlloc < GCFloor {
			t.Fatalf("HeapAlloc %d with the floor held: below the %d-byte ballast, so the collector does not count it", stats.HeapAlloc, GCFloor)
		}
	}
	// A quarter of the ballast is far above what the test itself allocates.
	if grew := rssKB(t) - before; grew > GCFloor/4/1024 {
		t.Errorf("resident memory grew by %d kB with a ballast of %d kB: its pages were written", grew, GCFloor/1024)
	}
}
