package watchdog_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/watchdog"
)

// renewer is a Renewer that reports each Renew on out and asks to be
// watched again period later, left times. With hold set, Renew waits
// for hold to be closed before it returns: the test acts while the
// renewal is pending.
type renewer struct {
	watchdog.Entry
	period time.Duration
	left   int
	out    chan time.Time
	hold   chan struct{}
}

func newRenewer(period time.Duration, left int) *renewer {
	return &renewer{period: period, left: left, out: make(chan time.Time, 8)}
}

func (r *renewer) Expire(time.Time) { panic("the watchdog called Expire on a Renewer") }

func (r *renewer) Renew(now time.Time) time.Time {
	r.out <- now
	if r.hold != nil {
		<-r.hold
	}
	if r.left--; r.left <= 0 {
		return time.Time{}
	}
	return now.Add(r.period)
}

func TestARenewerIsWatchedAgainForWhatRenewReturns(t *testing.T) {
	mock, w, batches := newBatched(t)
	start := mock.Now()
	r := newRenewer(5*ms, 3)
	require.True(t, w.Watch(&r.Entry, r, start.Add(5*ms), start))
	for i := 1; i <= 3; i++ {
		due := start.Add(time.Duration(i) * 5 * ms)
		advanceTo(mock, due.Add(-time.Nanosecond))
		assert.Empty(t, drain(r.out), "renewed for later than asked")
		mock.Add(time.Nanosecond)
		assert.Equal(t, due, within(t, r.out), "renewal %d", i)
		within(t, batches)
	}
	assert.Zero(t, w.Len(), "renewed though Renew returned the zero time")
	mock.Add(time.Hour)
	assert.Empty(t, drain(r.out))
}

func TestAWatchOrCancelWhileARenewalIsPendingWins(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		mock, w, batches := newBatched(t)
		r := renewing(t, mock, w, time.Hour) // it will ask for an hour on
		now := mock.Now()
		require.True(t, w.Watch(&r.Entry, r, now.Add(2*ms), now))
		close(r.hold)
		within(t, batches)
		assert.Equal(t, 1, w.Len(), "the Watch and the renewal both kept")
		mock.Add(2 * ms)
		assert.Equal(t, now.Add(2*ms), within(t, r.out), "the renewal displaced the Watch")
		within(t, batches)
		assert.Zero(t, w.Len())
	})

	t.Run("Cancel", func(t *testing.T) {
		mock, w, batches := newBatched(t)
		r := renewing(t, mock, w, ms)
		assert.False(t, w.Cancel(&r.Entry), "Cancel reported a renewing entry as watched")
		close(r.hold)
		within(t, batches)
		assert.Zero(t, w.Len(), "renewed after a Cancel")
		mock.Add(time.Hour)
		assert.Empty(t, drain(r.out))
	})

	t.Run("Stop", func(t *testing.T) {
		mock := clock.NewMock()
		w := watchdog.New(mock)
		start := mock.Now()
		r := renewing(t, mock, w, ms)
		stopped := make(chan struct{})
		go func() { w.Stop(); close(stopped) }()
		waitStopping(t, w, start) // then released
		close(r.hold)
		within(t, stopped)
		assert.Zero(t, w.Len())
		// The entry is free for another watchdog: it is not left marked
		// as renewing in this one.
		_, w2 := newMocked(t)
		assert.NotPanics(t, func() { w2.Watch(&r.Entry, r, start.Add(time.Hour), start) })
	})
}

// renewing watches a renewer that asks for period more, and returns it
// once the watchdog is in its Renew, held there until r.hold is closed.
func renewing(t *testing.T, mock *clock.Mock, w *watchdog.Watchdog, period time.Duration) *renewer {
	t.Helper()
	start := mock.Now()
	r := newRenewer(period, 2)
	r.hold = make(chan struct{})
	require.True(t, w.Watch(&r.Entry, r, start.Add(ms), start))
	mock.Add(ms)
	within(t, r.out)
	return r
}

// newBatched starts a watchdog on a fresh mock clock that reports the
// end of each pass on the returned channel.
func newBatched(t *testing.T) (*clock.Mock, *watchdog.Watchdog, chan struct{}) {
	batches := make(chan struct{}, 8)
	mock, w := newMocked(t, watchdog.AfterBatch(func() { batches <- struct{}{} }))
	return mock, w, batches
}

// A Mock fires its timers only inside Add and Set. A deadline that is
// already due by the clock's reading when the watchdog arms for it (the
// clock moved on while a pass was still renewing, or since a sender's
// reading) must still be expired, without waiting for an Add that a
// test blocked on the outcome never makes.
func TestADeadlineDueWhenArmedOnAMockExpiresWithoutAnotherAdd(t *testing.T) {
	t.Run("renewed while the clock moved past it", func(t *testing.T) {
		mock, w, batches := newBatched(t)
		start := mock.Now()
		r := newRenewer(10*ms, 2)
		r.hold = make(chan struct{})
		require.True(t, w.Watch(&r.Entry, r, start.Add(5*ms), start))
		advanceTo(mock, start.Add(5*ms))
		assert.Equal(t, start.Add(5*ms), within(t, r.out))
		// The renewal (for 15 ms) is pending: nothing is armed, so this
		// Add fires nothing.
		advanceTo(mock, start.Add(20*ms))
		close(r.hold)
		within(t, batches)
		assert.Equal(t, start.Add(20*ms), within(t, r.out), "renewed for 15 ms, which the clock had passed")
		within(t, batches)
		assert.True(t, w.Idle(mock.Now()))
	})

	t.Run("watched from a stale reading", func(t *testing.T) {
		mock, w := newMocked(t)
		start := mock.Now()
		advanceTo(mock, start.Add(10*ms))
		out := make(chan expiry, 1)
		x := &timeout{id: 1, out: out}
		require.True(t, w.Watch(&x.Entry, x, start.Add(10*ms), start), "after now as the caller read it")
		assertExpiry(t, 1, start.Add(10*ms), within(t, out))
	})
}
