// Package crisptest holds the test helpers the library's own test
// packages share: a system on a mock clock that is shut down when the
// test ends, and a bounded wait for it to go idle.
package crisptest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/internal/ready"
)

// T0 is where every mock clock of these helpers starts.
var T0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

// Quiet is a logger that discards everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// NewMock returns a mock clock set to T0.
func NewMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(T0)
	return m
}

// NewSystem starts a system on a new mock clock, logging to Quiet unless
// opts say otherwise, and shuts it down when the test ends, failing the
// test if that takes more than ten seconds.
func NewSystem(t testing.TB, opts ...crisp.Option) (*crisp.System, *clock.Mock) {
	t.Helper()
	mock := NewMock()
	sys := crisp.NewSystem(append([]crisp.Option{crisp.WithClock(mock), crisp.WithLogger(Quiet)}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	})
	return sys, mock
}

// WaitIdle waits for the system to go idle, failing the test after a
// generous real-time bound (a hang is a bug, not slowness).
func WaitIdle(t testing.TB, sys *crisp.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.WaitIdle(ctx), "system did not go idle")
}

// CountsReady wraps a test binary's m so that, after its tests, the
// binary fails unless every goroutine counted by package ready has run:
// a count left above zero would make runners yield for good. Use it as
// goleak.VerifyTestMain(crisptest.CountsReady(m)).
func CountsReady(m *testing.M) interface{ Run() int } { return readyCheck{m} }

type readyCheck struct{ m *testing.M }

func (c readyCheck) Run() int {
	code := c.m.Run()
	// Goroutines counted at the very end of a test may still be on
	// their way to run: give them a bounded while, as goleak does.
	for end := time.Now().Add(5 * time.Second); ready.N() != 0 && time.Now().Before(end); {
		runtime.Gosched()
	}
	if n := ready.N(); n != 0 {
		fmt.Fprintf(os.Stderr, "internal/ready counts %d goroutines as ready after every test has ended: some Add was not paired with a Done\n", n)
		if code == 0 {
			code = 1
		}
	}
	return code
}
