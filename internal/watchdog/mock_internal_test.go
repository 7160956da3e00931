package watchdog

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type chanTarget chan time.Time

func (c chanTarget) Expire(now time.Time) { c <- now }

// A Mock's timers count their duration from the clock's reading when
// they are set. If the clock moves between the watchdog's reading and
// the setting (a test advancing it while a pass renews an entry), the
// timer must still fire at the deadline, not as late as the clock moved.
func TestAMockMovingWhileTheTimerIsSetDoesNotMakeItLate(t *testing.T) {
	mock := clock.NewMock()
	w := New(mock)
	t.Cleanup(w.Stop)
	start := mock.Now()
	moved := false
	beforeMockTimer = func() {
		if !moved {
			moved = true
			mock.Add(5 * time.Millisecond) // fires nothing: no timer is set yet
		}
	}
	t.Cleanup(func() { beforeMockTimer = nil })

	var e Entry
	out := make(chanTarget, 1)
	require.True(t, w.Watch(&e, out, start.Add(10*time.Millisecond), start))
	require.True(t, moved)
	mock.Add(5 * time.Millisecond)
	select {
	case now := <-out:
		assert.Equal(t, start.Add(10*time.Millisecond), now)
	case <-time.After(5 * time.Second):
		t.Fatal("not expired at its deadline: the timer was set 5 ms late")
	}
}
