// Package ready counts crisp's goroutines that have been made runnable
// and have not yet started running: new runners, processes handed their
// actor back, spare runners called in, and callers woken in Future.Get;
// and those about to be: the watchdog, or a goroutine resuming a
// process, waiting for an actor's lock that its runner holds between
// messages (its Unlock makes them runnable on the runner's processor).
//
// A runner with a backlog yields the processor now and then so that
// such goroutines get one. Yielding when none waits only helps other
// code, and beside goroutines that never yield (CPU-bound code elsewhere
// in the process) each such yield puts the runner behind them for up to
// Go's 10 ms time slice: a flood of short messages then runs a few
// dozen messages per time slice. Waiting lets a runner tell the two
// cases apart: it yields when one of crisp's own goroutines waits for a
// processor, and leaves the rest to the Go scheduler's preemption, as
// every goroutine that computes does.
//
// The count is process-wide, as the processors are. Every Add is paired
// with exactly one Done, by the goroutine it counted, once that
// goroutine runs; so the count is a bound, not an estimate: when it is
// zero, no goroutine it counts waits for a processor.
package ready

import (
	"sync"
	"sync/atomic"
)

// count sits alone on its cache line: it is written on every wake-up it
// counts, and read by every runner every few messages. One word holds
// both counts, the goroutines counted (n, in its low 32 bits, as a
// signed number) and those of them that spin (AddSpinning, above them),
// so that every change is one atomic add and every reading sees both at
// one instant. Kept in two words, Queued read them one after the other,
// and a spinner counting itself in or out between the two readings made
// it wrong either way: with a goroutine counted and two others spinning
// in and out, it said false in 1,026-1,340 of 2,000,000 readings
// (TestQueuedHoldsWhileSpinnersComeAndGo), and crisp's crowded() said
// true beside a caller spinning for its Call's result, holding a runner
// back on a quiet machine, in a few of 600 runs of a hand-off test under
// the race detector (none in 1,000 since).
var count struct {
	_ [64]byte
	w atomic.Int64
	_ [56]byte
}

// spinOne is one spinning goroutine in count.w.
const spinOne = 1 << 32

// counts splits a reading of count.w into the goroutines counted (n)
// and those of them that spin (s).
func counts(w int64) (n, s int64) {
	n = int64(int32(w))
	return n, (w - n) >> 32
}

// Add counts k goroutines about to be made runnable. It must come before
// what makes them runnable (the go statement, the channel operation), so
// that their Done cannot come first.
func Add(k int) { count.w.Add(int64(k)) }

// Done is called once by each goroutine counted by Add, when it runs.
func Done() { count.w.Add(-1) }

// Lock locks mu for a goroutine of crisp's that runners must make room
// for (the watchdog's, one resuming a process), counting it as ready
// from before it blocks until it has the lock. A Lock that finds mu held
// parks the caller, and the holder's Unlock makes it runnable on the
// holder's processor, where, uncounted, it waited behind runners with
// backlogs until Go preempted them (13-37 ms in runtime traces of
// crispbench's busy lag cell). Counted, it makes those runners yield
// within a few messages.
func Lock(mu *sync.Mutex) {
	if mu.TryLock() {
		return
	}
	Add(1)
	mu.Lock()
	Done()
}

// Waiting reports whether some goroutine counted by Add or AddSpinning
// has not yet called Done or DoneSpinning.
func Waiting() bool {
	n, _ := counts(count.w.Load())
	return n > 0
}

// Queued reports whether some goroutine counted by Add has not yet called
// Done: a goroutine of crisp's made runnable waits for a processor.
// Those that AddSpinning counts are left out: a spinner yields between
// looks at what it waits for, which the processors' other work may be
// about to make true.
func Queued() bool {
	n, s := counts(count.w.Load())
	return n > s
}

// AddSpinning counts the caller as ready while it spins: it yields with
// runtime.Gosched between looks at what it waits for (Future.spin), so
// between its looks it waits in the run queue every processor takes
// from, not in the queue of the processor that made it runnable, as the
// goroutines Add counts do. The caller calls DoneSpinning when it stops
// spinning.
//
// A runner that yields to crisp's waiting goroutines on a busy machine
// (Busy) yields to its own processor unless one spins (Spinning): see
// crisp's between.
func AddSpinning() { count.w.Add(1 + spinOne) }

// DoneSpinning ends what AddSpinning counted.
func DoneSpinning() { count.w.Add(-1 - spinOne) }

// Spinning reports whether some goroutine counted by AddSpinning has
// not yet called DoneSpinning.
func Spinning() bool {
	_, s := counts(count.w.Load())
	return s > 0
}

// N returns the count, for tests: zero once every counted goroutine has
// run.
func N() int64 {
	n, _ := counts(count.w.Load())
	return n
}
