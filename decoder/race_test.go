//go:build race

package decoder

// raceDetector says the tests run under the race detector, which makes
// the parse of a payload of millions of characters take a minute.
const raceDetector = true
