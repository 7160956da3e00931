package crisp_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
)

// ticks is an actor state that notes when its ticks ran.
type ticks struct{ at []time.Duration }

func (s *ticks) note(p *crisp.Proc) { s.at = append(s.at, p.Now().Sub(t0)) }

func ticksOf(t *testing.T, a *crisp.Actor[*ticks]) []time.Duration {
	t.Helper()
	out, err := crisp.Call(a, func(_ *crisp.Proc, s *ticks) ([]time.Duration, error) {
		return append([]time.Duration(nil), s.at...), nil
	}).Get()
	require.NoError(t, err)
	return out
}

// advance moves the mock clock on in steps, letting the system go idle
// after each.
func advance(t *testing.T, sys *crisp.System, mock interface{ Add(time.Duration) }, step time.Duration, n int) {
	t.Helper()
	for range n {
		mock.Add(step)
		waitIdle(t, sys)
	}
}

func TestTimersFireAtExactVirtualInstants(t *testing.T) {
	t.Run("After sends once, at its instant", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		crisp.After(a, 25*time.Millisecond, func(p *crisp.Proc, s *ticks) { s.note(p) })
		advance(t, sys, mock, time.Millisecond, 60)
		assert.Equal(t, []time.Duration{25 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("Every sends at each multiple of its period", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, func(p *crisp.Proc, s *ticks) { s.note(p) })
		advance(t, sys, mock, time.Millisecond, 45)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("ticks carry their send options", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		var names []string
		crisp.Every(a, 10*time.Millisecond, crisp.CatchUp, func(p *crisp.Proc, s *ticks) {
			names = append(names, p.Name())
			s.note(p)
		}, crisp.MessageName("heartbeat"), crisp.Within(time.Millisecond))
		advance(t, sys, mock, 10*time.Millisecond, 2)
		assert.Equal(t, []string{"heartbeat", "heartbeat"}, names)
	})
}

func TestTimersStop(t *testing.T) {
	t.Run("when stopped", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		tm := crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, func(p *crisp.Proc, s *ticks) { s.note(p) })
		advance(t, sys, mock, 5*time.Millisecond, 5)
		assert.True(t, tm.Stop(), "it had ticks to come")
		assert.False(t, tm.Stop(), "once")
		advance(t, sys, mock, 5*time.Millisecond, 10)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("an After that has fired has nothing left to stop", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		tm := crisp.After(a, time.Millisecond, func(p *crisp.Proc, s *ticks) { s.note(p) })
		advance(t, sys, mock, time.Millisecond, 1)
		assert.False(t, tm.Stop())
		assert.Len(t, ticksOf(t, a), 1)
	})
	t.Run("when their actor stops", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		tm := crisp.Every(a, 10*time.Millisecond, crisp.CatchUp, func(p *crisp.Proc, s *ticks) { s.note(p) })
		after := crisp.After(a, time.Hour, func(p *crisp.Proc, s *ticks) { s.note(p) })
		advance(t, sys, mock, 10*time.Millisecond, 2)
		got := ticksOf(t, a)
		a.Stop()
		<-a.Done()
		assert.False(t, tm.Stop(), "stopped with the actor")
		assert.False(t, after.Stop(), "stopped with the actor")
		advance(t, sys, mock, 10*time.Millisecond, 5)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, got)
	})
	t.Run("on an actor already stopped", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		a.Stop()
		tm := crisp.Every(a, time.Millisecond, crisp.SkipMissed, func(*crisp.Proc, *ticks) {})
		assert.False(t, tm.Stop())
	})
}

func TestTicksThatFallBehind(t *testing.T) {
	// The first tick keeps the actor from 10 to 35 (it sleeps on the
	// clock): the ticks due at 20 and 30 fall behind.
	slowFirst := func(p *crisp.Proc, s *ticks) {
		s.note(p)
		if len(s.at) == 1 {
			p.Sleep(25 * time.Millisecond)
		}
	}
	t.Run("CatchUp sends every tick", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		crisp.Every(a, 10*time.Millisecond, crisp.CatchUp, slowFirst)
		advance(t, sys, mock, 5*time.Millisecond, 9)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 35 * time.Millisecond, 35 * time.Millisecond, 40 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("SkipMissed drops what falls behind and keeps to the grid", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, slowFirst)
		advance(t, sys, mock, 5*time.Millisecond, 9)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 35 * time.Millisecond, 40 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("SkipMissed keeps at most one tick queued", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		// A handler that sleeps 25 ms on the clock keeps the actor
		// through two more ticks.
		tm := crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, func(p *crisp.Proc, s *ticks) {
			s.note(p)
			p.Sleep(25 * time.Millisecond)
		})
		advance(t, sys, mock, 5*time.Millisecond, 16)
		tm.Stop()
		advance(t, sys, mock, 5*time.Millisecond, 7)
		// 10 runs until 35; 20 is sent, 30 dropped (20 is queued); 20
		// runs at 35 until 60; 40 is sent, 50 dropped; 40 runs at 60
		// until 85; 70 is sent, 80 dropped, and the timer stopped; 70
		// runs at 85.
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 35 * time.Millisecond, 60 * time.Millisecond, 85 * time.Millisecond}, ticksOf(t, a))
	})
	t.Run("a tick that misses its deadline does not stop the next", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &ticks{})
		crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, func(p *crisp.Proc, s *ticks) { s.note(p) }, crisp.Within(time.Millisecond))
		advance(t, sys, mock, 5*time.Millisecond, 1)
		// Busy from 5 to 15: the tick sent at 10 misses at 11.
		crisp.Tell(a, func(p *crisp.Proc, _ *ticks) { p.Sleep(10 * time.Millisecond) })
		advance(t, sys, mock, time.Millisecond, 25)
		assert.Equal(t, []time.Duration{20 * time.Millisecond, 30 * time.Millisecond}, ticksOf(t, a))
	})
}

func TestEveryWithANonPositivePeriodPanics(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &ticks{})
	assert.PanicsWithValue(t, "crisp: Every with a period that is not positive", func() {
		crisp.Every(a, 0, crisp.SkipMissed, func(*crisp.Proc, *ticks) {})
	})
	assert.PanicsWithValue(t, "crisp: After with a nil handler", func() {
		crisp.After[*ticks](a, time.Second, nil)
	})
}

// Inside a synctest bubble the default clock is virtual: a periodic
// timer's ticks come at exact instants, and a restart's backoff lasts
// exactly its time.
func TestInABubbleTimersAndBackoffsAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		start := time.Now()
		var made incarnations
		a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh), crisp.Backoff(35*time.Millisecond, time.Second))
		var at []time.Duration
		var gens []int
		tm := crisp.Every(a, 10*time.Millisecond, crisp.CatchUp, func(p *crisp.Proc, s *incarnation) {
			at = append(at, p.Now().Sub(start))
			gens = append(gens, s.gen)
			if len(at) == 2 {
				panic("second tick")
			}
		})
		virtualSleep(75 * time.Millisecond)
		synctest.Wait()
		tm.Stop()
		ms := time.Millisecond
		// The tick at 20 panics; the backoff holds the actor until 55,
		// when the ticks of 30, 40 and 50 run at once; then 60 and 70.
		assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 55 * ms, 55 * ms, 55 * ms, 60 * ms, 70 * ms}, at)
		assert.Equal(t, []int{1, 1, 2, 2, 2, 2, 2}, gens)
	})
}

func TestShutdownDuringABackoffResolvesEverything(t *testing.T) {
	mock := newMock()
	sys := crisp.NewSystem(crisp.WithClock(mock), crisp.WithLogger(quiet))
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh), crisp.Backoff(time.Hour, time.Hour))
	_, err := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { panic("x") }).Get()
	require.Error(t, err)
	queued := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { return 1, nil })
	done := a.Done()
	waitIdle(t, sys)
	assert.False(t, queued.Ready(), "waits out the backoff")
	require.NoError(t, sys.Shutdown(context.Background()))
	_, err = queued.Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	<-done
	assert.NoError(t, a.Err())
}

// TestTimersTickOnThroughARestart: a periodic timer's tick that panics
// restarts its supervised actor (with a backoff), and the ticks go on at
// their instants on the fresh state; one due during the backoff waits in
// the queue and runs when the backoff ends: issue 16's timers and
// supervision, together.
func TestTimersTickOnThroughARestart(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &ticks{}, crisp.Restart(func() *ticks { return &ticks{} }),
		crisp.Backoff(15*time.Millisecond, 15*time.Millisecond))
	n := 0
	crisp.Every(a, 10*time.Millisecond, crisp.SkipMissed, func(p *crisp.Proc, s *ticks) {
		n++
		s.note(p)
		if n == 2 {
			panic("second tick")
		}
	})
	advance(t, sys, mock, time.Millisecond, 55)
	// Ticks at 10 and 20 ms on the first state (the second panics; the
	// backoff runs to 35 ms); the tick due at 30 ms runs at 35 ms on the
	// fresh state, then 40 and 50 ms.
	assert.Equal(t, []time.Duration{35 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond}, ticksOf(t, a))
	assert.Equal(t, 5, n)
}
