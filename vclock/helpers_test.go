package vclock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/crisprt/crisp/vclock"
)

// t0 is where every clock in these tests starts.
var t0 = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

// noIdle is the idle function of a clock that drives no system.
func noIdle(context.Context) error { return nil }

// bounded returns a context that ends after a generous real-time bound,
// so that a stalled driver fails its test rather than hangs it.
func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// waitPending yields until the clock has a pending timer: a goroutine
// about to block on the clock has set its timer. It reports the instant.
func waitPending(t testing.TB, vc *vclock.Clock) time.Time {
	t.Helper()
	for range 1_000_000 {
		if next, ok := vc.Next(); ok {
			return next
		}
		runtime.Gosched()
	}
	t.Fatal("no timer was set")
	return time.Time{}
}
