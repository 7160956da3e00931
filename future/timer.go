package future

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/internal/park"
	"github.com/crisprt/crisp/internal/ready"
)

// timedWaiter is a goroutine blocked in GetWithin on the real clock:
// its node in the waiter list, the spot it waits on, and the wait's
// state (48 bytes in all). It waited on the channel Done and the other
// timed waiters share, and on a timer's channel: 128 bytes for the node
// and its channel and 320 for the timer (clock.New()'s wrapper, the
// runtime's timer and its channel), where it now has a callback timer,
// 136 bytes with its closure. A timed Get that parks (future's
// BenchmarkGetWithinHandoff, "parked") went from 511 bytes in 7
// allocations and 1.10-1.37 us to 223 bytes in 4 and 0.71-0.76 us (a
// buffered channel and a timer: 376 bytes, 0.87-1.0 us). Allocation
// counts double beside CPU-bound goroutines: each garbage collection
// there costs the program's other goroutines about one of their time
// slices.
//
// A wait that times out leaves its node listed (the list is never
// relinked); the next GetWithin on the future takes the node over once
// the goroutine that timed out has left it (twFree), so that a caller
// polling with short timeouts does not grow the list. The state
// carries the wait's generation as well as its phase: a timer of an
// earlier wait could not end a later one even if it were still
// running.
type timedWaiter struct {
	n     node
	spot  park.Spot
	state atomic.Uint64 // generation<<2 | phase
}

// The phases of a timedWaiter.
const (
	twWaiting  = 0 // a goroutine waits: the resolution or its timer ends the wait
	twWoken    = 1 // the resolution ended it
	twTimedOut = 2 // the timer ended it; or a new wait is taking the node over
	twFree     = 3 // the wait timed out and its goroutine has left the node
	twPhase    = 3
	twGen      = 4 // one generation
)

// Wake counts the waiter as ready and wakes it, unless its timer has.
// wake calls it with the channels, before any callback.
func (w *timedWaiter) Wake() {
	for {
		s := w.state.Load()
		if s&twPhase != twWaiting {
			return
		}
		if w.state.CompareAndSwap(s, s|twWoken) {
			ready.Add(1)
			w.spot.Signal()
			return
		}
	}
}

// expire ends the wait whose state, while it waits, is s, unless the
// resolution has.
func (w *timedWaiter) expire(s uint64) {
	if w.state.CompareAndSwap(s, s|twTimedOut) {
		w.spot.Signal()
	}
}

// timedWaiter lists a waiter for a goroutine about to block in
// GetWithin, taking over a node a timed-out wait has left if there is
// one, and returns it with its state while it waits; or nil once the
// future is resolved.
func (f *Future[T]) timedWaiter() (*timedWaiter, uint64) {
	var w *timedWaiter
	for {
		h := f.w.Load()
		switch h {
		case resolved:
			return nil, 0
		case resolving:
			runtime.Gosched()
			continue
		}
		for n := h; n != nil; n = n.next {
			if o, ok := n.w.(*timedWaiter); ok {
				if s, took, done := f.takeOver(o); took {
					return o, s
				} else if done {
					return nil, 0
				}
			}
		}
		if w == nil {
			w = &timedWaiter{}
			w.n.w = w
			w.spot.Expect()
		}
		w.n.next = h
		if f.w.CompareAndSwap(h, &w.n) {
			return w, twWaiting
		}
	}
}

// takeOver tries to take over o, a listed node, for a new wait: it
// reports whether it took it, with the wait's state, or whether the
// future turned out to be resolved meanwhile (done), o being free again.
func (f *Future[T]) takeOver(o *timedWaiter) (s uint64, took, done bool) {
	old := o.state.Load()
	if old&twPhase != twFree {
		return 0, false, false
	}
	s = old&^twPhase + twGen
	// Timed out in the new generation: neither the resolution nor another
	// wait touches the node while the spot is made ready.
	if !o.state.CompareAndSwap(old, s|twTimedOut) {
		return 0, false, false
	}
	o.spot.Expect()
	o.state.Store(s)
	// The resolution may have walked the list before the node was waiting
	// again: if so, nobody would wake it.
	if f.w.Load() == resolved && o.state.CompareAndSwap(s, s|twTimedOut) {
		o.spot.Signal() // one Signal to each Expect
		o.spot.Wait()
		o.state.Store(s | twFree)
		return 0, false, true
	}
	return s, true, false
}

// waitTimed blocks on w, listed with state s, for at most d of real
// time, and reports whether the resolution ended the wait.
func (w *timedWaiter) waitTimed(d time.Duration, s uint64) bool {
	t := time.AfterFunc(d, func() { w.expire(s) }) // clock seam: the future's clock is the real one (realClockType), its timer without clock.New()'s wrapper
	w.spot.Wait()
	if w.state.Load() == s|twWoken {
		t.Stop()
		ready.Done()
		return true
	}
	w.state.Store(s | twFree) // timed out: the next wait may take the node
	return false
}

// realClockType is the type of clock.New()'s clock, whose timers are
// the runtime's: a timed wait on it (GetWithin) waits on a timedWaiter
// and a callback timer of the runtime's. On any other clock it waits on
// a channel and the clock's Timer, on which tests may hook.
var realClockType = reflect.TypeOf(realClock)
