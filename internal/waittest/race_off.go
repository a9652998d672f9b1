//go:build !race

package waittest

// Race says the tests run under -race.
const Race = false
