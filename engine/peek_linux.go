package engine

import (
	"net"
	"syscall"
)

// peekSupported: peek can tell a connection the server closed from an idle one.
const peekSupported = true

// peek asks the socket, without reading from it or waiting, whether the server has
// closed it (EOF or an error pending), bytes are waiting, or it is idle. It uses Control,
// not Read, so that it neither takes the descriptor's read lock (the transport's reader
// may be blocked in Read) nor consumes anything (MSG_PEEK).
func peek(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peekIdle
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peekIdle
	}
	state := peekIdle
	cerr := rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0:
			state = peekData
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default: // n == 0 without an error is EOF; any other error is a dead socket
			state = peekClosed
		}
	})
	if cerr != nil {
		return peekClosed
	}
	return state
}
