//go:build race

package future

// raceEnabled: under the race detector sync.Pool drops a quarter of what
// it is given, at random.
const raceEnabled = true
