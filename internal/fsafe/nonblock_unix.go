//go:build unix

package fsafe

import "syscall"

// oNonblock keeps an open of a named pipe from waiting for a writer.
const oNonblock = syscall.O_NONBLOCK

// oNofollow makes an open fail on a symbolic link at the path instead of following it.
const oNofollow = syscall.O_NOFOLLOW
