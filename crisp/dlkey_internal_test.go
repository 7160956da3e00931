package crisp

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// Deadline keys keep the deadlines' order, never take 0 (no deadline),
// and give every instant in their range back to the nanosecond, on
// either side of the system's epoch.
func TestDeadlineKeysKeepOrderAndGiveTheInstantBack(t *testing.T) {
	sys := NewSystem(WithClock(clock.NewMock()), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	// Only the least key saturates: math.MinInt64+1 has the same key.
	raw := []int64{math.MinInt64, math.MinInt64 + 2, -int64(time.Hour), -2, -1, 0, 1, 2, int64(time.Hour), math.MaxInt64}
	for i, k := range raw {
		dk := keyOf(k)
		assert.NotZero(t, dk, "the key of %d", k)
		if i > 0 {
			assert.Less(t, keyOf(raw[i-1]), dk, "%d and %d keep their order", raw[i-1], k)
		}
		if k != math.MinInt64 {
			at := sys.atKey(k)
			assert.Equal(t, at, sys.dlTime(dk), "the instant %d ns from the epoch", k)
			assert.Equal(t, dk, sys.dlKey(at))
		}
	}
}

// What a message's deadline is reported as (Proc.Deadline, the miss,
// the policy's item) is the time its sender gave, field for field:
// another location, no monotonic reading, a context's, a time beyond
// the keys' range. Its key alone would give back the same instant, not
// the same value.
func TestReportsGiveTheSendersOwnDeadline(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	a := Spawn(sys, 0)
	seen := func(opts ...SendOption) time.Time {
		v, err := Call(a, func(p *Proc, _ int) (time.Time, error) { return p.Deadline(), nil }, opts...).Get()
		require.NoError(t, err)
		return v
	}
	now := mock.Now()
	elsewhere := now.Add(time.Minute).In(time.FixedZone("elsewhere", 5*3600))
	assert.Equal(t, elsewhere, seen(By(elsewhere)))
	assert.Equal(t, now.Add(time.Minute), seen(Within(time.Minute)))
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, far, seen(By(far)), "beyond the keys' range")
	ctxDL := time.Now().Add(time.Hour) // the mock reads 1970: far ahead
	ctx, cancel := context.WithDeadline(context.Background(), ctxDL)
	defer cancel()
	assert.True(t, ctxDL == seen(Context(ctx)), "a context's deadline")
	assert.True(t, seen().IsZero())

	// A Then's continuation keeps its message's deadline, as given.
	b := Spawn(sys, 0)
	next, err := CallNext(a, func(p *Proc, _ int) Next[int, time.Time] {
		return Then(p, Call(b, func(*Proc, int) (int, error) { return 0, nil }), func(p *Proc, _ int, _ int, _ error) Next[int, time.Time] {
			return Return[int](p.Deadline(), nil)
		})
	}, By(elsewhere)).Get()
	require.NoError(t, err)
	assert.Equal(t, elsewhere, next, "in a continuation")

	// On the real clock, a By made from time.Now carries its own
	// monotonic reading.
	real := NewSystem(WithLogger(discard()))
	defer real.Shutdown(context.Background())
	dl := time.Now().Add(time.Hour)
	v, err := Call(Spawn(real, 0), func(p *Proc, _ int) (time.Time, error) { return p.Deadline(), nil }, By(dl)).Get()
	require.NoError(t, err)
	assert.True(t, dl == v, "%v is not the sender's %v", v, dl)
	past := time.Now().Add(-time.Second)
	_, err = Call(Spawn(real, 0), func(*Proc, int) (int, error) { return 0, nil }, By(past)).Get()
	var me *deadline.MissedError
	require.True(t, errors.As(err, &me), "%v", err)
	assert.True(t, past == me.Deadline, "%v is not the sender's %v", me.Deadline, past)

	// Missed by the watchdog, on virtual time, while the actor is busy.
	release := holdActor(a)
	defer release() // before Shutdown, which waits for the held handler
	soon := mock.Now().Add(time.Second).In(time.FixedZone("elsewhere", 5*3600))
	f := Call(a, func(*Proc, int) (int, error) { return 0, nil }, By(soon))
	mock.Add(time.Second)
	waitDone(t, f)
	_, err = f.Get()
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Equal(t, soon, me.Deadline)
	release()
}

// A deadline far beyond the keys' range is still a deadline: under EDF
// it comes after every nearer one and before messages without one, and
// does not miss.
func TestADeadlineBeyondTheKeysRangeIsStillOne(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	a := Spawn(sys, 0)
	release := holdActor(a)
	defer release() // before Shutdown, which waits for the held handler
	var order []string
	note := func(s string) func(*Proc, int) { return func(*Proc, int) { order = append(order, s) } }
	Tell(a, note("none"))
	Tell(a, note("year 9999"), By(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)))
	Tell(a, note("three hours"), Within(3*time.Hour))
	hour := Call(a, func(p *Proc, _ int) (int, error) { note("an hour")(p, 0); return 0, nil }, Within(time.Hour))
	mock.Add(2 * time.Hour)
	waitDone(t, hour)
	release()
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Equal(t, []string{"three hours", "year 9999", "none"}, order, "the hour's passed while the actor was busy")
}

// A mock clock may be set back before the system's epoch: deadlines
// there have keys at or below zero, which still order and miss exactly.
func TestDeadlinesBeforeTheEpochOrderAndMissExactly(t *testing.T) {
	mock := clock.NewMock()
	mock.Add(24 * time.Hour)
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer sys.Shutdown(context.Background())
	epoch := mock.Now()
	mock.Set(epoch.Add(-time.Hour))
	a := Spawn(sys, 0)
	release := holdActor(a)
	defer release() // before Shutdown, which waits for the held handler
	var order []string
	futs := map[string]*future.Future[int]{}
	send := func(name string, opt ...SendOption) {
		futs[name] = Call(a, func(*Proc, int) (int, error) { order = append(order, name); return 0, nil }, opt...)
	}
	missed := func() []string {
		var out []string
		for name, f := range futs {
			if f.Ready() {
				_, err := f.Get()
				assert.ErrorIs(t, err, deadline.ErrMissed, name)
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	send("none")
	send("epoch+1ns", By(epoch.Add(1)))
	send("epoch", By(epoch))
	send("epoch-1ns", By(epoch.Add(-1)))
	send("epoch-30m", By(epoch.Add(-30*time.Minute)))
	send("within 10m", Within(10*time.Minute)) // epoch-50m

	step := func(to time.Time, due ...string) {
		mock.Set(to)
		for _, name := range due {
			waitDone(t, futs[name])
		}
	}
	step(epoch.Add(-30*time.Minute-1), "within 10m")
	assert.Equal(t, []string{"within 10m"}, missed())
	step(epoch.Add(-1), "epoch-30m", "epoch-1ns")
	assert.Equal(t, []string{"epoch-1ns", "epoch-30m", "within 10m"}, missed())
	step(epoch, "epoch")
	assert.Equal(t, []string{"epoch", "epoch-1ns", "epoch-30m", "within 10m"}, missed())
	release()
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Equal(t, []string{"epoch+1ns", "none"}, order)
}

// waitDone waits for f, which the watchdog is to fail on virtual time:
// the mock runs its timer's callback on a goroutine of its own.
func waitDone(t *testing.T, f interface{ Done() <-chan struct{} }) {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(time.Minute):
		t.Fatal("the watchdog did not fail a message that came due")
	}
}

// holdActor runs a handler on a that waits until the returned release
// is called (once, or more: later calls do nothing), and returns once
// it runs.
func holdActor(a *Actor[int]) (release func()) {
	rel, held := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) { close(held); <-rel })
	<-held
	return sync.OnceFunc(func() { close(rel) })
}
