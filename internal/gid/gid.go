// Package gid identifies the calling goroutine, cheaply.
//
// crisp needs to know whether a goroutine about to block on a future is
// the one holding the actor that must produce it (a self-deadlock). Go
// has no public goroutine identity; this package returns the address of
// the runtime's descriptor of the calling goroutine, read directly on
// amd64 and arm64 (a few nanoseconds) and derived from runtime.Stack
// elsewhere (microseconds). An ID is unique among live goroutines: the
// runtime may give a dead goroutine's descriptor to a new one, so an ID
// must be compared only with IDs of goroutines known to be alive.
package gid

// ID identifies a live goroutine. The zero ID is no goroutine.
type ID uintptr

// Current returns the calling goroutine's ID.
func Current() ID { return current() }
