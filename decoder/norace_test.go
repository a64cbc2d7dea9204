//go:build !race

package decoder

// raceDetector says the tests run under the race detector.
const raceDetector = false
