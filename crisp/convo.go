package crisp

import (
	"sync"
	"time"

	"github.com/crisprt/crisp/internal/ready"
)

// A runner out of work lingers for a few yields (linger) in case its
// actor's next message comes at once, as it does in a conversation:
// request, reply, request. Each yield is a trip through Go's scheduler,
// and beside code that never yields every 61st such trip runs that code
// for a time slice (a runtime trace of a conversation beside two such
// goroutines put 97.6% of the runners' scheduling delay after linger's
// yields). An actor whose linger found work is in a conversation
// (fConvo); its runner, out of work after a few messages (parkBatch)
// while another actor is held, parks instead: it keeps the actor,
// counted busy, and waits on its Proc's spot, and the next sender wakes
// it into the sender's own processor, with no trip through the
// scheduler's queues and no new goroutine (threadring's hops were 37%
// goroutine start and exit). On a quiet machine it first yields once
// and looks, as cheap there as parking and better for a partner on
// another processor (ready.Busy tells the two machines apart;
// yieldFirst). In a pair, after a Tell, it does neither on either
// machine: it lets its actor go, for the partner's next Tell to hand off
// (parkLinger).
//
// The park is the brief, bounded grace period the Actor documentation
// allows an idle actor, and never more. A parked runner is woken, and
// goes on as a lingering one would, when:
//   - work arrives (start, called by senders and resumed processes);
//   - the actor is stopped (stop) or the system shuts down;
//   - every actor the system holds is parked (busyDone, parkLinger):
//     nobody is left to send, the system is going idle (but a lone
//     actor's runner that answered a caller beside code that never
//     yields parks for that caller's next Call: parkLinger);
//   - a goroutine waits for the system to go idle (WaitIdle), and every
//     actor held is parked;
//   - it has been parked for parkSweep to 2*parkSweep of real time
//     (sweepParked): a partner that went quiet while the rest of the
//     system stays busy does not keep it. Real time, not the system's
//     clock: the bound is on a goroutine kept, and a mock clock may
//     never move.
//
// Woken with no work, it clears fConvo and lets the actor go. Actors
// with an idle timeout, lifecycle hooks or supervision, and groups,
// never park: their runners have duties (timers, hooks, workers) that a
// park would delay.

// parkSweep is the period of the sweep that dismisses runners parked
// since the sweep before: no runner stays parked longer than twice this
// (real time).
const parkSweep = time.Millisecond

// parkBatch is the most messages a runner may have run since it last
// ran out of work and still park. One that ran more serves a flood or a
// convoy (in a ring with several tokens, they catch up with each other
// and travel together): its actor's work comes in batches, which a
// runner woken at each message's send would break up, starting more
// runners than it saves. At bench's full size, parking after any
// activation made ring-1k 1.74-1.82 -> 2.09-2.26x phony's time (four
// sittings) and started 2.7-3.1 times as many runners; with this bound
// ring-1k is as before (1.68-1.69) and threadring keeps its gain (2.03
// -> 1.33) (BENCHMARKS.md, fifteenth session).
const parkBatch = 4

// busyOthers bounds, beside code that never yields (ready.Busy), the
// other actors held and not parked, per processor, for a runner to
// park: with more, it lingers as before. Beside two hogs, bench's big
// (120 actors in conversations at once) took 3.4 times as long with
// every such runner parking (594 -> 1,995 ms; 368 ms with this bound at
// 1 per processor, 480 ms at 4; in the final A/B, at 2, 585 -> 520 ms),
// while threadring, pingpong and savina-pingpong kept their gains (4
// alternations; why so many parked runners hurt there was not traced).
// On a quiet machine, where the runner yields once before parking, it
// is not applied: big at full size was within its spread (two
// sittings: 1.35-1.37x phony without parking, 1.13-1.52x with).
const busyOthers = 2

// parked is the part of coopState a parking runner uses, guarded by the
// lock of its shard's parkList.
type parked struct {
	p          *Proc  // the parked runner; nil while none is
	prev, next *core  // links in the system's list of parked actors
	gen        uint32 // the sweep generation it parked in
}

// mayPark reports whether a's runner may park once its linger finds
// work. Called with a.mu held.
func (a *core) mayPark() bool {
	return a.cfg.grp == nil && a.life() == nil && a.flags.Load()&(fIdle|fLife|fStopped) == 0
}

// parkLinger is linger for an actor in a conversation: it parks p, the
// runner of a, until one of the events above, and returns the grace
// left: runnerGrace if work came, 0 otherwise. Where no other actor is
// held, the partner is not an actor (a goroutine calling and getting),
// or there is none: it lingers as usual, with grace; but beside code
// that never yields (ready.Busy), after answering a Call with no other
// actor held or parked, it parks, though every actor held is then
// parked: the caller is not an actor and will likely call again. There a
// caller parks rather than spins (future's spin), and its next Call
// wakes the runner into its processor's next slot, where it runs as soon
// as the caller parks, in the caller's time slice; the runner's answer
// wakes the caller into that slot in turn: no trip through a run queue.
// A lingering runner instead yields to its processor's queue, and each
// trip back moves the processor on toward its turn to run a preempted
// CPU-bound goroutine for a whole time slice: bench's request-reply
// (quick, beside two such goroutines, 8 alternations) took 431 ms with
// callers parking and runners lingering, 116 ms with runners exiting
// (each Call then started a goroutine in that slot), and parked runners
// took 0.71 (0.67-0.75; 4 pairs, all suite) of exiting ones' time
// (BENCHMARKS.md, fortieth session). Such a park does not keep WaitIdle
// waiting for the sweep: the runner does not park while a goroutine
// waits for the system to go idle, and WaitIdle dismisses one that
// parked before it looked (System.waitIdle). After a Tell the partner is
// an actor whose runner has exited, and lingering stays: exiting there
// too made pingpong 59 -> 76 ms.
//
// After a Tell with one other actor held (a pair: its partner), it
// neither yields nor parks, on any machine: it lets its actor go, and the
// partner's next Tell, from a handler, finds the actor idle and hands off
// (handoff.go), so the two run on one goroutine. Parked beside code that
// never yields, each message of the pair woke the other's runner, and
// the wake-up waited for a processor (a runtime trace of bench's pingpong
// beside two hogs: 452 ms of scheduling delay after those wake-ups, in a
// run of 810 ms; whole-process pairs: 0.64x the time). On a quiet machine
// the two runners took turns through the scheduler's queue, one yield
// per message (yieldFirst; runtime traces of bench's pingpong, -reps 1:
// 289,052 goroutine state changes in the process, 1,675 with the
// let-go), and letting go there made pingpong 0.83-0.84x the time, the
// rest within spread. Letting go after any Tell, beside more actors too,
// made big 1.17x beside two hogs (BENCHMARKS.md, thirty-fourth and
// thirty-fifth sessions). c is a's coopState, made by the caller under
// a.mu; parkLinger is called without it.
func (a *core) parkLinger(p *Proc, c *coopState, grace int) int {
	s := a.sys
	others := s.busy.Load() - s.parkedN.Load() - 1 // held, not parked, not a
	// alone: a lone actor that answered a caller, beside code that never
	// yields.
	alone := false
	switch {
	case others <= 0:
		if !(ready.Busy() && p.answered && s.parkedN.Load() == 0) {
			return a.linger(grace)
		}
		alone = true
	case !p.answered && others == 1: // a pair, after a Tell: let go, for a hand-off
		a.flags.And(^uint32(fConvo))
		return 0
	case !ready.Busy():
		if a.yieldFirst() {
			return runnerGrace
		}
	case others > busyOthers*int64(s.maxLinger):
		return a.linger(grace)
	}
	pl := &s.shards[a.shard()].park
	pl.mu.Lock()
	// parkedN goes up before busy is read, and busyDone reads parkedN
	// after busy goes down: one of the two sees the other. The list's
	// lock is held until a is in it, so that a dismissal that saw the
	// count finds it there.
	n := s.parkedN.Add(1)
	// Every actor held would be parked: nobody would wake them, unless
	// the caller a lone actor answered does, as it likely will. It parks
	// then, unless a goroutine waits for the system to go idle (WaitIdle
	// dismisses what parked before it looked: waitIdle).
	idle := s.busy.Load() <= n
	if alone {
		idle = s.waiting.Load() > 0
	}
	if a.arrived() || idle || s.closed.Load() {
		s.parkedN.Add(-1)
		pl.mu.Unlock()
		if a.arrived() {
			return runnerGrace
		}
		s.dismissParked() // every held actor would be parked: nobody would wake them
		return a.linger(grace)
	}
	p.wake.Expect()
	c.park.p = p
	c.park.gen = s.parkGen.Load()
	pl.push(a)
	a.flags.Or(fParked)
	pl.mu.Unlock()
	if !s.sweeping.Load() {
		s.armSweep()
	}
	// fParked is set before these are read, and start, stop and
	// beginShutdown read it after making them true: one side wakes.
	if a.arrived() || a.stopped() || s.closed.Load() {
		s.wakeParked(a)
	}
	p.wake.Wait()
	if a.arrived() {
		return runnerGrace
	}
	a.flags.And(^uint32(fConvo))
	return 0
}

// yieldFirst is, on a quiet machine, a linger of one yield before
// parking: it reports whether work came. A partner on another processor
// often answers within the yield (parking at once made quiet
// conversations 25-50% slower). It follows linger's rule for lingers in
// vain, and counts in the same count: a runner whose yields found
// nothing yields before parking only once in 2^v times, v being how many
// in a row were in vain, so that an actor whose partner answers only
// after a while does not pay a trip through the global run queue for
// every message. (Against the yield without the count, in two sittings
// of parking after any activation, no difference showed: ring-1k 2.09
// and 2.14x phony, big 1.49 and 1.50.)
//
// Its yield is timed, every one (ready.YieldTimed): beside CPU-bound
// goroutines some of these yields wait out their time slices (11-20 ms
// each in savina-pingpong beside two), and the first such one marks the
// machine busy, after which runners park without yielding first. Timed
// one in 32, as ready.Yield times its yields, they went on for the whole
// run in some processes and not in others: in fresh processes beside
// two hogs savina-pingpong took 67-897 ms a run (median 150-160 in two
// sittings of 10), and 27-96 (median 66.5 in both) with every one timed
// (BENCHMARKS.md, twenty-fourth session).
func (a *core) yieldFirst() bool {
	v, try := a.tryLinger()
	if !try {
		return false
	}
	ready.YieldTimed()
	found := a.arrived()
	a.countLinger(v, found)
	return found
}

// parkList is one shard's list of actors whose runners are parked, in
// the order they parked, linked through their coopStates. One list per
// shard, not one for the system, so that runners on different
// processors park and wake without sharing one lock, which Go may
// preempt its holder in. Measured, it made no difference that the
// spread could show: bench's big beside two hogs, where a single lock
// was suspected of the slowdown that busyOthers now avoids, took 1,250
// ms with one list and 1,800 ms with these (5 alternations; the cell
// varies 3x run to run).
type parkList struct {
	mu         sync.Mutex
	head, tail *core
}

// push puts a at the tail. Called with mu held.
func (l *parkList) push(a *core) {
	pk := &a.cs().park
	pk.prev, pk.next = l.tail, nil
	if l.tail != nil {
		l.tail.cs().park.next = a
	} else {
		l.head = a
	}
	l.tail = a
}

// wakeParked wakes a's runner if it is parked.
func (s *System) wakeParked(a *core) {
	if a.flags.Load()&fParked == 0 {
		return
	}
	pl := &s.shards[a.shard()].park
	pl.mu.Lock()
	if a.flags.Load()&fParked != 0 {
		s.unpark(pl, a)
	}
	pl.mu.Unlock()
}

// unpark takes a out of its list and signals its parked runner. Called
// with l.mu held.
func (s *System) unpark(l *parkList, a *core) {
	pk := &a.cs().park
	if pk.prev != nil {
		pk.prev.cs().park.next = pk.next
	} else {
		l.head = pk.next
	}
	if pk.next != nil {
		pk.next.cs().park.prev = pk.prev
	} else {
		l.tail = pk.prev
	}
	p := pk.p
	*pk = parked{}
	a.flags.And(^uint32(fParked))
	s.parkedN.Add(-1)
	p.wake.Signal()
}

// dismissParked wakes every parked runner, and stops the sweep once
// none is left (an idle system keeps no timer).
func (s *System) dismissParked() {
	for i := range s.shards {
		pl := &s.shards[i].park
		pl.mu.Lock()
		for pl.head != nil {
			s.unpark(pl, pl.head)
		}
		pl.mu.Unlock()
	}
	s.sweepMu.Lock()
	if s.sweeping.Load() {
		s.sweeping.Store(false)
		s.sweep.Stop()
		s.rearm()
	}
	s.sweepMu.Unlock()
}

// armSweep starts the sweep, unless it runs already.
func (s *System) armSweep() {
	s.sweepMu.Lock()
	if !s.sweeping.Load() {
		s.sweeping.Store(true)
		if s.sweep == nil {
			s.sweep = time.AfterFunc(parkSweep, s.sweepParked) // clock seam: a bound on goroutines kept, a real resource: real time, even beside a mock clock that may never move (in a synctest bubble, the bubble's time)
		} else {
			s.sweep.Reset(parkSweep)
		}
	}
	s.sweepMu.Unlock()
}

// rearm starts the sweep again, after it was marked stopped, if a
// runner has parked meanwhile: a parker counts itself (parkedN) before
// it looks at sweeping, and the sweep is marked stopped before parkedN
// is read here, so one of the two starts it. Called with sweepMu held.
func (s *System) rearm() {
	if s.parkedN.Load() > 0 {
		s.sweeping.Store(true)
		s.sweep.Reset(parkSweep)
	}
}

// sweepParked runs every parkSweep while runners are parked: it wakes
// those that parked before the last sweep.
func (s *System) sweepParked() {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	if !s.sweeping.Load() {
		return // stopped after it fired
	}
	gen := s.parkGen.Load()
	for i := range s.shards {
		pl := &s.shards[i].park
		pl.mu.Lock()
		for pl.head != nil && pl.head.cs().park.gen != gen {
			s.unpark(pl, pl.head)
		}
		pl.mu.Unlock()
	}
	s.parkGen.Add(1)
	s.sweeping.Store(false)
	s.rearm()
}

// parkIdle wakes every parked runner if every actor the system holds is
// parked: called by busyDone once busy is no more than parkedN.
func (s *System) parkIdle() {
	if s.busy.Load() <= s.parkedN.Load() {
		s.dismissParked()
	}
}
