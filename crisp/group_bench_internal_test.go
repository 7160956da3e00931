package crisp

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
)

// A group runner that starts while the group's only worker is benched
// (a restart's backoff), with work in the intake, leaves. It used to
// linger, and linger returns at once while the intake holds work, so
// the runner went round scheduleGroup for good and the system never went
// idle. Outside, most such runners skipped the linger by chance (an
// actor whose lingers were in vain lingers once in 16 times) and the
// hang came in a few runs in a thousand; here the actor's count of vain
// lingers is cleared first, so the runner lingers as a conversation's
// would, and the call is sent while the test holds the actor's lock, so
// that it stays in the intake for the runner.
func TestAGroupRunnerWithNoFreeWorkerLeaves(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	grp := SpawnGroup(sys, []*int{new(int)}, Restart(func() *int { return new(int) }), Backoff(10*time.Millisecond, 10*time.Millisecond))
	_, err := Call(grp, func(*Proc, *int) (int, error) { panic("x") }).Get()
	require.Error(t, err)
	idle := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // only if broken
		defer cancel()
		require.NoError(t, sys.WaitIdle(ctx), "the group never went idle")
	}
	idle()
	// The call's send pushes it into the intake, finds the lock held (it
	// would drain the intake itself otherwise) and starts a runner, which
	// waits for the lock.
	a := &grp.a.core
	a.mu.Lock()
	f := Call(grp, func(_ *Proc, n *int) (int, error) { return *n + 1, nil })
	free, queued := len(a.cfg.grp.free), a.intake.Load() != nil
	a.setVain(0)
	a.mu.Unlock()
	require.Zero(t, free, "the only worker is benched")
	require.True(t, queued, "the call waits in the intake")
	idle()
	require.False(t, f.Ready())
	mock.Add(10 * time.Millisecond) // the backoff ends: the worker serves the call
	idle()
	v, err := f.Get()
	require.NoError(t, err)
	require.Equal(t, 1, v)
}
