package crisp

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/ready"
)

// On one processor, a runner with a backlog of quick messages runs it
// through without yielding to goroutines that are not crisp's: Go's
// preemption (after 10 ms, far more than the backlog takes) is what
// shares the processor with other code. A yield every yieldEvery
// messages, as before, let the goroutine below run after 16 messages;
// beside goroutines that never yield, each such yield cost a whole time
// slice.
//
// The runtime may still take the processor from the runner on its own:
// to scan its stack for the collector, or on a loaded machine when the
// backlog's wall time reaches the 10 ms slice. Then the other goroutine,
// next in line, runs early (about once in a hundred runs under -race on
// a busy machine). So the test gives the runner three tries, each after
// a collection: a runner that yields on its own does so every time.
func TestARunnerWithABacklogDoesNotYieldToOtherCode(t *testing.T) {
	runsBacklogThrough(t, nil)
}

// So does one whose messages have deadlines far off: the watchdog has
// nothing to report for an hour (Watching), and a yield every yieldEvery
// messages meanwhile cost floods with deadlines, beside goroutines that
// never yield, most of their time (bench fork-join with deadlines beside
// two: 2.0 s, against 54 ms without those yields).
func TestARunnerWithABacklogWhoseDeadlinesAreFarOffDoesNotYield(t *testing.T) {
	runsBacklogThrough(t, []SendOption{Within(time.Hour)})
}

// runsBacklogThrough fails the test unless a runner with a backlog of
// messages sent with send runs it through without yielding to other
// code, in one of three tries (see above).
func runsBacklogThrough(t *testing.T, send []SendOption) {
	// What a quiet machine does: on a busy one (a slow yield anywhere in
	// the package's run marks it so, ready.Busy) a runner yields once it
	// has run for a millisecond, as it should, and a backlog of a
	// thousand messages beside CPU-bound processes can take that long.
	defer ready.HoldQuiet()()
	n := int64(1000)
	if raceEnabled {
		// Several times slower a message: a thousand of them beside
		// CPU-bound processes often outlasted the 10 ms after which the
		// runtime preempts the runner (1 to 5 failed runs in 10 of this
		// test). 300 still show a yield every yieldEvery messages.
		n = 300
	}
	var got []int64
	for range 3 {
		runtime.GC()
		seen := backlogSeenByOtherCode(t, n, send)
		if seen == n {
			return
		}
		got = append(got, seen)
	}
	t.Fatalf("the runner yielded to a goroutine that is not crisp's before its backlog of %d was done, in each of three tries: after %v", n, got)
}

// backlogSeenByOtherCode runs a backlog of n quick messages, sent with
// send, on one processor, on an actor of a system made with opts, and
// returns how many had run when a goroutine made runnable by the first
// one (other code, not crisp's) got the processor.
func backlogSeenByOtherCode(t *testing.T, n int64, send []SendOption, opts ...Option) int64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sys := NewSystem(opts...)
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	var ran atomic.Int64
	seen := make(chan int64, 1)
	done := make(chan struct{})
	Tell(a, func(*Proc, int) {
		ran.Add(1)
		go func() { seen <- ran.Load() }() // other code, runnable from here on
	}, send...)
	for range n - 1 {
		Tell(a, func(*Proc, int) {
			if ran.Add(1) == n {
				close(done)
			}
		}, send...)
	}
	<-done
	return <-seen
}

// But a caller waiting for a result the runner produced gets the
// processor within yieldEvery messages of it, whether it waits parked or
// spinning (package ready counts both). The backlog is queued behind a
// handler that holds the actor until the caller waits, so that the
// caller's wait starts before the result whatever the scheduler does.
// On a quiet machine: on a loaded one a slow yield anywhere in the
// process can make it busy (ready.Busy), where the runner yields only
// once it has run for a millisecond (the test below).
func TestARunnerWithABacklogYieldsToACallerWaitingForIt(t *testing.T) {
	defer ready.HoldQuiet()()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	const n = 1000
	var ran atomic.Int64
	gate, held := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) { close(held); <-gate })
	<-held
	f := Call(a, func(*Proc, int) (int, error) { ran.Add(1); return 1, nil })
	for range n - 1 {
		Tell(a, func(*Proc, int) { ran.Add(1) })
	}
	go close(gate) // other code: it runs once the caller below waits
	_, err := f.Get()
	require.NoError(t, err)
	got := ran.Load()
	require.LessOrEqual(t, got, int64(2*yieldEvery), "the caller got the processor only after %d of the backlog's %d messages", got, n)
}

// On a machine busy with other code (ready.Busy), a runner with a
// backlog yields to crisp's waiting goroutines on its own processor, and
// only once it has run for a millisecond, counted from its start and
// from each time it has the processor back (ready.Spaced): they wait in
// its processor's queue, a yield to the global one waits behind the
// other code's time slices, and every yield brings the processor's turn
// to run that code nearer. Unless a caller spins for its result: it
// waits in the global queue, and the runner yields there every
// yieldEvery messages, as on a quiet machine. The clock is the test's:
// each handler moves it on by step, each yield to the own processor by
// 10 ms (the yield waited out another goroutine's time slice).
func TestOnABusyMachineARunnerYieldsToItsOwnProcessorUnlessACallerSpins(t *testing.T) {
	const n, step = 2000, 20 * time.Microsecond
	t.Run("a goroutine waits in a processor's own queue", func(t *testing.T) {
		global, own := busyBacklogYields(t, n, step, ready.Add, ready.Done)
		assert.Zero(t, global, "yields to the global run queue")
		assert.GreaterOrEqual(t, own, int64(1), "yields to the runner's own processor")
		ranFor := time.Duration(n) * step
		assert.LessOrEqual(t, own, int64(ranFor/time.Millisecond), "yields to the runner's own processor in %v of running", ranFor)
	})
	t.Run("the runner has not run for a millisecond", func(t *testing.T) {
		global, own := busyBacklogYields(t, n, 0, ready.Add, ready.Done)
		assert.Zero(t, global, "yields to the global run queue")
		assert.Zero(t, own, "yields to the runner's own processor")
	})
	t.Run("a caller spins", func(t *testing.T) {
		spin := func(int) { ready.AddSpinning() }
		global, own := busyBacklogYields(t, n, step, spin, ready.DoneSpinning)
		assert.GreaterOrEqual(t, global, int64(n/yieldEvery), "yields to the global run queue")
		assert.Zero(t, own, "yields to the runner's own processor")
	})
}

// busyBacklogYields runs a backlog of n quick messages, each moving
// package ready's clock on by step, on a busy machine while a goroutine
// of crisp's waits, counted by wait and uncounted by done, and returns
// how often the runner yielded to the global run queue and to its own
// processor.
func busyBacklogYields(t *testing.T, n int, step time.Duration, wait func(int), done func()) (global, own int64) {
	var g, o atomic.Int64
	var clock atomic.Int64
	clock.Store(int64(time.Second))
	defer ready.SetClock(clock.Load)()
	defer func(gl, ow func()) { yieldGlobal, yieldOwn = gl, ow }(yieldGlobal, yieldOwn)
	yieldGlobal = func() { g.Add(1); runtime.Gosched() }
	yieldOwn = func() { o.Add(1); clock.Add(int64(10 * time.Millisecond)); ready.Yield() }
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	gate, held := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) { close(held); <-gate })
	<-held
	for range n {
		Tell(a, func(*Proc, int) { clock.Add(int64(step)) })
	}
	ready.SetBusy(true) // for localRest on the test's clock: longer than the backlog takes
	defer ready.SetBusy(false)
	wait(1)
	defer done()
	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.WaitIdle(ctx))
	return g.Load(), o.Load()
}

// WithYieldEvery brings the unconditional yield back for processes whose
// other code must not wait behind a busy actor for Go's preemption.
func TestWithYieldEveryYieldsToOtherCodeToo(t *testing.T) {
	got := backlogSeenByOtherCode(t, 1000, nil, WithYieldEvery(16))
	require.LessOrEqual(t, got, int64(2*16), "the other goroutine ran only after %d of 1000 messages", got)
}

func TestWithYieldEveryRefusesANegativeCount(t *testing.T) {
	require.PanicsWithValue(t, "crisp: WithYieldEvery(-1): n must not be negative", func() { WithYieldEvery(-1) })
}

// After a pass of the watchdog that failed messages, a runner yields
// once, after the message it ran, if one of crisp's goroutines waits for
// a processor: the callers the pass woke may wait behind it. Called
// directly: with one processor the callers a pass wakes run before the
// runner anyway (the runner's own yield let the watchdog run), so only
// with several, and on the scheduler's timing, does the yield show in a
// run.
func TestARunnerYieldsOnceAfterTheWatchdogFailedMessages(t *testing.T) {
	sys, a := oneProcessorActor(t)
	seen := sys.wd.Expired()

	var ran atomic.Bool
	ready.Add(1) // a caller the pass woke, not yet running
	go func() {
		ready.Done()
		ran.Store(true)
	}()
	assert.Equal(t, seen, a.between(1, true, seen, new(int64)), "nothing was expired")
	assert.False(t, ran.Load(), "the runner yielded with no pass to answer")
	// One schedule in 61 Go runs a goroutine that yielded again at once
	// (it looks at the global run queue first), before the woken caller:
	// three tries.
	e := a.between(2, true, seen-1, new(int64))
	for try := 1; !ran.Load(); try++ {
		require.Less(t, try, 3, "the runner did not yield to the woken caller after a pass, in three tries")
		e = a.between(2, true, seen-1, new(int64))
	}
	assert.Equal(t, seen, e, "the runner must now have seen the latest pass")

	// With no crisp goroutine waiting, a pass is no reason to yield. The
	// count is the process's: a goroutine of an earlier test may still
	// be counted, so three tries.
	for try := 0; ; try++ {
		var other atomic.Bool
		go other.Store(true) // other code
		waiting := ready.Waiting()
		a.between(3, true, seen-1, new(int64))
		if !other.Load() {
			break
		}
		require.Less(t, try, 2, "the runner yielded to other code after a pass with no crisp goroutine waiting (waiting before: %v)", waiting)
		runtime.Gosched()
	}
	runtime.Gosched()
}

// The watchdog, blocked on the lock of an actor whose runner holds it
// between messages, counts as ready until it has the lock: the runner's
// Unlock makes it runnable on the runner's processor, and runners with a
// backlog yield to it only if it counts (a runtime trace found it waiting
// 13-37 ms behind them). On one processor the test goroutine's yield lets
// the watchdog's call (the actor's Renew, as a pass makes it) run until
// it blocks.
func TestTheWatchdogCountsAsReadyWhileAnActorsLockKeepsIt(t *testing.T) {
	sys, a := oneProcessorActor(t)

	a.target().Renew(sys.now()) // the lock free: taken at once, nothing counted
	require.Zero(t, ready.N(), "the watchdog counted itself as ready for a lock it took at once")

	a.mu.Lock() // a runner between messages
	locked := make(chan struct{})
	go func() {
		a.target().Renew(sys.now())
		close(locked)
	}()
	// The stand-in runs until the lock blocks it. One yield is not always
	// enough: one schedule in 61 takes from the global queue first, where
	// the yield has just put this goroutine.
	for try := 0; try < 100 && ready.N() == 0; try++ {
		runtime.Gosched()
	}
	require.EqualValues(t, 1, ready.N(), "the watchdog waiting for the actor's lock does not count as ready")
	a.mu.Unlock()
	<-locked
	require.Zero(t, ready.N(), "the watchdog still counts as ready once it has the lock")
}

// oneProcessorActor runs the test on one processor (until it ends) and
// returns a fresh system and an actor of it, once no crisp goroutine of
// an earlier test still counts as ready.
func oneProcessorActor(t *testing.T) (*System, *core) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	sys := NewSystem()
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	a := &Spawn(sys, 0).core
	require.Zero(t, ready.N(), "crisp goroutines of another test are still waiting")
	return sys, a
}
