//go:build !unix

package fsafe

const oNonblock = 0
