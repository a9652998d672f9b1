package loadgen

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// GCFloor is how much heap the collector is told is live, on top of what is, once a run
// has started: a ballast of GCFloor bytes, allocated by the process's first Run and kept.
//
// The collector starts a cycle each time the heap grows by its live size (GOGC=100). The
// client's live heap is a few MB, so at 1,000 req/s it collected every second or two, and
// each cycle's mark phase took one of a 2-core machine's two Ps for 2 to 5 ms: the
// requests due meanwhile could go out late. The ballast keeps the collector on, but makes
// a cycle wait for GCFloor more bytes of garbage: at the 2 MB/s the client allocated at
// that rate (GODEBUG=gctrace=1), about every half minute, and none in a 5-s point. The ballast is one pointer-free object: marking it costs nothing,
// and its pages are never written, so the process's resident memory does not grow by it
// (the kernel maps a page only when it is touched; TestGCFloorIsNotResident). The runtime
// does sometimes zero a fresh allocation this large (TestGCFloorIsNotResident found all
// 64 MB resident in 4 of 30 fresh processes), so the ballast's pages are handed back to
// the kernel once allocated (releasePages): they read as zeros, and nothing reads them. It is kept
// rather than dropped after each run because the runtime zeroes memory it reuses: a
// second ballast in the freed one's place would be written, and resident. What does grow
// is the garbage between cycles: up to GCFloor more, resident until collected.
const GCFloor = 64 << 20

var (
	floorOnce sync.Once
	ballast   []byte
	floorHeld atomic.Int64
)

// holdGCFloor allocates the ballast unless it is already held. Where a memory limit
// (GOMEMLIMIT) is set that the ballast would crowd, it holds nothing: the collector would
// then run to stay under the limit, more often, not less.
func holdGCFloor() {
	floorOnce.Do(func() {
		if limit := debug.SetMemoryLimit(-1); limit < 8*GCFloor {
			return
		}
		ballast = make([]byte, GCFloor)
		releasePages(ballast)
		floorHeld.Store(int64(len(ballast)))
	})
}

// GCFloorHeld is how many bytes of ballast the process holds: what a reading of the live
// heap (runtime.MemStats.HeapAlloc) counts beyond the program's own memory.
func GCFloorHeld() int64 { return floorHeld.Load() }
