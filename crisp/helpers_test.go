package crisp_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is where every mock clock in these tests starts.
var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

func newMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(t0)
	return m
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newSystem starts a system on a mock clock and shuts it down when the
// test ends, checking that shutdown completes.
func newSystem(t *testing.T, opts ...crisp.Option) (*crisp.System, *clock.Mock) {
	t.Helper()
	mock := newMock()
	sys := crisp.NewSystem(append([]crisp.Option{crisp.WithClock(mock), crisp.WithLogger(quiet)}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	})
	return sys, mock
}

// waitIdle waits for the system to go idle, failing the test after a
// generous real-time bound (a hang is a bug, not slowness).
func waitIdle(t *testing.T, sys *crisp.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.WaitIdle(ctx), "system did not go idle")
}

// gate holds an actor busy: hold sends a handler that signals it started
// and then waits for open.
type gate struct {
	started chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan struct{}), release: make(chan struct{})} }

func hold[S any](t *testing.T, a *crisp.Actor[S], g *gate) {
	t.Helper()
	crisp.Tell(a, func(*crisp.Proc, S) {
		close(g.started)
		<-g.release
	}, crisp.MessageName("gate"))
	<-g.started
}

func (g *gate) open() { close(g.release) }

// noTimerClock is a mock clock whose timers never fire: the watchdog is
// blind, so only the check made when an actor takes a message from its
// queue can enforce deadlines.
type noTimerClock struct {
	*clock.Mock
	dead *clock.Mock // timers go here and nobody advances it
}

func newNoTimerClock() noTimerClock {
	return noTimerClock{Mock: newMock(), dead: clock.NewMock()}
}

func (c noTimerClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.dead.AfterFunc(d, f)
}
func (c noTimerClock) Timer(d time.Duration) *clock.Timer { return c.dead.Timer(d) }

// state is a typical actor state: a log of what ran.
type state struct{ ran []string }

func record(name string) func(*crisp.Proc, *state) (string, error) {
	return func(_ *crisp.Proc, s *state) (string, error) {
		s.ran = append(s.ran, name)
		return name, nil
	}
}

// ranOn reads an actor's log through the actor itself.
func ranOn(t *testing.T, a *crisp.Actor[*state]) []string {
	t.Helper()
	out, err := crisp.Call(a, func(_ *crisp.Proc, s *state) ([]string, error) {
		return append([]string(nil), s.ran...), nil
	}).Get()
	require.NoError(t, err)
	return out
}

// virtualSleep lets d pass on the calling goroutine inside a
// testing/synctest bubble, whose clock is virtual: the bubble's time
// jumps when every goroutine in it is blocked, so this is a step of the
// test's script, exact and instant, not a wait on real time. Only for
// bubbles: outside one it would wait for real.
func virtualSleep(d time.Duration) { <-time.After(d) }
