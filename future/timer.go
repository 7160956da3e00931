package future

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/crisprt/crisp/internal/park"
	"github.com/crisprt/crisp/internal/ready"
)

// timedWaiter is a goroutine blocked in GetWithin on the real clock:
// its node in the waiter list, the spot it waits on, and the wait's
// state (48 bytes in all). It waited on the channel Done and the other
// timed waiters share, and on a timer's channel: 128 bytes for the node
// and its channel and 320 for the timer (clock.New()'s wrapper, the
// runtime's timer and its channel), where it now has a callback timer,
// 128 bytes with its callback (a method value). A timed Get that parks
// (future's BenchmarkGetWithinHandoff, "parked") went from 511 bytes
// in 7 allocations and 1.10-1.37 us to 215 bytes in 4 and 0.71-0.78 us (a
// buffered channel and a timer: 376 bytes, 0.87-1.0 us). Allocation
// matters more beside CPU-bound goroutines: each garbage collection
// there costs the program's other goroutines about one of their time
// slices. Outside synctest bubbles the callback timer is an alarm kept
// for the next timed wait (setAlarm): a timed Get that parks allocates
// 88 bytes, in 0.48-0.53 us (two alternations of two runs). Its timer
// stays set between waits (see alarm).
//
// A wait that times out leaves its node listed (the list is never
// relinked); the next GetWithin on the future takes the node over once
// the goroutine that timed out has left it (twFree), so that a caller
// polling with short timeouts does not grow the list. No timer of an
// earlier wait can touch a node taken over: a wait that timed out was
// ended by its own timer's callback, which signals last and once, and
// a wait the resolution ended leaves a resolved future, whose nodes
// nobody takes over.
type timedWaiter struct {
	n     node
	spot  park.Spot
	state atomic.Uint32 // twWaiting, twWoken, twTimedOut or twFree
}

// The states of a timedWaiter.
const (
	twWaiting  = iota // a goroutine waits: the resolution or its timer ends the wait
	twWoken           // the resolution ended it
	twTimedOut        // the timer ended it; or a new wait is taking the node over
	twFree            // the wait timed out and its goroutine has left the node
)

// Wake counts the waiter as ready and wakes it, unless its timer has.
// wake calls it with the channels, before any callback.
func (w *timedWaiter) Wake() {
	if w.state.CompareAndSwap(twWaiting, twWoken) {
		ready.Add(1)
		w.spot.Signal()
	}
}

// expire, the wait's timer's callback, ends the wait unless the
// resolution has.
func (w *timedWaiter) expire() {
	if w.state.CompareAndSwap(twWaiting, twTimedOut) {
		w.spot.Signal()
	}
}

// timedWaiter lists a waiter for a goroutine about to block in
// GetWithin, taking over a node a timed-out wait has left if there is
// one, else using the one *spare holds if spare is not nil and it holds
// one (see waitWithin), else a new one; or returns nil once the future
// is resolved.
func (f *Future[T]) timedWaiter(spare *unsafe.Pointer) *timedWaiter {
	var w *timedWaiter
	for {
		h := f.w.Load()
		switch h {
		case resolved:
			return nil
		case resolving:
			runtime.Gosched()
			continue
		}
		for n := h; n != nil; n = n.next {
			if o, ok := n.w.(*timedWaiter); ok {
				if took, done := f.takeOver(o); took {
					return o
				} else if done {
					return nil
				}
			}
		}
		if w == nil {
			if spare != nil && *spare != nil {
				w = (*timedWaiter)(*spare)
				*spare = nil
				w.n.parked.Store(0)
				w.state.Store(twWaiting)
			} else {
				w = &timedWaiter{}
				w.n.w = w
			}
			w.spot.Expect()
		}
		w.n.next = h
		if f.w.CompareAndSwap(h, &w.n) {
			return w
		}
	}
}

// takeOver tries to take over o, a listed node, for a new wait: it
// reports whether it took it, or whether the future turned out to be
// resolved meanwhile (done), o being free again.
func (f *Future[T]) takeOver(o *timedWaiter) (took, done bool) {
	// Timed out again: neither the resolution nor another wait touches
	// the node while its spot is made ready.
	if !o.state.CompareAndSwap(twFree, twTimedOut) {
		return false, false
	}
	o.spot.Expect()
	o.state.Store(twWaiting)
	// The resolution may have walked the list before the node was waiting
	// again: if so, nobody would wake it.
	if f.w.Load() == resolved && o.state.CompareAndSwap(twWaiting, twTimedOut) {
		o.spot.Signal() // one Signal to each Expect
		o.spot.Wait()
		o.state.Store(twFree)
		return false, true
	}
	return true, false
}

// waitTimed blocks on w for at most d of real time, and reports whether
// the resolution ended the wait. If spare is not nil and nothing can
// touch w any more (the resolution ended the wait before the alarm's
// callback took w), it sets *spare to w.
func (w *timedWaiter) waitTimed(d time.Duration, spare *unsafe.Pointer) bool {
	al, reuse := setAlarm(w, d)
	w.spot.Wait()
	if w.state.Load() == twWoken {
		if al.drop(w) && spare != nil { // its callback will not reach w
			*spare = unsafe.Pointer(w)
		}
		if reuse {
			alarms.Put(al) // its timer may still be set: see alarm
		} else {
			al.t.Stop()
		}
		ready.Done()
		return true
	}
	w.state.Store(twFree) // timed out: the next wait may take the node
	if reuse {
		alarms.Put(al) // its callback has let go of w: it touches no later waiter
	}
	return false
}

// An alarm is a callback timer kept for reuse by timed waits (waitTimed)
// outside synctest bubbles: its callback ends the wait of the waiter it
// is set for, once that wait's time is up. A timer and its callback cost
// 128 bytes a wait, of the 215 a timed Get that parks allocated, and
// crisp's Calls with timed Gets park whenever the machine is busy with
// other code, where each collection costs the waiting goroutines about
// one of that code's time slices: bench's request-reply beside two
// goroutines that never yield (quick, 4 alternations, AMD EPYC) went
// from 352 to 224 bytes a Call, 4 to 2 collections a run, 3.26 to 1.66x
// phony's time (BENCHMARKS.md, twenty-first session). A timer made in a
// bubble belongs to it (resetting it outside is a fatal error) and runs
// on its fake clock, so a wait in a bubble takes no alarm and keeps
// none.
//
// A wait the resolution ends leaves its alarm's timer set: stopping it
// and setting it again for the next wait cost a timed Get that parks
// 16-18% of its time (BenchmarkGetWithinHandoff, "parked": 751-835 ->
// 615-703 ns) and crisp's parked AskWithin round trip 8-12%
// (BENCHMARKS.md, forty-third session). The next wait takes
// the timer as it is if it fires no later than that wait's end, and
// the callback, finding the wait's time not yet up, sets the timer
// again for the rest: with waits of one length, the timer fires about
// once per length, not once per wait. An alarm kept in the pool (a
// sync.Pool: a timed wait that parks takes about a microsecond, so a
// pool's cost does not show) may thus have its timer set; its callback
// holds the alarm weakly, so that an alarm the pool lets go of is
// collected, and its timer stopped (a cleanup), rather than kept alive
// by its timer until it fires.
//
// The alarm's mutex orders its callback against the waits: the callback
// takes the waiter (w) under it before ending its wait, and a wait the
// resolution ended lets go of its waiter under it (drop), so that no
// callback reaches a waiter after the wait that set it is over, and the
// waiter's node can be kept (spare) when the callback never took it.
type alarm struct {
	t     *time.Timer
	mu    sync.Mutex
	w     *timedWaiter // the wait it ends; nil between waits. Guarded by mu.
	due   int64        // when w's wait ends, as sinceInit reads. Guarded by mu.
	fires int64        // when t fires, as sinceInit reads; 0 if it is not set. Guarded by mu.
}

// drop ends the alarm's watch over w, whose wait the resolution ended,
// and reports whether its callback had not taken w (and never will).
func (al *alarm) drop(w *timedWaiter) bool {
	al.mu.Lock()
	mine := al.w == w
	if mine {
		al.w = nil
	}
	al.mu.Unlock()
	return mine
}

// ring is the alarm's callback: it ends its waiter's wait if the wait's
// time is up, or sets the timer again for the rest of it.
func (al *alarm) ring() {
	if h := ringHook.Load(); h != nil {
		(*h)()
	}
	al.mu.Lock()
	w := al.w
	if w == nil { // between waits
		al.fires = 0
		al.mu.Unlock()
		return
	}
	if now := sinceInit(); now < al.due { // set for an earlier wait
		al.fires = al.due
		al.t.Reset(time.Duration(al.due - now))
		al.mu.Unlock()
		return
	}
	al.w, al.fires = nil, 0
	al.mu.Unlock()
	if h := tookHook.Load(); h != nil {
		(*h)()
	}
	w.expire()
}

// ringHook, when set, is called by every alarm's callback before it
// looks at its waiter, and tookHook by a callback that has taken its
// waiter, before it ends the wait: tests hold a callback there.
var ringHook, tookHook atomic.Pointer[func()]

// alarms keeps alarms between waits: alarms whose callbacks will touch
// no later waiter but the one they are set for next.
var alarms sync.Pool

// setAlarm returns an alarm set to end w's wait after d, and whether it
// may be kept for later waits once this one is over: outside a bubble a
// kept alarm or a new one, in a bubble a new one, never kept.
func setAlarm(w *timedWaiter, d time.Duration) (al *alarm, reuse bool) {
	now := sinceInit()
	due := now + int64(d)
	reuse = !bubbled(now)
	if reuse {
		if al, ok := alarms.Get().(*alarm); ok {
			al.set(w, due, d)
			return al, true
		}
	}
	al = &alarm{w: w, due: due, fires: due}
	al.mu.Lock() // its callback waits until t is stored
	if reuse {
		held := weak.Make(al)
		al.t = time.AfterFunc(d, func() { ringWeak(held) }) // clock seam: the future's clock is the real one (realClockType), its timer without clock.New()'s wrapper
		runtime.AddCleanup(al, stopTimer, al.t)
	} else {
		al.t = time.AfterFunc(d, al.ring) // clock seam: as above; a bubble's timer, stopped by its wait (a cleanup runs outside the bubble)
	}
	al.mu.Unlock()
	return al, reuse
}

// set sets a kept alarm for w's wait, which ends at due, d from now:
// it sets the timer again unless it fires by then.
func (al *alarm) set(w *timedWaiter, due int64, d time.Duration) {
	al.mu.Lock()
	al.w, al.due = w, due
	if al.fires == 0 || al.fires > due {
		al.fires = due
		al.t.Reset(d)
	}
	al.mu.Unlock()
}

// ringWeak is the callback of an alarm that may be kept: it rings the
// alarm unless the alarm has been collected.
func ringWeak(held weak.Pointer[alarm]) {
	if al := held.Value(); al != nil {
		al.ring()
	}
}

// stopTimer stops the timer of an alarm that has been collected (a
// variable: tests watch it).
var stopTimer = func(t *time.Timer) { t.Stop() }

// sinceInit reads the time since the package was initialised (see
// bubbled).
func sinceInit() int64 { return int64(time.Since(initialised)) } // clock seam: which clock the goroutine's timers run on

// bubbled reports whether now, a reading of sinceInit, was taken in a
// synctest bubble, whose fake clock starts at midnight UTC on 2000-01-01
// (the testing/synctest documentation): there the time since the
// package was initialised, outside any bubble, is over twenty years,
// forward by the monotonic readings or backward by the wall clock's,
// where outside it is the process's age.
func bubbled(now int64) bool { return now > int64(bubbleGap) || now < -int64(bubbleGap) }

// bubbleGap is more than any process lives, and less than the distance
// from a synctest bubble's fake clock to the real one.
const bubbleGap = 15 * 365 * 24 * time.Hour

// initialised is when the package was initialised, outside any bubble.
var initialised = time.Now() // clock seam: see bubbled

// realClockType is the type of clock.New()'s clock, whose timers are
// the runtime's: a timed wait on it (GetWithin) waits on a timedWaiter
// and a callback timer of the runtime's. On any other clock it waits on
// a channel and the clock's Timer, on which tests may hook.
var realClockType = reflect.TypeOf(realClock)
