package crisp

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A runner that has given its actor up may not have exited yet when the
// system is idle. Shutdown with an ended context waits for it, and
// returns nil, rather than report context.Canceled for a system with
// nothing outstanding (issue 14, item 5). The bubble makes the order
// exact: Shutdown is blocked before the runner exits.
func TestShutdownWaitsForExitingGoroutinesWhateverItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		sys.gor.Add(1) // a runner past its release, on its way out
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(ctx) }()
		synctest.Wait()
		select {
		case err := <-done:
			require.Fail(t, "Shutdown returned before the exiting goroutine ended", "err: %v", err)
		default:
		}
		sys.goroutineDone() // the runner exits
		assert.NoError(t, <-done)
	})
}

// A stop that stopLater counted before Shutdown counted its own (a
// sender found one shard closed while Shutdown was still closing the
// others) stays outstanding: Shutdown adds its count to it rather than
// overwrite it. Overwritten, the stop went uncounted, and a Shutdown
// with an ended context waited for it as for a goroutine on its way out
// (here, until the test lets the stop take the actor's lock). Not in a
// synctest bubble: a goroutine blocked on a mutex is not durably
// blocked there. The guard's bound is reached only if Shutdown waits.
func TestAStopCountedBeforeShutdownsOwnStaysOutstanding(t *testing.T) {
	sys := NewSystem()
	a := Spawn(sys, 0)
	a.mu.Lock() // the stop waits here
	a.stopLater()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- sys.Shutdown(ctx) }()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	returned := false
	select {
	case err := <-done:
		returned = true
		assert.ErrorIs(t, err, context.Canceled, "the stop is outstanding")
	case <-guard.C:
		assert.Fail(t, "Shutdown waited for an outstanding stop as for an exit")
	}
	a.mu.Unlock() // the stop runs
	if !returned {
		<-done
	}
	assert.NoError(t, sys.Shutdown(context.Background()))
	assert.NoError(t, sys.Shutdown(ctx), "nothing is outstanding once it has run")
}
