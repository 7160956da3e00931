package crisp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// Hand-offs: a runner that goes on as the actor its handler woke.
//
// A handler's plain Tell to an idle actor B started B's runner with a go
// statement, and the handler's own runner, once out of work, lingered,
// parked or ended: per message of a chain (a ring, threadring, a
// ping-pong, fib's replies), a goroutine started and one ended, or a
// runner parked and one woke, each a trip through Go's scheduler. Now
// such a Tell holds B's runner back (handOff): B is taken (fActive) and
// counted busy, its goroutine counted only if one starts (startHeld),
// and left in the handler's processor's slot of the system (handSlot).
// When the handler returns, its runner either starts B's runner at once,
// if its own actor has more work (afterHanded: the two run in parallel,
// as before), or, out of work, lets its actor go without lingering and
// goes on as B's runner on the same goroutine (core.run), with its own
// Proc and count (core.exit): no goroutine is started, none parked, and
// the scheduler is not entered.
//
// B's start is then late by the rest of the handler. Whatever would
// make that long starts B's runner at once instead (releaseHanded):
//   - another message sent to B (a handler that goes on sending, or
//     any other sender), but for those below;
//   - another actor woken the same way by the same handler (only the
//     last is held back);
//   - the handler blocking in crisp: Await, AwaitCond, Suspend, Sleep,
//     and Get (or GetWithin, GetContext) on a future of crisp's;
//   - the actor stopping, or the system shutting down.
//
// If its own actor has more work when the handler returns, the runner
// that held B back keeps it held for some of that work (keepHeld): up
// to maxKept of its actor's next messages, while those have taken less
// than handKeep of real time, or, while crisp's goroutines already
// wait for processors (crowded), whatever they take. Their plain
// messages to B then leave it held too, and so does the holding
// handler's own further Tell to B while crowded. B then runs, with all
// that was sent to it meanwhile, on the same goroutine if that runner
// is out of work by then. A goroutine started for B would not have run
// it sooner: an idle processor takes a new goroutine from a busy one
// only after a pause (Go's runnext steal), which handKeep is within,
// and a crowded processor not at all. What it saves: the tokens of a
// ring that catch up with each other and travel together took a
// goroutine's start and end per hop and token after the first; held,
// they travel on one goroutine.
//
// And a sweep (sweepHanded), every handSweep of real time while
// hand-offs are made, starts any held back since the sweep before: a
// handler that blocks outside crisp (a channel, a lock, I/O) or computes
// for long after its Tell delays B by at most twice handSweep, never
// deadlocks on it.
//
// Messages without a deadline hand off, whatever their options, and
// those whose deadline (a Within, a By, a context's, the earliest of
// them) is at least handFar after the send's reading of the real clock
// (the hold cannot make them miss): a message with a nearer deadline,
// or a deadline on another clock, starts its actor's runner as before,
// and so does any message sent to an actor held back. Nor does an actor
// with a lane (one that has flooded): it takes its work in batches
// beside its senders, and held back it waited for its producer's next
// message (counting 1.09x the time).
//
// Measured in whole processes against the code before (AMD EPYC, 2
// vCPU, 10 pairs; BENCHMARKS.md, twenty-ninth session): threadring 0.68x
// the time, fib 0.73x, ring-100k 0.80x, savina-pingpong 0.89x, pingpong
// 0.92x; beside two goroutines that never yield, threadring 0.69x, fib
// 0.66x, pingpong 0.85x. A trace of threadring before: per pass, half a
// yield, half a park and half a wake-up, where phony starts one
// goroutine.

// handSweep is the period of the sweep that starts the runners held
// back since the sweep before: no actor is held back longer than twice
// this (real time).
const handSweep = time.Millisecond

// handFar is how far on the real clock a message's deadline must be for
// it to hand off (sendKeyed): twice handSweep, the longest hold, and a
// busy machine's scheduling slice (10 ms, Go's preemption) before the
// sweep itself runs, with room to spare. A nearer deadline, or any on
// a mock clock (which moves when its test says, whatever a runner's
// hold), starts the runner at once. In a testing/synctest bubble the
// sweep's timer runs on the bubble's clock: a hold lasts at most two
// sweeps of it.
const handFar = 20 * time.Millisecond

// handSlot is one processor's slot of a system's hand-offs, on a cache
// line of its own: written by the runners on that processor, read by
// the sweep.
type handSlot struct {
	// cur is the Proc of the runner whose handler last started on this
	// processor, and curG its goroutine: a Tell from that goroutine,
	// while it runs a handler there, may hand off.
	cur  atomic.Pointer[Proc]
	curG atomic.Uintptr
	// pend is the actor held back on this processor, if any; whoever
	// swaps it out starts (or runs) its runner. pendG is the goroutine
	// whose handler held it back, stored before pend.
	pend  atomic.Pointer[core]
	pendG atomic.Uintptr
	seq   atomic.Uint32 // hand-offs made here, ever: the sweep compares
	seen  uint32        // seq at the sweep before; the sweep's, under handState.mu
	// keep is set while the runner that holds pend back runs more of
	// its own actor's messages and keeps it held (keepHeld): their Tells
	// to it then leave it held too (releaseHanded). handOff clears it.
	// keptAt is keepClock's reading as the first of those started: the
	// holder's, in the slot for want of room in its Proc.
	keep   atomic.Bool
	keptAt atomic.Int64
	_      [64 - 56]byte
}

// handState is a system's hand-off state.
type handState struct {
	slots    []handSlot
	mu       sync.Mutex // guards timer and the slots' seen
	timer    *time.Timer
	sweeping atomic.Bool
}

// newHandSlots returns a system's slots: one per processor, up to 64.
func newHandSlots() []handSlot { return make([]handSlot, min(max(runtime.GOMAXPROCS(0), 1), 64)) }

// noteRunner records p, whose handler is about to start, as its
// processor's current runner. Called by single actors' runners. A slot
// names a runner only while it runs (forgetRunner), and in one slot at
// a time: handOff reads the Proc a slot names only if the slot names
// the calling goroutine, so it reads its own Proc, never one that the
// stash has given to another goroutine meanwhile.
func (s *System) noteRunner(p *Proc) {
	g := uintptr(p.g)
	i := ready.Pin()
	if i < len(s.hand.slots) {
		h := &s.hand.slots[i]
		if h.cur.Load() != p || h.curG.Load() != g {
			h.cur.Store(p)
			h.curG.Store(g)
		}
	}
	ready.Unpin()
	if i < len(s.hand.slots) && int(p.nslot) != i+1 {
		if p.nslot != 0 { // moved: the slot named before names it no more
			s.hand.slots[p.nslot-1].curG.CompareAndSwap(g, 0)
		}
		p.nslot = uint8(i) + 1
	}
}

// handOff holds back the runner of a, just taken for a plain message
// (startPlain), for the runner whose handler sends it, and reports
// whether it did (held): the caller runs a handler of an actor of a's
// system on this processor. It returns the actor whose runner was held
// back before on this processor, if any (old), for the caller to start:
// here, that go statement would lie two frames deeper under the
// handler.
//
//go:noinline
func (a *core) handOff() (held bool, old *core) {
	s := a.sys
	i := ready.Pin()
	if i >= len(s.hand.slots) {
		ready.Unpin()
		return false, nil
	}
	h := &s.hand.slots[i]
	// Pinned, nothing else writes this processor's slot meanwhile: if
	// curG is this goroutine, cur is its Proc (see noteRunner).
	if h.curG.Load() != uintptr(gid.Current()) {
		ready.Unpin()
		return false, nil
	}
	p := h.cur.Load()
	if p == nil || p.m == nil {
		ready.Unpin()
		return false, nil // not in a handler
	}
	a.flags.Or(fHanded)
	if h.keep.Load() {
		h.keep.Store(false) // a swap: not on every hand-off
	}
	h.pendG.Store(uintptr(p.g))
	old = h.pend.Swap(a)
	h.seq.Add(1)
	p.hslot, p.kept = uint8(i)+1, 0
	ready.Unpin()
	if !s.hand.sweeping.Load() {
		s.armHandSweep()
	}
	return true, old
}

// forgetRunner clears p, a runner that ends, from the slot that names
// it: its goroutine may go on as another runner, with another Proc, and
// a goroutine that the runtime gives p's goroutine's descriptor next
// must not pass for it.
func (s *System) forgetRunner(p *Proc) {
	if p.nslot != 0 {
		s.hand.slots[p.nslot-1].curG.CompareAndSwap(uintptr(p.g), 0)
		p.nslot = 0
	}
}

// startHeld starts the runner of a, an actor held back and just taken
// out of its slot. A runner held back is counted (countRunner) only
// here, as its goroutine starts: one taken by the runner that held it
// back (or by any runner ending on its processor, exit) is run by a
// goroutine counted already, the count going on from the one runner
// to the next. Counting it at handOff and uncounting it at exit was
// four read-modify-writes of process-wide counters per hop of a chain.
// The busy count (System.busy) goes the same way: an actor held back is
// not counted while in its slot, the busy unit of the runner whose
// handler holds it standing for it (that runner holds its own actor
// until it lets it go); the runner that goes on as it lets its own
// actor go keeping its unit, which passes to it (core.exit), and
// whoever else takes it out of its slot counts it, here. Every path on
// which a runner lets its actor go counting the unit done (a stop, a
// lifecycle pause, a suspension, a goroutine's end) starts the runner it
// holds back first (flushHanded). With the count taken at handOff and
// given back at every let-go, the two read-modify-writes of that one
// counter per hop of a ring were up to a third of ring-1m's profile
// (BENCHMARKS.md, thirty-eighth session). So neither WaitIdle nor
// Shutdown can miss an actor held back: a runner that holds one back is
// a counted goroutine, busy, that takes it or leaves it to whoever took
// it out of the slot.
func (a *core) startHeld() {
	a.flags.And(^uint32(fHanded))
	a.sys.busy.Add(1)
	a.countRunner()
	go a.run(nil)
}

// takeHanded takes the actor held back in the slot where p's handler
// held one, and returns it (nil if someone started it meanwhile). That
// may be another handler's, held there since: any runner may run any
// actor held back, so taking it is no harm.
func (s *System) takeHanded(p *Proc) *core {
	i := int(p.hslot) - 1
	p.hslot = 0
	h := &s.hand.slots[i]
	if b := h.pend.Load(); b != nil && h.pend.CompareAndSwap(b, nil) {
		b.flags.And(^uint32(fHanded))
		return b
	}
	return nil
}

// releaseHanded starts the runner of a now if it is held back, wherever
// it is: a message was sent to it, or it stopped. If mayKeep (the
// message may wait for a hand-off: wakeHeld), a stays held when the
// calling goroutine's handler held it back and its runner keeps it held
// (keepHeld; the slot's keep) or crowded says so.
//
//go:noinline
func (s *System) releaseHanded(a *core, mayKeep bool) {
	for i := range s.hand.slots {
		h := &s.hand.slots[i]
		if h.pend.Load() != a {
			continue
		}
		if mayKeep && h.pendG.Load() == uintptr(gid.Current()) && (h.keep.Load() || crowded()) {
			return
		}
		if h.pend.CompareAndSwap(a, nil) {
			a.startHeld()
			return
		}
	}
}

// crowded reports whether crisp's goroutines made runnable wait for a
// processor (ready.Queued): a runner started now would wait too, and
// run nothing sooner than the runner that holds it back (keepHeld,
// releaseHanded). Callers spinning in Get are not counted: they may wait
// for what the held runner would do.
func crowded() bool { return ready.Queued() }

// flushHanded starts the runner p held back, if any: p's handler is
// about to block.
func (p *Proc) flushHanded() {
	if p.hslot != 0 {
		if b := p.a.sys.takeHanded(p); b != nil {
			b.startHeld()
		}
	}
}

// flushHandedHere starts the runner held back by the calling goroutine's
// handler, if any: it is about to block in Get. The goroutine may have
// moved to another processor since (a waiter spins first, yielding), so
// every slot is looked at: one per processor, and only while hand-offs
// are made.
func (s *System) flushHandedHere() {
	if !s.hand.sweeping.Load() {
		return // no hand-off since the last sweep found none
	}
	g := uintptr(gid.Current())
	for i := range s.hand.slots {
		h := &s.hand.slots[i]
		if h.pendG.Load() != g {
			continue
		}
		// pendG holds this goroutine's id before and after: pend is what
		// its handler held back (handOff stores pendG first).
		if b := h.pend.Load(); b != nil && h.pendG.Load() == g && h.pend.CompareAndSwap(b, nil) {
			b.startHeld()
		}
		return
	}
}

// afterHanded is the runner's look once a handler that held back a
// runner (p.hslot) has returned, with a.mu held: if a has more work,
// the held-back runner starts now, to run beside it, unless keepHeld
// keeps it held for a's next message. It runs on every return of a
// handler while one is held.
func (a *core) afterHanded(p *Proc) {
	switch {
	case a.stopped():
		p.flushHanded()
	case a.arrived() || a.pn > 0 || a.listed():
		if !p.keepHeld() {
			p.flushHanded()
		}
	}
}

// keepHeld reports whether the runner p's handler held back stays held
// while p runs its actor's next message, and counts that message
// (p.kept) if so. It stays held for up to maxKept messages, and, unless
// crowded, while p has run them for less than handKeep of real time:
// the clock is read as the first is taken (the slot's keptAt) and after
// the 1st, 15th, 31st and 47th, so a long handler is found out at once
// and a run of short ones pays few readings: taken after the 1st, 3rd,
// 7th, 15th, ..., they cost 14 ns per hop of ring-1k, 8.5% of its CPU
// (AMD EPYC; runtime.nanotime, all of it from keepClock); now 5.8%.
func (p *Proc) keepHeld() bool {
	h := &p.a.sys.hand.slots[p.hslot-1]
	switch k := p.kept; {
	case k >= maxKept:
		return false
	case k == 0:
		h.keptAt.Store(keepClock())
		h.keep.Store(true) // until the next hand-off here
	case (k == 1 || k&15 == 15) && !crowded() && keepClock()-h.keptAt.Load() >= int64(handKeep):
		return false
	}
	p.kept++
	return true
}

// keepEpoch is the origin of keepClock's readings.
var keepEpoch = time.Now() // clock seam: handKeep is a cost of Go's scheduler, real time, as handSweep

// keepClock returns the real (monotonic) time since keepEpoch, in
// nanoseconds.
func keepClock() int64 { return int64(time.Since(keepEpoch)) } // clock seam: as keepEpoch

// maxKept bounds how many of its own messages a runner runs while it
// keeps the runner it held back waiting (keepHeld): the bound where the
// clock does not move (a testing/synctest bubble) or is not read
// (crowded). A held runner waits for the holder's work or a sweep,
// whichever ends first. Measured at 8 with runners kept only while
// crowded, bench's big (120 actors pinging each other, each waiting for
// its pong) took 1.46x the time without a bound (AMD EPYC, whole-process
// pairs, median of 6; range 0.86-1.87).
const maxKept = 64

// handKeep is how long, in real time, a runner's own next messages may
// keep the runner it held back waiting, unless crowded (keepHeld). A
// goroutine started by a busy runner waits for it just as long or
// longer: Go lets an idle processor take it from the busy one's next
// slot only after a pause (usleep(3) in runqgrab, 50 µs or more under
// Linux's default timer slack). Measured (AMD EPYC, 2 vCPU): a `go`
// statement from a goroutine that spins on ran on the other, idle,
// processor after 106 µs (p10; median 109 µs) when that processor had
// just run, and after 155 µs (p10; median 214-275 µs, p90 2.9 ms) when
// it had been idle for 200 µs.
const handKeep = 50 * time.Microsecond

// armHandSweep starts the sweep, unless it runs already.
func (s *System) armHandSweep() {
	s.hand.mu.Lock()
	if !s.hand.sweeping.Load() {
		s.hand.sweeping.Store(true)
		if s.hand.timer == nil {
			s.hand.timer = time.AfterFunc(handSweep, s.sweepHanded) // clock seam: a bound on how long a runner is held back, real time, as the parked runners' sweep
		} else {
			s.hand.timer.Reset(handSweep)
		}
	}
	s.hand.mu.Unlock()
}

// sweepHanded starts the runners held back since the sweep before, and
// runs again while hand-offs are being made.
func (s *System) sweepHanded() {
	s.hand.mu.Lock()
	defer s.hand.mu.Unlock()
	if !s.hand.sweeping.Load() {
		return
	}
	busy := false
	for i := range s.hand.slots {
		h := &s.hand.slots[i]
		seq := h.seq.Load()
		if b := h.pend.Load(); b != nil {
			if seq == h.seen && h.pend.CompareAndSwap(b, nil) {
				b.startHeld()
			} else {
				busy = true
			}
		}
		if seq != h.seen {
			busy = true
		}
		h.seen = seq
	}
	if busy && !s.closed.Load() {
		s.hand.timer.Reset(handSweep)
		return
	}
	s.hand.sweeping.Store(false)
	// A hand-off made since the loop read its slot armed nothing (it saw
	// sweeping set): look once more.
	for i := range s.hand.slots {
		if h := &s.hand.slots[i]; h.pend.Load() != nil || h.seq.Load() != h.seen {
			s.hand.sweeping.Store(true)
			s.hand.timer.Reset(handSweep)
			return
		}
	}
}

// stopHanded starts every runner held back and stops the sweep: the
// system is shutting down.
func (s *System) stopHanded() {
	for i := range s.hand.slots {
		h := &s.hand.slots[i]
		if b := h.pend.Load(); b != nil && h.pend.CompareAndSwap(b, nil) {
			b.startHeld()
		}
	}
	s.hand.mu.Lock()
	if s.hand.sweeping.Load() {
		s.hand.sweeping.Store(false)
		s.hand.timer.Stop()
	}
	s.hand.mu.Unlock()
}
