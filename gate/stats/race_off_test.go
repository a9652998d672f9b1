//go:build !race

package stats

// raceDetector says the tests run under -race (manyTrials).
const raceDetector = false
