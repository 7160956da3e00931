package crisp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// Messages with deadlines sent in deadline order (the usual case: one
// Within for all) queue as plain messages, in arrival order, skipping the
// list, the policy's queue and the deadline index; a deadline out of
// that order sends them all to the policy. Either way they run in EDF
// order, and those whose deadlines pass while they wait are reported at
// the very instant on virtual time.
func TestDeadlinesInOrderQueueAsPlainMessages(t *testing.T) {
	for _, outOfOrder := range []bool{false, true} {
		mock := clock.NewMock()
		sys := NewSystem(WithClock(mock), WithLogger(discard()))
		a := Spawn(sys, 0)
		release, held := make(chan struct{}), make(chan struct{})
		Tell(a, func(*Proc, int) { close(held); <-release })
		<-held
		var (
			mu  sync.Mutex
			ran []int
		)
		const n = 6
		futs := make([]*future.Future[int], n)
		for i := range n {
			d := time.Duration(i+1) * time.Second
			if outOfOrder && i == n-1 {
				d = time.Second / 2 // the earliest: it must run first
			}
			futs[i] = Call(a, func(*Proc, int) (int, error) {
				mu.Lock()
				ran = append(ran, i)
				mu.Unlock()
				return i, nil
			}, Within(d))
		}
		a.core.mu.Lock()
		a.core.drain()
		plain, listed := int(a.core.pn), a.core.queued
		a.core.mu.Unlock()
		if outOfOrder {
			require.Zero(t, plain, "a deadline out of order stayed plain")
			require.EqualValues(t, n, listed)
		} else {
			require.Equal(t, n, plain, "deadlines in order did not queue as plain messages")
		}

		// The first two (one and two seconds; and half a second out of
		// order) pass while the handler holds the actor.
		mock.Add(2 * time.Second)
		due := []int{0, 1}
		if outOfOrder {
			due = append(due, n-1)
		}
		for _, i := range due {
			<-futs[i].Done()
			_, err := futs[i].Get()
			var me *deadline.MissedError
			require.True(t, errors.As(err, &me), "call %d: %v", i, err)
			require.Equal(t, me.Deadline, me.Detected, "call %d reported late on virtual time", i)
		}
		for i := 2; i < n-1; i++ {
			require.False(t, futs[i].Ready(), "call %d, not due, was resolved", i)
		}
		close(release)
		require.NoError(t, sys.WaitIdle(context.Background()))
		mu.Lock()
		if outOfOrder {
			require.Equal(t, []int{2, 3, 4}, ran)
		} else {
			require.Equal(t, []int{2, 3, 4, 5}, ran)
		}
		mu.Unlock()
		require.NoError(t, sys.Shutdown(context.Background()))
	}
}
