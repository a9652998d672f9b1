//go:build !linux

package engine

import "net"

// peek cannot ask the socket on this platform: connections look idle, and only a read
// that saw the server close them shows it.
func peek(net.Conn) int { return peekIdle }

// peekSupported: peek cannot tell a connection the server closed from an idle one.
const peekSupported = false
