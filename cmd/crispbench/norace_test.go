//go:build !race

package main

// raceEnabled tells tests that the race detector slows them about tenfold.
const raceEnabled = false
