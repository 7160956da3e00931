package crisp

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
)

// kept returns the Ask messages a's shard keeps.
func kept(a *core) []*message {
	var out []*message
	for i := range a.sys.shards[a.shard()].asks {
		if m := a.sys.shards[a.shard()].asks[i].Load(); m != nil {
			out = append(out, m)
		}
	}
	return out
}

func answer(v int) func(*Proc, int) (int, error) {
	return func(*Proc, int) (int, error) { return v, nil }
}

func TestAnAskReusesItsMessageOnceBothHoldersLetGo(t *testing.T) {
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	v, err := Ask(a, answer(1))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, sys.WaitIdle(context.Background()))
	first := kept(&a.core)
	require.Len(t, first, 1, "the asker and the runner let go: the message is kept")
	_, ok := first[0].job.(*askCall[int, int])
	require.True(t, ok, "kept with its job, which tells its types")

	s, err := Ask(a, func(*Proc, int) (string, error) { return "other", nil })
	require.NoError(t, err)
	require.Equal(t, "other", s)
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Contains(t, kept(&a.core), first[0], "an Ask of other types left it")

	v, err = AskWithin(a, time.Hour, answer(2))
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.Contains(t, kept(&a.core), first[0], "taken, used and kept again")
	assert.Len(t, kept(&a.core), 2, "the two types' messages")
}

// A message is kept only once both holders have let go: one that timed
// out waits for its runner; one that never ran to the end on its runner
// (missed, suspended) is the collector's.
func TestAnAskIsKeptOnlyOnceItsMessageRanAndItsAnswerWasRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := Spawn(sys, 0)
		release := make(chan struct{})
		Tell(a, func(*Proc, int) { <-release })
		_, err := AskWithin(a, time.Second, answer(1))
		require.ErrorIs(t, err, future.ErrTimeout)
		synctest.Wait()
		assert.Empty(t, kept(&a.core), "the asker let go, the message has not run")
		close(release)
		synctest.Wait()
		assert.Len(t, kept(&a.core), 1, "run: the runner let go last")

		b := Spawn(sys, 0)
		_, err = Ask(b, answer(1), Within(0))
		require.Error(t, err)
		synctest.Wait()
		assert.Empty(t, kept(&b.core), "missed: its runner never had it")

		c := Spawn(sys, 0)
		pr := future.NewPromise[int](nil)
		go func() {
			virtualSleep(time.Second)
			pr.Resolve(7, nil)
		}()
		v, err := Ask(c, func(p *Proc, _ int) (int, error) { return Await(p, pr.Future()) })
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		synctest.Wait()
		assert.Empty(t, kept(&c.core), "suspended: a resumed process's message is the collector's")
	})
}

// An asker that parks keeps its wait's record with the message, and a
// later Ask that reuses the message and parks, Ask or AskWithin, parks
// on it: a parked synchronous request allocates nothing of its own.
func TestAParkedAskKeepsItsWaitersRecordForTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := Spawn(sys, 0)
		parked := func(ask func() (int, error)) {
			t.Helper()
			release := make(chan struct{})
			Tell(a, func(*Proc, int) { <-release })
			done := make(chan int)
			go func() {
				v, err := ask()
				assert.NoError(t, err)
				done <- v
			}()
			synctest.Wait() // the asker has parked: the actor is held
			close(release)
			assert.Equal(t, 5, <-done)
			synctest.Wait()
		}
		parked(func() (int, error) { return Ask(a, answer(5)) })
		ks := kept(&a.core)
		require.Len(t, ks, 1)
		c := ks[0].job.(*askCall[int, int])
		spare := c.spare
		require.NotNil(t, spare, "the parked wait's record is kept with the message")

		parked(func() (int, error) { return AskWithin(a, time.Hour, answer(5)) })
		require.Equal(t, []*message{&c.message}, kept(&a.core), "the message reused")
		assert.Equal(t, spare, c.spare, "the timed wait parked on the record the first left")
		parked(func() (int, error) { return Ask(a, answer(5)) })
		assert.Equal(t, spare, c.spare, "and so did the next untimed one")
	})
}
