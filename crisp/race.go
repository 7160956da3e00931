//go:build race

package crisp

import (
	"runtime"
	"unsafe"
)

// raceAcquire and raceRelease tell the race detector about the order
// that pinning a goroutine to its processor gives (stash.go): accesses
// to a processor's stash happen one after another, which the detector
// cannot see by itself.
func raceAcquire(addr unsafe.Pointer) { runtime.RaceAcquire(addr) }
func raceRelease(addr unsafe.Pointer) { runtime.RaceRelease(addr) }

// raceStackReserve is how much more of a goroutine's stack the runtime
// keeps free under the race detector: twice its usual 928 bytes.
const raceStackReserve = 928
