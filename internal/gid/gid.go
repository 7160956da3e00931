// Package gid identifies the calling goroutine, cheaply.
//
// crisp needs to know whether a goroutine about to block on a future is
// the one holding the actor that must produce it (a self-deadlock). Go
// has no public goroutine identity; this package returns the address of
// the runtime's descriptor of the calling goroutine (its g), read
// directly on amd64 and arm64 (about 2 ns), and the goroutine's number
// parsed from runtime.Stack elsewhere (about 2 us). An ID is unique among
// live goroutines: the runtime may give a dead goroutine's descriptor to
// a new one, so an ID must be compared only with IDs of goroutines known
// to be alive. Current is safe from any goroutine.
//
// # What it assumes of the runtime
//
// None of this is promised by Go; each release could break it:
//
//   - On amd64 the runtime keeps the running goroutine's g in the
//     thread's first TLS slot, and on arm64 in the g register (R28), and
//     updates it at every switch of goroutine (getg_amd64.s,
//     getg_arm64.s).
//   - A g stays at one address while its goroutine lives: the collector
//     moves no objects, and a goroutine's stack, which does move when it
//     grows or shrinks, is not part of its g.
//   - runtime.Stack's trace starts "goroutine N [", with N the number the
//     runtime gives the goroutine, never reused.
//   - A g begins with its stack's bounds, lo then hi (Stack reads them;
//     the compiler's stack checks read stackguard0, the word after).
//
// Tests guard them, for both readings (the portable one on every
// architecture), under the race detector in CI:
// TestAgreesWithTheRuntimesGoroutineNumbers checks that IDs and the
// runtime's goroutine numbers pair one to one over 200 live goroutines,
// none zero; TestStableWithinAGoroutine checks that a goroutine's ID
// survives its stack being copied, runtime.Gosched,
// runtime.LockOSThread and UnlockOSThread, a blocking receive,
// runtime.GC and a move to another OS thread. If one fails on a new Go
// release, fix getg or fall back to the portable reading (gid_other.go)
// on the architecture.
//
// Stack is only a measure: crisp uses it to choose how large a stack a
// new runner starts with (a wrong reading costs time or memory, never a
// wrong result). TestStackReadsTheGoroutinesOwnStack checks it against
// frames of known size.
package gid

// ID identifies a live goroutine. The zero ID is no goroutine.
type ID uintptr

// Current returns the calling goroutine's ID.
func Current() ID { return current() }
