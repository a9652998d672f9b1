//go:build !unix

package fsafe

const oNonblock = 0

// oNofollow: the path is checked with Lstat before it is opened.
const oNofollow = 0
