package crisp

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/policy"
)

// A finished Tell's message is kept for the next Tell to the actor, and
// nothing of its first use shows in its second.
func TestATellMessageIsReusedClean(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int))
	idle := func() { require.NoError(t, sys.WaitIdle(context.Background())) }

	Tell(a, func(_ *Proc, n *int) { *n++ }, MessageName("first"), Tag("customer A"), Priority(7), Within(time.Hour))
	idle()
	first := a.reuse.Load()
	require.NotNil(t, first, "the finished message waits in the reuse slot")

	type seen struct {
		name     string
		tag      any
		priority int
		deadline time.Time
	}
	var got seen
	Tell(a, func(p *Proc, n *int) { got = seen{p.Name(), p.Tag(), p.Priority(), p.Deadline()} })
	idle()
	assert.Same(t, first, a.reuse.Load(), "the second Tell took the same message and gave it back")
	assert.Contains(t, got.name, "TestATellMessageIsReusedClean", "named after its handler, not the first use's Name")
	assert.Nil(t, got.tag)
	assert.Zero(t, got.priority)
	assert.True(t, got.deadline.IsZero())
}

// A message whose handler did not run (it missed its deadline) is not
// reused: its failure may still be on its way to a miss hook or a log.
func TestAMissedTellIsNotReused(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int))
	Tell(a, func(_ *Proc, n *int) {}, Within(-time.Second))
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Nil(t, a.reuse.Load())
}

// brokenQueue loses every item it is given: the actor falls back to its
// list, and from then on recycles nothing, since the queue may hold
// stale items.
type brokenQueue struct{ policy.Queue }

func (brokenQueue) Push(*policy.Item)        {}
func (brokenQueue) Pop() *policy.Item        { return nil }
func (brokenQueue) Remove(*policy.Item) bool { return false }

func TestNoReuseAfterThePolicyMisbehaves(t *testing.T) {
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int), WithPolicy(policy.QueueFunc(func() policy.Queue { return brokenQueue{policy.EDF().NewQueue()} })))
	ran := 0
	release := make(chan struct{})
	Tell(a, func(_ *Proc, n *int) { <-release }) // the others queue behind it
	for range 3 {
		Tell(a, func(_ *Proc, n *int) { ran++ })
	}
	close(release)
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Equal(t, 3, ran, "a broken policy costs order, never work")
	assert.Nil(t, a.reuse.Load())
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A Tell message recycled while its actor's reuse slot is full becomes
// its processor's spare, which the next Tell made there to any actor,
// of any state type, takes when that actor's slot is empty; it runs
// clean, on its new actor.
func TestAMessageTheSlotCannotHoldIsTheProcessorsSpare(t *testing.T) {
	prev := runtime.GOMAXPROCS(1) // one processor: every spare is spareTells[0]
	defer runtime.GOMAXPROCS(prev)
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	idle := func() { require.NoError(t, sys.WaitIdle(context.Background())) }
	spare := &spareTells[0].p
	spare.Store(nil)

	a := Spawn(sys, new(int))
	release := make(chan struct{})
	Tell(a, func(*Proc, *int) { <-release }) // the two below queue behind it
	Tell(a, func(_ *Proc, n *int) { *n++ }, MessageName("second"), Tag("customer A"))
	Tell(a, func(_ *Proc, n *int) { *n++ })
	close(release)
	idle()
	kept := spare.Load()
	require.NotNil(t, kept, "three messages finished, the slot holds one: the processor keeps another")
	require.NotNil(t, a.reuse.Load())

	type seen struct {
		name string
		tag  any
	}
	b := Spawn(sys, "a state of another type")
	got := make(chan seen, 1)
	Tell(b, func(p *Proc, s string) { got <- seen{p.Name(), p.Tag()} })
	assert.Nil(t, spare.Load(), "the Tell to b, whose slot was empty, took the spare")
	idle()
	assert.Same(t, kept, (*tellMem)(unsafe.Pointer(b.reuse.Load())), "the spare ran on b and waits in b's slot")
	g := <-got
	assert.Contains(t, g.name, "TestAMessageTheSlotCannotHoldIsTheProcessorsSpare", "named after its handler, not the first use's Name")
	assert.Nil(t, g.tag)
}

// A tell[S] is a message and two pointers whatever S is: spareTells
// holds any as a tellMem.
func TestATellHasTheSameMemoryForEveryStateType(t *testing.T) {
	type big [200]byte
	want := unsafe.Sizeof(tellMem{})
	assert.Equal(t, want, unsafe.Sizeof(tell[int]{}))
	assert.Equal(t, want, unsafe.Sizeof(tell[big]{}))
	assert.Equal(t, want, unsafe.Sizeof(tell[*big]{}))
	assert.Equal(t, unsafe.Offsetof(tellMem{}.a), unsafe.Offsetof(tell[big]{}.a))
	assert.Equal(t, unsafe.Offsetof(tellMem{}.fn), unsafe.Offsetof(tell[big]{}.fn))
}
