package ready

import (
	"runtime"
	"sync/atomic"
	_ "unsafe" // go:linkname
)

// Yield lets the goroutines waiting for a processor run, for a runner
// lingering for its actor's next message (crisp's linger), and for one
// that yields to the callers a watchdog pass has just woken (crisp's
// between). On a machine
// with processors to spare it is runtime.Gosched; once a Gosched has
// come back slow, it yields to the caller's own processor instead, for
// localRest.
//
// Gosched puts the caller at the back of the run queue that every
// processor takes from: on a quiet machine another processor picks it up
// at once. But goroutines that never yield (CPU-bound code elsewhere in
// the process, preempted every 10 ms) wait in that queue too, and behind
// them each Gosched costs up to one of their time slices. The runtime's
// goyield puts the caller at the back of its own processor's queue
// instead, where the goroutine it waits for usually is (the one it has
// just answered, made runnable there), and it runs again as soon as that
// one has run. Measured on bench's quick suite beside two such
// goroutines (-hogs 2; AMD EPYC, 2 vCPU; BENCHMARKS.md), with this in
// linger, over three sittings: threadring took 0.32-0.49x of its time,
// pingpong 0.48-0.74x, ring-1k 0.63-0.71x, fib 0.58x in two and 1.11x
// in the third; bank 1.06-1.26x, throughput-4x100 1.15-1.24x.
//
// Those two, and a runner's periodic yield to crisp's waiting
// goroutines while the machine is busy and none of them spins (crisp's
// between, once a millisecond of the runner's running: Spaced), go this
// way. A caller spinning for its result (future's spin) yielding to its
// processor did not help beside such goroutines (request-reply 1.7x as
// long; likely because a processor that takes a batch from the global
// queue puts a preempted one in its own queue ahead of the caller:
// BENCHMARKS.md, eighteenth session) and hurt other code on a machine
// busy with crisp's own handlers: the lag of time.AfterFunc's
// callbacks beside ten actors running CPU-bound handlers went from
// 3.5-3.9 ms to 5.5-16 ms at p99 (crispbench timeliness lag, busy load,
// 2 runs each; why was not traced). And a runner stepping aside to
// share the processors (crisp's stepAside) otherwise yields to
// everything, which the global queue is for: with goyield there,
// chameneos beside two CPU-bound goroutines took 1.8-2.2x as long.
func Yield() {
	if cheaprand()&timeMask != 0 {
		if localUntil.Load() != 0 {
			goyield()
		} else {
			runtime.Gosched()
		}
		return
	}
	t := now() // clock seam: how long the scheduler took, in real time on any clock
	if t < localUntil.Load() {
		goyield()
		return
	}
	localUntil.Store(0)
	goschedTimed(t)
}

// YieldTimed is runtime.Gosched, every call timed, for a yield made on a
// quiet machine (Busy false) once for every message of a conversation
// (crisp's yieldFirst): a slow one marks the machine busy, as a slow
// timed Yield does. Yield times one call in timeMask+1, which there
// missed most of the yields that waited out a CPU-bound goroutine's
// time slice: savina-pingpong beside two of them, in a fresh process,
// made 2 to 14 such yields a run, each of 11-20 ms, nearly all before
// the machine was marked busy (BENCHMARKS.md, twenty-fourth session).
// It reads the processor's counter (ticks), cheaper than the runtime's
// clock: the two readings add 18 ns to a Gosched of about 75.
func YieldTimed() { goschedCounted(sliceYield) }

// sliceYield is how long, in ns, a yield that YieldTimed finds slow
// took: longer than one behind crisp's own runners, shorter than one
// behind a CPU-bound goroutine's time slice. On a quiet machine, beside
// 120 actors in conversations (bench's big), 125 of these yields took
// 1.0-1.2 ms in one process and 26 took 5.2-5.3 ms in another; beside
// CPU-bound goroutines they took 11-20 ms (Go preempts those after 10
// ms).
const sliceYield = 8_000_000

// inNanos converts d ticks to ns, at end (now's reading): by the
// counter's rate since the package was initialised, once that is 10 ms
// ago; before, one tick is taken for a ns (a rate of 1 GHz, below any
// processor's counter: a yield seems longer than it was).
func inNanos(d, end int64) int64 {
	el, tk := end-initNanos, counter()-initTicks // clock seam: the counter's rate
	if el < 10_000_000 || tk <= 0 {
		return d
	}
	return int64(float64(d) * float64(el) / float64(tk))
}

// The runtime's clock and the counter at the package's initialisation:
// inNanos measures the counter's rate from there.
var (
	initNanos = nanotime() // clock seam: see inNanos
	initTicks = ticks()    // clock seam: see inNanos
)

// counter reads ticks; tests replace it (SetCounter).
var counter = ticks

// SetCounter makes YieldTimed read its counter from f until the
// returned function puts the processor's back: for tests of code that
// behaves otherwise once a yield was slow. A counter that goes back from
// its reading at the package's initialisation counts in ns, and a yield
// over which it advances more than SlowTicks is slow.
func SetCounter(f func() int64) (restore func()) {
	old := counter
	counter = f
	return func() { counter = old }
}

// SlowTicks is how far a test's counter (SetCounter) advances over a
// slow yield.
const SlowTicks = sliceYield

// Spaced reports whether the caller has run for spacedGap since *since:
// since its run began, or since it last had the processor back after a
// yield (Restart). A zero *since (a runner that has not asked before)
// starts the count now, and Spaced reports false. A runner on a busy
// machine yields no more often than that (see crisp's between): counted
// from the instant of its previous yield instead, a runner that had
// waited out another goroutine's time slice yielded again within 16
// messages of getting the processor back, and one just started within
// 16 of starting; each yield, to either run queue, moves the processor
// on toward its turn to run a preempted CPU-bound goroutine for a whole
// time slice.
func Spaced(since *int64) bool {
	t := now() // clock seam: how long a goroutine has run, in real time on any clock
	if *since == 0 {
		*since = t
		return false
	}
	return t-*since >= spacedGap
}

// Restart starts Spaced's count again: the caller has the processor
// back after a yield.
func Restart(since *int64) { *since = now() } // clock seam: as in Spaced

// spacedGap is how long Spaced lets a goroutine run between two
// yields, in ns.
const spacedGap = 1_000_000

// Busy reports whether a Gosched has lately come back slow, so that
// Yield now yields to the caller's own processor: other code holds the
// processors, and a yield to the global queue waits behind its time
// slices.
func Busy() bool { return localUntil.Load() != 0 }

// SetBusy makes Busy report b until the next Gosched timed by Yield or
// YieldGlobal decides again: for tests of code that behaves otherwise
// on a busy machine.
func SetBusy(b bool) {
	if b {
		localUntil.Store(now() + localRest)
	} else {
		localUntil.Store(0)
	}
}

// Gosched is runtime.Gosched, every call timed by the processor's
// counter (as SpinYield's first yields are): if one comes back slow,
// Busy reports true for localRest. For a goroutine that must yield to
// the global run queue whatever the machine is doing (crisp's runners
// stepping aside for a caller that spins there): while nothing else
// timed a yield, Busy lapsed after localRest on a machine that had
// stayed busy, and those runners then yielded to the global queue every
// 16 messages, each yield waiting out a CPU-bound goroutine's time
// slice. Timed one call in 32 by the clock, as Yield times its own,
// the slow ones went by unseen: a runtime trace of bench's chameneos
// beside two such goroutines showed 15 of these yields, and 17 of
// lingering runners' (Yield), each waiting about 20 ms, in a run of
// 781 ms (forty-first session). A runner steps aside at most once in 16
// messages, so the counter's two readings (18 ns: YieldTimed) cost it about
// a nanosecond a message.
func Gosched() { goschedCounted(slowYield) }

// ParkInstead reports whether a goroutine about to spin for a result
// (future's spin) should park at once instead: a Gosched has lately come
// back slow (Busy). A spinning goroutine yields to the global run queue,
// where it waits behind CPU-bound goroutines' time slices; a parked one
// is made runnable by the resolver in the resolver's processor's next
// slot, ahead of them. One call in timeMask+1, chosen at random, reads
// the clock: once localRest is over it ends Busy and lets the caller
// spin again, and that spin's first yield, timed as every one is
// (SpinYield), decides afresh. While waiters park nothing else may time
// a yield: Busy must not wait for one to end.
func ParkInstead() bool {
	u := localUntil.Load()
	if u == 0 {
		return false
	}
	if cheaprand()&timeMask != 0 {
		return true
	}
	if now() < u { // clock seam: whether localRest is over, in real time on any clock
		return true
	}
	localUntil.CompareAndSwap(u, 0)
	return false
}

// SpinYield is runtime.Gosched for a goroutine spinning for a result.
// The first of a spin's yields (first) is timed, by the processor's
// counter as YieldTimed times its yields: SpinYield reports whether it
// came back slow, having marked the machine busy, and the caller then
// parks. Timed by the clock (44 ns) in one spin in four, as before, a
// spin that waited out a CPU-bound goroutine's time slice went untimed
// three times in four; beside two such goroutines such waits came in
// pairs (a spinning caller's and a lingering runner's) every 20 ms or
// so, among tens of thousands of quick yields, and runtime traces of
// bench's request-reply in fresh processes found the machine busy at
// the fourth pair (96 ms into the run, 206 ms of such waits). Timed by
// the counter, every first yield, it was found busy at the first (26,
// 30 and 38 ms into three runs); on a quiet machine the two readings
// (18 ns: YieldTimed) cost what one in four of the clock's did: request-reply
// took 1.03x (0.88-1.11) the time (BENCHMARKS.md, forty-first session).
func SpinYield(first bool) (slow bool) {
	if !first {
		runtime.Gosched()
		return false
	}
	return goschedCounted(slowYield)
}

// goschedCounted is runtime.Gosched, timed by the processor's counter:
// if it comes back more than slow ns later, it marks the machine busy
// and reports true.
func goschedCounted(slow int64) bool {
	t := counter() // clock seam: how long the scheduler took, in real time on any clock
	runtime.Gosched()
	if d := counter() - t; d > slowTicks { // clock seam: as above
		if end := now(); inNanos(d, end) > slow { // clock seam: as above
			markBusy(end)
			return true
		}
	}
	return false
}

// goschedTimed is runtime.Gosched called at t (now's reading), marking
// the machine busy, and reporting true, if it comes back more than
// slowYield later.
func goschedTimed(t int64) (slow bool) {
	runtime.Gosched()
	if end := now(); end-t > slowYield { // clock seam: how long the scheduler took, in real time on any clock
		markBusy(end)
		return true
	}
	return false
}

// markBusy makes Busy report true until localRest after end, the end
// of a slow yield, unless HoldQuiet holds it off.
func markBusy(end int64) {
	if quietHeld.Load() == 0 {
		localUntil.Store(end + localRest)
	}
}

// quietHeld counts the HoldQuiet calls not yet released.
var quietHeld atomic.Int32

// HoldQuiet makes Busy report false, and keeps slow yields from marking
// the machine busy, until the returned function is called: for tests of
// what crisp does on a quiet machine, which a loaded test machine would
// otherwise turn, at random, into what it does on a busy one.
func HoldQuiet() (release func()) {
	quietHeld.Add(1)
	localUntil.Store(0)
	return func() { quietHeld.Add(-1) }
}

// SetClock makes the package read the time from f, in ns, until the
// returned function puts the runtime's clock back: for tests of code
// that paces itself by Spaced. Not safe while goroutines of other tests
// yield.
func SetClock(f func() int64) (restore func()) {
	old := now
	now = f
	return func() { now = old }
}

// YieldGlobal is runtime.Gosched, which puts the caller in the run queue
// every processor takes from, unless a Gosched (here or in Yield) has
// lately come back slow: then, for localRest, it does nothing. It is for
// a goroutine that yields so that another processor takes it up (the
// watchdog's, after starting a helper on its own processor); behind
// goroutines that never yield, that costs one of their time slices.
func YieldGlobal() {
	t := now() // clock seam: how long the scheduler took, in real time on any clock
	if t < localUntil.Load() {
		return
	}
	localUntil.Store(0)
	goschedTimed(t)
}

// A Gosched that takes longer than slowYield has waited behind other
// code's time slices (on a quiet machine one takes microseconds). Yield
// then stays on its processor for localRest: on a machine that stays
// busy, one yield in localRest waits out a time slice again.
const (
	slowYield = 1_000_000     // ns
	localRest = 1_000_000_000 // ns
)

// Yield reads the clock in one yield in timeMask+1, chosen at random: to
// time its Gosched, or to see whether localRest is over. Tests set it to
// 0.
var timeMask uint32 = 31

// localUntil is the instant (now's) until which Yield yields to its
// processor; 0 while it uses Gosched.
var localUntil atomic.Int64

// now reads the runtime's monotonic clock; tests replace it.
var now = nanotime

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Processor returns the number of the processor (Go's P) the calling
// goroutine runs on, from 0 to GOMAXPROCS-1. The goroutine may move to
// another processor at once: the number is a hint, for spreading data by
// processor, never a guarantee of exclusive use.
func Processor() int {
	p := procPin()
	procUnpin()
	return p
}

// Pin pins the calling goroutine to its processor and returns the
// processor's number: until Unpin, nothing else runs on that processor
// and the goroutine is not preempted, so data kept by processor number
// may be used without atomics. Between the two, the goroutine must not
// block, allocate much or take a lock; pins do not nest.
func Pin() int { return procPin() }

// Unpin ends Pin.
func Unpin() { procUnpin() }

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Rand returns a cheap pseudo-random number (the runtime's own, per
// processor): for choices that only need to be spread, not unguessable.
func Rand() uint32 { return cheaprand() }

//go:linkname cheaprand runtime.cheaprand
func cheaprand() uint32

//go:linkname goyield runtime.goyield
func goyield()
