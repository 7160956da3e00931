package crisp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
)

// appendValue is a Send handler that logs its value.
func appendValue[V any](_ *Proc, r *[]string, v V) { *r = append(*r, fmt.Sprint(v)) }

// appendPointee is a Send handler that logs what its pointer points at.
func appendPointee(_ *Proc, r *[]string, v *string) { *r = append(*r, *v) }

// Sends of values that ride in a lane (a word without pointers, a
// pointer) queue as lane entries, one slot each with the value beside
// it; others queue as messages, which follow the entries into the lane
// while it holds anything. Whatever the kind, each value reaches its
// handler, in the order sent, mixed with Tells; a message of a kind
// between two of another is made of its own kind.
func TestSendsRideTheLaneWithTheirValues(t *testing.T) {
	a, open := heldActor(t)
	p := "pointed"
	Send(a, appendValue[int], 1)
	Send(a, appendPointee, &p)
	Send(a, appendValue[float64], 2.5)
	Tell(a, note("told"))
	Send(a, appendValue[int], -3)
	Send(a, appendValue[bool], true)
	Send(a, appendValue[string], "a string")       // two words: a message
	Send(a, appendValue[[2]int], [2]int{4, 5})     // no lane kind: a message
	Send(a, appendValue[time.Duration], 6)         // a named int64
	Send(a, appendValue[int8], -7)                 // narrower than the word
	Send(a, appendValue[map[string]int], nil)      // a nil map, in the pointer
	Send(a, appendValue[complex64], complex(8, 9)) // a whole word
	Send(a, appendValue[struct{}], struct{}{})     // no size: a word
	l := a.core.lane.Load()
	require.NotNil(t, l)
	assert.EqualValues(t, 13, l.entries(), "every Send and the Tell are in the lane")
	open()
	assert.Equal(t, []string{"1", "pointed", "2.5", "told", "-3", "true", "a string", "[4 5]", "6ns", "-7", "map[]", "(8+9i)", "{}"},
		ranInOrder(t, a))
	a.core.mu.Lock()
	defer a.core.mu.Unlock()
	for i, v := range l.head.v {
		assert.Zero(t, v, "the value of entry %d stays in its segment once taken", i)
	}
}

// In a flood, a Send of a word or a pointer allocates nothing: the
// entry is a slot and a value in the lane, and its message is one the
// runner kept from an earlier Send (lane.vkeep); nor does one sent on
// its own, whose message comes from the stash.
func TestAFloodsSendsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	var ran []string
	a := Spawn(sys, &ran)
	a.core.flags.Or(fFlood) // as if its runner had found a flood
	count := func(_ *Proc, r *[]string, n int) { *r = (*r)[:0] }
	point := func(_ *Proc, r *[]string, p *string) { *r = (*r)[:0] }
	s := "s"
	Send(a, count, 0)
	Send(a, point, &s)
	require.NoError(t, sys.WaitIdle(context.Background()))
	require.NotNil(t, a.core.lane.Load(), "no lane")
	for _, c := range []struct {
		name string
		send func()
	}{
		{"an int", func() { Send(a, count, 1) }},
		{"a pointer", func() { Send(a, point, &s) }},
	} {
		allocs := testing.AllocsPerRun(20, func() {
			for range 100 {
				c.send()
			}
			_ = sys.WaitIdle(context.Background())
		})
		// WaitIdle's own: a Tell with a closure costs the same (2).
		assert.LessOrEqual(t, allocs, 4.0, "%s: allocations for 100 Sends", c.name)
	}

	// Without a flood, one at a time to an idle actor: its message comes
	// from the stash.
	var n int
	b := Spawn(sys, &n)
	add := func(_ *Proc, s *int, v int) { *s += v }
	Send(b, add, 1)
	require.NoError(t, sys.WaitIdle(context.Background()))
	allocs := testing.AllocsPerRun(100, func() {
		Send(b, add, 1)
		_ = sys.WaitIdle(context.Background())
	})
	assert.LessOrEqual(t, allocs, 2.0, "allocations for a Send and WaitIdle")
	assert.Nil(t, b.core.lane.Load(), "a lane was made")
}

// A Send's message the runner keeps for the next one is cleared: no
// value (a pointer would keep what it points at alive), handler,
// deadline, arrival number or state of the last run stays. The next
// Send entry runs in it, whatever its value's type.
func TestAKeptSendIsCleared(t *testing.T) {
	a, open := heldActor(t)
	p := "pointed"
	Send(a, appendPointee, &p, Within(time.Hour))
	open()
	k := keptSend(t, a)
	assert.Nil(t, k.p, "the value stays reachable")
	assert.Zero(t, k.w)
	assert.Nil(t, k.fn, "the handler stays reachable")
	assert.Equal(t, unsafe.Pointer(a), k.a)
	m := &k.message
	assertKeptCleared(t, m)

	// The next Send entries run in it, of its value type or another,
	// each with its own value and job.
	type run struct {
		m *message
		v string
	}
	ran := make(chan run, 1)
	Send(a, func(p *Proc, _ *[]string, s *string) { ran <- run{p.m, *s} }, &p)
	got := <-ran
	assert.Same(t, m, got.m, "the next Send did not run in the kept message")
	assert.Equal(t, "pointed", got.v)
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	Send(a, func(p *Proc, _ *[]string, n int) { ran <- run{p.m, fmt.Sprint(n)} }, 42)
	got = <-ran
	assert.Same(t, m, got.m, "a Send of another value type did not run in the kept message")
	assert.Equal(t, "42", got.v)
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	_, isInt := keptSend(t, a).job.(*sendTell[*[]string, int])
	assert.True(t, isInt, "the kept message's job is not the last Send's")

	// A handler that panics leaves its message's handler and value set:
	// keeping it clears them.
	Send(a, func(*Proc, *[]string, *string) { panic("kept") }, &p)
	k = keptSend(t, a)
	assert.Nil(t, k.p, "the panicking Send's value stays reachable")
	assert.Nil(t, k.fn, "the panicking handler stays reachable")
}

// keptSend waits until a's system is idle and returns the Send message
// a's lane keeps for its next Send entry, failing the test if it keeps
// none.
func keptSend(t *testing.T, a *Actor[*[]string]) *sendMem {
	t.Helper()
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	a.core.mu.Lock()
	defer a.core.mu.Unlock()
	k := a.core.lane.Load().vkeep
	require.NotNil(t, k, "no finished Send was kept")
	return k
}

// A finished Send that its lane does not keep goes to the stash, cleared
// of its use, and the next Send, to any actor, of any value type that a
// pointer or a word holds, is made in it; a Send of another value is
// not.
func TestAFinishedSendServesTheNextFromTheStash(t *testing.T) {
	onOneProcessor(t)
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	var ran []string
	a := Spawn(sys, &ran)
	var n int
	b := Spawn(sys, &n)
	Send(a, appendValue[int], 1)
	require.NoError(t, sys.WaitIdle(context.Background()))
	st := stackOf(&sendStacks, func(x *sendMem) *sendMem { return (*sendMem)(unsafe.Pointer(x.next)) })
	require.Len(t, st, 1, "the finished Send is not in the stash")
	x := st[0]
	assert.Nil(t, x.a)
	assert.Nil(t, x.fn)
	assert.Nil(t, x.p)
	assert.Zero(t, x.w)
	assert.Nil(t, x.job, "the job stays")

	ms := make(chan *message, 1)
	Send(b, func(p *Proc, s *int, v *string) { *s = len(*v); ms <- p.m }, new(string))
	assert.Same(t, &x.message, <-ms, "the next Send was not made in the stashed one")
	require.NoError(t, sys.WaitIdle(context.Background()))
	Send(b, func(p *Proc, s *int, v string) { ms <- p.m }, "a string")
	assert.NotSame(t, &x.message, <-ms, "a Send of a string was made in the stashed one")
}

// A Send with one Within joins the lane with its deadline: the
// watchdog misses it at its deadline, to the nanosecond, naming its
// handler; a Send stopped in the lane is a dead letter, named so.
func TestLaneSendsMissAndStopAsTellsDo(t *testing.T) {
	misses := make(chan *deadline.MissedError, 2)
	dead := make(chan DeadLetter, 4)
	mock := clock.NewMock()
	mock.Set(mockAt)
	a, open := heldActorWith(t, []Option{WithClock(mock), WithDeadLetters(func(d DeadLetter) { dead <- d })},
		[]ActorOption{WithMissHook(func(e *deadline.MissedError) { misses <- e })})
	sent := mock.Now()
	Send(a, appendValue[int], 1, Within(10*time.Millisecond))
	Send(a, appendValue[int], 2, Within(time.Hour))
	Send(a, appendValue[int], 3)
	require.EqualValues(t, 3, a.core.lane.Load().entries())

	mock.Add(10 * time.Millisecond)
	e := receive(t, misses)
	assert.Equal(t, sent.Add(10*time.Millisecond), e.Deadline)
	assert.Contains(t, e.Message, "appendValue")
	d := receive(t, dead)
	assert.ErrorIs(t, d.Reason, deadline.ErrMissed)
	assert.Contains(t, d.Message, "appendValue")

	a.Stop()
	open()
	for range 2 {
		d := receive(t, dead)
		assert.ErrorIs(t, d.Reason, ErrStopped)
		assert.Contains(t, d.Message, "appendValue")
	}
	require.NoError(t, a.sys.WaitIdle(context.Background()))
	select {
	case d := <-dead:
		t.Errorf("a dead letter more: %v", d)
	default:
	}
}

// Sends and Calls from several senders to one flooded actor, of
// several kinds, through the lane and the intake: each sender's
// messages run in the order sent, each with its own value, and none is
// lost.
func TestLaneSendsKeepEachSendersOrderAndLoseNothing(t *testing.T) {
	const senders, each = 4, 400
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	type got struct {
		sender, seq int
	}
	var log []got
	a := Spawn(sys, &log)
	a.core.flags.Or(fFlood)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				switch i % 4 {
				case 0:
					Send(a, func(_ *Proc, l *[]got, v int) { *l = append(*l, got{s, v}) }, i)
				case 1:
					g := &got{s, i}
					Send(a, func(_ *Proc, l *[]got, v *got) { *l = append(*l, *v) }, g)
				case 2:
					Send(a, func(_ *Proc, l *[]got, v [2]int) { *l = append(*l, got{v[0], v[1]}) }, [2]int{s, i})
				default:
					Call(a, func(_ *Proc, l *[]got) (int, error) { *l = append(*l, got{s, i}); return 0, nil })
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, sys.WaitIdle(context.Background()))
	require.Len(t, log, senders*each)
	next := make([]int, senders)
	for _, g := range log {
		require.Equal(t, next[g.sender], g.seq, "sender %d", g.sender)
		next[g.sender]++
	}
}
