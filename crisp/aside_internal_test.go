package crisp

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/stretchr/testify/require"
)

// asideSeen is what a goroutine saw of an actor whose runner had stepped
// aside between two messages, once it had sent the actor a Call with a
// deadline.
type asideSeen struct {
	occupied bool // the actor counted as occupied
	soon     bool // the Call's ResultSoon: a waiter would spin
	intake   bool // the Call was left in the intake for the runner
	watched  bool // the watchdog watched the actor
}

// asideTries is how many times a test repeats its scenario until the
// goroutine it looks through has run during the runner's first yield,
// the one right after the handler that made the goroutine runnable.
// Only there does the runner yield with its backlog still in the intake:
// the next message it takes drains the intake into its queue, and its
// later yields are unmarked (stepAside reads the intake, not the queue,
// which needs the lock). Go puts the yielding runner back first about
// once in 61 schedules (it then takes the global queue first, to be
// fair to it), and under the race detector, which shuffles where new
// goroutines go, the goroutine missed the first yield in about 1 run
// in 60 (1 in 3,000 without it): the tests failed that often before
// they repeated the scenario.
const asideTries = 30

// yieldingActor spawns an actor on a system of its own whose runners
// yield after every message (WithYieldEvery(1)), and runs the test on
// one processor, so that a goroutine a handler makes runnable runs while
// the actor's runner waits in its yield. Both end with the test.
func yieldingActor(t *testing.T) *Actor[int] {
	prev := runtime.GOMAXPROCS(1)
	sys := NewSystem(WithYieldEvery(1))
	t.Cleanup(func() {
		require.NoError(t, sys.Shutdown(context.Background()))
		runtime.GOMAXPROCS(prev)
	})
	return Spawn(sys, 0)
}

// seenWhileAside runs, on one processor, a handler that makes another
// goroutine runnable and, if backlog is true, sends its actor a message
// (with a deadline an hour away if watched is true), as a busy actor
// sends itself its next; the runner yields after the handler
// (WithYieldEvery(1)), and the goroutine, running meanwhile, sends a
// Call with a deadline and reports what it saw.
//
// With a backlog, only what the goroutine saw during the runner's first
// yield counts (see asideTries): the scenario is repeated until it ran
// there, before any message of the backlog.
func seenWhileAside(t *testing.T, backlog, watched bool) asideSeen {
	a := yieldingActor(t)
	return firstYield(t, func() (asideSeen, bool) {
		var ran atomic.Bool
		mark := func(*Proc, int) { ran.Store(true) }
		seen := make(chan asideSeen, 1)
		first := make(chan bool, 1)
		var f *future.Future[int]
		Tell(a, func(*Proc, int) {
			switch {
			case backlog && watched:
				Tell(a, mark, Within(time.Hour))
			case backlog:
				Tell(a, mark)
			}
			go func() { // runs while the runner waits in its yield
				f = Call(a, func(*Proc, int) (int, error) { return 1, nil }, Within(time.Hour))
				queued := &call[int, int]{a: a} // what ResultSoon sees of a queued call of a
				s := asideSeen{
					occupied: a.core.occupied(),
					soon:     queued.ResultSoon(),
					intake:   a.core.intake.Load() != nil,
					watched:  a.core.wdKey.Load() != noWatch,
				}
				first <- !ran.Load() // read after looking: nothing of the backlog had run by then
				seen <- s
			}()
		})
		s, ok := <-seen, <-first
		_, err := f.Get()
		require.NoError(t, err)
		return s, ok || !backlog
	})
}

// firstYield runs try, one run of a test's scenario, until the goroutine
// the test looks through ran during the runner's first yield (try
// reports whether it did), up to asideTries times, and returns what that
// run saw.
func firstYield[T any](t *testing.T, try func() (T, bool)) T {
	for range asideTries {
		if s, ok := try(); ok {
			return s
		}
	}
	t.Fatalf("the goroutine never ran during the runner's first yield in %d tries", asideTries)
	var none T
	return none
}

// A runner that yields the processor between two messages waits behind
// every runnable goroutine, on a busy machine for as long as time
// slices last. Meanwhile its actor counts as occupied, as during a
// handler: a caller parks rather than spins (it would wait in the same
// queue and learn of its result, or its miss, only at its own turn),
// and a sender queues its message and has its deadline watched itself,
// where before it left both to the runner. With the runner's ready
// count gone with the spinning callers, a deadline left in the intake
// was watched only once the runner ran again: misses were reported
// 12 ms late at the median beside ten busy actors.
func TestARunnerSteppedAsideLeavesNothingWaitingOnIt(t *testing.T) {
	s := seenWhileAside(t, true, true)
	require.True(t, s.occupied, "the actor whose runner stepped aside did not count as occupied")
	require.False(t, s.soon, "a caller would spin for a result of an actor whose runner waits for a processor")
	require.False(t, s.intake, "the Call was left in the intake of a runner that waits for a processor")
	require.True(t, s.watched, "the Call's deadline was not watched while the runner waited for a processor")
}

// A runner with no backlog that yields takes the next message as soon as
// it runs again: a caller spinning for its result (a conversation) is
// right to, and a sender leaves its message to the runner.
func TestARunnerWithoutABacklogYieldsUnmarked(t *testing.T) {
	s := seenWhileAside(t, false, false)
	require.False(t, s.occupied, "an actor whose runner has no backlog counted as occupied while it yielded")
	require.True(t, s.soon, "a caller would park for a result of an actor whose runner has nothing else to do")
}

// A plain message (no deadline) sent while the runner yields is left to
// the runner: its sender, queueing it itself, would only take work off
// the runner onto its own path, which in a conversation is the critical
// one.
func TestAPlainMessageIsLeftToARunnerSteppedAside(t *testing.T) {
	a := yieldingActor(t)
	s := firstYield(t, func() ([2]bool, bool) {
		var ran atomic.Bool
		seen := make(chan [2]bool, 1)
		first := make(chan bool, 1)
		done := make(chan struct{})
		Tell(a, func(*Proc, int) {
			Tell(a, func(*Proc, int) { ran.Store(true) }) // the backlog (see seenWhileAside)
			go func() {                                   // runs while the runner waits in its yield
				Tell(a, func(*Proc, int) { close(done) })
				s := [2]bool{a.core.occupied(), a.core.arrived()}
				first <- !ran.Load()
				seen <- s
			}()
		})
		s, ok := <-seen, <-first
		<-done
		return s, ok
	})
	require.True(t, s[0], "the runner with a backlog did not mark its actor while it yielded")
	require.True(t, s[1], "the plain message was queued by its sender, not left in the intake or the lane")
}

// A plain message sent while a handler runs is left in the intake too,
// however free the actor's lock: its runner queues it when it next
// takes work (see send).
func TestAPlainMessageIsLeftToARunnerInAHandler(t *testing.T) {
	sys := NewSystem()
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	a := Spawn(sys, 0)
	in, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // before Shutdown, which waits for the handler
	Tell(a, func(*Proc, int) { close(in); <-gate })
	<-in
	ran := make(chan struct{})
	Tell(a, func(*Proc, int) { close(ran) })
	require.NotZero(t, a.core.flags.Load()&fHandling, "the first handler runs")
	require.True(t, a.core.arrived(), "the plain message was queued by its sender, not left in the intake or the lane")
	require.True(t, a.core.mu.TryLock(), "the actor's lock was held: the sender could not have queued it anyway")
	a.core.mu.Unlock()
	open()
	<-ran
}

// A runner keeps its actor marked as in a handler from one message to
// the next of a backlog (beginHandler), but not once it has run out of
// work: while it lingers for more, and after it has let the actor go,
// the actor is free, and a caller spins for a result it is about to get
// rather than park. On one processor the test goroutine, woken by the
// last handler, runs when the lingering runner yields.
func TestARunnerOutOfWorkLeavesItsActorUnoccupied(t *testing.T) {
	defer ready.HoldQuiet()() // busy, a flood's runner would not linger (floodNoLinger)
	prev := runtime.GOMAXPROCS(1)
	sys := NewSystem()
	t.Cleanup(func() {
		require.NoError(t, sys.Shutdown(context.Background()))
		runtime.GOMAXPROCS(prev)
	})
	a := Spawn(sys, 0)
	done := make(chan struct{})
	var during bool
	Tell(a, func(*Proc, int) {
		for range 3 {
			Tell(a, func(*Proc, int) {})
		}
		Tell(a, func(*Proc, int) { during = a.core.occupied(); close(done) })
	})
	<-done
	require.True(t, during, "the actor did not count as occupied during a handler")
	require.True(t, a.core.active(), "the runner let the actor go without lingering")
	require.False(t, a.core.occupied(), "the actor counted as occupied while its runner lingered for work")
	require.NoError(t, sys.WaitIdle(context.Background()))
	require.False(t, a.core.active(), "the runner kept the actor")
	require.False(t, a.core.occupied(), "the actor counted as occupied once its runner had let it go")
}
