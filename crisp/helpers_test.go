package crisp_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/internal/crisptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(crisptest.CountsReady(m)) }

// The shared helpers (internal/crisptest), under the names these tests use.
var (
	t0    = crisptest.T0
	quiet = crisptest.Quiet
)

func newMock() *clock.Mock { return crisptest.NewMock() }

// newSystem starts a system on a mock clock and shuts it down when the
// test ends, checking that shutdown completes.
func newSystem(t *testing.T, opts ...crisp.Option) (*crisp.System, *clock.Mock) {
	t.Helper()
	return crisptest.NewSystem(t, opts...)
}

// waitIdle waits for the system to go idle, failing the test after a
// generous real-time bound.
func waitIdle(t *testing.T, sys *crisp.System) {
	t.Helper()
	crisptest.WaitIdle(t, sys)
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
