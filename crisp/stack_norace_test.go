//go:build !race

package crisp

const raceEnabled = false
