package crisp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mockAt is where the mock clocks of the lane's deadline tests start.
var mockAt = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// heldMockActor is heldActor on a system of a mock clock set to mockAt,
// which it returns.
func heldMockActor(t *testing.T, opts ...Option) (*Actor[*[]string], *clock.Mock, func()) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(mockAt)
	a, open := heldActor(t, append([]Option{WithClock(mock)}, opts...)...)
	return a, mock, open
}

// ranInOrder returns what a's handlers appended, once a has run
// everything sent before.
func ranInOrder(t *testing.T, a *Actor[*[]string]) []string {
	t.Helper()
	done, err := Call(a, func(_ *Proc, r *[]string) ([]string, error) { return append([]string(nil), *r...), nil }).Get()
	require.NoError(t, err)
	return done
}

// A Tell with one Within to an actor with a lane joins the lane, as a
// handler and its deadline, when its deadline comes no earlier than the
// last entry's (an entry without one comes last); any other goes to the
// intake. Everything runs in EDF's order, equal deadlines in the order
// they were sent: "f" went to the intake after "a" and "b" went to the
// lane, with the same deadline, and runs after them.
func TestDeadlinedTellsJoinTheLaneInDeadlineOrder(t *testing.T) {
	a, _, open := heldMockActor(t)
	Tell(a, note("a"), Within(time.Hour))
	Tell(a, note("b"), Within(time.Hour))
	Tell(a, note("c"), Within(2*time.Hour))
	Tell(a, note("d"))
	require.Nil(t, a.core.intake.Load(), "an entry in order went to the intake")
	require.EqualValues(t, 4, a.core.lane.Load().entries(), "the entries in deadline order")
	// Out of order: to the intake, which this sender queues itself (the
	// actor is busy and its lock free), and "f" takes "a" and "b" from
	// the lane ahead of it.
	Tell(a, note("e"), Within(30*time.Minute))
	Tell(a, note("f"), Within(time.Hour))
	assert.EqualValues(t, 2, a.core.lane.Load().entries(), "c and d")
	open()
	assert.Equal(t, []string{"e", "a", "b", "f", "c", "d"}, ranInOrder(t, a))
}

// A message with a deadline that reached the intake before a lane entry
// of the same deadline runs before it; one that reached it after runs
// after.
func TestEqualDeadlinesRunInTheOrderSentAcrossLaneAndIntake(t *testing.T) {
	a, _, open := heldMockActor(t)
	Tell(a, note("lane 1"))
	ctx := context.Background()
	// With a context: never in the lane.
	Tell(a, note("intake, before"), Within(time.Hour), Context(ctx))
	// The lane holds an entry without a deadline: an entry with one would
	// go before it, so this goes to the intake too.
	Tell(a, note("intake, too"), Within(time.Hour))
	require.EqualValues(t, 1, a.core.lane.Load().entries())
	open()
	require.Equal(t, []string{"intake, before", "intake, too", "lane 1"}, ranInOrder(t, a))

	b, _, openB := heldMockActor(t)
	Tell(b, note("lane, first"), Within(time.Hour))
	require.EqualValues(t, 1, b.core.lane.Load().entries())
	Tell(b, note("intake, after"), Within(time.Hour), Context(ctx))
	Tell(b, note("lane, last"), Within(time.Hour))
	openB()
	require.Equal(t, []string{"lane, first", "intake, after", "lane, last"}, ranInOrder(t, b))

	// A plain message (a tag changes nothing under EDF) queued before the
	// lane was made, and the lane's entry of the same deadline.
	c, _, openC := heldMockActor(t)
	Tell(c, note("plain, before"), Within(time.Hour), Tag("t"))
	Tell(c, note("lane, after"), Within(time.Hour))
	require.EqualValues(t, 1, c.core.lane.Load().entries())
	openC()
	require.Equal(t, []string{"plain, before", "lane, after"}, ranInOrder(t, c))
}

// Messages with a context are never in the lane: they make a list,
// ordered by the policy's queue, and the lane's entries with a deadline
// are compared with it there, one at a time. Sending such a message
// with a deadline takes the lane's entries that come no later ahead of
// it (laneBefore).
func TestTheListAndTheLaneKeepEDFOrder(t *testing.T) {
	a, _, open := heldMockActor(t)
	ctx := context.Background()
	Tell(a, note("lane 1h"), Within(time.Hour))
	Tell(a, note("list 2h"), Within(2*time.Hour), Context(ctx))
	require.Zero(t, a.core.lane.Load().entries(), "the sender took lane 1h ahead of its message")
	Tell(a, note("list none"), Context(ctx))
	Tell(a, note("list 5h"), Within(5*time.Hour), Context(ctx))
	Tell(a, note("lane 3h"), Within(3*time.Hour))
	Tell(a, note("lane 4h"), Within(4*time.Hour))
	Tell(a, note("intake 30m"), Within(30*time.Minute))
	require.EqualValues(t, 2, a.core.lane.Load().entries())
	open()
	assert.Equal(t, []string{"intake 30m", "lane 1h", "list 2h", "lane 3h", "lane 4h", "list 5h", "list none"}, ranInOrder(t, a))
}

// The watchdog fails the lane's entries at their deadlines while the
// actor is busy: a Tell's miss reaches the miss hook, a Call's future
// fails with its deadline, to the nanosecond, and the entries behind
// them run.
func TestTheWatchdogMissesLaneEntriesAtTheirDeadline(t *testing.T) {
	misses := make(chan *deadline.MissedError, 4)
	mock := clock.NewMock()
	mock.Set(mockAt)
	a, open := heldActorWith(t, []Option{WithClock(mock)}, []ActorOption{WithMissHook(func(e *deadline.MissedError) { misses <- e })})
	sent := mock.Now()
	Tell(a, note("tell 10ms"), Within(10*time.Millisecond))
	f := Call(a, func(*Proc, *[]string) (int, error) { return 1, nil }, Within(20*time.Millisecond))
	Tell(a, note("tell 1h"), Within(time.Hour))
	require.EqualValues(t, 3, a.core.lane.Load().entries(), "the Tells and the Call")

	mock.Add(10 * time.Millisecond)
	e := receive(t, misses)
	assert.Equal(t, sent.Add(10*time.Millisecond), e.Deadline)
	assert.Equal(t, sent.Add(10*time.Millisecond), e.Detected)

	mock.Add(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.GetContext(ctx)
	var me *deadline.MissedError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, sent.Add(20*time.Millisecond), me.Deadline, "the Call's deadline")
	assert.Equal(t, sent.Add(20*time.Millisecond), me.Detected)
	receive(t, misses) // the Call's, told to the hook too

	open()
	assert.Equal(t, []string{"tell 1h"}, ranInOrder(t, a))
}

// receive returns what c gives, or fails the test after ten seconds:
// what the test waits for never came.
func receive[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came")
		panic("unreachable")
	}
}

// A lane entry whose deadline passes before it is taken never starts
// (the watchdog fails it, or the runner's check at its start does), and
// the entries behind it run.
func TestALaneEntryPastItsDeadlineDoesNotStart(t *testing.T) {
	a, mock, open := heldMockActor(t)
	Tell(a, note("1m"), Within(time.Minute))
	f := Call(a, func(*Proc, *[]string) (int, error) { return 1, nil }, Within(time.Minute))
	Tell(a, note("1h"), Within(time.Hour))
	require.EqualValues(t, 3, a.core.lane.Load().entries())
	mock.Add(time.Minute)
	open()
	_, err := f.Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	assert.Equal(t, []string{"1h"}, ranInOrder(t, a))
}

// Stop fails the lane's entries with deadlines as it fails the others.
func TestStopFailsDeadlinedLaneEntries(t *testing.T) {
	a, _, open := heldMockActor(t)
	Tell(a, note("1h"), Within(time.Hour))
	f := Call(a, func(*Proc, *[]string) (int, error) { return 1, nil }, Within(time.Hour))
	require.EqualValues(t, 2, a.core.lane.Load().entries())
	a.Stop()
	open()
	_, err := f.Get()
	require.ErrorIs(t, err, ErrStopped)
}

// A Within far enough to overflow the lane's keys, or a deadline the
// sender's clock reading has already reached, keeps out of the lane
// and is handled as before: queued, or missed at once.
func TestDeadlinesTheLaneCannotHoldGoElsewhere(t *testing.T) {
	a, _, open := heldMockActor(t)
	Tell(a, note("far"), Within(time.Duration(1<<62)))
	Tell(a, note("now"), Within(0))
	f := Call(a, func(*Proc, *[]string) (int, error) { return 1, nil }, Within(-time.Second))
	_, err := f.Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	assert.Nil(t, a.core.lane.Load(), "no lane made for them")
	open()
	assert.Equal(t, []string{"far"}, ranInOrder(t, a))
}

// Senders on several goroutines send plain Tells, Tells and Calls with
// one of a few Withins (so ties are many, the mock clock standing
// still), and Tells with a context or a name beside a Within, which never
// join the lane. Whatever the interleaving, each sender's messages run
// in EDF's order among themselves: one sent later never runs before an
// earlier one whose deadline is no later. Every Call resolves with its
// result, and the lanes took entries with deadlines.
func TestLanesKeepEachSendersDeadlineOrder(t *testing.T) {
	const (
		rounds  = 6
		senders = 4
		each    = 800
	)
	type ran struct{ sender, seq int }
	mock := clock.NewMock()
	mock.Set(mockAt)
	sys := NewSystem(WithClock(mock), WithLogger(discard()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	withins := []time.Duration{0, time.Hour, 2 * time.Hour, 3 * time.Hour} // 0: none
	laned := 0
	for round := range rounds {
		var (
			mu  sync.Mutex
			log []ran
		)
		keys := make([][]time.Duration, senders)
		a := Spawn(sys, 0)
		in, gate := make(chan struct{}), make(chan struct{})
		Tell(a, func(*Proc, int) { close(in); <-gate }, Detached())
		<-in
		a.core.flags.Or(fFlood)
		var sent, done sync.WaitGroup
		sent.Add(senders)
		done.Add(senders)
		calls := make([][]*future.Future[int], senders)
		for s := range senders {
			go func() {
				defer done.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(s)))
				for i := range each {
					if i == each/4 {
						sent.Done()
						<-gate
					}
					record := func(*Proc, int) {
						mu.Lock()
						log = append(log, ran{s, i})
						mu.Unlock()
					}
					w := withins[rng.IntN(len(withins))]
					if i%100 < 50 && i < each/2 {
						w = withins[1+i%100/17] // runs of one deadline: entries in order
					}
					keys[s] = append(keys[s], w)
					var opts []SendOption
					if w != 0 {
						opts = append(opts, Within(w))
					}
					switch k := rng.IntN(10); {
					case k < 6:
						Tell(a, record, opts...)
					case k < 8:
						f := Call(a, func(p *Proc, st int) (int, error) { record(p, st); return i, nil }, opts...)
						calls[s] = append(calls[s], f)
					case k == 8:
						Tell(a, record, append(opts, Context(context.Background()))...)
					default:
						Tell(a, record, append(opts, MessageName(fmt.Sprint(s, "/", i)))...)
					}
				}
			}()
		}
		sent.Wait()
		if l := a.core.lane.Load(); l != nil && l.count() > 0 {
			laned++
		}
		close(gate)
		done.Wait()
		for s := range senders {
			for _, f := range calls[s] {
				_, err := f.Get()
				require.NoError(t, err)
			}
		}
		require.NoError(t, sys.WaitIdle(context.Background()))
		mu.Lock()
		require.Len(t, log, senders*each, "round %d", round)
		pending := make([][]bool, senders) // sent, not yet run
		for s := range pending {
			pending[s] = make([]bool, each)
			for i := range pending[s] {
				pending[s][i] = true
			}
		}
		order := func(w time.Duration) time.Duration {
			if w == 0 {
				return 1 << 62
			}
			return w
		}
		for _, r := range log {
			for i := 0; i < r.seq; i++ {
				if pending[r.sender][i] && order(keys[r.sender][i]) <= order(keys[r.sender][r.seq]) {
					t.Fatalf("round %d: sender %d's message %d (within %v) ran before its message %d (within %v)",
						round, r.sender, r.seq, keys[r.sender][r.seq], i, keys[r.sender][i])
				}
			}
			pending[r.sender][r.seq] = false
		}
		mu.Unlock()
		a.Stop()
	}
	assert.Positive(t, laned, "no round put anything in a lane")
}

// The lane keeps EDF's order only among what it holds: once empty, it
// takes an entry with any deadline, also after one without.
func TestAnEmptyLaneTakesAnyDeadline(t *testing.T) {
	a, _, open := heldMockActor(t)
	Tell(a, note("none"))
	Tell(a, note("1h, refused"), Within(time.Hour))
	require.EqualValues(t, 1, a.core.lane.Load().entries(), "an entry before the last one's order")
	open()
	require.Equal(t, []string{"1h, refused", "none"}, ranInOrder(t, a))
	in, gate := make(chan struct{}), make(chan struct{})
	Tell(a, func(*Proc, *[]string) { close(in); <-gate }, Detached())
	<-in
	defer close(gate)
	Tell(a, note("1h"), Within(time.Hour))
	assert.EqualValues(t, 1, a.core.lane.Load().entries(), "an empty lane refused an entry")
}

// A Within whose clock reading lost the race to the lane to a later
// reading of another sender's takes that later reading, which was taken
// during its own send (after its reading, before its push), and joins
// the lane behind it, if its own d is no shorter; a shorter one would
// still come first and is refused, as is one behind an entry without a
// Within. A message's deadline key follows its entry's.
func TestAWithinThatLostTheRaceToTheLaneTakesTheLaterReading(t *testing.T) {
	const d = int64(time.Hour)
	fn := unsafe.Pointer(new(int)) // never run
	key := func(l *lane, i int) int64 { return l.head.s[i].key() }
	l := newLane(nil, nil)
	s1, s2 := int64(1000), int64(2000) // s1 read first, s2 pushed first
	at, ok := l.push(handlerSlot(fn, s2+d), nil, s2)
	require.True(t, ok)
	assert.Equal(t, s2, at)

	at, ok = l.push(handlerSlot(fn, s1+d), nil, s1)
	require.True(t, ok, "the same d, read earlier")
	assert.Equal(t, s2, at, "the reading it was pushed with")
	assert.Equal(t, s2+d, key(l, 1))

	_, ok = l.push(handlerSlot(fn, s1+d/2), nil, s1)
	assert.False(t, ok, "a shorter d, read earlier: its deadline comes first")

	m := &message{dk: s1 + 2*d}
	at, ok = l.push(messageSlot(m, s1+2*d), nil, s1)
	require.True(t, ok, "a longer d, read earlier, comes after as it is")
	assert.Equal(t, s1, at)
	assert.Equal(t, s1+2*d, m.dk)

	s0 := s1 - 500
	m = &message{dk: s0 + 2*d}
	at, ok = l.push(messageSlot(m, s0+2*d), nil, s0)
	require.True(t, ok, "the same d as the last, read earlier")
	assert.Equal(t, s1, at)
	assert.Equal(t, s1+2*d, m.dk, "the message's key is its entry's")
	assert.Equal(t, s1+2*d, key(l, 3))

	s3 := s1 + d + 10 // s3+d comes after the last, s1+2d
	_, ok = l.push(handlerSlot(fn, s3+d), nil, s3)
	require.True(t, ok)
	_, ok = l.push(handlerSlot(fn, 0), nil, -1)
	require.True(t, ok, "no deadline comes last")
	_, ok = l.push(handlerSlot(fn, s3+d), nil, s3)
	assert.False(t, ok, "behind an entry without a Within: no reading to take")
	assert.EqualValues(t, 6, l.entries())
}

// Senders on several goroutines Tell one actor with the same Within on
// the real clock: every Tell joins the lane, whichever sender's reading
// reached it first, and each runs with a deadline of a clock reading
// taken during its send plus d, in EDF's order, each sender's in the
// order sent. Before, a reading that lost the race to the lane sent its
// Tell the slow way, through the intake. The lane holds laneFew entries
// first, sent from the test's goroutine, so that a sender that finds it
// held waits for it (lockFew).
func TestWithinsOfManySendersAllJoinTheLane(t *testing.T) {
	const (
		senders = 4
		each    = 500
		d       = time.Hour
	)
	type sent struct{ from, to time.Time }
	type ran struct {
		sender, seq int
		dl          time.Time
	}
	a, open := heldActor(t)
	var (
		mu   sync.Mutex
		runs []ran
	)
	spans := make([][]sent, senders+1)
	send := func(s, n int) {
		spans[s] = make([]sent, n)
		for i := range n {
			from := time.Now()
			Tell(a, func(p *Proc, _ *[]string) {
				mu.Lock()
				runs = append(runs, ran{s, i, p.Deadline()})
				mu.Unlock()
			}, Within(d))
			spans[s][i] = sent{from, time.Now()}
		}
	}
	send(senders, laneFew) // the backlog, from sender number senders
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() { send(s, each) })
	}
	wg.Wait()
	total := senders*each + laneFew
	l := a.core.lane.Load()
	require.NotNil(t, l)
	assert.EqualValues(t, total, l.entries(), "Tells that went through the intake")
	open()
	ranInOrder(t, a)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs, total)
	last := make([]int, senders+1)
	for i := range last {
		last[i] = -1
	}
	for i, r := range runs {
		sp := spans[r.sender][r.seq]
		assert.False(t, r.dl.Before(sp.from.Add(d)) || r.dl.After(sp.to.Add(d)),
			"sender %d's Tell %d: deadline %v not d after a reading during its send [%v, %v]", r.sender, r.seq, r.dl, sp.from, sp.to)
		if i > 0 {
			require.False(t, r.dl.Before(runs[i-1].dl), "run %d: out of EDF's order", i)
		}
		require.Greater(t, r.seq, last[r.sender], "sender %d's Tells ran out of order", r.sender)
		last[r.sender] = r.seq
	}
}
