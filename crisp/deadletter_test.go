package crisp_test

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
)

func TestEveryFailedTellIsADeadLetterWithItsReason(t *testing.T) {
	var dead deadLetters
	sys, mock := newSystem(t, crisp.WithDeadLetters(dead.hook))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("node"))
	g := newGate()
	hold(t, a, g)

	tell := func(name string, opts ...crisp.SendOption) {
		crisp.Tell(a, func(*crisp.Proc, *state) {}, append(opts, crisp.MessageName(name), crisp.Tag("tag-"+name))...)
	}
	tell("late", crisp.Within(time.Millisecond))
	tell("too-late", crisp.Within(0))
	crisp.Tell(a, func(*crisp.Proc, *state) { panic("boom") }, crisp.MessageName("panics"))
	tell("fine")
	_, _ = crisp.Call(a, record("call"), crisp.Within(0)).Get() // a Call's failure is its future's
	mock.Add(time.Millisecond)
	g.open()
	waitIdle(t, sys)
	a.Stop()
	tell("after-stop")

	byName := map[string]crisp.DeadLetter{}
	for _, l := range dead.all() {
		_, dup := byName[l.Message]
		assert.False(t, dup, "one dead letter per Tell: %s", l.Message)
		byName[l.Message] = l
		assert.Equal(t, "node", l.Actor)
	}
	assert.Len(t, byName, 4)
	var miss *deadline.MissedError
	require.ErrorAs(t, byName["late"].Reason, &miss)
	assert.Equal(t, t0.Add(time.Millisecond), miss.Detected)
	assert.Equal(t, t0.Add(time.Millisecond), byName["late"].Deadline)
	assert.Equal(t, "tag-late", byName["late"].Tag)
	assert.ErrorIs(t, byName["too-late"].Reason, deadline.ErrMissed)
	var pe *crisp.PanicError
	require.ErrorAs(t, byName["panics"].Reason, &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.ErrorIs(t, byName["after-stop"].Reason, crisp.ErrStopped)
}

func TestAPanickingDeadLetterHookIsLoggedAndIgnored(t *testing.T) {
	var logs bytes.Buffer
	sys, _ := newSystem(t, crisp.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		crisp.WithDeadLetters(func(crisp.DeadLetter) { panic(errors.New("hook broke")) }))
	a := crisp.Spawn(sys, &state{})
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.Within(0), crisp.MessageName("told"))
	v, err := crisp.Call(a, record("next")).Get()
	require.NoError(t, err)
	assert.Equal(t, "next", v, "the actor goes on")
	waitIdle(t, sys)
	assert.Contains(t, logs.String(), "dead-letter hook panicked")
	assert.Contains(t, logs.String(), "hook broke")
}
