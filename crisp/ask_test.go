package crisp_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

func TestAskReturnsTheHandlersResult(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	v, err := crisp.Ask(a, record("one"))
	require.NoError(t, err)
	assert.Equal(t, "one", v)
	v, err = crisp.AskWithin(a, time.Hour, record("two"))
	require.NoError(t, err)
	assert.Equal(t, "two", v)
	boom := errors.New("boom")
	_, err = crisp.Ask(a, func(*crisp.Proc, *state) (int, error) { return 0, boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"one", "two"}, ranOn(t, a))
}

func TestAskReportsEveryFailureAsCallDoes(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithName("svc"))

	_, err := crisp.Ask(a, func(*crisp.Proc, *state) (string, error) { panic("bad") })
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "bad", pe.Value)

	_, err = crisp.Ask(a, record("late"), crisp.Within(0))
	assert.ErrorIs(t, err, deadline.ErrMissed)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = crisp.AskWithin(a, time.Hour, record("cancelled"), crisp.Context(ctx))
	assert.ErrorIs(t, err, context.Canceled)

	_, err = crisp.Ask(a, func(*crisp.Proc, *state) (string, error) {
		return crisp.Ask(a, record("inner"))
	})
	assert.ErrorIs(t, err, crisp.ErrDeadlock, "a handler asking its own actor")

	waitIdle(t, sys)
	assert.Equal(t, []string{"inner"}, ranOn(t, a), "only the refused wait's message ran, after its asker")

	a.Stop()
	_, err = crisp.Ask(a, record("stopped"))
	assert.ErrorIs(t, err, crisp.ErrStopped)
}

func TestAskWithinTimesOutAndTheMessageStillRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := crisp.Spawn(sys, &state{})
		release := make(chan struct{})
		crisp.Tell(a, func(*crisp.Proc, *state) { <-release })
		start := time.Now()
		_, err := crisp.AskWithin(a, time.Second, record("slow"))
		assert.ErrorIs(t, err, future.ErrTimeout)
		assert.Equal(t, time.Second, time.Since(start))
		close(release)
		synctest.Wait()
		v, err := crisp.Ask(a, func(_ *crisp.Proc, s *state) ([]string, error) { return s.ran, nil })
		require.NoError(t, err)
		assert.Equal(t, []string{"slow"}, v, "a timed-out ask's message is not withdrawn")
	})
}

func TestAskWithinNothingSendsNothing(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := crisp.AskWithin(a, d, record("never"))
		assert.ErrorIs(t, err, future.ErrTimeout)
	}
	waitIdle(t, sys)
	assert.Empty(t, ranOn(t, a))
}

func TestAskMisusePanics(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	assert.PanicsWithValue(t, "crisp: Ask with a nil handler", func() {
		_, _ = crisp.Ask[*state, int](a, nil)
	})
	assert.PanicsWithValue(t, "crisp: AskWithin with a nil handler", func() {
		_, _ = crisp.AskWithin[*state, int](a, time.Second, nil)
	})
	var none *crisp.Actor[*state]
	assert.Panics(t, func() { _, _ = crisp.Ask(none, record("x")) })
}

// Asks reuse their messages: many goroutines asking actors of two
// result types at once, on groups too, each checking that it got its
// own answer. A message reused while a holder still had it would give
// some asker another's answer, or a zero one (the race detector also
// watches the reuse).
func TestConcurrentAsksEachGetTheirOwnAnswer(t *testing.T) {
	sys, _ := newSystem(t)
	type counter struct{}
	var actors []*crisp.Actor[*counter]
	for range 6 {
		actors = append(actors, crisp.Spawn(sys, &counter{}))
	}
	grp := crisp.SpawnGroup(sys, []*counter{{}, {}})
	var ran atomic.Int64
	const askers, asks = 8, 300
	var wg sync.WaitGroup
	for g := range askers {
		wg.Go(func() {
			for i := range asks {
				want := g*asks + i
				a := actors[(g+i)%len(actors)]
				var to crisp.Ref[*counter] = a
				if i%7 == 0 {
					to = grp
				}
				if i%2 == 0 {
					v, err := crisp.Ask(to, func(_ *crisp.Proc, c *counter) (int, error) { ran.Add(1); return want, nil })
					if err != nil || v != want {
						t.Errorf("asker %d: got %d, %v; want %d", g, v, err, want)
						return
					}
					continue
				}
				v, err := crisp.AskWithin(to, time.Hour, func(*crisp.Proc, *counter) (string, error) {
					ran.Add(1)
					return string(rune('a' + want%26)), nil
				})
				if err != nil || v != string(rune('a'+want%26)) {
					t.Errorf("asker %d: got %q, %v; want %q", g, v, err, string(rune('a'+want%26)))
					return
				}
			}
		})
	}
	wg.Wait()
	waitIdle(t, sys)
	assert.Equal(t, int64(askers*asks), ran.Load(), "every ask ran once")
}

// An Ask is observed as a Call is, each one afresh though its message
// is reused: sent, started, finished, under its own number and name.
func TestAnObservedAskIsObservedAsACallIs(t *testing.T) {
	rec := newEventLog()
	sys, _ := newSystem(t, crisp.WithObserver(rec))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("svc"))
	names := []string{"first", "second", "third"}
	for _, name := range names {
		v, err := crisp.Ask(a, record(name), crisp.MessageName(name))
		require.NoError(t, err)
		require.Equal(t, name, v)
		_, err = crisp.AskWithin(a, time.Hour, func(*crisp.Proc, *state) (int, error) { return 0, nil })
		require.NoError(t, err)
	}
	rec.waitTerminals(t, 2*len(names))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byID := map[uint64][]crisp.EventKind{}
	named := map[string]uint64{}
	for _, e := range rec.events {
		byID[e.ID] = append(byID[e.ID], e.Kind)
		if e.Message != "" {
			named[e.Message] = e.ID
		}
	}
	require.Len(t, byID, 2*len(names), "each ask its own number")
	for id, kinds := range byID {
		assert.Equal(t, []crisp.EventKind{crisp.EventSent, crisp.EventStarted, crisp.EventFinished}, kinds, "message %d", id)
	}
	for _, name := range names {
		assert.Contains(t, named, name)
	}
}
