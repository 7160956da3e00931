package crisp

import (
	"context"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The observer's figures live in the message's extension, not in the
// message: a program without an observer carries none of them.
func TestObservationAddsNothingToAMessage(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(message{}), uintptr(136), "message")
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(call[*int, int]{})), uintptr(208), "call: the 208-byte size class (see also size_internal_test.go)")
}

// An observed Call's extension, which held only the observer's figures,
// goes back to the system once its handler has returned, and the next
// observed message that takes it sees nothing of its first use. One
// that holds a context stays with its message.
func TestAnObservedCallsExtensionIsRecycledClean(t *testing.T) {
	var mu sync.Mutex
	var events []Event
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithObserver(ObserverFunc(func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int), WithName("a"))
	idle := func() { require.NoError(t, sys.WaitIdle(context.Background())) }
	ctx := context.WithValue(context.Background(), ctxKeyT{}, "req-1")

	send := func(opts ...SendOption) *call[*int, int] {
		c := &call[*int, int]{a: a, fn: func(_ *Proc, n *int) (int, error) { *n++; return *n, nil }}
		c.job = c
		plumb.SetSourceAt(&c.pr, &c.job)
		a.sendWith(&c.message, opts) // observed: never plain
		_, err := c.pr.Future().Get()
		require.NoError(t, err)
		idle()
		return c
	}

	c1 := send(MessageName("first"), Context(ctx), Priority(3))
	require.NotNil(t, c1.ext, "an extension holding a context stays with its message")
	assert.Equal(t, ctx, c1.ext.ctx)

	c2 := send(MessageName("second"))
	assert.Nil(t, c2.ext, "given back once the handler returned")

	mock.Add(time.Second)
	send(MessageName("third"))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 9)
	assert.NotEqual(t, events[0].ID, events[3].ID)
	assert.NotEqual(t, events[3].ID, events[6].ID, "the recycled extension's message has an ID of its own")
	for i, e := range events {
		msg := []string{"first", "second", "third"}[i/3]
		assert.Equal(t, uint64(i/3+1), e.ID, "event %d: numbered in send order", i)
		assert.Equal(t, msg, e.Message, "event %d", i)
		if i >= 3 {
			assert.Nil(t, e.Context, "event %d: nothing of the first message's context", i)
			assert.Zero(t, e.Priority, "event %d", i)
		}
		if i >= 6 {
			assert.Equal(t, mock.Now(), e.Time, "event %d: on the clock as it stands", i)
			assert.Zero(t, e.Wait, "event %d: the send's reading, not the recycled one's", i)
			assert.Zero(t, e.Run, "event %d", i)
		}
	}
}

// With an observer, a Call allocates no more than without one: its
// extension is recycled.
func TestAnObservedCallAllocatesOnlyItsMessage(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	// Both measured as on a quiet machine: on a busy one a caller parks
	// in Get on a waiter of its own, and a loaded test machine turning
	// busy between the two measurements made them differ (1 and 2).
	defer ready.HoldQuiet()()
	allocs := func(opts ...Option) float64 {
		sys := NewSystem(opts...)
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := Spawn(sys, new(int))
		fn := func(_ *Proc, n *int) (int, error) { *n++; return *n, nil }
		return testing.AllocsPerRun(100, func() {
			if _, err := Call(a, fn).Get(); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain := allocs()
	observed := allocs(WithObserver(ObserverFunc(func(Event) {})))
	assert.Equal(t, plain, observed)
}

type ctxKeyT struct{}

// On the real clock, a message with a deadline starts with the reading
// its runner took to check that deadline: one read of the clock fewer.
// A virtual clock is read again, so that its figures stay exact.
func TestStartedReusesTheDeadlineChecksReading(t *testing.T) {
	var started []Event
	obs := WithObserver(ObserverFunc(func(e Event) {
		if e.Kind == EventStarted {
			started = append(started, e) // called on this goroutine
		}
	}))
	check := func(sys *System, advance func()) (*message, Event) {
		a := Spawn(sys, new(int))
		c := &call[*int, int]{a: a, fn: func(*Proc, *int) (int, error) { return 0, nil }}
		c.job = c
		o := sendOpts{now: sys.now(), haveNow: true}
		c.setDeadline(sys, o.now.Add(time.Hour))
		a.sent(&c.message, c, &o)
		require.False(t, a.late(&c.message))
		advance()
		started = started[:0]
		a.observeStart(&c.message)
		require.Len(t, started, 1)
		return &c.message, started[0]
	}

	rt := NewSystem(obs)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	m, e := check(rt, func() {})
	require.NotZero(t, m.obs&obsRead, "the deadline check's reading is kept")
	assert.Equal(t, rt.epoch.Add(time.Duration(m.ext.startKey)), e.Time)
	assert.Equal(t, m.deadlineOf(rt).Sub(e.Time), e.Slack)

	mock := clock.NewMock()
	virtual := NewSystem(WithClock(mock), obs)
	defer func() { require.NoError(t, virtual.Shutdown(context.Background())) }()
	m, e = check(virtual, func() { mock.Add(time.Minute) })
	assert.Zero(t, m.obs&obsRead)
	assert.Equal(t, mock.Now(), e.Time, "read again")
	assert.Equal(t, time.Minute, e.Wait)
	assert.Equal(t, 59*time.Minute, e.Slack)
}

// BenchmarkObserveHooks measures what observing one Call adds on the
// goroutines that send and run it, without the round trip's scheduling
// noise: Sent, Started and Finished to a no-op observer, and the
// extension's return. "clock" is one reading of the system's clock, for
// comparison: each event reads it once.
func BenchmarkObserveHooks(b *testing.B) {
	type st = *int
	sys := NewSystem(WithObserver(ObserverFunc(func(Event) {})))
	defer func() { require.NoError(b, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int))
	fn := func(*Proc, st) (int, error) { return 0, nil }
	b.Run("call", func(b *testing.B) {
		c := &call[st, int]{a: a, fn: fn}
		b.ReportAllocs()
		for b.Loop() {
			c.message = message{}
			c.job = c
			var o sendOpts
			a.sent(&c.message, c, &o)
			a.observeStart(&c.message)
			a.observeFinish(&c.message)
			c.recycle()
		}
	})
	b.Run("call-deadline", func(b *testing.B) {
		// The deadline's reading at send, and at the runner's check,
		// serve Sent and Started.
		c := &call[st, int]{a: a, fn: fn}
		now := sys.now()
		b.ReportAllocs()
		for b.Loop() {
			c.message = message{}
			c.job = c
			o := sendOpts{now: now, haveNow: true}
			c.setDeadline(sys, now.Add(time.Hour))
			a.sent(&c.message, c, &o)
			keepStartReading(sys, &c.message, o.now)
			a.observeStart(&c.message)
			a.observeFinish(&c.message)
			c.recycle()
		}
	})
	b.Run("clock", func(b *testing.B) {
		var t time.Time
		for b.Loop() {
			t = sys.now()
		}
		_ = t
	})
}
