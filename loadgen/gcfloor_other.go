//go:build !linux

package loadgen

// releasePages does nothing where the kernel's MADV_DONTNEED is not at hand.
func releasePages([]byte) {}
