//go:build race

package joblog_test

// raceEnabled tells tests that the race detector slows them about tenfold.
const raceEnabled = true
