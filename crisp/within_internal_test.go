package crisp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
)

// A message whose one option is Within takes a path of its own
// (sendWithin), apart from the one that gathers options: it is the
// usual message with a deadline, and gathering cost it about a tenth of
// its time. Any other option, an observer or a bound sends it the
// general way.
func TestOnlyAMessageWithOneWithinTakesTheShortPath(t *testing.T) {
	sys := NewSystem(WithClock(clock.NewMock()), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	a := Spawn(sys, 0)
	assert.True(t, a.withinOnly([]SendOption{Within(time.Second)}))
	assert.False(t, a.withinOnly(nil))
	assert.False(t, a.withinOnly([]SendOption{Within(time.Second), Within(time.Minute)}))
	assert.False(t, a.withinOnly([]SendOption{By(time.Now())}))
	assert.False(t, a.withinOnly([]SendOption{Priority(1)}))
	assert.False(t, Spawn(sys, 0, WithCapacity(4, FailWhenFull)).withinOnly([]SendOption{Within(time.Second)}))

	observed := NewSystem(WithClock(clock.NewMock()), WithLogger(discard()), WithObserver(ObserverFunc(func(Event) {})))
	defer observed.Shutdown(context.Background())
	assert.False(t, Spawn(observed, 0).withinOnly([]SendOption{Within(time.Second)}))
}

// On that path a message still fails at once when its deadline has
// passed, fails with ErrStopped on a stopped actor, and is watched while
// the actor runs a handler, so that it misses at the very instant on
// virtual time; a Tell's miss reaches the actor's miss hook.
func TestAMessageWithOneWithinIsWatchedAndFailsAsAnyOther(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	var hooked []*deadline.MissedError
	a := Spawn(sys, 0, WithMissHook(func(e *deadline.MissedError) { hooked = append(hooked, e) }))
	inc := func(_ *Proc, n int) (int, error) { return n + 1, nil }

	for _, d := range []time.Duration{0, -time.Millisecond} {
		_, err := Call(a, inc, Within(d)).Get()
		var me *deadline.MissedError
		require.True(t, errors.As(err, &me), "Within(%v): %v", d, err)
		assert.Equal(t, mock.Now().Add(d), me.Deadline)
		assert.Equal(t, mock.Now(), me.Detected, "failed at once")
	}

	release, held := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) { close(held); <-release })
	<-held
	call := Call(a, inc, Within(2*time.Second))
	next := CallNext(a, func(p *Proc, n int) Next[int, int] { return Return[int](n, nil) }, Within(time.Second))
	Tell(a, func(*Proc, int) {}, Within(3*time.Second))
	// A second at a time, each miss waited for before the clock moves on:
	// the mock runs the watchdog's timer callback on a goroutine of its
	// own, and one Add(3s) on a loaded machine (the whole suite at once)
	// let the pass read the clock at 3 s for the Call due at 2 s.
	for i, f := range []interface{ Done() <-chan struct{} }{next, call, nil} {
		mock.Add(time.Second)
		if f == nil {
			break
		}
		select {
		case <-f.Done():
		case <-time.After(time.Minute):
			t.Fatalf("the message due at %d s was not failed", i+1)
		}
	}
	_, err := call.Get()
	var me *deadline.MissedError
	require.True(t, errors.As(err, &me), "Call: %v", err)
	assert.Equal(t, me.Deadline, me.Detected, "Call's miss reported late on virtual time")
	_, err = next.Get()
	require.True(t, errors.As(err, &me), "CallNext: %v", err)
	assert.Equal(t, me.Deadline, me.Detected, "CallNext's miss reported late on virtual time")
	close(release)
	require.NoError(t, sys.WaitIdle(context.Background()))
	require.Len(t, hooked, 5, "the miss hook hears of every miss: two at once, three while held")
	assert.Equal(t, hooked[4].Deadline, hooked[4].Detected, "the Tell's miss reported late on virtual time")

	a.Stop()
	_, err = Call(a, inc, Within(time.Second)).Get()
	assert.ErrorIs(t, err, ErrStopped)
}
