package crisp_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// deadLetters collects what a system's dead-letter hook hears.
type deadLetters struct {
	mu  sync.Mutex
	got []crisp.DeadLetter
}

func (d *deadLetters) hook(l crisp.DeadLetter) {
	d.mu.Lock()
	d.got = append(d.got, l)
	d.mu.Unlock()
}

func (d *deadLetters) all() []crisp.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]crisp.DeadLetter(nil), d.got...)
}

func requireFull(t *testing.T, err error, capacity int, waited bool) {
	t.Helper()
	var full *crisp.FullError
	require.ErrorAs(t, err, &full)
	assert.ErrorIs(t, err, crisp.ErrFull)
	assert.NotErrorIs(t, err, deadline.ErrMissed, "a refusal is not a miss")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, capacity, full.Capacity)
	assert.Equal(t, waited, full.Waited)
}

func TestAFullMailboxFailsTheNewMessageAtOnce(t *testing.T) {
	var dead deadLetters
	sys, _ := newSystem(t, crisp.WithDeadLetters(dead.hook))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("node"), crisp.WithCapacity(2, crisp.FailWhenFull))
	g := newGate()
	hold(t, a, g) // running: it holds no place

	f1 := crisp.Call(a, record("one"))
	f2 := crisp.Call(a, record("two"), crisp.Within(time.Hour))
	f3 := crisp.Call(a, record("three"), crisp.MessageName("job-3"))
	require.True(t, f3.Ready(), "refused at send, not later")
	_, err := f3.Get()
	requireFull(t, err, 2, false)
	assert.Contains(t, err.Error(), "job-3")
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.MessageName("told"))
	letters := dead.all()
	require.Len(t, letters, 1, "a refused Tell is a dead letter")
	assert.Equal(t, "told", letters[0].Message)
	assert.Equal(t, "node", letters[0].Actor)
	requireFull(t, letters[0].Reason, 2, false)

	g.open()
	for _, f := range []interface{ Get() (string, error) }{f1, f2} {
		_, err := f.Get()
		require.NoError(t, err)
	}
	waitIdle(t, sys)
	// The places are free again.
	f4 := crisp.Call(a, record("four"))
	f5 := crisp.Call(a, record("five"))
	_, err = f5.Get()
	require.NoError(t, err)
	_, err = f4.Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"two", "one", "four", "five"}, ranOn(t, a), "EDF: the deadlined message first")
}

func TestAMessageLeavingWithoutStartingFreesItsPlace(t *testing.T) {
	for name, leave := range map[string]func(t *testing.T, a *crisp.Actor[*state]) error{
		"missed": func(t *testing.T, a *crisp.Actor[*state]) error {
			f := crisp.Call(a, record("late"), crisp.Within(time.Millisecond))
			mock := a.System().Clock().(interface{ Add(time.Duration) })
			mock.Add(time.Millisecond)
			_, err := f.Get()
			require.ErrorIs(t, err, deadline.ErrMissed)
			return err
		},
		"cancelled": func(t *testing.T, a *crisp.Actor[*state]) error {
			ctx, cancel := context.WithCancel(context.Background())
			f := crisp.Call(a, record("cancelled"), crisp.Context(ctx))
			cancel()
			_, err := f.Get()
			require.ErrorIs(t, err, context.Canceled)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			sys, _ := newSystem(t)
			a := crisp.Spawn(sys, &state{}, crisp.WithCapacity(1, crisp.FailWhenFull))
			g := newGate()
			hold(t, a, g)
			defer func() { g.open() }()
			leave(t, a)
			// Its place is free the moment its outcome is known.
			f := crisp.Call(a, record("next"))
			assert.False(t, f.Ready(), "queued, not refused")
			g.open()
			g = newGate() // the deferred open closes a fresh gate
			v, err := f.Get()
			require.NoError(t, err)
			assert.Equal(t, "next", v)
		})
	}
}

// fullMailbox spawns, in the calling synctest bubble, an actor of a new
// system made with opts, with room for one queued message
// (WaitWhenFull), and holds it busy with g; the system is shut down when
// the test ends.
func fullMailbox(t *testing.T, opts ...crisp.Option) (*crisp.Actor[*state], *gate) {
	sys := crisp.NewSystem(append([]crisp.Option{crisp.WithLogger(quiet)}, opts...)...)
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	a := crisp.Spawn(sys, &state{}, crisp.WithCapacity(1, crisp.WaitWhenFull))
	g := newGate()
	hold(t, a, g)
	return a, g
}

func TestWaitWhenFullWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, g := fullMailbox(t)
		f1 := crisp.Call(a, record("one"))

		sent := make(chan struct{})
		var f2 interface{ Get() (string, error) }
		go func() {
			f2 = crisp.Call(a, record("two"))
			close(sent)
		}()
		synctest.Wait() // the sender is durably blocked
		select {
		case <-sent:
			t.Fatal("the send returned while the mailbox was full")
		default:
		}
		g.open()
		<-sent
		for _, f := range []interface{ Get() (string, error) }{f1, f2} {
			_, err := f.Get()
			require.NoError(t, err)
		}
		assert.Equal(t, []string{"one", "two"}, ranOn(t, a))
	})
}

func TestWaitWhenFullEndsAtTheStartDeadlineOrWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dead deadLetters
		a, g := fullMailbox(t, crisp.WithDeadLetters(dead.hook))
		defer func() { g.open() }()
		f1 := crisp.Call(a, record("one"))

		start := time.Now()
		f2 := crisp.Call(a, record("two"), crisp.Within(50*time.Millisecond))
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "waited until exactly the start deadline")
		require.True(t, f2.Ready())
		_, err := f2.Get()
		requireFull(t, err, 1, true)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start = time.Now()
		f3 := crisp.Call(a, record("three"), crisp.Context(ctx))
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		_, err = f3.Get()
		// The context's deadline is the message's start deadline: whichever
		// of the timer and the context is seen first, the answer is one of
		// these two, and never a miss.
		if !errors.Is(err, context.DeadlineExceeded) {
			requireFull(t, err, 1, true)
		}
		assert.NotErrorIs(t, err, deadline.ErrMissed)

		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() {
			virtualSleep(time.Millisecond)
			cancel2()
		}()
		crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.Context(ctx2), crisp.MessageName("told"))
		letters := dead.all()
		require.Len(t, letters, 1)
		assert.ErrorIs(t, letters[0].Reason, context.Canceled)

		g.open()
		g = newGate()
		_, err = f1.Get()
		require.NoError(t, err)
	})
}

func TestAHandlerSendingToItsOwnFullMailboxIsRefusedNotStuck(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithCapacity(1, crisp.WaitWhenFull))
	f := crisp.Call(a, func(p *crisp.Proc, s *state) (error, error) {
		crisp.Tell(a, func(*crisp.Proc, *state) {}) // takes the one place
		_, err := crisp.Call(a, record("again")).GetWithin(time.Hour)
		return err, nil
	})
	inner, err := f.Get()
	require.NoError(t, err)
	requireFull(t, inner, 1, false)
}

func TestStoppingAnActorEndsTheWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, g := fullMailbox(t)
		f1 := crisp.Call(a, record("one"))
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := crisp.Call(a, record("waiting")).Get()
				errs <- err
			}()
		}
		synctest.Wait()
		a.Stop()
		for range 3 {
			assert.ErrorIs(t, <-errs, crisp.ErrStopped)
		}
		_, err := f1.Get()
		assert.ErrorIs(t, err, crisp.ErrStopped)
		g.open()
	})
}

func TestAGroupsCapacityCountsItsQueueNotItsWorkers(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, []*state{{}, {}}, crisp.WithCapacity(1, crisp.FailWhenFull))
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var running []interface{ Get() (int, error) }
	for range 2 {
		running = append(running, crisp.Call(grp, func(*crisp.Proc, *state) (int, error) {
			started <- struct{}{}
			<-release
			return 1, nil
		}))
		<-started // running on a worker: it holds no place
	}
	queued := crisp.Call(grp, record("queued"))
	_, err := crisp.Call(grp, record("refused")).Get()
	requireFull(t, err, 1, false)
	close(release)
	for _, f := range running {
		_, err := f.Get()
		require.NoError(t, err)
	}
	_, err = queued.Get()
	require.NoError(t, err)
}

func TestWithCapacityBelowOneIsAMisusePanic(t *testing.T) {
	assert.PanicsWithValue(t, "crisp: WithCapacity with a capacity less than 1", func() { crisp.WithCapacity(0, crisp.FailWhenFull) })
}

// A bounded mailbox costs a send no allocation: its count is an atomic
// integer in the actor. Nor does Detached, a plain value.
func TestABoundedMailboxSendAllocatesNoMore(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithCapacity(1000, crisp.FailWhenFull))
	b := crisp.Spawn(sys, &state{})
	ga, gb := newGate(), newGate()
	hold(t, a, ga)
	hold(t, b, gb)
	defer ga.open()
	defer gb.open()
	noop := func(*crisp.Proc, *state) {}
	// A Tell may take a finished message instead of allocating one
	// (crisp/stash.go), from this test or earlier ones: the two kinds of
	// send alternate, so that such messages serve both alike, and each
	// send's allocations are counted alone.
	const n = 500 // within the capacity: none is refused
	var plain, bounded uint64
	for range n {
		// Detached on both: a Tell without options to a held actor queues
		// only its handler (crisp/lane.go) and allocates nothing.
		plain += mallocs(func() { crisp.Tell(b, noop, crisp.Detached()) })
		bounded += mallocs(func() { crisp.Tell(a, noop, crisp.Detached()) })
	}
	assert.InDelta(t, float64(plain)/n, float64(bounded)/n, 0.1, "plain %d, bounded %d allocations in %d sends", plain, bounded, n)
}

// mallocs returns the heap allocations made while f runs.
func mallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// A sender that waited for room is then judged by admission control as
// of the moment the room came, not of its send.
func TestAdmissionAfterAWaitForRoomEstimatesFromThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := crisp.Spawn(sys, &state{}, crisp.WithCapacity(1, crisp.WaitWhenFull), crisp.WithAdmission())
		g := newGate()
		hold(t, a, g)
		start := time.Now()
		first := crisp.Call(a, func(*crisp.Proc, *state) (string, error) {
			virtualSleep(10 * time.Millisecond)
			return "first", nil
		}, crisp.Within(time.Hour), crisp.Cost(10*time.Millisecond))
		go func() {
			virtualSleep(20 * time.Millisecond)
			g.open()
		}()
		// Waits for room until first starts, 20ms on; then first's 10ms
		// are ahead of its start deadline, 25ms after the send.
		_, err := crisp.Call(a, record("second"), crisp.Within(30*time.Millisecond), crisp.Cost(5*time.Millisecond)).Get()
		var inf *crisp.InfeasibleError
		require.ErrorAs(t, err, &inf)
		assert.Equal(t, start.Add(20*time.Millisecond), inf.At)
		assert.Equal(t, 10*time.Millisecond, inf.Wait)
		_, err = first.Get()
		require.NoError(t, err)
	})
}

// TestDrainingWithSendersWaitingForRoom: a sender waiting for room in a
// full mailbox (WaitWhenFull) when its actor starts draining is refused
// with ErrStopped once room comes, never queued and never stuck; the
// queued work still runs, and the actor ends.
func TestDrainingWithSendersWaitingForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, g := fullMailbox(t)
		queued := crisp.Call(a, record("queued"))
		var waiting *future.Future[string]
		sent := make(chan struct{})
		go func() {
			waiting = crisp.Call(a, record("waiting"))
			close(sent)
		}()
		synctest.Wait() // the sender is blocked on the full mailbox
		a.Drain()
		g.open()
		<-sent
		_, err := queued.Get()
		require.NoError(t, err, "queued before the drain: it runs")
		_, err = waiting.Get()
		require.ErrorIs(t, err, crisp.ErrStopped, "sent during the drain: refused")
		<-a.Done()
		assert.NoError(t, a.Err(), "a drain is a clean end")
	})
}
