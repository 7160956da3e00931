//go:build race

package crisp

// raceEnabled: under the race detector the runtime keeps twice the usual
// reserve at the bottom of every stack, so any goroutine outgrows 2 KiB
// almost at once and stack growth says nothing about crisp's frames.
const raceEnabled = true
