package crisp_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// SpawnEach makes one independent actor per state, in the states'
// order: each serves its own state, messages to one never reach
// another, and stopping one leaves the rest running.
func TestSpawnEachMakesOneActorPerStateInOrder(t *testing.T) {
	sys, _ := newSystem(t)
	const n = 50
	states := make([]*state, n)
	for i := range states {
		states[i] = &state{}
	}
	as := crisp.SpawnEach(sys, states)
	require.Len(t, as, n)
	for i, a := range as {
		require.NotNil(t, a)
		crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, fmt.Sprint(i)) })
	}
	waitIdle(t, sys)
	for i, s := range states {
		assert.Equal(t, []string{fmt.Sprint(i)}, s.ran, "state %d was served by the actor made for it, once", i)
	}
	as[3].Stop()
	<-as[3].Done()
	_, err := crisp.Call(as[3], record("after stop")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	_, err = crisp.Call(as[4], record("beside it")).Get()
	assert.NoError(t, err, "a neighbour in the block goes on")
	assert.Equal(t, []string{"4", "beside it"}, states[4].ran)
}

// The actors of one SpawnEach run their work in parallel as any actors
// do: one blocked in a handler holds up no other.
func TestSpawnEachActorsAreIndependentRunners(t *testing.T) {
	sys, _ := newSystem(t)
	as := crisp.SpawnEach(sys, []*state{{}, {}})
	release := make(chan struct{})
	started := make(chan struct{})
	crisp.Tell(as[0], func(*crisp.Proc, *state) { close(started); <-release })
	<-started
	// A generous real-time bound: actors that shared a runner would wait
	// for the first one's release for ever, and the test would hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := crisp.Call(as[1], record("while the first is held")).GetContext(ctx)
	assert.NoError(t, err, "the second actor ran while the first was held")
	close(release)
	waitIdle(t, sys)
}

// Options apply to every actor: each is named, ordered by the policy,
// and runs the lifecycle hooks its state type implements.
func TestSpawnEachAppliesTheOptionsToEveryActor(t *testing.T) {
	sys, mock := newSystem(t)
	j := &journal{}
	hs := []*hooked{{j: j, name: "a"}, {j: j, name: "b"}, {j: j, name: "c"}}
	as := crisp.SpawnEach(sys, hs, crisp.WithName("cell"), crisp.IdleTimeout(10*time.Millisecond))
	waitIdle(t, sys)
	got := j.read()
	sort.Strings(got)
	assert.Equal(t, []string{"a started", "b started", "c started"}, got, "each actor's Started hook ran once")
	for _, a := range as {
		assert.Equal(t, "cell", a.Name())
	}
	advance(t, sys, mock, time.Millisecond, 10)
	waitIdle(t, sys)
	for i, a := range as {
		select {
		case <-a.Done():
			assert.ErrorIs(t, a.Err(), crisp.ErrIdle, "actor %d", i)
		default:
			t.Errorf("actor %d did not stop at its idle timeout", i)
		}
	}
}

// A policy given to SpawnEach orders each actor's own work.
func TestSpawnEachGivesEachActorThePolicy(t *testing.T) {
	sys, _ := newSystem(t)
	states := []*state{{}, {}}
	as := crisp.SpawnEach(sys, states, crisp.WithPolicy(policy.FIFO()))
	for i, a := range as {
		g := newGate()
		hold(t, a, g)
		<-g.started
		late := crisp.Call(a, record("no deadline"))
		early := crisp.Call(a, record("deadline"), crisp.Within(time.Hour))
		close(g.release)
		_, err := late.Get()
		require.NoError(t, err)
		_, err = early.Get()
		require.NoError(t, err)
		assert.Equal(t, []string{"no deadline", "deadline"}, states[i].ran, "actor %d: arrival order, as FIFO says", i)
	}
}

// On a system that has shut down, SpawnEach returns actors whose work
// fails with ErrStopped, as Spawn does; with no states it returns none.
func TestSpawnEachOnAShutDownSystemAndWithNoStates(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	require.NoError(t, sys.Shutdown(context.Background()))
	as := crisp.SpawnEach(sys, []*state{{}, {}})
	require.Len(t, as, 2)
	futs := []*future.Future[string]{crisp.Call(as[0], record("x")), crisp.Call(as[1], record("y"))}
	for _, f := range futs {
		_, err := f.Get()
		assert.ErrorIs(t, err, crisp.ErrStopped)
	}

	live, _ := newSystem(t)
	assert.Empty(t, crisp.SpawnEach[*state](live, nil))
	assert.PanicsWithValue(t, "crisp: SpawnEach on a nil system", func() { crisp.SpawnEach(nil, []*state{{}}) })
}

// A SpawnEach block is one object: one of its actors referenced keeps
// them all, and once none is, the system keeps none of them, after a
// chain of Tells through the block (hand-offs from actor to actor).
func TestAnUnreferencedSpawnEachBlockIsGarbage(t *testing.T) {
	sys, _ := newSystem(t)
	states := []*state{{}, {}, {}}
	as := crisp.SpawnEach(sys, states)
	next := as[1:]
	var pass func(i int) func(*crisp.Proc, *state)
	pass = func(i int) func(*crisp.Proc, *state) {
		return func(_ *crisp.Proc, s *state) {
			s.ran = append(s.ran, "token")
			if i < len(next) {
				crisp.Tell(next[i], pass(i+1))
			}
		}
	}
	crisp.Tell(as[0], pass(0))
	waitIdle(t, sys)
	for i, st := range states {
		require.Equal(t, []string{"token"}, st.ran, "actor %d passed the token on", i)
	}
	w := weak.Make(as[0])
	kept := as[2]
	as, next, pass = nil, nil, nil
	for range 3 {
		runtime.GC()
	}
	assert.NotNil(t, w.Value(), "an actor of the block referenced keeps the block")
	runtime.KeepAlive(kept)
	// As in TestAnUnreferencedIdleActorIsGarbage: the last runner may
	// still be on its way out, holding its actor; collect a bounded
	// number of times.
	for i := 0; i < 100 && w.Value() != nil; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Nil(t, w.Value(), "the system kept a reference to an idle actor of the block")
}
