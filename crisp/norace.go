//go:build !race

package crisp

import "unsafe"

// raceAcquire and raceRelease do nothing without the race detector (see
// race.go).
func raceAcquire(unsafe.Pointer) {}
func raceRelease(unsafe.Pointer) {}

// raceStackReserve is zero without the race detector (see race.go).
const raceStackReserve = 0
