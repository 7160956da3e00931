package crisp_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
)

func requireMissed(t *testing.T, err error, due, detected time.Time) *deadline.MissedError {
	t.Helper()
	var miss *deadline.MissedError
	require.ErrorAs(t, err, &miss)
	assert.ErrorIs(t, err, deadline.ErrMissed)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, due.Equal(miss.Deadline), "deadline %v, want %v", miss.Deadline, due)
	assert.True(t, detected.Equal(miss.Detected), "detected %v, want %v", miss.Detected, detected)
	return miss
}

func TestWatchdogFailsAQueuedMessageExactlyAtItsDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithName("node"))
	g := newGate()
	hold(t, a, g)

	due := t0.Add(10 * time.Millisecond)
	f := crisp.Call(a, record("late"), crisp.By(due), crisp.MessageName("job-1"))

	mock.Add(10*time.Millisecond - time.Nanosecond)
	assert.False(t, f.Ready(), "one nanosecond before the deadline nothing happens")

	mock.Add(time.Nanosecond)
	_, err := f.Get() // the caller learns now, while the actor is still busy
	miss := requireMissed(t, err, due, due)
	assert.Equal(t, time.Duration(0), miss.Lateness())
	assert.Equal(t, "node", miss.Actor)
	assert.Equal(t, "job-1", miss.Message)

	g.open()
	assert.Equal(t, []string(nil), ranOn(t, a), "a missed message never runs")
}

func TestAMessageTakenOneNanosecondBeforeItsDeadlineRuns(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	f := crisp.Call(a, record("just in time"), crisp.Within(10*time.Millisecond))
	mock.Add(10*time.Millisecond - time.Nanosecond)
	g.open()
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "just in time", v)
}

// With a watchdog that never wakes, the deadline is still enforced
// exactly when the actor takes the message from its queue.
func TestDequeueEnforcesTheDeadlineWithoutTheWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		runs    bool
	}{
		{"taken one nanosecond before the deadline", 10*time.Millisecond - time.Nanosecond, true},
		{"taken exactly at the deadline", 10 * time.Millisecond, false},
		{"taken after the deadline", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newNoTimerClock()
			sys := crisp.NewSystem(crisp.WithClock(clk), crisp.WithLogger(quiet))
			defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
			a := crisp.Spawn(sys, &state{})
			g := newGate()
			hold(t, a, g)
			due := t0.Add(10 * time.Millisecond)
			f := crisp.Call(a, record("m"), crisp.By(due))
			clk.Add(tc.elapsed)
			assert.False(t, f.Ready(), "the blind watchdog reported nothing")
			g.open()
			_, err := f.Get()
			if tc.runs {
				assert.NoError(t, err)
				assert.Equal(t, []string{"m"}, ranOn(t, a))
			} else {
				requireMissed(t, err, due, t0.Add(tc.elapsed))
				assert.Empty(t, ranOn(t, a))
			}
		})
	}
}

func TestWithinZeroOrNegativeIsMissedAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
		t.Run(d.String(), func(t *testing.T) {
			sys, _ := newSystem(t)
			var missed []*deadline.MissedError
			a := crisp.Spawn(sys, &state{}, crisp.WithMissHook(func(e *deadline.MissedError) { missed = append(missed, e) }))
			f := crisp.Call(a, record("never"), crisp.Within(d))
			require.True(t, f.Ready(), "failed at send, never queued")
			_, err := f.Get()
			requireMissed(t, err, t0.Add(d), t0)
			assert.Len(t, missed, 1)
			assert.Empty(t, ranOn(t, a))
		})
	}
}

func TestByAPastInstantIsMissedAtOnce(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	for _, due := range []time.Time{mock.Now(), mock.Now().Add(-time.Second)} {
		f := crisp.Call(a, record("never"), crisp.By(due))
		require.True(t, f.Ready())
		_, err := f.Get()
		requireMissed(t, err, due, t0)
	}
	v, err := crisp.Call(a, record("no deadline"), crisp.By(time.Time{})).Get()
	require.NoError(t, err, "By the zero time means no deadline")
	assert.Equal(t, "no deadline", v)
	assert.Equal(t, []string{"no deadline"}, ranOn(t, a))
}

func TestTheEarliestOfSeveralDeadlinesWins(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	f := crisp.Call(a, record("m"), crisp.Within(time.Hour), crisp.By(t0.Add(time.Second)), crisp.Within(time.Minute))
	mock.Add(time.Second)
	_, err := f.Get()
	requireMissed(t, err, t0.Add(time.Second), t0.Add(time.Second))
	g.open()
}

// A deadlined message sent to a free actor is not watched until something
// gets ahead of it; then the watchdog must still tell its caller on time.
func TestAMessageOvertakenOnAFreeActorIsStillWatched(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the runner cannot start before both sends
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	slow := crisp.Call(a, record("slow"), crisp.Within(time.Hour))
	g := newGate()
	crisp.Tell(a, func(*crisp.Proc, *state) { close(g.started); <-g.release }, crisp.Within(time.Minute))
	<-g.started
	mock.Add(time.Hour)
	_, err := slow.Get()
	requireMissed(t, err, t0.Add(time.Hour), t0.Add(time.Hour))
	g.open()
	assert.Empty(t, ranOn(t, a))
}

func TestMissHookSeesEveryMiss(t *testing.T) {
	sys, mock := newSystem(t)
	var mu sync.Mutex
	var seen []string
	a := crisp.Spawn(sys, &state{}, crisp.WithName("svc"), crisp.WithMissHook(func(e *deadline.MissedError) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Message)
	}))
	g := newGate()
	hold(t, a, g)
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.Within(time.Second), crisp.MessageName("told"))
	crisp.Call(a, record("called"), crisp.Within(2*time.Second), crisp.MessageName("called"))
	mock.Add(time.Second)
	mock.Add(time.Second)
	g.open()
	waitIdle(t, sys)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"told", "called"}, seen)
}

func TestAPanickingMissHookIsContained(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithMissHook(func(*deadline.MissedError) { panic("hook bug") }))
	_, err := crisp.Call(a, record("m"), crisp.Within(0)).Get()
	assert.ErrorIs(t, err, deadline.ErrMissed)
	v, err := crisp.Call(a, record("next")).Get()
	require.NoError(t, err)
	assert.Equal(t, "next", v)
}

// Run and miss race: the watchdog and the actor's runner both try to
// decide each message. Every message must end exactly one way, and a
// message reported missed must never have run. The deadline scale adapts
// until both outcomes are common, so that many decisions are contested.
func TestRunOrMissIsDecidedExactlyOnce(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()

	const actors, perActor = 8, 200
	scale := 20 * time.Microsecond
	contested := 0
	for round := 0; round < 12 && contested < 3; round++ {
		var ran [actors * perActor]atomic.Int32
		var futs [actors * perActor]interface{ Get() (int, error) }
		for i := range actors {
			a := crisp.Spawn(sys, &state{})
			for k := range perActor {
				id := i*perActor + k
				futs[id] = crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
					ran[id].Add(1)
					for start := p.Now(); p.Now().Sub(start) < 10*time.Microsecond; {
					}
					return id, nil
				}, crisp.Within(time.Duration(k)*scale))
			}
		}
		var nran, nmissed int
		for id, f := range futs {
			v, err := f.Get()
			switch {
			case err == nil:
				nran++
				require.Equal(t, id, v)
				require.Equal(t, int32(1), ran[id].Load(), "message %d ran %d times", id, ran[id].Load())
			case errors.Is(err, deadline.ErrMissed):
				nmissed++
				require.Equal(t, int32(0), ran[id].Load(), "message %d reported missed but ran", id)
			default:
				t.Fatalf("message %d: unexpected %v", id, err)
			}
		}
		require.Equal(t, actors*perActor, nran+nmissed)
		t.Logf("round %d, scale %v: %d ran, %d missed", round, scale, nran, nmissed)
		switch total := actors * perActor; {
		case nran < total/10:
			scale *= 2
		case nmissed < total/10:
			scale /= 2
		default:
			contested++
		}
	}
	assert.Equal(t, 3, contested, "could not find a deadline scale where runs and misses both happen")
}

func TestCostMakesTheDeadlineOneToFinishBy(t *testing.T) {
	t.Run("the watchdog fails the message cost before its deadline", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		hold(t, a, g)
		f := crisp.Call(a, record("long job"), crisp.Within(10*time.Millisecond), crisp.Cost(3*time.Millisecond))

		mock.Add(7*time.Millisecond - time.Nanosecond)
		assert.False(t, f.Ready(), "it can still finish in time")
		mock.Add(time.Nanosecond)
		_, err := f.Get()
		requireMissed(t, err, t0.Add(7*time.Millisecond), t0.Add(7*time.Millisecond))
		g.open()
		assert.Equal(t, []string(nil), ranOn(t, a))
	})

	t.Run("a message that cannot finish in time is missed at once", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		f := crisp.Call(a, record("too long"), crisp.Within(2*time.Millisecond), crisp.Cost(3*time.Millisecond))
		_, err := f.Get()
		requireMissed(t, err, t0.Add(-time.Millisecond), t0)
		assert.Equal(t, []string(nil), ranOn(t, a))
	})

	t.Run("EDF orders by the latest start", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		hold(t, a, g)
		short := crisp.Call(a, record("short, due at 5ms"), crisp.Within(5*time.Millisecond))
		long := crisp.Call(a, record("long, due at 10ms, must start by 2ms"), crisp.Within(10*time.Millisecond), crisp.Cost(8*time.Millisecond))
		var deadlineSeen time.Time
		crisp.Tell(a, func(p *crisp.Proc, _ *state) {}, crisp.Within(time.Hour))
		crisp.Tell(a, func(p *crisp.Proc, _ *state) { deadlineSeen = p.Deadline() }, crisp.Within(time.Hour), crisp.Cost(time.Minute))
		g.open()
		for _, f := range []interface{ Get() (string, error) }{short, long} {
			_, err := f.Get()
			require.NoError(t, err)
		}
		waitIdle(t, sys)
		assert.Equal(t, []string{"long, due at 10ms, must start by 2ms", "short, due at 5ms"}, ranOn(t, a))
		assert.Equal(t, t0.Add(59*time.Minute), deadlineSeen, "Proc.Deadline is the start deadline")
	})

	t.Run("without a deadline it changes nothing", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		v, err := crisp.Call(a, record("no deadline"), crisp.Cost(time.Hour)).Get()
		require.NoError(t, err)
		assert.Equal(t, "no deadline", v)
		waitIdle(t, sys)
	})

	t.Run("a negative cost is a misuse", func(t *testing.T) {
		assert.PanicsWithValue(t, "crisp: Cost with a negative duration", func() { crisp.Cost(-time.Nanosecond) })
	})
}
