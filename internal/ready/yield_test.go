package ready

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// turnsTaken runs a goroutine that never yields beside the caller on one
// processor, and reports in how many of 10 calls of yield it ran.
func turnsTaken(yield func()) int {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var spins, stop atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for stop.Load() == 0 {
			spins.Add(1)
		}
	}()
	// Let it start, and be preempted into the global run queue: the
	// caller runs again only then.
	for spins.Load() == 0 {
		runtime.Gosched()
	}
	ran := 0
	for range 10 {
		before := spins.Load()
		yield()
		if spins.Load() != before {
			ran++
		}
	}
	stop.Store(1)
	<-done
	return ran
}

// quiet makes Yield start out on a machine it has not found busy, and
// time every yield; and puts both back after the test.
func quiet(t *testing.T) {
	localUntil.Store(0)
	mask := timeMask
	timeMask = 0
	t.Cleanup(func() {
		localUntil.Store(0)
		timeMask = mask
	})
}

func TestYieldStopsWaitingBehindCodeThatNeverYields(t *testing.T) {
	quiet(t)
	// The first yield waits out the CPU-bound goroutine's time slice;
	// after it, the runtime takes a goroutine from the global queue
	// first only once in 61 schedules: at most a few of the ten yields
	// may let it in.
	if n := turnsTaken(Yield); n > 3 {
		t.Errorf("the CPU-bound goroutine ran in %d of 10 yields", n)
	}
	if localUntil.Load() <= now() {
		t.Error("a slow yield did not make Yield stay on its processor")
	}
	// What Yield falls back from: each Gosched waits out a time slice.
	if n := turnsTaken(runtime.Gosched); n < 8 {
		t.Errorf("it ran in %d of 10 calls of runtime.Gosched: the test no longer tells them apart", n)
	}
}

func TestYieldStaysLocalForTheRestAfterASlowYield(t *testing.T) {
	quiet(t)
	defer func(f func() int64) { now = f }(now)
	var clock atomic.Int64
	now = clock.Load
	step := func(d int64) func() int64 {
		return func() int64 { return clock.Add(d) }
	}

	now = step(slowYield / 4) // each reading a quarter of slowYield on
	Yield()
	if localUntil.Load() != 0 || Busy() {
		t.Fatal("a quick yield made Yield stay local")
	}
	now = step(slowYield + 1) // more than slowYield between the two readings
	Yield()
	end := clock.Load()
	if got := localUntil.Load(); got != end+localRest {
		t.Fatalf("after a slow yield, local until %d; want %d", got, end+localRest)
	}
	if !Busy() {
		t.Fatal("after a slow yield, Busy reports a quiet machine")
	}
	now = clock.Load
	clock.Store(end + localRest - 1)
	Yield() // local: reads the clock once
	if localUntil.Load() != end+localRest {
		t.Fatal("a local yield changed the rest")
	}
	clock.Store(end + localRest)
	Yield() // the rest is over: Gosched, quick
	if got := localUntil.Load(); got != 0 {
		t.Fatalf("after the rest and a quick yield, local until %d; want 0 (Gosched again)", got)
	}
	if Busy() {
		t.Fatal("after the rest and a quick yield, Busy still reports a busy machine")
	}
}

func TestYieldStaysLocalWhenItDoesNotReadTheClock(t *testing.T) {
	t.Cleanup(func() { localUntil.Store(0) })
	// With the clock read in one yield in 32, the others go by
	// localUntil alone.
	localUntil.Store(math.MaxInt64)
	if n := turnsTaken(Yield); n > 2 {
		t.Errorf("resting, Yield let the CPU-bound goroutine run in %d of 10 yields", n)
	}
}

func TestYieldGlobalStopsYieldingBehindCodeThatNeverYields(t *testing.T) {
	quiet(t)
	// The first yield waits out the CPU-bound goroutine's time slice;
	// the others do not yield at all.
	if n := turnsTaken(YieldGlobal); n > 2 {
		t.Errorf("the CPU-bound goroutine ran in %d of 10 yields", n)
	}
	if localUntil.Load() <= now() {
		t.Error("a slow yield did not make YieldGlobal rest")
	}
}

func TestYieldGlobalRestsAfterASlowYield(t *testing.T) {
	quiet(t)
	defer func(f func() int64) { now = f }(now)
	var clock, reads atomic.Int64
	step := func(d int64) func() int64 {
		return func() int64 { reads.Add(1); return clock.Add(d) }
	}
	now = step(slowYield / 4)
	YieldGlobal()
	if localUntil.Load() != 0 {
		t.Fatal("a quick yield made YieldGlobal rest")
	}
	now = step(slowYield + 1)
	YieldGlobal()
	end := clock.Load()
	if got := localUntil.Load(); got != end+localRest {
		t.Fatalf("after a slow yield, resting until %d; want %d", got, end+localRest)
	}
	now = step(0)
	clock.Store(end + localRest - 1)
	reads.Store(0)
	YieldGlobal()
	if reads.Load() != 1 {
		t.Fatalf("resting, YieldGlobal read the clock %d times; want once (no yield to time)", reads.Load())
	}
	clock.Store(end + localRest)
	reads.Store(0)
	YieldGlobal() // the rest is over: Gosched, timed, quick
	if reads.Load() != 2 || localUntil.Load() != 0 {
		t.Fatalf("after the rest: %d readings, resting until %d; want 2 and 0", reads.Load(), localUntil.Load())
	}
}

func TestSpacedCountsFromTheRunsStartAndFromEachRestart(t *testing.T) {
	defer func(f func() int64) { now = f }(now)
	var clock atomic.Int64
	now = clock.Load
	clock.Store(5 * spacedGap)
	var since int64
	if Spaced(&since) {
		t.Fatal("a runner that has just started may yield")
	}
	if since != clock.Load() {
		t.Fatalf("the count starts at %d, not at the first call, %d", since, clock.Load())
	}
	// dueAfterTheGap checks that no yield is due before the runner has
	// run for the gap, and that one is once it has.
	dueAfterTheGap := func(since *int64, counted string) {
		t.Helper()
		clock.Add(spacedGap - 1)
		if Spaced(since) {
			t.Fatalf("a yield before the runner has run for the gap %s", counted)
		}
		clock.Add(1)
		if !Spaced(since) {
			t.Fatalf("no yield once the runner has run for the gap %s", counted)
		}
	}
	dueAfterTheGap(&since, "since it started")
	clock.Add(10 * spacedGap) // the yield waited out another goroutine's time slice
	Restart(&since)
	dueAfterTheGap(&since, "since it had the processor back")
}

// stepCounter returns a maker of test counters (SetCounter) that count
// in ns, below the counter's reading at initialisation: step(d) advances
// d a reading. reads counts the readings of all it makes.
func stepCounter() (step func(d int64) func() int64, reads *atomic.Int64) {
	var c atomic.Int64
	c.Store(-1 << 62)
	reads = new(atomic.Int64)
	return func(d int64) func() int64 {
		return func() int64 { reads.Add(1); return c.Add(d) }
	}, reads
}

// Every Gosched is timed, by the counter.
func TestGoschedMarksTheMachineBusyWhenSlow(t *testing.T) {
	quiet(t)
	step, reads := stepCounter()
	defer SetCounter(step(1000))() // a microsecond
	for range 100 {
		Gosched()
	}
	if got := reads.Load(); got != 200 {
		t.Fatalf("100 quick calls read the counter %d times; want 2 each", got)
	}
	if Busy() {
		t.Fatal("a quick Gosched marked the machine busy")
	}
	SetCounter(step(SlowTicks + 1))
	Gosched()
	if !Busy() {
		t.Fatal("a slow Gosched did not mark the machine busy")
	}
	if got, want := localUntil.Load(), now()+localRest; got > want || got < want-int64(time.Second/10) {
		t.Fatalf("busy until %d; want about %d (localRest after the slow Gosched)", got, want)
	}
}

func TestHoldQuietKeepsSlowYieldsFromMarkingTheMachineBusy(t *testing.T) {
	quiet(t)
	defer func(f func() int64) { now = f }(now)
	var clock atomic.Int64
	now = func() int64 { return clock.Add(slowYield + 1) } // every timed yield slow
	var c atomic.Int64
	c.Store(-1 << 62)
	defer SetCounter(func() int64 { return c.Add(SlowTicks + 1) })() // and every counted one
	SetBusy(true)
	release := HoldQuiet()
	if Busy() {
		t.Fatal("busy while held quiet")
	}
	Gosched()
	SpinYield(true)
	YieldTimed()
	YieldGlobal()
	Yield()
	if Busy() {
		t.Fatal("a slow yield marked the machine busy while it was held quiet")
	}
	release()
	Gosched()
	if !Busy() {
		t.Fatal("a slow yield did not mark the machine busy once released")
	}
}

func TestParkInsteadWhileBusyUntilTheRestIsOver(t *testing.T) {
	quiet(t) // also reads the clock in every call
	defer func(f func() int64) { now = f }(now)
	var clock atomic.Int64
	now = clock.Load
	if ParkInstead() {
		t.Fatal("a waiter parks at once on a quiet machine")
	}
	SetBusy(true)
	until := localUntil.Load()
	clock.Store(until - 1)
	if !ParkInstead() {
		t.Fatal("a waiter spins on a busy machine")
	}
	clock.Store(until)
	if ParkInstead() {
		t.Fatal("a waiter still parks at once after the rest")
	}
	if Busy() {
		t.Fatal("the rest is over, and Busy still reports a busy machine")
	}
}

func TestParkInsteadGoesByBusyAloneWhenItDoesNotReadTheClock(t *testing.T) {
	t.Cleanup(func() { localUntil.Store(0) })
	defer func(f func() int64) { now = f }(now)
	now = func() int64 { return math.MaxInt64 } // any reading would end the rest
	localUntil.Store(1)
	parked := 0
	for range 1000 {
		if ParkInstead() {
			parked++
		}
		localUntil.Store(1)
	}
	// One call in 32 reads the clock: 1000 calls all reading it, or
	// none, would each be a chance below 1e-13.
	if parked == 0 || parked == 1000 {
		t.Fatalf("%d of 1000 waiters parked; want most, not all", parked)
	}
}

// Every spin's first yield is timed, by the counter, and only the
// first: a slow one marks the machine busy, and a quick one does not.
func TestSpinYieldTimesEveryFirstYieldAndMarksTheMachineBusyIfSlow(t *testing.T) {
	quiet(t)
	step, reads := stepCounter()
	defer SetCounter(step(SlowTicks + 1))() // every timed yield slow
	if SpinYield(false) || reads.Load() != 0 {
		t.Fatalf("a later yield of a spin read the counter %d times, or came back slow", reads.Load())
	}
	SetCounter(step(1000)) // a microsecond
	for range 100 {
		if SpinYield(true) {
			t.Fatal("a quick first yield came back slow")
		}
	}
	if got := reads.Load(); got != 200 {
		t.Fatalf("100 first yields read the counter %d times; want 2 each", got)
	}
	if Busy() {
		t.Fatal("quick first yields marked the machine busy")
	}
	SetCounter(step(SlowTicks + 1))
	if !SpinYield(true) {
		t.Fatal("a slow first yield did not come back slow")
	}
	if !Busy() || !ParkInstead() {
		t.Fatal("a slow first yield did not mark the machine busy")
	}
}

func TestYieldTimedMarksTheMachineBusyWhenSlow(t *testing.T) {
	quiet(t)
	var c atomic.Int64
	c.Store(-1 << 62) // below the counter's reading at initialisation: ns
	defer SetCounter(func() int64 { return c.Add(SlowTicks / 2) })()
	YieldTimed()
	if Busy() {
		t.Fatal("a quick yield marked the machine busy")
	}
	defer SetCounter(func() int64 { return c.Add(SlowTicks + 1) })()
	YieldTimed()
	if !Busy() {
		t.Fatal("a slow yield did not mark the machine busy")
	}
	SetBusy(false)
	defer HoldQuiet()()
	YieldTimed()
	if Busy() {
		t.Fatal("a slow yield marked the machine busy while it was held quiet")
	}
}

// inNanos converts by the counter's rate since initialisation, once that
// is 10 ms ago.
func TestInNanosGoesByTheCountersRate(t *testing.T) {
	end := initNanos + 1_000_000_000                                      // a second after initialisation
	defer SetCounter(func() int64 { return initTicks + 2_000_000_000 })() // 2 ticks a ns
	if got := inNanos(20_000_000, end); got != 10_000_000 {
		t.Fatalf("20M ticks at 2 a ns: %d ns", got)
	}
	if got := inNanos(20_000_000, initNanos+5_000_000); got != 20_000_000 {
		t.Fatalf("5 ms after initialisation: %d ns, want a tick a ns", got)
	}
}
