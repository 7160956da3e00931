package crisp

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crisprt/crisp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldActor spawns an actor on a system of its own (with opts) and holds
// it in a handler until the returned function is called (also at the
// test's end, before Shutdown).
func heldActor(t *testing.T, opts ...Option) (*Actor[*[]string], func()) {
	t.Helper()
	sys := NewSystem(append([]Option{WithLogger(discard())}, opts...)...)
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	var ran []string
	a := Spawn(sys, &ran)
	in, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // before Shutdown, which waits for the handler
	Tell(a, func(*Proc, *[]string) { close(in); <-gate }, Detached())
	<-in
	a.core.flags.Or(fFlood) // as if its runner had found a flood (see TestAFloodMakesTheLane)
	return a, open
}

// A runner that finds laneFlood messages in the intake at once marks its
// actor, whose Tells then go to the lane, until it lets the actor go;
// with fewer, a Tell to a held actor stays a message.
func TestAFloodMakesTheLane(t *testing.T) {
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	for _, c := range []struct {
		name  string
		opts  []ActorOption
		queue int
		flood bool
	}{
		{"edf, a flood", nil, laneFlood, true},
		{"edf, a backlog below it", nil, laneFlood - 2, false},
		{"fifo, a flood", []ActorOption{WithPolicy(policy.FIFO())}, laneFlood, false},
		{"bounded, a flood", []ActorOption{WithCapacity(100, FailWhenFull)}, laneFlood, false},
	} {
		a := Spawn(sys, 0, c.opts...)
		in, gate := make(chan struct{}), make(chan struct{})
		Tell(a, func(*Proc, int) { close(in); <-gate }, Detached())
		<-in
		for range c.queue - 1 { // plain: left in the intake (a sender with options queues its own)
			Tell(a, func(*Proc, int) {})
		}
		marked := make(chan bool, 1)
		Tell(a, func(*Proc, int) {
			marked <- a.core.flags.Load()&fFlood != 0
			Tell(a, func(*Proc, int) {})
		})
		close(gate)
		assert.Equal(t, c.flood, <-marked, c.name)
		require.NoError(t, sys.WaitIdle(context.Background()))
		assert.Equal(t, c.flood, a.core.lane.Load() != nil, "%s: a lane", c.name)
		assert.Zero(t, a.core.flags.Load()&fFlood, "%s: still marked once let go", c.name)
	}
}

func note(s string) func(*Proc, *[]string) {
	return func(_ *Proc, r *[]string) { *r = append(*r, s) }
}

// A Tell without options to an actor a handler holds queues only its
// handler, in the lane; while the lane holds anything, every message
// without a deadline follows it there, and messages with a deadline go
// to the intake and run first (EDF); those without run in the order
// they were sent.
func TestTheLaneKeepsEDFOrder(t *testing.T) {
	a, open := heldActor(t)
	Tell(a, note("tell 1"))
	require.True(t, a.core.laned(), "a plain Tell to a held actor is not in the lane")
	require.Nil(t, a.core.intake.Load(), "the intake holds it too")
	f := Call(a, func(_ *Proc, r *[]string) (int, error) { *r = append(*r, "call 2"); return 2, nil })
	Tell(a, note("tagged 3"), Tag("t"))
	Tell(a, note("deadline 4"), Within(time.Hour))
	Tell(a, note("tell 5"))
	Tell(a, note("deadline 6"), Within(time.Minute))
	assert.EqualValues(t, 4, a.core.lane.Load().entries(), "the messages without a deadline")
	open()
	_, err := f.Get()
	require.NoError(t, err)
	done, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"deadline 6", "deadline 4", "tell 1", "call 2", "tagged 3", "tell 5"}, done)
}

// A message that reaches the intake while the runner looks at the
// lane's first entry may have been sent before it by the same sender:
// the entry stays, and the intake is queued and taken first.
func TestAnEntryWaitsBehindWhatTheIntakeHolds(t *testing.T) {
	a, open := heldActor(t)
	defer open()
	Tell(a, note("lane"))
	c := &a.core
	// What a sender does between the runner's look at the intake and its
	// look at the lane: it sent this without a deadline while the lane
	// was empty.
	tl := newTell(a, nil)
	tl.fn, tl.job = note("intake"), tl
	require.True(t, c.intakePush(&tl.message))
	c.mu.Lock()
	defer c.mu.Unlock()
	got, _, again := c.fromLane()
	require.Nil(t, got)
	require.True(t, again, "the lane's entry was taken with the intake full")
	require.EqualValues(t, 1, c.lane.Load().entries(), "the entry was taken")
	got, j, _ := c.next()
	require.Same(t, &tl.message, got, "the intake's message was not taken first")
	require.NotNil(t, j)
	require.EqualValues(t, 1, c.lane.Load().entries(), "the lane's entry was taken with the intake's")
}

// Stop fails what the lane holds: a Call's future with ErrStopped, a
// Tell through the dead-letter hook.
func TestStopFailsTheLane(t *testing.T) {
	dead := make(chan DeadLetter, 4)
	a, open := heldActor(t, WithDeadLetters(func(d DeadLetter) { dead <- d }))
	Tell(a, note("tell"))
	f := Call(a, func(*Proc, *[]string) (int, error) { return 1, nil })
	require.EqualValues(t, 2, a.core.lane.Load().entries())
	a.Stop()
	_, err := f.Get()
	require.ErrorIs(t, err, ErrStopped)
	d := <-dead
	assert.ErrorIs(t, d.Reason, ErrStopped)
	assert.Zero(t, a.core.lane.Load().entries())
	open()
}

// A message in the lane whose context ends before it starts is dropped:
// the dead-letter hook hears of it, and it never runs.
func TestAContextEndsAMessageInTheLane(t *testing.T) {
	dead := make(chan DeadLetter, 4)
	a, open := heldActor(t, WithDeadLetters(func(d DeadLetter) { dead <- d }))
	Tell(a, note("before"))
	ctx, cancel := context.WithCancel(context.Background())
	Tell(a, note("cancelled"), Context(ctx))
	Tell(a, note("after"))
	require.EqualValues(t, 3, a.core.lane.Load().entries(), "the message with a context did not follow into the lane")
	cancel()
	d := <-dead // context.AfterFunc's goroutine reports it
	assert.True(t, errors.Is(d.Reason, context.Canceled), "reason %v", d.Reason)
	open()
	got, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"before", "after"}, got)
	assert.Empty(t, dead)
}

// A flood's backlog fills segments in order, and once it has run the
// lane holds one segment and at most one spare: what the runner read
// through went to the collector or became the spare.
func TestAnEmptyLaneKeepsOneSegment(t *testing.T) {
	a, open := heldActor(t)
	const n = 3*laneSegSlots + 5
	for i := range n {
		Tell(a, note(strconv.Itoa(i)))
	}
	l := a.core.lane.Load()
	require.EqualValues(t, n, l.entries())
	l.mu.Lock()
	segs := 1
	for s := l.head; s != l.tail; s = s.next.Load() {
		segs++
	}
	l.mu.Unlock()
	assert.Equal(t, 4, segs, "segments for %d entries", n)
	open()
	got, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
	require.NoError(t, err)
	require.Len(t, got, n)
	for i, s := range got {
		require.Equal(t, strconv.Itoa(i), s, "out of order")
	}
	a.core.mu.Lock()
	defer a.core.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Zero(t, l.entries())
	assert.Same(t, l.head, l.tail, "the emptied lane keeps more than one segment")
	assert.Nil(t, l.head.next.Load())
}

// A group never makes a lane.
func TestAGroupMakesNoLane(t *testing.T) {
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	g := SpawnGroup(sys, []int{0, 0})
	done := make(chan struct{})
	for i := range 3 * laneFlood {
		Tell(g, func(*Proc, int) {
			if i == 3*laneFlood-1 {
				close(done)
			}
		})
	}
	<-done
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Nil(t, g.a.core.lane.Load())
}

// A lane stays once made: after its flood has run and its runner has
// let it go, a Tell without options to the idle actor still goes to the
// lane, and runs. A Call sent while the lane is empty goes to the
// intake, and runs before a Tell its sender sent after it.
func TestALaneOutlivesItsFlood(t *testing.T) {
	a, open := heldActor(t)
	Tell(a, note("flood"))
	l := a.core.lane.Load()
	require.NotNil(t, l, "no lane")
	open()
	_, err := Call(a, func(*Proc, *[]string) (int, error) { return 0, nil }).Get()
	require.NoError(t, err)
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	require.Zero(t, a.core.flags.Load()&(fFlood|fActive), "the actor was not let go")

	// Held again, by a handler sent with an option (a message, not an entry).
	in, gate := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, *[]string) { close(in); <-gate }, Detached())
	<-in
	f := Call(a, func(_ *Proc, r *[]string) (int, error) { *r = append(*r, "call"); return 0, nil })
	require.NotNil(t, a.core.intake.Load(), "a Call to an empty lane did not go to the intake")
	Tell(a, note("tell"))
	require.Same(t, l, a.core.lane.Load(), "the lane was made anew")
	assert.EqualValues(t, 1, l.entries(), "a Tell to an idle actor with a lane did not go to it")
	close(gate)
	_, err = f.Get()
	require.NoError(t, err)
	got, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"flood", "call", "tell"}, got)
}
