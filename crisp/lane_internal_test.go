package crisp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldActor spawns an actor on a system of its own (with opts) and holds
// it in a handler until the returned function is called (also at the
// test's end, before Shutdown).
func heldActor(t *testing.T, opts ...Option) (*Actor[*[]string], func()) {
	t.Helper()
	return heldActorWith(t, opts, nil)
}

// heldActorWith is heldActor for an actor spawned with aopts.
func heldActorWith(t *testing.T, opts []Option, aopts []ActorOption) (*Actor[*[]string], func()) {
	t.Helper()
	sys := NewSystem(append([]Option{WithLogger(discard())}, opts...)...)
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	var ran []string
	a := Spawn(sys, &ran, aopts...)
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
// actor until it lets the actor go, and a plain Tell meanwhile makes the
// actor's lane (which then stays); with fewer, a Tell to a held actor
// stays a message and no lane is made. On a quiet machine: on a busy one
// a flood's mark outlives its runner (see
// TestOnABusyMachineAFloodsMarkOutlivesItsRunner).
func TestAFloodMakesTheLane(t *testing.T) {
	defer ready.HoldQuiet()()
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	for _, c := range []struct {
		name  string
		opts  []ActorOption
		queue int
		flood bool
		ctx   bool // every other message with a context: in the list, not plain
	}{
		{"edf, a flood", nil, laneFlood, true, false},
		{"edf, a flood of messages with and without contexts", nil, laneFlood, true, true},
		{"edf, a mixed backlog below it", nil, laneFlood - 2, false, true},
		{"edf, a backlog below it", nil, laneFlood - 2, false, false},
		{"fifo, a flood", []ActorOption{WithPolicy(policy.FIFO())}, laneFlood, false, false},
		{"bounded, a flood", []ActorOption{WithCapacity(100, FailWhenFull)}, laneFlood, false, false},
	} {
		a := Spawn(sys, 0, c.opts...)
		in, gate := make(chan struct{}), make(chan struct{})
		Tell(a, func(*Proc, int) { close(in); <-gate }, Detached())
		<-in
		for i := range c.queue - 1 { // plain: left in the intake (a sender with options queues its own)
			if c.ctx && i%2 == 0 {
				Tell(a, func(*Proc, int) {}, Context(context.Background()))
			} else {
				Tell(a, func(*Proc, int) {})
			}
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

// entries returns the entries l holds.
func (l *lane) entries() int64 { return int64(l.count() - l.popped.Load()) }

func note(s string) func(*Proc, *[]string) {
	return func(_ *Proc, r *[]string) { *r = append(*r, s) }
}

// noteValue is note for a Send of the number to note.
func noteValue(_ *Proc, r *[]string, i int) { *r = append(*r, strconv.Itoa(i)) }

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
	// was empty (so it counted no entry before it).
	tl := newTell(a, nil)
	tl.fn, tl.job = note("intake"), tl
	require.True(t, c.intakePush(&tl.message))
	tl.seq = 0
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok, again := c.peekLane(c.lane.Load())
	require.True(t, ok)
	require.True(t, again, "the lane's entry would be taken with the intake full")
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

// A flood sent to an actor whose runner has yet to run (on one
// processor, from a handler that goes on sending) is marked by its
// senders once laneFlood messages wait, and the next Tell makes the
// lane: the flood need not wait for its runner to find it. Fewer make no
// lane, nor does a flood to an actor that never has one (FIFO), and
// every message runs, in order. With Within, as bench's crisp+dl sends,
// the same.
func TestSendersMarkAFloodBeforeItsRunnerRuns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		name  string
		n     int
		opts  []SendOption
		aopts []ActorOption
		flood bool
	}{
		{"a flood", 3 * laneFlood, nil, nil, true},
		{"a flood with Within", 3 * laneFlood, []SendOption{Within(time.Hour)}, nil, true},
		{"fewer", laneFlood - 2, nil, nil, false},
		{"a flood to a FIFO actor, which has no lane", 3 * laneFlood, nil, []ActorOption{WithPolicy(policy.FIFO())}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sys := NewSystem()
			defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
			a := Spawn(sys, &[]string{}, c.aopts...)
			producer := Spawn(sys, 0)
			laneAt := -1
			_, err := Call(producer, func(*Proc, int) (struct{}, error) {
				for i := range c.n {
					Tell(a, note(strconv.Itoa(i)), c.opts...)
					if laneAt < 0 && a.core.lane.Load() != nil {
						laneAt = i
					}
				}
				return struct{}{}, nil
			}).Get()
			require.NoError(t, err)
			got, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
			require.NoError(t, err)
			require.Len(t, got, c.n)
			for i, s := range got {
				require.Equal(t, strconv.Itoa(i), s, "out of order")
			}
			if !c.flood {
				assert.Equal(t, -1, laneAt, "a lane made")
				return
			}
			assert.GreaterOrEqual(t, laneAt, laneFlood, "the lane made before a flood waited")
			assert.LessOrEqual(t, laneAt, laneFlood+4, "the lane made late (-1: only once the runner ran)")
		})
	}
}

// A flood's backlog fills segments in order, and once it has run the
// lane holds one segment and at most one spare: what the runner read
// through became the spare or went to segPool.
func TestAnEmptyLaneKeepsOneSegment(t *testing.T) {
	a, open := heldActor(t)
	const n = 3*laneSegSlots + 5
	for i := range n {
		Tell(a, note(strconv.Itoa(i)))
	}
	l := a.core.lane.Load()
	require.EqualValues(t, n, l.entries())
	w := l.lock()
	segs := 1
	for s := l.head; s != l.tail; s = s.next.Load() {
		segs++
	}
	l.unlock(w)
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
	w = l.lock()
	defer l.unlock(w)
	assert.Zero(t, l.entries())
	assert.Same(t, l.head, l.tail, "the emptied lane keeps more than one segment")
	assert.Nil(t, l.head.next.Load())
}

// The segments a lane reads through beyond its spare go to segPool, for
// any lane's next segment, with every slot, value and link cleared: a
// pooled segment keeps no handler, message or value reachable, and the
// lane that takes it next finds it empty.
func TestReadSegmentsGoCleanToThePool(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection empties the pool
	for segPool.Get() != nil {
	}
	a, open := heldActor(t)
	const segs = 20
	n := segs*laneSegSlots + 5
	for i := range n {
		if i%3 == 0 {
			Send(a, noteValue, i) // a Send's entry: its value beside it
		} else {
			Tell(a, note(strconv.Itoa(i)))
		}
	}
	open()
	got, err := Call(a, func(_ *Proc, r *[]string) (int, error) { return len(*r), nil }).Get()
	require.NoError(t, err)
	require.Equal(t, n, got)
	pooled, valued := 0, 0
	for x := segPool.Get(); x != nil; x = segPool.Get() {
		s := x.(*laneSeg)
		pooled++
		assert.Nil(t, s.next.Load(), "a pooled segment's link")
		assert.Equal(t, [laneSegSlots]laneSlot{}, s.s, "a pooled segment's slots")
		if s.v != nil {
			valued++
			assert.Equal(t, [laneSegSlots]laneVal{}, *s.v, "a pooled segment's values")
		}
	}
	// segs-1 segments are read through, one of them the spare, each with
	// values; under the race detector the pool drops a quarter of what it
	// is given at random, and lanes of earlier tests' systems may pool
	// segments too.
	assert.Positive(t, valued, "pooled segments that held values (of %d pooled)", pooled)
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

// TestLanesKeepEachSendersOrderAndLoseNothing floods actors from four
// senders at once, on the real clock, with a mix of plain Tells (to the
// lane), Calls without a deadline (to the lane while it holds anything,
// else the intake), Tells with a context that is cancelled at random,
// and Tells with a deadline (to the intake); in half the rounds the
// actor is stopped while they send. Whatever the interleaving: each
// sender's messages without a deadline run in the order it sent them;
// every Tell either runs or reaches the dead-letter hook, exactly once;
// every Call's future resolves, with its result if and only if it ran;
// and the rounds made lanes (else the test tests nothing).
func TestLanesKeepEachSendersOrderAndLoseNothing(t *testing.T) {
	const (
		rounds  = 8
		senders = 4
		each    = 1500
	)
	type ran struct{ sender, seq int }
	var (
		mu       sync.Mutex
		log      []ran
		outcomes = make(chan string, rounds*senders*each)
	)
	sys := NewSystem(WithLogger(discard()), WithDeadLetters(func(d DeadLetter) { outcomes <- "dead " + d.Message }))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	lanes := 0
	for round := range rounds {
		log = log[:0]
		a := Spawn(sys, 0)
		in, gate := make(chan struct{}), make(chan struct{})
		Tell(a, func(*Proc, int) { close(in); <-gate }, Detached())
		<-in
		var sent, done sync.WaitGroup
		sent.Add(senders)
		done.Add(senders)
		var calls []*future.Future[int]
		var callMu sync.Mutex
		tells := 0
		var tellMu sync.Mutex
		for s := range senders {
			go func() {
				defer done.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(s)))
				myTells := 0
				for i := range each {
					if i == 100 { // a backlog for the runner to find, then the rest while it runs
						sent.Done()
						<-gate
					}
					if round%2 == 1 && s == 0 && i == each/2 {
						a.Stop()
					}
					name := MessageName(fmt.Sprintf("%d/%d", s, i))
					record := func(*Proc, int) {
						mu.Lock()
						log = append(log, ran{s, i})
						mu.Unlock()
					}
					k := rng.IntN(10)
					if i < 100 {
						k = 0 // a plain backlog: the runner's flood, which makes the lane
					}
					switch {
					case k < 7:
						myTells++
						Tell(a, func(p *Proc, st int) { record(p, st); outcomes <- "ran" })
					case k == 7:
						f := Call(a, func(p *Proc, st int) (int, error) { record(p, st); return i, nil }, name)
						callMu.Lock()
						calls = append(calls, f)
						callMu.Unlock()
					case k == 8:
						myTells++
						ctx, cancel := context.WithCancel(context.Background())
						Tell(a, func(p *Proc, st int) { record(p, st); outcomes <- "ran" }, Context(ctx), name)
						if rng.IntN(2) == 0 {
							cancel()
						} else {
							defer cancel()
						}
					default:
						myTells++
						Tell(a, func(*Proc, int) { outcomes <- "ran" }, Within(time.Hour), name) // not in the order
					}
				}
				tellMu.Lock()
				tells += myTells
				tellMu.Unlock()
			}()
		}
		sent.Wait()
		close(gate)
		done.Wait()
		for _, f := range calls {
			if _, err := f.Get(); err != nil {
				require.ErrorIs(t, err, ErrStopped, "round %d", round)
			}
		}
		for n := range tells {
			select {
			case <-outcomes:
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: %d of %d Tells neither ran nor reached the dead-letter hook", round, tells-n, tells)
			}
		}
		require.NoError(t, sys.WaitIdle(context.Background()))
		select {
		case o := <-outcomes:
			t.Fatalf("round %d: an outcome too many: %s", round, o)
		default:
		}
		if a.lane.Load() != nil {
			lanes++
		}
		mu.Lock()
		last := make([]int, senders)
		for i := range last {
			last[i] = -1
		}
		for _, r := range log {
			require.Greater(t, r.seq, last[r.sender], "round %d: sender %d's messages ran out of order", round, r.sender)
			last[r.sender] = r.seq
		}
		mu.Unlock()
		a.Stop()
	}
	assert.Positive(t, lanes, "no round made a lane")
}

// A Tell the runner has finished waits in the lane for the next entry,
// which runs in it: a flood's Tells go round between the runner and its
// lane, not through the stash.
func TestALaneEntryRunsInTheTellItsRunnerFinished(t *testing.T) {
	a, open := heldActor(t)
	Tell(a, note("first"))
	open()
	_, err := Call(a, func(*Proc, *[]string) (int, error) { return 0, nil }).Get()
	require.NoError(t, err)
	kept := keptTell(t, a, "the finished Tell was not kept for the lane")

	ran := make(chan *message, 1)
	Tell(a, func(p *Proc, _ *[]string) { ran <- p.m })
	assert.Same(t, &kept.message, <-ran, "the entry did not run in the kept Tell")
	require.NoError(t, a.sys.WaitIdle(context.Background()))
}

// The Tell a runner keeps for its lane's next entry is cleared as one
// going back to the stash is, but for its actor and its job, which the
// next entry's Tell has anyway: no deadline, arrival number, state or
// links of the last run stay, and no user's handler stays reachable.
func TestAKeptTellIsCleared(t *testing.T) {
	a, open := heldActor(t)
	Tell(a, note("with a deadline"), Within(time.Hour)) // a lane entry with its deadline's key
	require.True(t, a.core.laned(), "the Tell is not in the lane")
	open()
	k := (*tell[*[]string])(unsafe.Pointer(keptTell(t, a, "no finished Tell was kept for the lane")))
	assert.Nil(t, k.fn, "the handler stays reachable")
	assert.Same(t, a, k.a)
	assert.Equal(t, job(k), k.job, "the job is not the Tell itself")
	m := &k.message
	assertKeptCleared(t, m)

	// The next entry runs in it, with its own handler and no deadline.
	type run struct {
		m  *message
		dk int64
	}
	ran := make(chan run, 1)
	Tell(a, func(p *Proc, _ *[]string) { ran <- run{p.m, p.m.dk} })
	got := <-ran
	assert.Same(t, m, got.m, "the entry did not run in the kept Tell")
	assert.Zero(t, got.dk, "the kept Tell's old deadline came back")
	require.NoError(t, a.sys.WaitIdle(context.Background()))

	// A handler that panics does not clear its Tell (tell.run): keeping
	// it does.
	Tell(a, func(*Proc, *[]string) { panic("kept") })
	kept := keptTell(t, a, "the panicked Tell was not kept for the lane")
	assert.Nil(t, (*tell[*[]string])(unsafe.Pointer(kept)).fn, "the panicking handler stays reachable")
}

// assertKeptCleared asserts that m, a message kept for its lane's next
// entry, keeps nothing of its last run: no state, deadline, arrival
// number, links, extension, flags or index.
func assertKeptCleared(t *testing.T, m *message) {
	t.Helper()
	assert.Zero(t, m.state.Load())
	assert.Zero(t, m.dk, "the deadline's key stays")
	assert.Zero(t, m.seq)
	assert.Nil(t, m.next)
	assert.Nil(t, m.prev)
	assert.Nil(t, m.ext)
	assert.False(t, m.linked || m.inQ || m.counted || m.resumed || m.ownItem)
	assert.Zero(t, m.obs)
	assert.Zero(t, m.dli)
}

// keptTell waits until a's system is idle and returns the Tell a's lane
// keeps for its next entry, failing the test with msg if it keeps none.
func keptTell(t *testing.T, a *Actor[*[]string], msg string) *tellMem {
	t.Helper()
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	a.core.mu.Lock()
	kept := a.core.lane.Load().keep
	a.core.mu.Unlock()
	require.NotNil(t, kept, msg)
	return kept
}

// A Tell that finds the lane held by another sender while it holds
// fewer than laneFew entries goes through the intake (lockFew) rather
// than wait, and its sender's Tells still run in the order sent: the
// one before it from the lane, the one after it to the lane again.
// (With a backlog of laneFew a sender waits for the lane instead: see
// TestWithinsOfManySendersAllJoinTheLane.)
func TestATellThatMeetsAnotherSendersHoldOnAShortLaneTakesTheIntake(t *testing.T) {
	a, open := heldActor(t)
	Tell(a, note("a"))
	l := a.core.lane.Load()
	require.NotNil(t, l)
	require.EqualValues(t, 1, l.count())

	w := l.lock() // another sender's hold
	Tell(a, note("b"))
	Send(a, noteValue, 1)
	assert.EqualValues(t, 1, l.count(), "a Tell or Send joined a held lane")
	l.unlock(w)

	Tell(a, note("c"))
	Send(a, noteValue, 2)
	assert.EqualValues(t, 3, l.count(), "the lane let go: the next Tell and Send join it")
	open()
	assert.Equal(t, []string{"a", "b", "1", "c", "2"}, ranInOrder(t, a))
}
