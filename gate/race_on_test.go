//go:build race

package gate

// raceDetector says the tests run under -race, which makes the many-trial statistics
// ten times slower and checks nothing in them that the plain run does not: see
// manyTrials.
const raceDetector = true
