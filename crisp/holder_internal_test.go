package crisp

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// A message that arrives while the runner gives the actor up makes the
// runner keep it (release reports false). The runner must still be the
// actor's holder then: a handler it runs next that Gets a future of its
// own actor must get ErrDeadlock, not wait for good. On the real clock
// this happened about once in a hundred runs of
// TestSelfDeadlockIsAnErrorNotAHang on a busy machine (issue 14, item 2);
// here the test goroutine plays the runner, so the interleaving is
// forced.
func TestAWorkArrivingAsTheRunnerReleasesKeepsItsHolder(t *testing.T) {
	sys := NewSystem(WithClock(clock.NewMock()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int))

	// Hold the actor as a runner with nothing queued would, just before
	// it gives the actor up.
	require.True(t, a.acquire())
	sys.busy.Add(1)
	p := &Proc{a: &a.core, g: gid.Current()}
	a.holder.Store(uintptr(p.g))

	// A sender finds the actor held, so it starts no runner.
	f := Call(a, func(_ *Proc, _ *int) (error, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // only if broken
		defer cancel()
		_, err := Call(a, func(*Proc, *int) (int, error) { return 1, nil }).GetContext(ctx)
		return err, nil
	})

	a.mu.Lock()
	require.False(t, a.release(), "the message arrived: the runner keeps the actor")
	assert.Equal(t, uintptr(p.g), a.holder.Load(), "and is still its holder")
	// Run on, as schedule does after release reports false: as a runner
	// of this goroutine (so with p's g as its holder).
	a.mu.Unlock()
	sys.gor.Add(1)
	ready.Add(1) // run takes itself off package ready's count, as a spawned runner does
	a.run(nil)

	inner, err := f.Get()
	require.NoError(t, err)
	assert.ErrorIs(t, inner, ErrDeadlock)
}
