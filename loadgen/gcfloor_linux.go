package loadgen

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// releasePages hands b's whole pages back to the kernel (MADV_DONTNEED): private
// anonymous memory then reads as zeros, and is resident again only where written. b must
// be memory nothing reads or writes for meaning: the GC floor's ballast.
func releasePages(b []byte) {
	page := uintptr(os.Getpagesize())
	off := (page - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%page) % page
	if uintptr(len(b)) <= off {
		return
	}
	n := (uintptr(len(b)) - off) &^ (page - 1)
	if n == 0 {
		return
	}
	_ = unix.Madvise(b[off:off+n], unix.MADV_DONTNEED)
}
