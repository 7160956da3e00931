package crisp

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/internal/watchdog"
)

// System owns the goroutines of a set of actors: their runners, their
// suspended processes and the one watchdog that notices missed deadlines.
// Make one with NewSystem and end it with Shutdown. All methods are safe
// for concurrent use.
//
// A System keeps no registry of actors. It knows only the actors that
// have work (queued, running or suspended), so that Shutdown can reach
// them; an idle actor is known to nobody but its holders and is garbage
// once they drop it.
//
// The zero System is not usable: Spawn, SpawnGroup, WaitIdle and
// Shutdown panic on one, saying so.
type System struct {
	clk       clock.Clock
	precision time.Duration
	// yieldAlways is WithYieldEvery's n: runners yield every yieldAlways
	// messages whatever waits; 0 if not asked for.
	yieldAlways int
	epoch       time.Time // the clock's reading at NewSystem, origin of deadline keys
	realClock   bool      // clk is clock.New()'s: now reads the monotonic clock only
	log         *slog.Logger
	wd          *watchdog.Watchdog
	onDead      func(DeadLetter) // WithDeadLetters's; nil if none
	// onEscalate is WithEscalation's function, or nil.
	onEscalate func(*EscalationError)
	// lifers are the actors with a lifecycle state (lifecycle.go) that
	// have not ended: Shutdown stops them even when idle, so that their
	// Stopped hooks run, their Done channels close and their watchers
	// hear.
	lifeMu sync.Mutex
	lifers map[*core]struct{}
	obs    Observer      // nil unless WithObserver (observe.go)
	obsSeq atomic.Uint64 // the last observed message's number

	closed atomic.Bool
	// busy counts actors held by a goroutine (running work or about to);
	// WaitIdle waits for it to reach zero. gor counts goroutines started
	// for actors; Shutdown waits for it to reach zero.
	busy atomic.Int64
	gor  atomic.Int64

	// lingering counts runners in their grace period (runner.go's
	// linger); at most maxLinger, the number of processors, do at once.
	_         [64]byte // lingering changes on every idle moment: its own cache line
	lingering atomic.Int32
	maxLinger int32
	_         [56]byte

	// Runners parked in a conversation (convo.go), listed by shard:
	// parkedN counts them; sweep wakes, every parkSweep while sweeping,
	// those parked in a generation before parkGen. sweepMu guards the
	// sweep's starts and stops.
	parkedN  atomic.Int64
	parkGen  atomic.Uint32
	sweeping atomic.Bool
	sweepMu  sync.Mutex
	sweep    *time.Timer

	// waiting counts goroutines in waitFor; notify skips the lock when
	// it is zero.
	waiting atomic.Int32
	waitMu  sync.Mutex    // guards waitCh
	waitCh  chan struct{} // closed and replaced on every notify

	shards [nShards]shard
	spread int         // live shards per processor (liveShardOf)
	procs  []procStack // Procs of ended runners, per processor (newProc)
	ghost  *core       // the actor a kept Proc points to: none, of this system (keepProc)

	shutdownOnce sync.Once
	stopsLeft    atomic.Int64 // live actors the shutdown goroutine, or a stopLater, has still to stop

	hand handState // runners held back for handlers' runners to go on as (handoff.go)

	// The bounded start check (startBound): set at NewSystem if it may
	// be used, anchor is a reading of the processor's counter and the
	// clock's key just after it, and wdOff the watchdog's key of the
	// system's epoch.
	bounded atomic.Bool
	anchor  atomic.Pointer[clockAnchor]
	wdOff   int64
}

// nShards spreads the live-actor lists so that actors starting and
// stopping on different processors rarely share a lock: an actor joins
// one of the lists of its runner's processor (join). It is a
// power of two, at most 16: an actor keeps two shard numbers in four
// bits each (core.flags).
const nShards = 16

var _ [16 - nShards]struct{} // four bits hold a shard number (core.flags)

// shard is one list of live actors: those with work beyond the message
// their runner takes next, suspended processes or pending
// continuations. Shutdown walks them. A held actor with nothing else is
// not listed (see core.enter): a message sent to it lists it
// (listBusy), and its runner stops it if it starts after Shutdown has
// begun.
//
// The list is a slice, each actor holding its index (core.sidx), rather
// than links in every actor: only live actors take room in it, where two
// links would cost every actor, idle ones too, 16 bytes (issue 13: an
// idle actor fits the 128-byte size class). An actor leaves by swapping
// the last one into its place, in O(1) as an unlink did.
type shard struct {
	mu     sync.Mutex // guards live, closed and the live actors' sidx
	live   []*core
	closed bool
	_      [24]byte // keep shards on separate cache lines
	park   parkList // the shard's actors whose runners are parked (convo.go)
	// asks keeps Ask messages their holders have let go, for later Asks
	// to the shard's actors (ask.go). Two, not one: an asker's next Ask
	// often comes before the runner has let go of its last.
	asks [2]atomic.Pointer[message]
	_    [24]byte
}

// Option configures a System at NewSystem. Like ActorOption and
// SendOption it is a plain value made by a function (WithClock,
// WithLogger, WithPrecision, WithEscalation); the zero Option changes
// nothing.
type Option struct{ apply func(*System) }

// WithClock makes the system read time only from clk: deadlines, the
// watchdog, timed gets of its futures. Tests pass a *clock.Mock; inside a
// testing/synctest bubble the default real clock is already virtual.
func WithClock(clk clock.Clock) Option {
	return Option{func(s *System) {
		if clk != nil {
			s.clk = clk
		}
	}}
}

// WithLogger sets where the system reports what no caller can be told.
// The default is slog.Default(). Records carry the context the message
// was sent with (Context), so a handler of the logger sees its values,
// and these attributes: actor, message (its name), deadline (its start
// deadline, when it has one) and, per record:
//
//   - "handler panicked", Error: a Tell's handler panicked (a Call's
//     caller gets a *PanicError instead); panic, stack.
//   - "policy panicked while ordering the message", Error: the same for
//     a *PolicyError; panic, stack.
//   - "deadline missed", Debug: every missed message, Call or Tell;
//     detected, lateness.
//   - "miss hook panicked", Error: the actor's WithMissHook function
//     panicked; panic.
//   - "actor gave up restarting", Error: an actor reached its
//     RestartLimit and nobody (OnEscalate, WithEscalation) hears of it;
//     actor, restarts, panic.
//   - "escalation function panicked", Error: actor, panic.
//   - "message refused", Debug: the actor refused the message at send
//     (it had stopped); error. Its caller's future says so too.
//   - "observer panicked", Error: an Observer (WithObserver) panicked;
//     event (the event's kind), panic.
//   - "policy gave no queue; taking work in arrival order", "policy
//     queue misbehaved; rebuilding it" and "policy queue misbehaved
//     again after a rebuild; taking work in arrival order from now on",
//     Error: a broken policy (actor and fault only).
//
// Messages carry no "crisp:" prefix; to mark crisp's records, pass a
// logger made with With, such as slog.Default().With("lib", "crisp").
func WithLogger(l *slog.Logger) Option {
	return Option{func(s *System) {
		if l != nil {
			s.log = l
		}
	}}
}

// WithPrecision makes the watchdog report misses within microseconds of
// their deadline on the real clock, rather than within the tenth of a
// millisecond or so its timer may be late (on Linux, where it sets a
// timerfd beside Go's timer while the processors are idle; elsewhere a
// Go timer, up to a millisecond or so), by waking margin early and
// spinning until the deadline. It costs up to margin of one core's time
// per wake-up.
//
// While other goroutines hold the processors (the watchdog's spin,
// which yields now and then, comes back late twice in a row), it rests
// for a second and the watchdog wakes at each deadline itself: a
// spinning watchdog that yields to CPU-bound goroutines comes back after
// the deadlines it spun for, where crisp's runners, which check the
// deadline between messages, wake it on time.
func WithPrecision(margin time.Duration) Option {
	return Option{func(s *System) { s.precision = margin }}
}

// WithYieldEvery makes the system's runners yield the processor after
// every n messages they run in a row, whether or not anything of crisp's
// waits for it. By default a runner with a backlog yields only to
// crisp's own goroutines (a new runner, a caller its results woke, the
// watchdog) and every 16 messages while a deadline is watched on the
// real clock: beside goroutines that never yield, any other yield costs
// the runner a whole 10 ms time slice of Go's. While a yield lately took
// over a millisecond (the machine is busy), those yields go to the
// runner's own processor, at most once per millisecond the runner has
// run since it started or last had the processor back, except while a
// caller spins for its result. Other code in the process
// (timers, servers, goroutines of other libraries) then gets a processor
// from a busy actor only by Go's preemption, every 10 ms or so, as from
// any goroutine that computes. Use WithYieldEvery in processes where
// such code must not wait that long behind busy actors; 16 is what
// crisp's runners did before. n must not be negative:
// WithYieldEvery panics if it is. 0 keeps the default.
func WithYieldEvery(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crisp: WithYieldEvery(%d): n must not be negative", n))
	}
	return Option{func(s *System) { s.yieldAlways = n }}
}

// NewSystem starts a system: it starts the watchdog goroutine, which
// Shutdown ends.
func NewSystem(opts ...Option) *System {
	s := &System{clk: clock.New(), log: slog.Default()}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(s)
		}
	}
	s.epoch = s.clk.Now()
	s.realClock = reflect.TypeOf(s.clk) == realClockType
	s.maxLinger = int32(runtime.GOMAXPROCS(0))
	s.spread = liveSpread(runtime.GOMAXPROCS(0))
	s.procs = newProcStacks()
	s.hand.slots = newHandSlots()
	s.ghost = &core{sys: s}
	s.wd = watchdog.New(s.clk, watchdog.AfterBatch(s.notify), watchdog.Precision(s.precision))
	s.wdOff = int64(s.epoch.Sub(s.wd.Epoch()))
	s.bounded.Store(s.realClock && ready.HasCounter && !fakeNow(s.epoch))
	return s
}

// realClockType is the type of clock.New()'s clock.
var realClockType = reflect.TypeOf(clock.New())

// now reads the system's clock for the runtime's own use: deadlines from
// Within and the check that a message starts before its deadline. On the
// real clock it reads only the monotonic clock, as the time elapsed since
// NewSystem (time.Now reads the wall clock too, and costs half as much
// again). The instant it returns has a monotonic reading, so every
// comparison with a deadline from time.Now or Within is on the monotonic
// clock; a deadline given as a bare wall-clock time is compared with the
// wall clock as it stood at NewSystem, advanced by monotonic time, so a
// later step of the machine's wall clock moves no deadline.
func (s *System) now() time.Time {
	if s.realClock {
		// time.Since, not s.clk.Since: this is the system's clock (the
		// real one), read directly because the call through the
		// interface adds frames that no longer fit the 2 KiB stack a new
		// runner starts with when its handler sends with a deadline, and
		// every hop paid for a stack copy (threadring with deadlines 4x
		// slower).
		return s.epoch.Add(time.Since(s.epoch)) // clock seam: the real clock, read directly (threadring with deadlines 4x slower through the interface)
	}
	return s.clk.Now()
}

// since returns the clock's reading as a key (key): now's, without
// making the time.Time. The real clock's, read as now reads it, is
// exactly the key of the time now would return.
func (s *System) since() int64 {
	if s.realClock {
		return int64(time.Since(s.epoch)) // clock seam: the real clock, read directly, as now reads it
	}
	return s.key(s.clk.Now())
}

// check panics, naming op, unless s was made by NewSystem: a zero System
// has no clock and no watchdog.
func (s *System) check(op string) {
	if s == nil {
		panic("crisp: " + op + " on a nil system")
	}
	if s.wd == nil {
		panic("crisp: " + op + " on a System not made by NewSystem")
	}
}

// Clock returns the clock the system reads time from.
func (s *System) Clock() clock.Clock { return s.clk }

// WaitIdle returns when the system is idle: no handler is running, no
// message or resumed process is ready, and no deadline that has passed
// waits to be reported. Suspended processes whose awaited future or
// condition is still unresolved do not count. It returns ctx.Err() if
// ctx ends first.
//
// With a mock clock, advance time only while the system is idle: call
// Add, then WaitIdle, then look at the results.
func (s *System) WaitIdle(ctx context.Context) error {
	s.check("WaitIdle")
	return s.waitFor(ctx, s.waitIdle, nil)
}

// waitIdle is idle for WaitIdle: a runner parked where every actor held
// is parked (a lone actor answering its caller on a busy machine:
// parkLinger) is dismissed first, so that WaitIdle does not wait for the
// sweep. waitFor counts its caller in s.waiting before it calls this,
// and such a runner does not park while s.waiting is above zero: one of
// the two sees the other.
func (s *System) waitIdle() bool {
	if s.parkedN.Load() > 0 {
		s.parkIdle()
	}
	return s.idle()
}

// idle reads the watchdog before the busy count: a batch the watchdog is
// expiring makes its targets busy before it counts as done, so read in
// this order the two cannot both look idle in the middle of one.
func (s *System) idle() bool {
	return s.wd.Idle(s.clk.Now()) && s.busy.Load() == 0
}

// Shutdown stops every actor and the watchdog, and resolves every
// outstanding future: queued messages with ErrStopped; a running handler
// finishes and delivers its own result; a suspended process is ended
// (its deferred calls run) and its future resolves with ErrStopped. It
// returns once every goroutine the system started has exited, or with
// ctx.Err() if that takes longer than ctx allows (a handler that does
// not return, or a policy queue or miss hook that blocks); those
// goroutines are then the caller's to worry about. Messages sent after
// Shutdown has begun fail with ErrStopped. Calling Shutdown again waits
// in the same way and returns nil when done.
//
// A context that has ended, or ends, counts only while something is
// outstanding: a handler running or an actor held, a suspended process,
// queued work, a batch of misses being reported. On an idle system
// Shutdown returns nil even with an ended context: what is left to wait
// for is goroutines exiting, which run no user code.
func (s *System) Shutdown(ctx context.Context) error {
	s.check("Shutdown")
	s.shutdownOnce.Do(s.beginShutdown)
	return s.waitFor(ctx, func() bool { return s.gor.Load() == 0 }, s.outstanding)
}

// beginShutdown closes the system to new work and starts the goroutine
// that stops the live actors and the watchdog. Stopping takes each
// actor's lock, under which the actor's policy queue (user code) runs,
// and waits for the watchdog, which may be in a miss hook: none of that
// may keep Shutdown from returning when its context ends, so none of it
// runs on the caller's goroutine.
func (s *System) beginShutdown() {
	s.closed.Store(true)
	s.dismissParked()
	var live []*core
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.closed = true
		live = append(live, sh.live...)
		sh.mu.Unlock()
	}
	live = append(live, s.lifersNow()...)
	s.stopsLeft.Add(int64(len(live))) // Add: a stopLater may have counted one already
	s.gor.Add(1)
	go s.stopAll(live)
}

// stopAll is the body of the shutdown goroutine.
func (s *System) stopAll(live []*core) {
	defer s.goroutineDone()
	s.stopHanded()
	for _, a := range live {
		a.stop()
		s.stopsLeft.Add(-1)
	}
	s.wd.Stop()
}

// outstanding reports whether a shutting-down system still has work that
// may take time or run user code: actors to stop, an actor held, a batch
// of misses being reported. Busy is read first: it needs no lock.
func (s *System) outstanding() bool {
	return s.busy.Load() != 0 || s.stopsLeft.Load() != 0 || !s.wd.Idle(s.clk.Now())
}

// waitFor blocks until cond holds or ctx ends. cond is re-checked after
// every notify. A waiter registers before checking and a notifier changes
// state before looking for waiters, so no wake-up is lost. If pending is
// not nil, an ended ctx counts only while pending reports true: otherwise
// waitFor goes on waiting for cond.
func (s *System) waitFor(ctx context.Context, cond, pending func() bool) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for {
		s.waitMu.Lock()
		if s.waitCh == nil {
			s.waitCh = make(chan struct{})
		}
		ch := s.waitCh
		s.waitMu.Unlock()
		if cond() {
			return nil
		}
		if ctx.Err() != nil && pending != nil && !pending() {
			<-ch // only exits are left: each notifies as it ends
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if pending == nil || pending() {
				return ctx.Err()
			}
		}
	}
}

// notify wakes every waitFor so it re-checks its condition.
func (s *System) notify() {
	if s.waiting.Load() == 0 {
		return
	}
	s.waitMu.Lock()
	if s.waitCh != nil {
		close(s.waitCh)
		s.waitCh = nil
	}
	s.waitMu.Unlock()
}

func (s *System) busyDone() {
	n := s.busy.Add(-1)
	if n == 0 {
		s.notify()
	}
	if pn := s.parkedN.Load(); pn > 0 && n <= pn {
		s.parkIdle()
	}
}

func (s *System) goroutineDone() {
	if s.gor.Add(-1) == 0 {
		s.notify()
	}
}

// join puts a in the live list of one of the calling processor's
// shards (liveShardOf), which becomes a's live shard until it next
// joins, unless a is listed already, or held is true and no goroutine
// holds a (fActive). It reports false, listing nothing, if the system is
// shutting down.
//
// An actor's fLive and its shard number (core.flags) change together,
// by compare-and-swap, under the lock of the shard they name, as the
// actor joins or leaves that shard's list: so fLive says whether the
// actor is in the list its flags name, and a sender may list the actor
// it found held (listBusy) without the actor's lock. A compare-and-swap
// that sets fLive with held true, and one that clears it (leave), each
// see fActive in the same word: an actor is never listed by a sender
// once let go, nor taken out of its list once held again.
//
// The processor's, not one fixed per actor: an actor joins where it is
// listed (a sender's processor, or its runner's) and leaves when its
// runner lets it go, on the same processor as a rule, so the shard's
// lock and list stay in that processor's cache. With the actor's shard,
// chosen at random at Spawn, every activation (when every runner
// joined) took a lock both processors wrote: ring-100k, whose
// actors each wake once a lap, took 2.06-3.11x phony's time, 1.80 with
// one shard per processor and 1.68 with no list at all (throwaway
// builds). One shard per processor put the few actors of a flood that
// are live at once in one list, and throughput-4x100 went 1.74 ->
// 1.90x protoactor's time: so a processor has several shards, and an
// actor's shard at Spawn picks one of them.
func (s *System) join(a *core, held bool) bool {
	i := liveShardOf(ready.Processor(), a.shard(), s.spread)
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for {
		f := a.flags.Load()
		if f&fLive != 0 || held && f&fActive == 0 {
			return true
		}
		if sh.closed {
			return false
		}
		if a.flags.CompareAndSwap(f, f&^(shardMask<<liveShift)|uint32(i)<<liveShift|fLive) {
			break
		}
	}
	a.sidx = int32(len(sh.live))
	sh.live = append(sh.live, a)
	return true
}

// liveSpread returns how many shards each of procs processors has for
// its live lists: nShards shared out, at least one.
func liveSpread(procs int) int { return nShards / min(max(procs, 1), nShards) }

// liveShardOf returns the live shard of an actor whose shard at Spawn is
// r, joining on processor proc: the processor's spread shards follow
// one another, and r picks one of them.
func liveShardOf(proc int, r uint8, spread int) uint8 {
	return uint8((proc*spread + int(r)%spread) % nShards)
}

// leave takes a out of its shard's live list, moving the last actor of
// the list into its place, if a is listed and no goroutine holds it (see
// join): an actor taken again meanwhile stays listed, for its new holder
// to take out when it lets the actor go.
func (s *System) leave(a *core) {
	for {
		f := a.flags.Load()
		if f&fLive == 0 || f&fActive != 0 {
			return
		}
		n := uint8(f >> liveShift)
		sh := &s.shards[n]
		sh.mu.Lock()
		// Listed in sh (fLive and the shard number change only together,
		// under the lock of the shard they name: see join), a stays there
		// while the lock is held, and so does its index.
		if f = a.flags.Load(); f&fLive == 0 || f&fActive != 0 || uint8(f>>liveShift) != n {
			sh.mu.Unlock()
			continue // the loop's first test returns if a was taken again
		}
		i := int(a.sidx)
		for !a.flags.CompareAndSwap(f, f&^fLive) {
			if f = a.flags.Load(); f&fActive != 0 { // taken again: it stays
				sh.mu.Unlock()
				return
			}
		}
		// From here a may join another shard's list, which writes its
		// index: only the list and the actor moved are touched.
		if last := len(sh.live) - 1; i <= last && sh.live[i] == a {
			if moved := sh.live[last]; moved != a {
				sh.live[i], moved.sidx = moved, int32(i)
			}
			sh.live[last] = nil // drop the reference so the actor can be collected
			sh.live = sh.live[:last]
			if c := cap(sh.live); c > 64 && last < c/4 {
				// A burst of live actors has passed: give its room back.
				sh.live = append(make([]*core, 0, c/2), sh.live...)
			}
		}
		sh.mu.Unlock()
		return
	}
}
