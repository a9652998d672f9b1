//go:build race

package stats

const raceDetector = true
