package watchdog

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steppingClock is a clock whose every reading is a nanosecond after the
// last, as a real clock's readings move.
type steppingClock struct {
	clock.Clock
	t time.Time
}

func (c *steppingClock) Now() time.Time { c.t = c.t.Add(1); return c.t }

// The fine timer is made only where the clock moves while the goroutine
// runs: inside a testing/synctest bubble the real clock stands still
// until the bubble's goroutines block, and a goroutine blocked reading
// a timerfd would keep it still for ever.
func TestTheFineTimerIsOnlyForAClockThatMoves(t *testing.T) {
	assert.True(t, moves(&steppingClock{t: time.Unix(0, 0)}))
	assert.False(t, moves(clock.NewMock()))
	synctest.Test(t, func(t *testing.T) {
		assert.False(t, moves(clock.New()), "the real clock moved inside a bubble")
		w := New(nil)
		defer w.Stop()
		assert.Nil(t, w.fine, "a fine timer inside a bubble")
	})
}

// fineWatchdog returns a watchdog on the real clock with its fine timer,
// skipping the test where there is none (not Linux).
func fineWatchdog(t *testing.T, opts ...Option) *Watchdog {
	w := New(nil, opts...)
	t.Cleanup(w.Stop)
	if w.fine == nil {
		t.Skip("no fine timer on this platform")
	}
	return w
}

// The fine timer is armed with the clock's timer for each deadline, and
// rests for fineRest once a Nudge has found a deadline due: the runners
// are busy, and its expirations then slowed their nudges down.
func TestTheFineTimerRestsOnceANudgeFindsADeadlineDue(t *testing.T) {
	w := fineWatchdog(t)
	var e1, e2 Entry
	now := w.clk.Now()
	require.True(t, w.Watch(&e1, new(countingTarget), now.Add(time.Hour), now))
	w.mu.Lock()
	assert.True(t, w.fineArmed, "the fine timer is not armed for the first deadline")
	w.mu.Unlock()

	k := w.key(now.Add(time.Hour))
	require.True(t, w.nudgeAt(k), "a nudge past the deadline found nothing due")
	w.mu.Lock()
	assert.False(t, w.fineArmed, "the nudge left the fine timer armed")
	assert.Equal(t, k+int64(fineRest), w.fineOff)
	w.mu.Unlock()

	require.True(t, w.Watch(&e2, new(countingTarget), now.Add(time.Minute), now))
	w.mu.Lock()
	assert.False(t, w.fineArmed, "the fine timer was armed while it rests")
	w.mu.Unlock()
}

// The clock's timer firing well after the deadline both timers were set
// for, before the fine timer's reader ran, means the processors are busy:
// the fine timer rests. Firing on time, as it does when the fine timer's
// expiration woke an idle processor, it does not.
func TestTheFineTimerRestsWhenTheClocksTimerBeatsItLate(t *testing.T) {
	batches := make(chan struct{}, 4)
	w := fineWatchdog(t, AfterBatch(func() { batches <- struct{}{} }))
	var e Entry
	now := w.clk.Now()
	require.True(t, w.Watch(&e, new(countingTarget), now.Add(time.Hour), now))

	w.fired() // for the deadline an hour ahead: as early as can be
	<-batches // its pass has re-armed both timers
	w.mu.Lock()
	assert.Zero(t, w.fineOff, "a timer on time made the fine timer rest")
	late := w.key(w.clk.Now()) - int64(time.Second)
	w.armed = late // as if both had been set for a second ago
	w.fineArmed = true
	w.mu.Unlock()
	w.fired()
	<-batches
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.GreaterOrEqual(t, w.fineOff, late+int64(time.Second)+int64(fineRest), "a late timer left the fine timer on")
}
