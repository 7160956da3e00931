package crisp

import (
	"context"
	"testing"
	"testing/synctest"

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
