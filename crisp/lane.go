package crisp

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// The lane: an actor's backlog of messages without a deadline, once it
// has flooded.
//
// A flood queues faster than its actor runs, and its backlog is live
// until it runs: with a 112-byte Tell per queued message, a million of
// them were 55-75 MiB that every garbage collection marked again.
// protoactor's mailbox is a ring of interface values, 16 bytes a
// message. So an actor under EDF (the default policy) whose runner has
// once found a flood in its intake (laneFlood, fFlood) is given a lane,
// a queue of slots in segments, and from then on a Tell to it without options queues only its
// handler there (a pointer, no message at all); while the lane holds
// anything, every other message without a deadline follows it there, as
// its message. The runner makes a Tell of a handler, from its own
// processor's stash, when it takes it, and the Tell goes back to that
// stash when it has run: a flood's backlog is 16 bytes a message, and a
// Tell's memory stays on the processor that runs it.
//
// The lane stays once made, also when its actor is idle: fork-join's
// workers keep up with the driver (their backlogs stay short, their
// runners let them go between bursts), and a lane made only while a
// backlog lasted served few of their messages. There the gain is where
// a Tell's memory lives: as a message, it was allocated on the driver's
// processor, every field written there, and read on the worker's (the
// flat time of the intake's reversal, plainOK and firstDeadline, each
// the first to read a field of the driver's writing, was 30% of the
// workload's CPU profile), and each finished one went back through the
// depot. With the lane kept, crisp's fork-join took
// 0.46x the time as a whole process and counting 0.76x (0.70x and 0.70x
// beside two CPU-bound goroutines; AMD EPYC, 2 vCPU; BENCHMARKS.md,
// twenty-sixth session). What a lane keeps when empty is its struct, a
// segment and at most one spare (laneSegSlots).
//
// Order. EDF runs every message with a deadline before every one
// without, and those without in arrival order. Messages with a deadline
// go to the intake as always; while the lane holds anything, every
// message without one goes to the lane (send, sendWith), so the lane
// holds them in arrival order; a message without a deadline, other than
// a plain Tell, sent while the lane was empty went to the intake. The
// runner takes from the lane only when its list, queue and intake hold
// nothing (next), and having found an entry it looks at the intake once
// more before it takes it: a message that arrived meanwhile may be one
// the same sender sent before the entry (its push to the intake happens
// before its push to the lane), so the entry stays and the intake is
// drained first. A resumed process's message was taken before
// everything the lane still holds, so it may run first, as it does (its
// list comes before the lane). Only EDF actors that are neither groups
// nor bounded, in a system without an observer, ever make a lane
// (laneable); the others keep every message in the intake and their
// list.
type lane struct {
	// The senders' side, guarded by mu: the segment written last and
	// how many of its slots are written.
	mu   sync.Mutex
	tail *laneSeg
	tw   int32
	_    [64]byte
	// pushed counts the entries pushed, ever; stored under mu. On a
	// cache line of its own: others read it (holds), and a sender's lock
	// should not have to come back from their caches each time.
	pushed atomic.Uint64
	_      [64]byte

	// The runner's side, guarded by the actor's mu: the segment read
	// next, how many of its slots are read, and how many were written
	// when last looked at.
	head   *laneSeg
	r, lim int32
	popped atomic.Uint64 // entries taken, ever; stored under the actor's mu
	spare  atomic.Pointer[laneSeg]
	// keep is a Tell the runner finished (tell.recycle), for the next
	// entry's message: a flood's Tells go round between the runner and
	// its lane without the stash's pinning twice a message. Guarded by
	// the actor's mu.
	keep *tellMem
	_    [64]byte
	// mk makes a Tell to the lane's actor of a handler (its func value's
	// pointer), in x if it is not nil, else from the stash when it can
	// (laneMaker).
	mk func(fn unsafe.Pointer, x *tellMem) *message
}

// laneSeg is a segment of a lane: senders fill its slots in order, each
// published by the count w, and link the next segment when it is full;
// the runner reads them in order. A segment the runner has read through
// becomes the lane's spare, for the senders' next new segment. No slot
// is written twice while a segment is in use: senders and the runner
// share no lock, and a sender never waits for the runner.
type laneSeg struct {
	w    atomic.Int32
	next atomic.Pointer[laneSeg]
	s    [laneSegSlots]laneSlot
}

// laneSegSlots is the entries a segment holds (2 KiB of slots): a
// flood's backlog costs one allocation per this many messages, and an
// empty lane keeps one segment and at most one spare.
const laneSegSlots = 128

// laneSlot is one entry of a lane: a Tell's handler (fn), or a message.
type laneSlot struct {
	fn unsafe.Pointer
	m  *message
}

// laneFlood is the backlog that gives an actor its lane: once this many
// plain messages wait in its list (pn) as the intake is queued, the
// actor is marked (fFlood) until its runner lets it go, and its next
// plain Tell meanwhile makes the lane. Below it no lane is made: a lane
// and its segment cost allocations of their own, which an actor that only
// ever has a few messages waiting (fib's, a ring's) would pay for
// nothing.
const laneFlood = 16

// laneable reports whether a may have a lane: an EDF actor, not a group,
// without a bound, in a system without an observer.
func (a *core) laneable() bool {
	return a.cfg.edf && a.grp == nil && a.bound == nil && a.sys.obs == nil
}

// newLane returns an empty lane whose Tells mk makes.
func newLane(mk func(unsafe.Pointer, *tellMem) *message) *lane {
	seg := new(laneSeg)
	return &lane{tail: seg, head: seg, mk: mk}
}

// push puts s at the lane's end. Called by senders.
func (l *lane) push(s laneSlot) {
	l.mu.Lock()
	t := l.tail
	if l.tw == laneSegSlots {
		n := l.spare.Swap(nil)
		if n == nil {
			n = new(laneSeg)
		}
		t.next.Store(n)
		l.tail, l.tw, t = n, 0, n
	}
	t.s[l.tw] = s
	l.tw++
	t.w.Store(l.tw) // published: the runner may read the slot
	l.pushed.Store(l.pushed.Load() + 1)
	l.mu.Unlock()
}

// peek returns the lane's first entry without taking it. Called by the
// runner, with the actor's mu held.
func (l *lane) peek() (laneSlot, bool) {
	h := l.head
	if l.r == l.lim {
		if l.r == laneSegSlots {
			n := h.next.Load()
			if n == nil {
				return laneSlot{}, false
			}
			l.head, l.r, l.lim = n, 0, 0
			h.next.Store(nil) // read through: the senders' spare
			h.w.Store(0)
			l.spare.Store(h)
			h = n
		}
		l.lim = h.w.Load()
		if l.r == l.lim {
			return laneSlot{}, false
		}
	}
	return h.s[l.r], true
}

// drop takes the entry peek returned. Called with the actor's mu held.
func (l *lane) drop() {
	l.head.s[l.r] = laneSlot{}
	l.r++
	l.popped.Store(l.popped.Load() + 1)
}

// holds reports whether the lane holds anything. Any goroutine may ask;
// an entry is counted once its sender has published it.
func (l *lane) holds() bool { return l.pushed.Load() != l.popped.Load() }

// message returns s's message: s.m, or a Tell made of s.fn, in x if x
// is not nil.
func (l *lane) message(s laneSlot, x *tellMem) *message {
	if s.m != nil {
		return s.m
	}
	return l.mk(s.fn, x)
}

// laneMaker returns the lane's maker of Tells to a.
func laneMaker[S any](a *Actor[S]) func(unsafe.Pointer, *tellMem) *message {
	return func(fn unsafe.Pointer, x *tellMem) *message {
		var t *tell[S]
		if x != nil {
			t = (*tell[S])(unsafe.Pointer(x))
			t.a = a
		} else {
			t = newTell(a, nil)
		}
		t.fn = *(*func(*Proc, S))(unsafe.Pointer(&fn))
		t.job = t
		return &t.message
	}
}

// laned reports whether a's lane holds anything: where a look at the
// intake asks whether work has arrived, it asks this too.
func (a *core) laned() bool {
	l := a.lane.Load()
	return l != nil && l.holds()
}

// arrived reports whether work has arrived that the runner has not
// queued: in the intake or the lane.
func (a *core) arrived() bool { return a.intake.Load() != nil || a.laned() }

// laneTell sends fn, a Tell without options, through a's lane l, or
// through a lane it makes if l is nil and a's runner has found a flood
// (fFlood), and reports whether it did; if not, the caller sends it as
// usual.
func laneTell[S any](a *Actor[S], l *lane, fn func(*Proc, S)) bool {
	c := &a.core
	if l == nil {
		if c.flags.Load()&fFlood == 0 {
			return false
		}
		l = c.makeLane(laneMaker(a))
	}
	return c.lanePush(l, laneSlot{fn: *(*unsafe.Pointer)(unsafe.Pointer(&fn))})
}

// makeLane gives a its lane, made with mk unless another sender's came
// first.
//
//go:noinline
func (a *core) makeLane(mk func(unsafe.Pointer, *tellMem) *message) *lane {
	l := newLane(mk)
	if a.lane.CompareAndSwap(nil, l) {
		return l
	}
	return a.lane.Load()
}

// laneSend sends m, a message without a deadline whose job is set, to
// a's lane l if l holds anything, and reports whether it did.
func (a *core) laneSend(l *lane, m *message) bool {
	return l.holds() && a.lanePush(l, laneSlot{m: m})
}

// lanePush puts s in l, a's lane, and makes sure a runner holds a. It
// reports false, having put nothing, if a stopped or drains: the caller
// then refuses the message as usual.
func (a *core) lanePush(l *lane, s laneSlot) bool {
	if a.flags.Load()&(fStopped|fDraining) != 0 {
		return false
	}
	l.push(s)
	if a.stopped() { // stopped meanwhile: Stop may have emptied the lane already
		a.failLane()
		return true
	}
	a.start()
	return true
}

// fromLane takes the lane's oldest entry for the runner, once the list,
// the queue and the intake are empty. It reports again, having taken
// nothing, if the intake has filled meanwhile: the caller drains the
// intake first. l is a's lane. Called with a.mu held.
func (a *core) fromLane(l *lane) (m *message, j job, again bool) {
	for {
		s, ok := l.peek()
		if !ok {
			return nil, nil, false
		}
		if a.intake.Load() != nil {
			return nil, nil, true
		}
		l.drop()
		var x *tellMem
		if s.m == nil {
			x, l.keep = l.keep, nil
		}
		m := l.message(s, x)
		if j := m.work(); m.state.CompareAndSwap(stQueued, m.takeState(j)) {
			a.newArrivals()
			a.seq++
			m.seq = a.seq
			return m, j, false
		}
		// Cancelled on the way (its context ended): its canceller has
		// reported it.
	}
}

// failLane fails everything in a's lane with ErrStopped: a has stopped.
// Called without a.mu, which it takes to empty the lane.
func (a *core) failLane() {
	l := a.lane.Load()
	if l == nil {
		return
	}
	var left []laneSlot
	a.mu.Lock()
	for {
		s, ok := l.peek()
		if !ok {
			break
		}
		l.drop()
		left = append(left, s)
	}
	a.mu.Unlock()
	for _, s := range left {
		m := l.message(s, nil)
		if m.state.CompareAndSwap(stQueued, stStopped) {
			a.fail(m.work(), ErrStopped)
		}
	}
}
