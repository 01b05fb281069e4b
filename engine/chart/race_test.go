//go:build race

package chart

// raceEnabled is true under the race detector, whose instrumentation
// makes heap measurements and render times meaningless.
const raceEnabled = true
