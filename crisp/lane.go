package crisp

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The lane: an actor's backlog, once it has flooded, of messages in
// EDF's order as they arrive.
//
// A flood queues faster than its actor runs, and its backlog is live
// until it runs: with a 112-byte Tell per queued message, a million of
// them were 55-75 MiB that every garbage collection marked again.
// protoactor's mailbox is a ring of interface values, 16 bytes a
// message. So an actor under EDF (the default policy) whose runner has
// once found a flood in its intake, or whose senders have sent one
// before its runner ran (laneFlood, fFlood, noteEarly), is given a lane,
// a queue of slots in segments, and from then on a Tell to it without
// options, or with one Within, queues only its handler there (a pointer
// and the deadline's key, no message at all); a Call or CallNext with
// one Within goes there as its message, and while the lane holds
// anything, so does every other message without a deadline. The runner
// makes a Tell of a handler, from its own processor's stash, when it
// takes it, and the Tell goes back to that stash when it has run: a
// flood's backlog is 16 bytes a message, and a Tell's memory stays on
// the processor that runs it. A Send (sendvalue.go) whose value is a
// pointer or a number queues the same way, its handler in the slot and
// its value beside it (laneVal, 32 bytes more, in a block its segment
// makes once), and the runner makes its message as a Tell's (lane.vkeep,
// the Sends' stash): a flood of Sends allocates nothing, where a Tell's
// closure is one allocation a message.
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
// Order. EDF runs messages by deadline, those without one last, and
// equal ones in arrival order. The lane holds its entries in that
// order: an entry whose deadline comes before the last one's (no
// deadline comes after every deadline) is refused while the lane holds
// anything (lane.push), unless its Within can be made of the later
// clock reading of the last one's (lane.later), and goes to the intake,
// as does every message with a context, keys, or options beyond one
// Within, and one whose sender found the lane held by another while it
// held few entries (lockFew). The runner
// compares the lane's first entry with the first of what it has queued
// (nextLaned, laneFirst; while its list holds work, the entry joins the
// policy's queue to be compared there), and takes the lane's only if it
// comes strictly first: on a tie the queued message arrived first. That
// holds because a message pushed to the intake carries the count of
// lane entries pushed before it (intakePush, in its seq until it is
// queued), and the runner queues those of them that do not come after
// it ahead of it (laneBefore). Having found an entry, the runner looks
// at the intake once more before it takes it: a message that arrived
// meanwhile may be one the same sender sent before the entry (its push
// to the intake happens before its push to the lane), and the intake is
// drained first. A resumed process's message was taken before
// everything the lane still holds, so it runs in its order in the
// policy's queue. The lane's first deadline is the earliest it holds:
// the watchdog sees it (firstDeadline) and fails the due entries from
// the front (expireLane). Only EDF actors that are neither groups nor
// bounded, in a system without an observer, ever make a lane
// (laneable); the others keep every message in the intake and their
// list.
type lane struct {
	// The senders' side, guarded by the lane's lock (pushed's low bit:
	// lock): the segment written last and how many of its slots are
	// written.
	tail *laneSeg
	tw   int32
	// last is the order (laneSlot.order) of the entry pushed last: the
	// lane holds its entries in EDF's order, so an entry that would go
	// before it is refused while the lane holds anything, unless it can
	// be given a later reading (later). lastSince is the clock reading
	// (a key, System.since) of the last entry's Within, or -1.
	last      int64
	lastSince int64
	// pushedDated is set once an entry with a deadline has been pushed:
	// the senders' own record of dated (below), which each push of such
	// an entry reads, in their own cache line: read from the runner's
	// line, which the runner writes at every message (popped, keep),
	// dated was 12-13% of a deadlined flood's CPU profile (counting
	// with Within), and from the senders' line, the runner's reads of
	// it (firstKey) were.
	pushedDated bool
	_           [64]byte
	// pushed is twice the count of entries pushed, ever, plus one while
	// a sender holds the lane: the senders' lock and the runner's count
	// in one word. A sender takes the lane with a compare-and-swap of an
	// even word (lock) and, having written its slot, publishes it and
	// lets the lane go with one store of the word plus two (unlock):
	// the runner reads what it counts (peek). With a mutex beside a
	// count, each push was three locked instructions (the mutex's two,
	// the count's store): at GOMAXPROCS=1 push took 27 ns of counting's
	// 94 a message, and 19.5 with one word (bench -cpuprofile, 20
	// repetitions; AMD EPYC; BENCHMARKS.md, forty-ninth session). On a
	// cache line of its own: others read it (the runner, holds,
	// intakePush), and a sender's lock should not have to come back from
	// their caches each time.
	pushed atomic.Uint64
	_      [64]byte

	// The runner's side, guarded by the actor's mu: the segment read
	// next, how many of its slots are read, and the count of entries
	// pushed when last looked at (pushed).
	head   *laneSeg
	r      int32
	seen   uint64
	popped atomic.Uint64 // entries taken, ever; stored under the actor's mu
	spare  atomic.Pointer[laneSeg]
	// keep is a Tell the runner finished (tell.recycle), for the next
	// entry's message: a flood's Tells go round between the runner and
	// its lane without the stash's pinning twice a message. Guarded by
	// the actor's mu.
	keep *tellMem
	// mk makes a Tell to the lane's actor of a handler (its func value's
	// pointer), in x if it is not nil, else from the stash when it can
	// (laneMaker).
	mk func(fn unsafe.Pointer, x *tellMem) (*message, job)
	// act is the lane's actor, an *Actor[S]: a Send's entry makes its
	// message with it (valueKind.make).
	act unsafe.Pointer
	// vkeep is a Send the runner finished (sendTell.recycle), for the
	// next Send entry's message, as keep is for Tells. Guarded by the
	// actor's mu.
	vkeep *sendMem
	// dated is set once an entry with a deadline has been pushed: until
	// then the watchdog has nothing to look for in the lane (firstKey),
	// and a flood without deadlines is spared a look at its lane's
	// first entry for every message. Set once by a sender
	// (pushedDated), read by the runner and the watchdog.
	dated atomic.Bool
}

// laneSeg is a segment of a lane: senders fill its slots in order, each
// published by the lane's count pushed, and link the next segment when
// it is full; the runner reads them in order. A segment the runner has
// read through becomes the lane's spare, for the senders' next new
// segment, and the spare it replaces goes to segPool. No slot
// is written twice while a segment is in use: senders and the runner
// share no lock, and a sender never waits for the runner.
type laneSeg struct {
	next atomic.Pointer[laneSeg]
	s    [laneSegSlots]laneSlot
	// v holds the values of the segment's Send entries, at their
	// slots' indexes: made when the segment first holds one, and kept
	// while the segment is reused, so a lane of Tells alone never
	// makes it.
	v *[laneSegSlots]laneVal
}

// laneVal is the value a Send's lane entry carries (laneSlot.isVal):
// the kind that makes its message (valueKind, for its actor's state
// type and the value's) and the value, in p if it is a pointer, else in
// w (laneWay). A value of another type never enters a lane.
type laneVal struct {
	k valKind
	p unsafe.Pointer
	w uint64
}

// laneSegSlots is the entries a segment holds: with its link and its
// values' pointer, 2 KiB. A flood's backlog costs a segment per this
// many messages (from segPool when it has one), and an empty lane keeps
// one segment and at most one spare.
const laneSegSlots = 127

// laneSlot is one entry of a lane: a Tell's or a Send's handler, or a
// message (p), with its start deadline's key (System.key) for the
// order the lane keeps (k). A Send's value is beside it, in its
// segment's values (laneSeg.v).
type laneSlot struct {
	p unsafe.Pointer // the handler's func value, or the *message
	// k is the deadline's key shifted left twice (0 for no deadline),
	// its low bit set if p is a message, the next if p is a Send's
	// handler. The key of a deadline the lane takes is positive and
	// below 1<<61 (withinKey).
	k int64
}

// key returns the entry's deadline key, or 0 if it has no deadline.
func (s laneSlot) key() int64 { return s.k >> 2 }

// isMsg reports whether the entry is a message, not a handler.
func (s laneSlot) isMsg() bool { return s.k&1 != 0 }

// isVal reports whether the entry is a Send's handler, with a value.
func (s laneSlot) isVal() bool { return s.k&2 != 0 }

// order returns the entry's place in EDF's order: its deadline key, or
// the largest key for no deadline.
func (s laneSlot) order() int64 {
	if k := s.key(); k != 0 {
		return k
	}
	return math.MaxInt64
}

// handlerSlot returns the entry of a Tell's handler fn (a func value)
// with deadline key k (0 for none).
func handlerSlot(fn unsafe.Pointer, k int64) laneSlot { return laneSlot{p: fn, k: k << 2} }

// valueSlot returns the entry of a Send's handler fn (a func value)
// with deadline key k (0 for none); its value goes beside it (push).
func valueSlot(fn unsafe.Pointer, k int64) laneSlot { return laneSlot{p: fn, k: k<<2 | 2} }

// messageSlot returns the entry of m, with deadline key k (0 for none).
func messageSlot(m *message, k int64) laneSlot {
	return laneSlot{p: unsafe.Pointer(m), k: k<<2 | 1}
}

// withinKey returns the key of the deadline d after the clock reading
// whose key is since, and reports whether a lane can hold it: a
// deadline after the reading (d > 0) whose key is below 1<<61 (73
// years after the system's epoch), which atKey gives back exactly.
func withinKey(since int64, d time.Duration) (int64, bool) {
	return since + int64(d), d > 0 && since >= 0 && int64(d) < 1<<61-since
}

// atKey returns the deadline whose key is k: the system's epoch plus k.
// A deadline read from the system's clock and a Within is so already
// (System.now), and atKey gives it back equal to the nanosecond.
func (s *System) atKey(k int64) time.Time { return s.epoch.Add(time.Duration(k)) }

// laneFlood is the backlog that gives an actor its lane: once this many
// messages wait, plain (pn) or in its policy's queue (queued), as the
// intake is queued, the actor is marked (fFlood) until its runner lets
// it go (on a busy machine, also after: see floodNoLinger), and its next
// Tell without options or with one Within meanwhile makes the lane. So
// is it once this many are sent while its runner has yet to run
// (core.noteEarly).
// (Counted among the plain messages alone, a flood that mixed in
// messages with contexts made no lane: the first of them makes a list,
// and every message after it joins the list.) Below it no lane
// is made: a lane and its segment cost allocations of their own, which
// an actor that only ever has a few messages waiting (fib's, a ring's)
// would pay for nothing.
const laneFlood = 16

// laneable reports whether a may have a lane: an EDF actor, not a group,
// without a bound, in a system without an observer.
func (a *core) laneable() bool {
	return a.cfg.edf && a.cfg.grp == nil && a.bound == nil && a.sys.obs == nil
}

// newLane returns an empty lane of actor act (an *Actor[S]), whose
// Tells mk makes.
func newLane(mk func(unsafe.Pointer, *tellMem) (*message, job), act unsafe.Pointer) *lane {
	seg := new(laneSeg)
	return &lane{tail: seg, head: seg, lastSince: -1, mk: mk, act: act}
}

// push puts s at the lane's end, with v beside it if s is a Send's
// (isVal), and reports true, unless s goes before the last entry in
// EDF's order while the lane holds anything, or another sender holds
// the lane while it holds few entries (lockFew): then it reports false
// and puts nothing, and the caller sends s's message through the
// intake. If s's deadline is a Within's, since is the clock
// reading it was made of (a key, System.since), else -1; push returns
// the reading s was pushed with, which may be later (later). A
// message's (isMsg) deadline key is then its entry's (message.dk).
// Called by senders.
//
// Nothing is allocated while a sender holds the lane: the others wait
// for it (lockFew, lock), and one that allocates may be made to help
// the collector first. A new segment or values' block is made between
// two holds; having made it, the sender waits for the lane (lock)
// rather than go to the intake and waste it.
func (l *lane) push(s laneSlot, v *laneVal, since int64) (int64, bool) {
	o := s.order()
	var seg *laneSeg                // made for a full tail, if the lane had no spare
	var vals *[laneSegSlots]laneVal // made for a tail without values' block
	w, ok := l.lockFew()
	if !ok {
		return since, false
	}
	for {
		if o < l.last && w>>1 != l.popped.Load() {
			if !l.later(&s, &since) {
				l.unlock(w)
				putSeg(seg)
				return since, false
			}
			o = s.key()
		}
		t := l.tail
		if l.tw == laneSegSlots {
			n := l.spare.Swap(nil)
			if n == nil {
				if n, seg = seg, nil; n == nil {
					l.unlock(w)
					seg = newSeg()
					w = l.lock() // having made it, it waits for the lane
					continue
				}
			}
			t.next.Store(n)
			l.tail, l.tw, t = n, 0, n
		}
		if v != nil && t.v == nil {
			if vals == nil {
				l.unlock(w)
				vals = new([laneSegSlots]laneVal)
				w = l.lock()
				continue
			}
			t.v, vals = vals, nil
		}
		l.last, l.lastSince = o, since
		if s.key() != 0 && !l.pushedDated {
			l.pushedDated = true
			l.dated.Store(true)
		}
		if since >= 0 && s.isMsg() {
			(*message)(s.p).dk = s.key() // before the runner may see it
		}
		t.s[l.tw] = s
		if v != nil {
			t.v[l.tw] = *v
		}
		l.tw++
		l.unlock(w + 2) // published: the runner may read the slot
		putSeg(seg)
		return since, true
	}
}

// later gives *s, an entry whose deadline is a Within's d after the
// clock reading *since (a key) and comes before the lane's last entry's,
// the deadline d after the reading of the last entry's Within instead,
// and reports true, if that deadline comes no earlier than the last
// entry's. That reading is then later than *since (d after it comes
// after *s's deadline), and it was taken before the send of *s took the
// lane: during the send. So a Within's deadline is still its send's
// clock reading plus d, and a Tell whose sender's reading lost the race
// to the lane to a later reading of another sender's, with a d no
// longer than its own, goes into the lane all the same. Refused, it
// went the slow way, through the intake: four senders of Tells with one
// Within to one actor took 245-450 ns a message, 3.3-6 times as long as
// without (BenchmarkOneWay; AMD EPYC; BENCHMARKS.md, forty-ninth
// session). Called with the lane held.
func (l *lane) later(s *laneSlot, since *int64) bool {
	if *since < 0 || l.lastSince < 0 {
		return false
	}
	k, ok := withinKey(l.lastSince, time.Duration(s.key()-*since))
	if !ok || k < l.last {
		return false
	}
	s.k = s.k&3 | k<<2
	*since = l.lastSince
	return true
}

// lock takes the senders' side of the lane and returns the word it held
// (pushed, even). A sender that finds it held spins, briefly: the hold
// is a few stores. After laneSpins looks it yields its processor, which
// the holder may need: on one processor, or when the holder was
// preempted.
func (l *lane) lock() uint64 {
	for n := 0; ; n++ {
		if w := l.pushed.Load(); w&1 == 0 && l.pushed.CompareAndSwap(w, w|1) {
			return w
		}
		if n >= laneSpins {
			runtime.Gosched()
		}
	}
}

// unlock lets the lane go, setting pushed to w: the word lock returned,
// or that plus two to publish the entry just written.
func (l *lane) unlock(w uint64) { l.pushed.Store(w) }

// laneSpins is how many times a sender looks for the lane's lock before
// it yields between looks.
const laneSpins = 32

// lockFew is lock, unless another sender holds the lane while it holds
// fewer than laneFew entries: then it reports false, and the push goes
// through the intake instead, as one refused for its order does. Many
// senders each sending a message at a time to a receiver that keeps up
// met at its lane: a spinning sender's looks took pushed from the
// holder's cache, the holder's store letting go then missed it, and
// the runner, caught up, reads the same word at every message. A
// hundred chameneos sending to one mall spent 330 ms of the pushes' 470
// there (CPU profile, 8 runs); with the intake instead chameneos took
// 0.50x the CPU and 0.72x the time (whole processes, 10 pairs; AMD
// EPYC; BENCHMARKS.md, forty-ninth session). A flood from several senders,
// with a backlog, still waits for the lane: there the intake would be a
// message allocated and sorted for every Tell (four senders: 241-377 ns
// a Tell against 70-77 through the lane, had every push that met
// another's gone to the intake). One sender never finds its lane held.
func (l *lane) lockFew() (uint64, bool) {
	w := l.pushed.Load()
	if w&1 == 0 && l.pushed.CompareAndSwap(w, w|1) {
		return w, true
	}
	if w&1 != 0 && w>>1-l.popped.Load() < laneFew {
		return 0, false
	}
	return l.lock(), true
}

// laneFew is the backlog below which a push that finds the lane held
// goes through the intake (lockFew): a segment's worth.
const laneFew = laneSegSlots

// count returns the count of entries pushed, ever.
func (l *lane) count() uint64 { return l.pushed.Load() >> 1 }

// peek returns the lane's first entry without taking it. Called by the
// runner, with the actor's mu held.
func (l *lane) peek() (laneSlot, bool) {
	if p := l.popped.Load(); p == l.seen {
		if l.seen = l.count(); p == l.seen {
			return laneSlot{}, false
		}
	}
	if l.r == laneSegSlots {
		// Read through; the next entry, published, is in the next
		// segment, which its sender linked before publishing it.
		h := l.head
		l.head, l.r = h.next.Load(), 0
		h.next.Store(nil)
		l.spareSeg(h) // the senders' next new segment
	}
	return l.head.s[l.r], true
}

// drop takes the entry peek returned, which is not a Send's (pop takes
// those, and their values). Called with the actor's mu held.
func (l *lane) drop() {
	l.head.s[l.r] = laneSlot{}
	l.r++
	l.popped.Store(l.popped.Load() + 1)
}

// holds reports whether the lane holds anything. Any goroutine may ask;
// an entry is counted once its sender has published it.
func (l *lane) holds() bool { return l.count() != l.popped.Load() }

// pop takes the entry peek returned, s, and returns its value if it is
// a Send's. Called with the actor's mu held.
func (l *lane) pop(s laneSlot) (v laneVal) {
	if s.isVal() {
		v = l.head.v[l.r]
		l.head.v[l.r] = laneVal{} // no value stays reachable from a spare segment
	}
	l.drop()
	return v
}

// message returns the message of s, an entry popped with value v: the
// message s holds, or a Tell or Send made of its handler, with its
// deadline.
func (l *lane) message(s laneSlot, v laneVal) *message {
	if s.isMsg() {
		return (*message)(s.p)
	}
	m, _ := l.tell(s, v, nil)
	return m
}

// tell returns the Tell made of s's handler, in x if x is not nil, or
// the Send made of it and v if it is a Send's, with its deadline, and
// the message as a job: the runner that takes it spares the assertion
// of its message's job (message.work).
func (l *lane) tell(s laneSlot, v laneVal, x *tellMem) (*message, job) {
	var m *message
	var j job
	if s.isVal() {
		m, j = v.k.make(l, s.p, v, nil)
	} else {
		m, j = l.mk(s.p, x)
	}
	m.dk = s.key() // positive (withinKey), or 0: its own deadline key
	return m, j
}

// laneMaker returns the lane's maker of Tells to a. x, if not nil, is
// the Tell the lane kept (lane.keep, cleared by tell.recycle): it is
// a's and its own job already, and only its handler is written, for
// while the collector marks, each pointer written costs a write barrier
// (a flood's write barriers were 6% of its CPU profile).
func laneMaker[S any](a *Actor[S]) func(unsafe.Pointer, *tellMem) (*message, job) {
	return func(fn unsafe.Pointer, x *tellMem) (*message, job) {
		var t *tell[S]
		if x != nil {
			t = (*tell[S])(unsafe.Pointer(x))
		} else {
			t = newTell(a, nil)
			t.job = t
		}
		t.fn = *(*func(*Proc, S))(unsafe.Pointer(&fn))
		return &t.message, t
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
		l = c.makeLane(laneMaker(a), unsafe.Pointer(a))
	}
	return c.lanePush(l, handlerSlot(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), 0), nil)
}

// laneTellWithin sends fn, a Tell whose one option is Within
// (withinOnly), through a's lane l, or through a lane it makes if l is
// nil and a's runner has found a flood (fFlood), if its deadline comes
// no earlier than the lane's last entry's and the lane takes it
// (lane.push); else, or if a lane cannot
// hold its deadline (withinKey), it sends it as a message with opts, as
// any Tell with one Within. Its clock reading stays a key (System.since)
// unless the watchdog needs a time: a deadline's times, made from a
// key, were a quarter of a deadlined flood's CPU profile.
func laneTellWithin[S any](a *Actor[S], l *lane, fn func(*Proc, S), opts []SendOption) {
	c := &a.core
	since, d := c.sys.since(), time.Duration(opts[0].n)
	k, ok := withinKey(since, d)
	if ok && (l != nil || c.flags.Load()&fFlood != 0) {
		if l == nil {
			l = c.makeLane(laneMaker(a), unsafe.Pointer(a))
		}
		if k, since, ok := c.lanePushKeyed(l, handlerSlot(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), k), nil, since); ok {
			c.needWatchKey(k, since)
			return
		}
	}
	t := newTell(a, opts)
	t.fn = fn
	t.job = t
	if ok {
		c.sendKeyed(&t.message, k, since, nil) // the lane refused it: to the intake
	} else {
		c.sendWithinTimes(&t.message, c.sys.atKey(since), d)
	}
}

// makeLane gives a its lane, made with mk and act (newLane) unless
// another sender's came first.
//
//go:noinline
func (a *core) makeLane(mk func(unsafe.Pointer, *tellMem) (*message, job), act unsafe.Pointer) *lane {
	l := newLane(mk, act)
	if a.lane.CompareAndSwap(nil, l) {
		return l
	}
	return a.lane.Load()
}

// laneSend sends m, a message without a deadline whose job is set, to
// a's lane l if l holds anything, and reports whether it did.
func (a *core) laneSend(l *lane, m *message) bool {
	return l.holds() && a.lanePush(l, messageSlot(m, 0), nil)
}

// lanePush puts s in l, a's lane, with v beside it if s is a Send's
// (lane.push), and makes sure a runner holds a. It
// reports false, having put nothing, if a stopped or drains (the caller
// then refuses the message as usual) or if l refuses s, for its deadline
// or while another sender holds it (lane.push; the caller then sends it
// through the intake).
func (a *core) lanePush(l *lane, s laneSlot, v *laneVal) bool {
	_, _, ok := a.lanePushKeyed(l, s, v, -1)
	return ok
}

// lanePushKeyed is lanePush for s, whose deadline, if it is a Within's,
// is made of the clock reading since (a key), else since is -1. It
// returns the deadline's key and reading s was pushed with: the lane may
// give it a later reading (lane.later).
func (a *core) lanePushKeyed(l *lane, s laneSlot, v *laneVal, since int64) (k, at int64, ok bool) {
	if a.flags.Load()&(fStopped|fDraining) != 0 {
		return 0, 0, false
	}
	k0 := s.key()
	if at, ok = l.push(s, v, since); !ok {
		return 0, 0, false
	}
	k = k0 + (at - since) // the later reading's deadline, if later gave one
	if a.stopped() {      // stopped meanwhile: Stop may have emptied the lane already
		a.failLane()
		return k, at, true
	}
	a.start()
	return k, at, true
}

// nextLaned is next for an actor with a lane l: the intake queued, then
// the earlier in EDF's order of the lane's first entry and what the
// list, the queue and the plain messages hold next; on a tie, the
// latter, which arrived first (see laneBefore). Having found an entry
// it looks at the intake once more before it takes it: a message that
// arrived meanwhile may be one the same sender sent before the entry
// (its push to the intake happens before its push to the lane), and it
// is queued first. Called with a.mu held.
func (a *core) nextLaned(l *lane) (m *message, j job, resume bool) {
	for {
		if a.intake.Load() != nil {
			a.drain()
		}
		s, ok, again := a.peekLane(l)
		switch {
		case !ok:
			return a.take()
		case again:
			continue
		case a.listed():
			// The list holds work, ordered by the policy's queue: an
			// entry with a deadline joins it to be compared, one at a
			// time, each no later than the lane's next; one without
			// waits for the list to have nothing ready.
			if s.key() != 0 {
				a.laneToList(l, s)
				return a.take()
			}
			if m, j, resume = a.take(); m != nil || resume {
				return m, j, resume
			}
		case !a.laneFirst(s):
			return a.take()
		}
		if m, j := a.takeLane(l, s); m != nil {
			return m, j, false
		}
		// Cancelled on the way (its context ended): its canceller has
		// reported it.
	}
}

// peekLane returns the lane's first entry, if it holds one (ok), and
// reports again if the intake holds anything: it is to be queued first.
// Called with a.mu held.
func (a *core) peekLane(l *lane) (s laneSlot, ok, again bool) {
	s, ok = l.peek()
	return s, ok, ok && a.intake.Load() != nil
}

// laneFirst reports whether lane entry s comes before the plain
// messages and those spilled from them (placePlain) in EDF's order;
// on a tie it does not. Called with a.mu held, with no list.
func (a *core) laneFirst(s laneSlot) bool {
	if a.pn == 0 {
		return true
	}
	b := a.plainFirst()
	if b == nil {
		return true
	}
	k := s.key()
	return k != 0 && (b.dk == 0 || k < b.dk)
}

// takeLane takes s, the lane's first entry, as its message for the
// runner, or returns nil if it was cancelled on the way. Called with
// a.mu held.
func (a *core) takeLane(l *lane, s laneSlot) (*message, job) {
	if s.isVal() {
		v := l.pop(s)
		x := l.vkeep
		l.vkeep = nil
		m, j := v.k.make(l, s.p, v, x)
		m.dk = s.key()
		m.setState(m.takeState(j)) // the runner's alone, as a Tell's below
		a.taken(m)
		return m, j
	}
	l.drop()
	if !s.isMsg() {
		x := l.keep
		l.keep = nil
		m, j := l.tell(s, laneVal{}, x)
		// The Tell is the runner's alone until it has run (no future,
		// context or structure of the actor's refers to it): its state
		// is set without a locked instruction.
		m.setState(m.takeState(j))
		a.taken(m)
		return m, j
	}
	m := (*message)(s.p)
	if j := m.work(); m.state.CompareAndSwap(stQueued, m.takeState(j)) {
		a.taken(m)
		return m, j
	}
	return nil, nil
}

// taken gives m, just taken off the lane to run, its arrival number.
// Called with a.mu held.
func (a *core) taken(m *message) {
	a.newArrivals()
	a.seq++
	m.seq = a.seq
}

// laneToList moves s, the lane's first entry, into the list and the
// policy's queue. Called with a.mu held.
func (a *core) laneToList(l *lane, s laneSlot) {
	v := l.pop(s)
	a.queueFromLane(l.message(s, v))
}

// queueFromLane queues m, just taken off the lane, as the intake's
// drain queues a message (drainList). Called with a.mu held.
func (a *core) queueFromLane(m *message) {
	a.newArrivals()
	if m.state.Load() == stQueued { // not cancelled on the way
		a.place(m)
	}
}

// laneBefore queues, ahead of m, the lane's entries that arrived
// before m and do not come after it in EDF's order: m, from the intake,
// carries in its seq the count of entries pushed to the lane before it
// went there (intakePush). So whatever the runner has queued arrived
// before every lane entry of its deadline, and ties between the two go
// to the queued (nextLaned). Entries that come after m stay: m goes
// first anyway. Called with a.mu held.
func (a *core) laneBefore(l *lane, m *message) {
	o := int64(math.MaxInt64)
	if m.dk != 0 {
		o = m.dk
	}
	for l.popped.Load() < m.seq {
		s, ok := l.peek()
		if !ok || s.order() > o {
			return
		}
		v := l.pop(s)
		a.queueFromLane(l.message(s, v))
	}
}

// expireLane misses the lane's first entries whose deadline is at or
// before now: in EDF's order, the due ones are a prefix. Called with
// a.mu held.
func (a *core) expireLane(l *lane, now time.Time) {
	k := a.sys.dlKey(now)
	for {
		s, ok := l.peek()
		if !ok || s.key() == 0 || s.key() > k {
			return
		}
		v := l.pop(s)
		if m := l.message(s, v); m.state.CompareAndSwap(stQueued, stMissed) {
			a.addFailure(failure{m: m, at: now})
		}
	}
}

// laneKey returns the key of the earliest deadline in the lane l, its
// first entry's, or 0. Called with a.mu held.
func (a *core) laneKey(l *lane) int64 {
	if s, ok := l.peek(); ok {
		return s.key()
	}
	return 0
}

// failLane fails everything in a's lane with ErrStopped: a has stopped.
// Called without a.mu, which it takes to empty the lane.
func (a *core) failLane() {
	l := a.lane.Load()
	if l == nil {
		return
	}
	type entry struct {
		s laneSlot
		v laneVal
	}
	var left []entry
	a.mu.Lock()
	for {
		s, ok := l.peek()
		if !ok {
			break
		}
		left = append(left, entry{s, l.pop(s)})
	}
	a.mu.Unlock()
	for i := range left {
		m := l.message(left[i].s, left[i].v)
		if m.state.CompareAndSwap(stQueued, stStopped) {
			a.fail(m.work(), ErrStopped)
		}
	}
}

// segPool holds segments read through (every slot taken and cleared,
// no link) that their lanes had no room to keep (one spare each), for
// any lane's next new segment; the collector empties it as it does any
// sync.Pool. Without it, each segment of a flood's backlog beyond the
// spare was fresh memory. On one processor, where a flood's sender runs
// a whole time slice before its actor's runner does, and beside
// CPU-bound goroutines, a slice's backlog is over a thousand segments:
// at GOMAXPROCS=1, 23 ns of counting's 144 a message went to the one
// store of push's that writes a slot, and 8% of the profile to zeroing
// new segments (AMD EPYC, 2 vCPU, bench -cpuprofile; that the store's
// time is page faults of fresh memory is inferred: bench gives memory
// back to the OS before each run). With the pool (medians of
// per-process medians, processes alternated; BENCHMARKS.md,
// forty-eighth session): at GOMAXPROCS=1 counting took 111-120 ms
// against 138-150 and fork-join 103-139 against 137-156; beside two
// goroutines that never yield, fork-join 103 against 135 and counting
// 186 against 193; quiet, in whole-process pairs, fork-join 0.81x the
// time and counting 0.94x.
var segPool sync.Pool

// newSeg returns an empty segment, from segPool if it has one.
func newSeg() *laneSeg {
	if x := segPool.Get(); x != nil {
		return x.(*laneSeg)
	}
	return new(laneSeg)
}

// putSeg puts s, an unused new segment, in segPool, if s is not nil.
func putSeg(s *laneSeg) {
	if s != nil {
		segPool.Put(s)
	}
}

// spareSeg makes h, a segment just read through, the lane's spare, and
// puts the spare it had, if any, in segPool. Called by the runner.
func (l *lane) spareSeg(h *laneSeg) {
	if old := l.spare.Swap(h); old != nil {
		segPool.Put(old)
	}
}
