package crisp

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/policy"
)

// onOneProcessor runs the test on one processor, with the stashes
// emptied before and after: every stack the test touches is procs[0].
func onOneProcessor(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	clearStashes()
	t.Cleanup(func() {
		clearStashes()
		runtime.GOMAXPROCS(prev)
	})
}

func clearStashes() {
	for i := range tellStacks {
		emptyStacks(i)
	}
	for _, d := range []*depot{&tellDepot, &itemDepot, &sendDepot} {
		d.mu.Lock()
		d.batches = nil
		d.n.Store(0)
		d.mu.Unlock()
	}
}

// emptyStacks empties processor i's stacks: Tell messages, items and
// Send messages.
func emptyStacks(i int) {
	ready.Pin()
	raceAcquire(unsafe.Pointer(&tellStacks[i]))
	tellStacks[i].head, tellStacks[i].n = nil, 0
	raceRelease(unsafe.Pointer(&tellStacks[i]))
	raceAcquire(unsafe.Pointer(&itemStacks[i]))
	itemStacks[i].head, itemStacks[i].n = nil, 0
	raceRelease(unsafe.Pointer(&itemStacks[i]))
	raceAcquire(unsafe.Pointer(&sendStacks[i]))
	sendStacks[i].head, sendStacks[i].n = nil, 0
	raceRelease(unsafe.Pointer(&sendStacks[i]))
	ready.Unpin()
}

// stackOf returns what stacks' first processor's stack holds, top
// first, following next.
func stackOf[T any](stacks *[64]stack[T], next func(*T) *T) []*T {
	ready.Pin()
	raceAcquire(unsafe.Pointer(&stacks[0]))
	head := stacks[0].head
	raceRelease(unsafe.Pointer(&stacks[0]))
	ready.Unpin()
	var xs []*T
	for x := head; x != nil; x = next(x) {
		xs = append(xs, x)
	}
	return xs
}

// stashed returns the Tell messages on the first processor's stack.
func stashed() []*tellMem {
	return stackOf(&tellStacks, func(x *tellMem) *tellMem { return (*tellMem)(unsafe.Pointer(x.next)) })
}

// stashedItems returns the policy items on the first processor's stack.
func stashedItems() []*policy.Item { return stackOf(&itemStacks, itemNext) }

// A finished Tell's message is kept for the next Tell, and nothing of
// its first use shows in its second.
func TestATellMessageIsReusedClean(t *testing.T) {
	onOneProcessor(t)
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, new(int))
	idle := func() { require.NoError(t, sys.WaitIdle(context.Background())) }

	Tell(a, func(_ *Proc, n *int) { *n++ }, MessageName("first"), Tag("customer A"), Priority(7), Within(time.Hour))
	idle()
	first := stashed()
	require.Len(t, first, 1, "the finished message waits in the processor's stash")

	type seen struct {
		name     string
		tag      any
		priority int
		deadline time.Time
	}
	var got seen
	checked := make(chan struct{})
	Tell(a, func(p *Proc, n *int) { <-checked; got = seen{p.Name(), p.Tag(), p.Priority(), p.Deadline()} })
	assert.Empty(t, stashed(), "the second Tell took it")
	close(checked)
	idle()
	assert.Equal(t, first, stashed(), "the same message, given back")
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
	onOneProcessor(t)
	Tell(a, func(_ *Proc, n *int) {}, Within(-time.Second))
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Empty(t, stashed())
}

// brokenQueue loses every item it is given: the actor falls back to its
// list, and from then on recycles nothing, since the queue may hold
// stale items.
type brokenQueue struct{ policy.Queue }

func (brokenQueue) Push(*policy.Item)        {}
func (brokenQueue) Pop() *policy.Item        { return nil }
func (brokenQueue) Remove(*policy.Item) bool { return false }

func TestNoReuseAfterThePolicyMisbehaves(t *testing.T) {
	onOneProcessor(t)
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
	assert.Empty(t, stashed())
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A stashed message serves a Tell to any actor, of any state type, and
// runs clean on its new actor.
func TestAStashedMessageServesAnyActor(t *testing.T) {
	onOneProcessor(t)
	mock := clock.NewMock()
	sys := NewSystem(WithClock(mock))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	idle := func() { require.NoError(t, sys.WaitIdle(context.Background())) }

	a := Spawn(sys, new(int))
	release := make(chan struct{})
	Tell(a, func(*Proc, *int) { <-release }) // the two below queue behind it
	Tell(a, func(_ *Proc, n *int) { *n++ }, MessageName("second"), Tag("customer A"))
	// Detached changes nothing here but keeps the Tell a message: without
	// an option, a Tell to a held actor queues only its handler (lane.go).
	Tell(a, func(_ *Proc, n *int) { *n++ }, Detached())
	close(release)
	idle()
	kept := stashed()
	require.Len(t, kept, 3, "three messages finished")

	type seen struct {
		name string
		tag  any
	}
	b := Spawn(sys, "a state of another type")
	got, checked := make(chan seen, 1), make(chan struct{})
	Tell(b, func(p *Proc, s string) { <-checked; got <- seen{p.Name(), p.Tag()} })
	assert.Equal(t, kept[1:], stashed(), "the Tell to b took the top message")
	close(checked)
	idle()
	assert.Equal(t, kept, stashed(), "it ran on b and is back on top")
	g := <-got
	assert.Contains(t, g.name, "TestAStashedMessageServesAnyActor", "named after its handler, not an earlier use's Name")
	assert.Nil(t, g.tag)
}

// A full stash hands its batch to the depot, whose batches refill an
// empty stash: what one processor finishes serves the Tells of another.
// Beyond depotMax batches, a full stash's batch goes to the collector.
func TestAFullStashHandsItsBatchToTheDepot(t *testing.T) {
	onOneProcessor(t)
	made := make([]*tellMem, stashBatch+1)
	for i := range made {
		made[i] = new(tellMem)
		putTell(made[i])
	}
	require.Equal(t, []*tellMem{made[stashBatch]}, stashed(), "the 65th message starts a new batch")
	require.EqualValues(t, 1, tellDepot.n.Load())
	require.Len(t, tellDepot.batches, 1)

	emptyStacks(0) // as if on another processor, whose stack is empty
	got := takeTell()
	assert.Same(t, made[stashBatch-1], got, "the batch's top message")
	assert.Nil(t, got.next, "unlinked from the batch")
	assert.Zero(t, tellDepot.n.Load())
	rest := stashed()
	require.Len(t, rest, stashBatch-1, "the rest of the batch fills the stack")
	assert.Equal(t, stashBatch-1, tellStacks[0].n)
	for i, x := range rest {
		assert.Same(t, made[stashBatch-2-i], x)
	}
	for range rest {
		require.NotNil(t, takeTell())
	}
	assert.Nil(t, takeTell(), "stack and depot are empty")

	for range (depotMax + 2) * stashBatch {
		putTell(new(tellMem))
	}
	assert.EqualValues(t, depotMax, tellDepot.n.Load(), "the depot keeps depotMax batches")
	assert.Len(t, tellDepot.batches, depotMax)
	assert.Equal(t, stashBatch, tellStacks[0].n)
}

// Tells sent from one goroutine and run on another, many at a time, on
// every processor: each message is used by one Tell at a time, and none
// is lost or run twice. Run with -race, it also checks that the
// stashes' accesses are ordered (race.go).
func TestStashedMessagesServeOneTellAtATime(t *testing.T) {
	clearStashes()
	defer clearStashes()
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	const senders, each = 4, 5_000
	actors := make([]*Actor[*int], 8)
	for i := range actors {
		actors[i] = Spawn(sys, new(int))
	}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				Tell(actors[(s+i)%len(actors)], func(_ *Proc, n *int) { *n++ })
			}
		})
	}
	wg.Wait()
	require.NoError(t, sys.WaitIdle(context.Background()))
	total := 0
	for _, a := range actors {
		v, err := Call(a, func(_ *Proc, n *int) (int, error) { return *n, nil }).Get()
		require.NoError(t, err)
		total += v
	}
	assert.Equal(t, senders*each, total)
}

// A tell[S] is a message and two pointers whatever S is: the stashes
// hold any as a tellMem.
func TestATellHasTheSameMemoryForEveryStateType(t *testing.T) {
	type big [200]byte
	want := unsafe.Sizeof(tellMem{})
	assert.Equal(t, want, unsafe.Sizeof(tell[int]{}))
	assert.Equal(t, want, unsafe.Sizeof(tell[big]{}))
	assert.Equal(t, want, unsafe.Sizeof(tell[*big]{}))
	assert.Equal(t, unsafe.Offsetof(tellMem{}.a), unsafe.Offsetof(tell[big]{}.a))
	assert.Equal(t, unsafe.Offsetof(tellMem{}.fn), unsafe.Offsetof(tell[big]{}.fn))
}

// The items stash links policy items through their runtime reference
// while they wait, and gives them out with it cleared, last in first
// out.
func TestStashedItemsComeBackWithoutTheirLink(t *testing.T) {
	onOneProcessor(t)
	var its [3]policy.Item
	for i := range its {
		putItem(&its[i])
	}
	assert.NotNil(t, *plumb.Ref(unsafe.Pointer(&its[2])), "the top item links the one below")
	assert.Nil(t, *plumb.Ref(unsafe.Pointer(&its[0])), "the bottom one links none")
	for i := range its {
		got := takeItem()
		require.Same(t, &its[len(its)-1-i], got)
		assert.Nil(t, *plumb.Ref(unsafe.Pointer(got)), "its link is cleared")
	}
	assert.Nil(t, takeItem())
}

// Items go through the depot as Tell messages do.
func TestAFullItemStackHandsItsBatchToTheDepot(t *testing.T) {
	onOneProcessor(t)
	made := make([]*policy.Item, stashBatch+1)
	for i := range made {
		made[i] = new(policy.Item)
		putItem(made[i])
	}
	require.Equal(t, []*policy.Item{made[stashBatch]}, stashedItems())
	require.EqualValues(t, 1, itemDepot.n.Load())
	emptyStacks(0) // as if on another processor, whose stack is empty
	got := takeItem()
	assert.Same(t, made[stashBatch-1], got, "the batch's top item")
	assert.Nil(t, *plumb.Ref(unsafe.Pointer(got)), "unlinked from the batch")
	assert.Len(t, stashedItems(), stashBatch-1, "the rest of the batch fills the stack")
	assert.Equal(t, stashBatch-1, itemStacks[0].n)
}
