package crisp_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

// logValue is a Send handler that logs its value.
func logValue[V any](_ *crisp.Proc, s *state, v V) { s.ran = append(s.ran, fmt.Sprint(v)) }

// A Send runs its handler with the actor's state and the value sent,
// in the order sent among the sender's Tells and Calls; values of every
// type arrive whole.
func TestSendRunsItsHandlerWithItsValueInOrder(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	type pair struct {
		name string
		n    int
	}
	word := "pointed"
	got := queued(t, a, func() {
		crisp.Send(a, logValue[int], 1)
		crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, "told") })
		crisp.Send(a, logValue[string], "two")
		crisp.Call(a, record("called"))
		crisp.Send(a, logValue[pair], pair{"three", 3})
		crisp.Send(a, func(_ *crisp.Proc, s *state, p *string) { s.ran = append(s.ran, *p) }, &word)
		crisp.Send(a, logValue[float32], 4.5)
		crisp.Send(a, logValue[any], nil)
	})
	assert.Equal(t, []string{"1", "told", "two", "called", "{three 3}", "pointed", "4.5", "<nil>"}, got)
}

// A Send's options are a Tell's: here a priority, which the actor's
// policy orders by.
func TestSendsOptionsReachThePolicy(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(policy.ByPriority()))
	got := queued(t, a, func() {
		crisp.Send(a, logValue[string], "low", crisp.Priority(1))
		crisp.Send(a, logValue[string], "high", crisp.Priority(9))
		crisp.Send(a, logValue[string], "middle", crisp.Priority(5), crisp.MessageName("middle"))
	})
	assert.Equal(t, []string{"high", "middle", "low"}, got)
}

// A Send to a group runs on one of its workers, with that worker's
// state.
func TestSendToAGroup(t *testing.T) {
	sys, _ := newSystem(t)
	workers := []*state{{}, {}}
	g := crisp.SpawnGroup(sys, workers)
	for i := range 10 {
		crisp.Send(g, logValue[int], i)
	}
	waitIdle(t, sys)
	var all []string
	for _, w := range workers {
		all = append(all, w.ran...)
	}
	assert.ElementsMatch(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, all)
}

// Every failed Send is a dead letter, as a failed Tell is, named after
// its handler (not a wrapper of it): missed, panicked, refused by a
// full mailbox, stopped.
func TestEveryFailedSendIsADeadLetterNamedAfterItsHandler(t *testing.T) {
	var dead deadLetters
	sys, mock := newSystem(t, crisp.WithDeadLetters(dead.hook))
	st := &state{}
	a := crisp.Spawn(sys, st, crisp.WithName("node"), crisp.WithCapacity(3, crisp.FailWhenFull))
	g := newGate()
	hold(t, a, g)
	crisp.Send(a, logValue[string], "late", crisp.Within(time.Millisecond))
	crisp.Send(a, func(*crisp.Proc, *state, int) { panic("boom") }, 1)
	crisp.Send(a, logValue[string], "fine")
	crisp.Send(a, logValue[string], "full") // the fourth: refused
	mock.Add(time.Millisecond)
	g.open()
	waitIdle(t, sys)
	assert.Equal(t, []string{"fine"}, st.ran)
	a.Stop()
	crisp.Send(a, logValue[string], "after-stop")

	letters := dead.all()
	require.Len(t, letters, 4)
	var reasons []string
	for _, l := range letters {
		assert.Equal(t, "node", l.Actor)
		switch {
		case strings.Contains(l.Message, "logValue"):
		case strings.Contains(l.Message, "TestEveryFailedSendIsADeadLetterNamedAfterItsHandler"):
		default:
			t.Errorf("dead letter named %q, not after its handler", l.Message)
		}
		var pe *crisp.PanicError
		switch {
		case errors.Is(l.Reason, deadline.ErrMissed):
			reasons = append(reasons, "missed")
		case errors.As(l.Reason, &pe):
			reasons = append(reasons, "panicked")
		case errors.Is(l.Reason, crisp.ErrFull):
			reasons = append(reasons, "full")
		case errors.Is(l.Reason, crisp.ErrStopped):
			reasons = append(reasons, "stopped")
		}
	}
	assert.ElementsMatch(t, []string{"missed", "panicked", "full", "stopped"}, reasons)
}
