package vclock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/vclock"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newSystem starts a system on a virtual clock at t0 and shuts it down
// when the test ends.
func newSystem(t testing.TB) (*crisp.System, *vclock.Clock) {
	t.Helper()
	vc := vclock.New(t0)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(quiet))
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(bounded(t))) })
	return sys, vc
}

type counter struct{ n int }

func incr(_ *crisp.Proc, s *counter) (int, error) {
	s.n++
	return s.n, nil
}

func requireMissedAt(t *testing.T, err error, dl time.Time) {
	t.Helper()
	var miss *deadline.MissedError
	require.ErrorAs(t, err, &miss)
	assert.Equal(t, dl, miss.Deadline)
	assert.Equal(t, dl, miss.Detected)
	assert.Zero(t, miss.Lateness())
}

func TestDeadlinesInASystem(t *testing.T) {
	t.Run("a deadline at the instant of sending is missed with no lateness", func(t *testing.T) {
		sys, vc := newSystem(t)
		a := crisp.Spawn(sys, &counter{})
		var onTime, late *future.Future[int]
		vc.AfterFunc(time.Hour, func() {
			now := vc.Now()
			late = crisp.Call(a, incr, crisp.By(now))
			onTime = crisp.Call(a, incr, crisp.By(now.Add(time.Nanosecond)))
		})
		require.NoError(t, vc.Run(bounded(t), sys.WaitIdle))
		_, err := late.Get()
		requireMissedAt(t, err, at(time.Hour))
		n, err := onTime.Get()
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})

	t.Run("queued deadlines are missed exactly at their instants while the actor is busy", func(t *testing.T) {
		sys, vc := newSystem(t)
		a := crisp.Spawn(sys, &counter{})
		started, release := make(chan struct{}), make(chan struct{})
		crisp.Tell(a, func(*crisp.Proc, *counter) {
			close(started)
			<-release
		})
		<-started
		dls := []time.Time{at(10 * time.Minute), at(20 * time.Minute), at(20 * time.Minute), at(45 * time.Minute)}
		var fs []*future.Future[int]
		for _, dl := range dls {
			fs = append(fs, crisp.Call(a, incr, crisp.By(dl)))
		}
		// The actor is busy until release, so the system is never idle.
		// Instead, before each firing, wait until every call whose
		// deadline has come is decided, and then until the clock holds a
		// timer at or before the next undecided deadline: the watchdog
		// fails a batch before it arms its timer for the next one, so a
		// decided call alone does not say the timer is set, and a driver
		// that looked too soon would find nothing to fire and stop.
		idle := func(ctx context.Context) error {
			var next time.Time
			for i, f := range fs {
				if !dls[i].After(vc.Now()) {
					if _, err := f.GetContext(ctx); errors.Is(err, ctx.Err()) {
						return err
					}
				} else if !f.Ready() && (next.IsZero() || dls[i].Before(next)) {
					next = dls[i]
				}
			}
			for !next.IsZero() {
				if at, ok := vc.Next(); ok && !at.After(next) {
					break
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				runtime.Gosched()
			}
			return nil
		}
		require.NoError(t, vc.RunUntil(bounded(t), idle, at(30*time.Minute)))
		for i := range 3 {
			_, err := fs[i].Get()
			requireMissedAt(t, err, dls[i])
		}
		assert.False(t, fs[3].Ready())

		close(release)
		n, err := fs[3].Get()
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})

	t.Run("a message sent with a context of the clock takes its deadline", func(t *testing.T) {
		sys, vc := newSystem(t)
		a := crisp.Spawn(sys, &counter{})
		ctx, cancel := vc.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		var got time.Time
		f := crisp.Call(a, func(p *crisp.Proc, _ *counter) (int, error) {
			got = p.Deadline()
			return 0, nil
		}, crisp.Context(ctx))
		_, err := f.Get()
		require.NoError(t, err)
		assert.Equal(t, at(time.Hour), got)
		require.NoError(t, vc.Run(bounded(t), sys.WaitIdle))
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})
}

func TestTimedGetsOutsideTheSystem(t *testing.T) {
	t.Run("a timed get times out at its virtual instant", func(t *testing.T) {
		vc := vclock.New(t0)
		p := future.NewPromise[int](vc)
		type result struct {
			at  time.Time
			err error
		}
		got := make(chan result, 1)
		go func() {
			_, err := p.Future().GetWithin(10 * time.Minute)
			got <- result{vc.Now(), err}
		}()
		assert.Equal(t, at(10*time.Minute), waitPending(t, vc))
		require.NoError(t, vc.Run(bounded(t), noIdle))
		r := <-got
		assert.ErrorIs(t, r.err, future.ErrTimeout)
		assert.Equal(t, at(10*time.Minute), r.at)
	})

	t.Run("a get answered in time stops its timer", func(t *testing.T) {
		vc := vclock.New(t0)
		p := future.NewPromise[int](vc)
		got := make(chan error, 1)
		go func() {
			_, err := p.Future().GetWithin(10 * time.Minute)
			got <- err
		}()
		waitPending(t, vc)
		vc.AfterFunc(5*time.Minute, func() { p.Resolve(7, nil) })
		// The getter is outside any system: wait for it by hand once the
		// promise is resolved, so that its Stop comes before the next round.
		var err error
		idle := func(context.Context) error {
			if p.Future().Ready() && got != nil {
				err, got = <-got, nil
			}
			return nil
		}
		require.NoError(t, vc.Run(bounded(t), idle))
		require.NoError(t, err)
		assert.Equal(t, at(5*time.Minute), vc.Now(), "the 10-minute timer was stopped")
	})
}

// traceEvent is one event of the scenario below.
type traceEvent struct {
	At      time.Time
	Actor   int
	N       int
	Late    time.Duration // how far the event ran from the instant it was set for
	Summary int           // the aggregator's count after hearing of it
}

// worker is an actor that does a piece of work every few minutes of
// virtual time: each event reschedules the next, with AfterFunc and Tell,
// and reports to an aggregator.
type worker struct {
	id, n int
	rng   uint64
	due   time.Time
}

// gap draws the time to the worker's next event: 1 to 10 minutes, in
// whole minutes so that events of different workers often coincide.
func (w *worker) gap() time.Duration {
	w.rng ^= w.rng << 13
	w.rng ^= w.rng >> 7
	w.rng ^= w.rng << 17
	return time.Duration(1+w.rng%10) * time.Minute
}

// runScenario runs workers for span of virtual time and returns the trace
// of their events.
func runScenario(t testing.TB, workers int, span time.Duration) []traceEvent {
	t.Helper()
	sys, vc := newSystem(t)
	var (
		mu    sync.Mutex // guards trace
		trace []traceEvent
	)
	agg := crisp.Spawn(sys, &counter{}, crisp.WithName("aggregator"))
	end := t0.Add(span)
	for i := range workers {
		a := crisp.Spawn(sys, &worker{id: i, rng: uint64(i)*0x9E3779B97F4A7C15 + 1}, crisp.WithName(fmt.Sprint("worker ", i)))
		var event func(p *crisp.Proc, w *worker)
		schedule := func(w *worker) {
			d := w.gap()
			w.due = vc.Now().Add(d)
			if w.due.After(end) {
				return
			}
			vc.AfterFunc(d, func() { crisp.Tell(a, event, crisp.Within(30*time.Second)) })
		}
		event = func(p *crisp.Proc, w *worker) {
			w.n++
			ev := traceEvent{At: p.Now(), Actor: w.id, N: w.n, Late: p.Now().Sub(w.due)}
			crisp.Tell(agg, func(_ *crisp.Proc, s *counter) {
				s.n++
				ev.Summary = s.n
				mu.Lock()
				trace = append(trace, ev)
				mu.Unlock()
			})
			schedule(w)
		}
		// One worker at a time, so that their first timers are set in a
		// repeatable order.
		crisp.Tell(a, func(_ *crisp.Proc, w *worker) { schedule(w) })
		require.NoError(t, sys.WaitIdle(bounded(t)))
	}
	require.NoError(t, vc.RunUntil(bounded(t), sys.WaitIdle, end))
	mu.Lock()
	defer mu.Unlock()
	return trace
}

func TestSimulation(t *testing.T) {
	t.Run("a month of events a few minutes apart runs each at its instant", func(t *testing.T) {
		start := time.Now()
		trace := runScenario(t, 4, 30*24*time.Hour)
		wall := time.Since(start)
		t.Logf("%d events over 30 days of virtual time in %v of wall time (%.0f events/s)",
			len(trace), wall, float64(len(trace))/wall.Seconds())
		require.Greater(t, len(trace), 20_000)
		for i, ev := range trace {
			require.Zero(t, ev.Late, "event %d ran off its instant", i)
			require.Equal(t, i+1, ev.Summary, "event %d reached the aggregator out of turn", i)
			if i > 0 {
				require.False(t, ev.At.Before(trace[i-1].At), "event %d went back in time", i)
			}
		}
		assert.False(t, trace[len(trace)-1].At.After(at(30*24*time.Hour)))
	})

	t.Run("the same scenario gives the same trace twice", func(t *testing.T) {
		first := runScenario(t, 6, 3*24*time.Hour)
		second := runScenario(t, 6, 3*24*time.Hour)
		require.NotEmpty(t, first)
		coincide := 0
		for i := 1; i < len(first); i++ {
			if first[i].At.Equal(first[i-1].At) {
				coincide++
			}
		}
		t.Logf("%d events, %d at the instant of the one before", len(first), coincide)
		require.Positive(t, coincide, "the scenario should have events at equal instants")
		assert.Equal(t, first, second)
	})
}
