//go:build race

package sqlfence_test

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
