package crisp

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
)

// A message carries no policy.Item until it needs one: under EDF, plain
// messages and those with a deadline in order have none while queued; a
// message sent with a priority, a tag or a name has one from its send;
// when something folds the plain messages into the policy's queue, each
// gets one that says what the message says, and the policy's order and
// what handlers see are as before.
func TestAMessageHasItsPolicyItemOnlyWhenItNeedsIt(t *testing.T) {
	sys := NewSystem(WithClock(clock.NewMock()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	release, held := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, int) { close(held); <-release })
	<-held

	type seen struct {
		i        int
		name     string
		priority int
		tag      any
	}
	got := make(chan seen, 4)
	look := func(i int) func(*Proc, int) (int, error) {
		return func(p *Proc, _ int) (int, error) {
			s := seen{i: i, priority: p.Priority(), tag: p.Tag()}
			if i == 2 {
				s.name = p.Name()
			}
			got <- s
			return 0, nil
		}
	}
	futs := []*future.Future[int]{
		Call(a, look(0)),
		Call(a, look(1), Within(time.Hour)),
		Call(a, look(2), Tag("customer A"), Priority(3), MessageName("tagged")),
	}
	queued := func() []*message {
		a.core.mu.Lock()
		defer a.core.mu.Unlock()
		a.core.drain()
		var ms []*message
		for _, f := range futs {
			ms = append(ms, plumb.SourceOf(f).(job).hdr())
		}
		return ms
	}
	ms := queued()
	assert.Nil(t, ms[0].pi.Load(), "a plain message has no item")
	assert.Nil(t, ms[1].pi.Load(), "a message with a deadline in order has no item")
	it := ms[2].pi.Load()
	require.NotNil(t, it, "a message with a tag has its item from its send")
	assert.Equal(t, "customer A", it.Tag)
	assert.Equal(t, 3, it.Priority)

	// A message with a context is listed: the plain messages fold into
	// the list and the policy's queue first, each with an item.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	futs = append(futs, Call(a, look(3), Context(ctx)))
	for i, m := range queued() {
		it := m.pi.Load()
		require.NotNil(t, it, "message %d was folded into the policy's queue without an item", i)
		assert.Equal(t, m.deadlineOf(a.sys), it.Deadline, "message %d", i)
		assert.Equal(t, m.seq, it.Seq, "message %d", i)
		assert.Same(t, m, jobOf(it).hdr(), "message %d: the item's job is the message's", i)
	}
	close(release)
	for _, want := range []seen{ // EDF: the deadline first, then arrival order
		{i: 1},
		{i: 0},
		{i: 2, name: "tagged", priority: 3, tag: "customer A"},
		{i: 3},
	} {
		assert.Equal(t, want, <-got)
	}
	for _, f := range futs {
		_, err := f.Get()
		require.NoError(t, err)
	}
}

// A message to an actor whose policy orders every message, or one with a
// priority, a tag or a name, gets its item at send, in one allocation
// with the message (withItem); others do not.
func TestWhichMessagesHaveTheirItemFromTheirSend(t *testing.T) {
	sys := NewSystem(WithClock(clock.NewMock()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0, WithPolicy(policy.ByPriority()))
	b := Spawn(sys, 0)
	assert.True(t, a.itemized(nil))
	assert.False(t, b.itemized(nil))
	assert.True(t, b.itemized([]SendOption{MessageName("x")}))
	assert.True(t, b.itemized([]SendOption{Within(time.Second), Tag(1)}))
	assert.False(t, b.itemized([]SendOption{Within(time.Second)}))
}

// A message listed because its actor holds other work (here a
// suspended process) has its policy item made when it enters the
// queue; once popped the item goes back to the stash (items), and the
// next such message takes it. A message sent with a priority keeps its
// item, made with it at send. On one processor, so that the stash's
// stack is the one all use.
func TestAListedMessagesItemGoesBackOncePopped(t *testing.T) {
	onOneProcessor(t)
	sys := NewSystem(WithLogger(discard()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	pending := future.NewPromise[int](nil)
	Tell(a, func(p *Proc, _ int) { _, _ = Await(p, pending.Future()) })
	require.NoError(t, sys.WaitIdle(context.Background()))

	type seen struct {
		pi   *policy.Item
		prio int
	}
	got := make(chan seen, 2)
	look := func(p *Proc, _ int) { got <- seen{p.m.pi.Load(), p.Priority()} }
	// Two messages sent while a handler holds the actor reach the queue
	// together (one alone would be taken without it).
	twoListed := func(opts ...SendOption) [2]seen {
		release := make(chan struct{})
		Tell(a, func(*Proc, int) { <-release }, Detached()) // a message, not a lane entry: see below
		Tell(a, look, opts...)
		Tell(a, look, opts...)
		close(release)
		return [2]seen{<-got, <-got}
	}

	clearStashes()
	// Detached keeps them messages: without an option, a Tell to a held
	// actor queues only its handler (lane.go).
	for _, s := range twoListed(Detached()) {
		assert.Nil(t, s.pi, "a listed message still has its item while it runs")
	}
	require.NotEmpty(t, stashedItems(), "no popped message's item went to the stash")

	for _, s := range twoListed(Priority(3)) {
		require.NotNil(t, s.pi, "a message sent with a priority lost its item")
		assert.Equal(t, 3, s.prio)
	}

	// A stashed item marked with an arrival number no message has: the
	// first listed message takes it (item sets its fields) and, popped,
	// gives it back (giveItemBack clears them).
	clearStashes()
	marker := &policy.Item{Seq: 1 << 62}
	putItem(marker)
	twoListed(Detached())
	assert.Zero(t, marker.Seq, "the next listed message did not take the stashed item")
	assert.Contains(t, stashedItems(), marker, "the message that took it did not give it back")

	pending.Resolve(1, nil)
	require.NoError(t, sys.WaitIdle(context.Background()))
}
