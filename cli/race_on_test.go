//go:build race

package cli

// raceDetector: the tests run under -race, whose instrumentation makes the load
// generator, the in-process engines and the gate's bootstraps several times costlier.
const raceDetector = true
