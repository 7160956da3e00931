package crisp

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/ready"
)

// The bounded start check is used on the real clock only: not on a
// mock clock, nor in a testing/synctest bubble, whose clock moves
// without the processor's counter.
func TestTheStartBoundIsForTheRealClockOnly(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown(context.Background())
	assert.Equal(t, ready.HasCounter, sys.bounded.Load(), "the real clock")
	mock := NewSystem(WithClock(clock.NewMock()))
	defer mock.Shutdown(context.Background())
	assert.False(t, mock.bounded.Load(), "a mock clock")
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(context.Background())
		assert.False(t, sys.bounded.Load(), "a bubble's clock")
	})
}

// startBound says a deadline has not come only when the clock surely
// reads less, and the watchdog has nothing due by then either.
func TestTheStartBoundNeverPassesADeadlineThatCame(t *testing.T) {
	if !ready.HasCounter {
		t.Skip("no counter apart from the runtime's clock")
	}
	defer ready.SetRate(2 << 32)() // 2 ns a tick: above any counter's rate
	sys := NewSystem()
	defer sys.Shutdown(context.Background())
	assert.False(t, sys.startBound(sys.dlKey(sys.now().Add(time.Hour))), "no anchor yet")
	now := sys.nowAnchored()
	require.NotNil(t, sys.anchor.Load(), "the first reading anchors")
	assert.True(t, sys.startBound(sys.dlKey(now.Add(time.Hour))), "an hour off")
	assert.False(t, sys.startBound(sys.dlKey(now)), "now")
	assert.False(t, sys.startBound(sys.dlKey(now.Add(-time.Nanosecond))), "passed")
	assert.False(t, sys.startBound(sys.dlKey(now.Add(time.Duration(boundSlack/2)))), "within the slack")
	// With a counter taken to count no time at all, only the slack
	// stands between the anchor and a deadline (at 2 ns a tick the
	// ticks since the anchor may cover half the slack by themselves).
	restore := ready.SetRate(1)
	assert.False(t, sys.startBound(sys.dlKey(now.Add(time.Duration(boundSlack/2)))), "within the slack, on no ticks")
	assert.True(t, sys.startBound(sys.dlKey(now.Add(time.Duration(2*boundSlack)))), "past the slack, on no ticks")
	restore()

	// A deadline the watchdog watches, ten seconds off: with a bound
	// twenty seconds ahead (an anchor that says so), the check cannot
	// tell the watchdog has nothing due, and reads the clock for the
	// Nudge.
	a := Spawn(sys, 0)
	in, release := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) {
		close(in)
		<-release
	})
	<-in
	f := Call(a, func(*Proc, int) (int, error) { return 1, nil }, Within(10*time.Second))
	func() {
		defer close(release)
		// Queued behind a running handler, the Call's deadline is the
		// watchdog's at once (post's queueNow).
		require.False(t, sys.wd.NotDueBy(int64(time.Hour)+sys.wdOff), "the watchdog watches the Call")
		assert.True(t, sys.startBound(sys.dlKey(now.Add(time.Hour))), "nothing due yet")
		k := int64(now.Sub(sys.epoch)) + int64(20*time.Second)
		sys.anchor.Store(&clockAnchor{t: ready.Stamp(), k: k})
		assert.False(t, sys.startBound(sys.dlKey(now.Add(time.Hour))), "the watchdog's deadline may be due")
	}()
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

// A reading of the clock past the bound (a counter that changed rate or
// jumped) ends the use of the bound for good.
func TestAClockPastTheBoundEndsIt(t *testing.T) {
	if !ready.HasCounter {
		t.Skip("no counter apart from the runtime's clock")
	}
	defer ready.SetRate(1 << 32)()
	sys := NewSystem()
	defer sys.Shutdown(context.Background())
	require.True(t, sys.bounded.Load())
	k := int64(sys.now().Sub(sys.epoch))
	sys.anchor.Store(&clockAnchor{t: ready.Stamp(), k: k - int64(time.Second)}) // claims the clock read a second less
	sys.nowAnchored()
	assert.False(t, sys.bounded.Load(), "the bound failed once: no more")
}
