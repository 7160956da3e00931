package crisp

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// A parked runner (convo.go) keeps its actor and its goroutine only for
// the brief, bounded grace period the Actor documentation allows. These
// tests run in a synctest bubble, where the system's default clock is
// virtual and synctest.Wait returns once every goroutine is parked.

// convo is a system with a busy actor, held by a handler until release
// is closed, and an actor in a conversation (fConvo set, as a linger
// that found work sets it) whose handlers record the goroutine they ran
// on.
type convo struct {
	sys     *System
	a       *Actor[*[]gid.ID]
	ran     []gid.ID
	release chan struct{}
	busy    *Actor[int]
}

func newConvo(t *testing.T, opts ...Option) *convo {
	c := &convo{sys: NewSystem(opts...), release: make(chan struct{})}
	c.busy = c.hold()
	c.a = Spawn(c.sys, &c.ran)
	c.a.flags.Or(fConvo)
	return c
}

// hold spawns an actor and keeps it held, by a handler that runs until
// release is closed.
func (c *convo) hold() *Actor[int] {
	b := Spawn(c.sys, 0)
	started := make(chan struct{})
	Tell(b, func(*Proc, int) {
		close(started)
		<-c.release
	})
	<-started
	return b
}

// virtualSleep lets d pass on the bubble's clock (these tests run only
// inside synctest bubbles, where no real time passes).
func virtualSleep(d time.Duration) { <-time.After(d) }

// send has a run a message and waits until its runner is parked again
// (or gone).
func (c *convo) send() {
	Tell(c.a, func(_ *Proc, ran *[]gid.ID) { *ran = append(*ran, gid.Current()) })
	synctest.Wait()
}

// call has a answer a Call and waits until its runner is parked again
// (or gone).
func (c *convo) call(t *testing.T) {
	_, err := Call(c.a, func(_ *Proc, ran *[]gid.ID) (struct{}, error) {
		*ran = append(*ran, gid.Current())
		return struct{}{}, nil
	}).Get()
	require.NoError(t, err)
	synctest.Wait()
}

func (c *convo) parked() bool { return c.a.flags.Load()&fParked != 0 }

func (c *convo) sweeping() bool { return c.sys.sweeping.Load() }

// listed counts the actors in the system's lists of parked runners.
func (c *convo) listed() int {
	n := 0
	for i := range c.sys.shards {
		pl := &c.sys.shards[i].park
		pl.mu.Lock()
		for a := pl.head; a != nil; a = a.cs().park.next {
			n++
		}
		pl.mu.Unlock()
	}
	return n
}

// finish lets the busy actor go and shuts the system down.
func (c *convo) finish(t *testing.T) {
	select {
	case <-c.release:
	default:
		close(c.release)
	}
	require.NoError(t, c.sys.Shutdown(context.Background()))
}

func TestARunnerInAConversationParksAndTheNextSenderWakesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		c.call(t)
		require.True(t, c.parked(), "out of work while another actor is busy, the runner parks")
		assert.Equal(t, int64(1), c.sys.parkedN.Load())
		assert.Equal(t, 1, c.listed())
		assert.True(t, c.sweeping())
		assert.Equal(t, int64(2), c.sys.busy.Load(), "the parked runner keeps its actor")
		assert.Equal(t, int64(2), c.sys.gor.Load(), "and its goroutine")

		for range 3 {
			c.call(t)
			require.True(t, c.parked())
		}
		require.Len(t, c.ran, 4)
		for i, g := range c.ran {
			assert.Equal(t, c.ran[0], g, "message %d ran on the parked runner's goroutine, not a new one", i)
		}
	})
}

func TestAParkedRunnerIsDismissedWithinTwoSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		c.call(t)
		require.True(t, c.parked())
		start := time.Now()

		virtualSleep(parkSweep)
		synctest.Wait()
		require.True(t, c.parked(), "the first sweep after it parked keeps it")

		virtualSleep(parkSweep)
		synctest.Wait()
		assert.False(t, c.parked(), "dismissed by the second sweep, %v after it parked", time.Since(start))
		assert.Zero(t, c.sys.parkedN.Load())
		assert.Equal(t, int64(1), c.sys.busy.Load(), "the actor is let go while the other stays busy")
		assert.Equal(t, int64(1), c.sys.gor.Load(), "and its runner has exited")
		assert.Zero(t, c.a.flags.Load()&(fConvo|fActive), "a park in vain ends the conversation")
		assert.Zero(t, c.listed())
		assert.False(t, c.sweeping(), "with nobody parked the sweep stops")

		// The next message starts a runner as usual, which lingers and
		// exits: the actor is no longer in a conversation.
		c.call(t)
		require.Len(t, c.ran, 2)
		assert.False(t, c.parked())
		assert.Equal(t, int64(1), c.sys.gor.Load())
	})
}

func TestTheSweepDismissesOnlyThoseParkedBeforeTheLastSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		c.call(t) // parks at 0; the sweep is due at parkSweep
		virtualSleep(parkSweep * 3 / 2)
		c.call(t) // woken at 1.5 sweeps, parks again
		virtualSleep(parkSweep)
		synctest.Wait() // 2.5: the sweep at 2 saw it parked since 1.5
		assert.True(t, c.parked(), "parked for one sweep period: kept")
		virtualSleep(parkSweep)
		synctest.Wait() // 3.5: the sweep at 3 dismissed it
		assert.False(t, c.parked())
		require.Len(t, c.ran, 2)
		assert.Equal(t, c.ran[0], c.ran[1])
	})
}

func TestAParkedRunnerIsDismissedWhenTheSystemGoesIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		start := time.Now()
		c.call(t)
		require.True(t, c.parked())
		close(c.release)
		require.NoError(t, c.sys.WaitIdle(context.Background()))
		synctest.Wait()
		assert.Zero(t, time.Since(start), "at once, not at a sweep")
		assert.False(t, c.parked())
		assert.Zero(t, c.sys.gor.Load(), "no goroutine is left")
		assert.False(t, c.sweeping(), "nor a sweep")
	})
}

func TestParkedRunnersAreAllDismissedWhenTheLastBusyActorIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		b := Spawn(c.sys, 0)
		b.flags.Or(fConvo)
		c.call(t)
		require.True(t, c.parked())
		// b's runner, out of work, parks too: the busy actor may still
		// send to either.
		_, err := Call(b, func(*Proc, int) (struct{}, error) { return struct{}{}, nil }).Get()
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, b.flags.Load()&fParked != 0)
		assert.Equal(t, int64(2), c.sys.parkedN.Load())
		assert.Equal(t, 2, c.listed())
		// Once the busy actor is done, both are dismissed.
		close(c.release)
		synctest.Wait()
		assert.Zero(t, c.sys.parkedN.Load())
		assert.Zero(t, c.sys.busy.Load())
		assert.Zero(t, c.sys.gor.Load())
	})
}

func TestStopDismissesAParkedRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		c.call(t)
		require.True(t, c.parked())
		c.a.Stop()
		synctest.Wait()
		assert.False(t, c.parked())
		assert.Equal(t, int64(1), c.sys.gor.Load())
		_, err := Call(c.a, func(*Proc, *[]gid.ID) (int, error) { return 0, nil }).Get()
		assert.ErrorIs(t, err, ErrStopped)
	})
}

func TestShutdownDismissesAParkedRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		c.call(t)
		require.True(t, c.parked())
		done := make(chan error)
		go func() { done <- c.sys.Shutdown(context.Background()) }()
		synctest.Wait()
		assert.False(t, c.parked(), "dismissed while the busy actor still runs")
		assert.Equal(t, int64(1), c.sys.gor.Load())
		close(c.release)
		require.NoError(t, <-done)
		assert.False(t, c.sweeping(), "Shutdown stops the sweep")
	})
}

// Actors whose runners have duties besides messages never park: an idle
// timeout (armed as the runner lets the actor go), lifecycle hooks and
// supervision, groups.
func TestActorsWithDutiesNeverPark(t *testing.T) {
	for name, opt := range map[string]ActorOption{
		"idle timeout":  IdleTimeout(time.Hour),
		"restart":       Restart(func() *[]gid.ID { return new([]gid.ID) }),
		"stop on panic": StopOnPanic(),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newConvo(t)
				defer c.finish(t)
				c.a = Spawn(c.sys, &c.ran, opt)
				c.a.flags.Or(fConvo)
				c.a.mu.Lock()
				assert.False(t, c.a.mayPark())
				c.a.mu.Unlock()
				c.call(t)
				assert.False(t, c.parked())
				assert.Zero(t, c.sys.parkedN.Load())
			})
		})
	}
	t.Run("group", func(t *testing.T) {
		sys := NewSystem()
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		g := SpawnGroup(sys, []int{0, 0})
		g.a.mu.Lock()
		defer g.a.mu.Unlock()
		assert.False(t, g.a.mayPark())
	})
}

// The sweep runs on real time (here the bubble's), not on the system's
// clock: a mock clock that never moves does not keep a parked runner.
func TestTheSweepFollowsRealTimeBesideAMockClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t, WithClock(clock.NewMock()))
		defer c.finish(t)
		c.call(t)
		require.True(t, c.parked())
		virtualSleep(2 * parkSweep)
		synctest.Wait()
		assert.False(t, c.parked(), "dismissed while the mock clock stood still")
		assert.Equal(t, int64(1), c.sys.gor.Load())
	})
}

// A runner that ran more than parkBatch messages in a row serves a
// flood or a convoy: it lingers as usual rather than park.
func TestARunnerThatRanABatchDoesNotPark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		gate := make(chan struct{})
		Tell(c.a, func(*Proc, *[]gid.ID) { <-gate })
		for range parkBatch {
			Tell(c.a, func(_ *Proc, ran *[]gid.ID) { *ran = append(*ran, gid.Current()) })
		}
		close(gate)
		synctest.Wait()
		require.Len(t, c.ran, parkBatch)
		assert.False(t, c.parked(), "after %d messages in a row the runner does not park", parkBatch+1)
		assert.Equal(t, int64(1), c.sys.gor.Load(), "it lingered and exited")
		assert.NotZero(t, c.a.flags.Load()&fConvo, "the actor is still in a conversation")

		c.call(t) // one message: parks again
		assert.True(t, c.parked())
	})
}

// The yield before parking counts in the actor's lingers in vain: one
// that finds nothing counts, one that finds work clears the count, and
// at the cap only one in 2^vainCap is tried.
func TestTheYieldBeforeParkingCountsInVain(t *testing.T) {
	a := &lingerActor(t).core
	assert.False(t, a.yieldFirst(), "no work came")
	require.Equal(t, uint32(1), a.vain())
	for range 400 {
		a.yieldFirst()
	}
	require.Equal(t, uint32(vainCap), a.vain())

	m := &message{}
	m.state.Store(stRunning) // not the runner's to take: only the intake matters here
	a.intake.Store(m)
	defer a.intake.Store(nil)
	skipped := 0
	for !a.yieldFirst() {
		skipped++
		require.Less(t, skipped, 2000, "at the cap one in 16 is tried")
	}
	assert.Zero(t, a.vain(), "a yield that found work clears the count")
	assert.True(t, a.yieldFirst())
}

// The yield before parking is timed every time: one that waited out
// other code's time slice marks the machine busy, and runners park
// without it from then on.
func TestASlowYieldBeforeParkingMarksTheMachineBusy(t *testing.T) {
	a := &lingerActor(t).core
	ready.SetBusy(false)
	defer ready.SetBusy(false)
	var c atomic.Int64
	c.Store(-1 << 62) // below the counter's reading at initialisation: ns
	defer ready.SetCounter(func() int64 { return c.Add(ready.SlowTicks + 1) })()
	a.yieldFirst()
	assert.True(t, ready.Busy(), "a slow yield before parking left the machine quiet")
}

// Beside code that never yields, a runner parks only while few other
// actors are held (busyOthers per processor); with more it lingers.
func TestOnABusyMachineARunnerParksOnlyBesideFewHeldActors(t *testing.T) {
	ready.SetBusy(true)
	defer ready.SetBusy(false)
	synctest.Test(t, func(t *testing.T) {
		c := newConvo(t)
		defer c.finish(t)
		c.call(t)
		require.True(t, c.parked(), "one other actor held: it parks")
		virtualSleep(2 * parkSweep) // dismissed
		synctest.Wait()
		require.False(t, c.parked())

		// As many held as the bound allows: it parks.
		others := busyOthers * int(c.sys.maxLinger)
		for range others - 1 {
			c.hold()
		}
		c.a.flags.Or(fConvo) // cleared by the dismissal
		c.call(t)
		require.True(t, c.parked(), "%d other actors held: it parks", others)
		virtualSleep(2 * parkSweep)
		synctest.Wait()
		require.False(t, c.parked())

		// One more: it lingers.
		c.hold()
		c.a.flags.Or(fConvo)
		c.call(t)
		assert.False(t, c.parked(), "%d other actors held: it lingers", others+1)
		assert.Equal(t, int64(others+1), c.sys.gor.Load(), "and its runner has exited")
	})
}

// A runner in a conversation whose last message was a Tell, with one
// other actor held (a pair: its partner), lets its actor go at once
// rather than yield or park: the partner's next Tell then finds it idle
// and hands off (handoff.go), so the two run on one goroutine. Parked,
// beside code that never yields, each of the pair's messages woke the
// other's runner, whose wake-up waited for a processor behind that
// code's time slices; on a quiet machine the two runners took turns
// through the scheduler's queue, a yield per message. Beside more held
// actors it parks as before (on a quiet machine after one yield in
// vain).
func TestAPairsRunnerLetsItsActorGoAfterATell(t *testing.T) {
	for _, tc := range []struct {
		name   string
		busy   bool
		others int // actors held besides the pair's partner
		parks  bool
	}{
		{"quiet, a pair", false, 0, false},
		{"quiet, beside another held actor", false, 1, true},
		{"busy, a pair", true, 0, false},
		{"busy, beside another held actor", true, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.busy {
				ready.SetBusy(true)
				defer ready.SetBusy(false)
			} else {
				defer ready.HoldQuiet()()
			}
			synctest.Test(t, func(t *testing.T) {
				c := newConvo(t)
				defer c.finish(t)
				for range tc.others {
					c.hold()
				}
				c.send()
				if tc.parks {
					assert.True(t, c.parked(), "parked")
					return
				}
				assert.False(t, c.parked(), "not parked")
				assert.Zero(t, c.a.flags.Load()&(fActive|fConvo), "its actor let go, out of the conversation")
				assert.Equal(t, int64(1), c.sys.gor.Load(), "its runner has exited")
			})
		})
	}
}

// Beside code that never yields, a runner in a conversation that has
// answered a Call, with no other actor held or parked (its partner a
// goroutine that calls and gets), parks rather than lingers: the
// caller's next Call wakes it into the caller's processor, with no new
// goroutine, and WaitIdle dismisses it rather than wait for the sweep.
// After a Tell, or on a quiet machine, it lingers, as it always did.
func TestOnABusyMachineARunnerThatAnsweredACallParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := Spawn(sys, 0)
		call := func() {
			t.Helper()
			v, err := Call(a, func(*Proc, int) (int, error) { return 7, nil }).Get()
			require.NoError(t, err)
			require.Equal(t, 7, v)
		}
		// parkedRunner reports a's parked runner's Proc, or nil.
		parkedRunner := func() *Proc {
			if a.flags.Load()&fParked == 0 {
				return nil
			}
			return a.cs().park.p
		}

		ready.SetBusy(true)
		a.flags.Or(fConvo)
		call()
		synctest.Wait()
		first := parkedRunner()
		require.NotNil(t, first, "busy, a Call answered: the runner parked")
		assert.Equal(t, int64(1), sys.gor.Load())
		call()
		synctest.Wait()
		assert.Same(t, first, parkedRunner(), "the next Call woke it, and it parked again")
		assert.Equal(t, int64(1), sys.gor.Load(), "no other runner started")

		before := time.Now() // the bubble's clock: it moves only once every goroutine waits
		require.NoError(t, sys.WaitIdle(context.Background()))
		assert.Equal(t, before, time.Now(), "WaitIdle did not wait for the sweep")
		synctest.Wait()
		assert.Nil(t, parkedRunner(), "WaitIdle dismissed it")
		assert.Zero(t, sys.gor.Load(), "and it exited")

		assert.True(t, lingeredAfter(t, sys, a, func() {
			a.flags.Or(fConvo)
			Tell(a, func(*Proc, int) {})
		}), "busy, after a Tell: the runner lingered")

		release := ready.HoldQuiet()
		defer release()
		assert.True(t, lingeredAfter(t, sys, a, func() {
			a.flags.Or(fConvo)
			call()
		}), "quiet, a Call answered: the runner lingered")
	})
}

// On a busy machine a runner that has run more than floodNoLinger
// messages since it last ran out of work lets its actor go without
// lingering; one that ran a single message lingers, as does a flood's
// runner on a quiet machine.
func TestOnABusyMachineAFloodsRunnerDoesNotLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := Spawn(sys, 0)
		// lingered sends n messages that one runner runs in a row and
		// reports whether it lingered (in vain) before it exited.
		lingered := func(n int) bool {
			return lingeredAfter(t, sys, a, func() {
				release := make(chan struct{})
				Tell(a, func(*Proc, int) { <-release })
				for range n - 1 {
					Tell(a, func(*Proc, int) {})
				}
				close(release)
			})
		}

		ready.SetBusy(true)
		assert.False(t, lingered(floodNoLinger+2), "busy, a flood: the runner did not linger")
		assert.True(t, lingered(1), "busy, one message: the runner lingered")

		release := ready.HoldQuiet()
		defer release()
		assert.True(t, lingered(floodNoLinger+2), "quiet, a flood: the runner lingered")
	})
}

// On a busy machine a flood's runner lets its actor go without a
// linger (floodNoLinger), and the actor keeps its flood's mark (fFlood),
// so that the next plain Tell makes its lane, as a Tell that comes
// during the linger does on a quiet machine. Cleared with the let-go,
// the mark never met a Tell there: beside two hogs, fork-join's workers,
// flooded in turn by one driver, never made lanes. On a quiet machine
// the mark goes with the let-go, as before.
func TestOnABusyMachineAFloodsMarkOutlivesItsRunner(t *testing.T) {
	for _, busy := range []bool{true, false} {
		t.Run(fmt.Sprintf("busy %v", busy), func(t *testing.T) {
			if busy {
				ready.SetBusy(true)
				defer ready.SetBusy(false)
			} else {
				defer ready.HoldQuiet()()
			}
			synctest.Test(t, func(t *testing.T) {
				sys := NewSystem()
				defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
				a := Spawn(sys, 0)
				release := holdActor(a)
				for range laneFlood { // plain: left in the intake, a flood once drained
					Tell(a, func(*Proc, int) {})
				}
				release()
				synctest.Wait()
				require.Zero(t, sys.gor.Load(), "the flood's runner let its actor go")
				require.Nil(t, a.core.lane.Load())
				assert.Equal(t, busy, a.core.flags.Load()&fFlood != 0, "still marked once let go")

				Tell(a, func(*Proc, int) {})
				synctest.Wait()
				assert.Equal(t, busy, a.core.lane.Load() != nil, "the next Tell made the lane")
			})
		})
	}
}

// lingeredAfter runs send, which gives a's idle runner work, in a
// synctest bubble, and reports whether the runner lingered (in vain)
// before it exited.
func lingeredAfter(t *testing.T, sys *System, a *Actor[int], send func()) bool {
	t.Helper()
	a.setVain(0)
	send()
	synctest.Wait() // the runner is gone
	require.Zero(t, sys.gor.Load(), "the runner exited")
	require.False(t, a.flags.Load()&fParked != 0, "nobody would wake it")
	return a.vain() == 1
}
