//go:build !race

package gate

// raceDetector: see race_on_test.go.
const raceDetector = false
