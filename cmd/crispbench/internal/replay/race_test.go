//go:build race

package replay_test

// raceEnabled tells tests that the race detector slows them about tenfold.
const raceEnabled = true
