//go:build !race

package cli

// raceDetector: see race_on_test.go.
const raceDetector = false
