package crisp_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// worker is a group worker's state: which worker it is.
type worker struct{ id int }

func workers(n int) []*worker {
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = &worker{id: i}
	}
	return ws
}

// trace records, across workers, which messages were running together.
type trace struct {
	mu      sync.Mutex
	running map[string]bool
	starts  []string
	overlap map[[2]string]bool
}

func newTrace() *trace { return &trace{running: map[string]bool{}, overlap: map[[2]string]bool{}} }

func (tr *trace) enter(name string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for other := range tr.running {
		tr.overlap[[2]string{other, name}] = true
		tr.overlap[[2]string{name, other}] = true
	}
	tr.running[name] = true
	tr.starts = append(tr.starts, name)
}

func (tr *trace) leave(name string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.running, name)
}

func (tr *trace) together(a, b string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.overlap[[2]string{a, b}]
}

func (tr *trace) order() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.starts...)
}

// barrier lets n goroutines wait for each other, or gives up after a
// generous real-time bound (a failure, not a hang).
func barrier(n int) func() bool {
	var mu sync.Mutex
	count := 0
	all := make(chan struct{})
	return func() bool {
		mu.Lock()
		count++
		if count == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
}

func TestAGroupRunsMessagesInParallel(t *testing.T) {
	sys, _ := newSystem(t)
	g := crisp.SpawnGroup(sys, workers(4))
	assert.Equal(t, 4, g.Workers())
	meet := barrier(4)
	var futs []*future.Future[int]
	for range 4 {
		futs = append(futs, crisp.Call(g, func(_ *crisp.Proc, w *worker) (int, error) {
			if !meet() {
				return 0, errors.New("not all four ran at once")
			}
			return w.id, nil
		}))
	}
	seen := map[int]bool{}
	for _, f := range futs {
		id, err := f.Get()
		require.NoError(t, err)
		seen[id] = true
	}
	assert.Len(t, seen, 4, "each on its own worker, with its own state")
}

// The example of the paper's select function: m1..m5 need
// {(l,v1)}, {(l',v1)}, {(l,v1),(l,v2)}, {(l,v2)}, {(l,v3)}.
func TestKeysFollowThePapersSelectRule(t *testing.T) {
	sys, _ := newSystem(t)
	g := crisp.SpawnGroup(sys, workers(5))
	type lock struct{ label, data string }
	tr := newTrace()
	gates := map[string]*gate{}
	send := func(name string, keys ...lock) *future.Future[int] {
		gt := newGate()
		gates[name] = gt
		opts := []crisp.SendOption{crisp.MessageName(name)}
		for _, k := range keys {
			opts = append(opts, crisp.Key(k))
		}
		return crisp.Call(g, func(p *crisp.Proc, _ *worker) (int, error) {
			tr.enter(p.Name())
			close(gt.started)
			<-gt.release
			tr.leave(p.Name())
			return 0, nil
		}, opts...)
	}
	futs := []*future.Future[int]{
		send("m1", lock{"l", "v1"}),
		send("m2", lock{"l'", "v1"}),
		send("m3", lock{"l", "v1"}, lock{"l", "v2"}),
		send("m4", lock{"l", "v2"}),
		send("m5", lock{"l", "v3"}),
	}
	// m1, m2 and m5 start together; m3 waits for m1; m4, though v2 is
	// free, waits for m3, which precedes it.
	<-gates["m1"].started
	<-gates["m2"].started
	<-gates["m5"].started
	gates["m2"].open()
	gates["m5"].open()
	gates["m1"].open()
	<-gates["m3"].started
	gates["m3"].open()
	<-gates["m4"].started
	gates["m4"].open()
	for _, f := range futs {
		_, err := f.Get()
		require.NoError(t, err)
	}
	assert.True(t, tr.together("m1", "m2") && tr.together("m1", "m5"), "independent keys run in parallel")
	assert.False(t, tr.together("m1", "m3"), "(l,v1) is never held twice")
	assert.False(t, tr.together("m3", "m4"), "(l,v2) is never held twice")
	order := tr.order()
	assert.Equal(t, []string{"m3", "m4"}, order[3:], "m4 starts after m3 though it could have gone first")
}

func TestAKeyKeepsSendOrderAgainstThePolicy(t *testing.T) {
	sys, mock := newSystem(t)
	for _, n := range []int{1, 3} {
		var a crisp.Ref[*worker]
		if n == 1 {
			a = crisp.Spawn(sys, &worker{})
		} else {
			a = crisp.SpawnGroup(sys, workers(n))
		}
		tr := newTrace()
		g := newGate()
		crisp.Tell(a, func(*crisp.Proc, *worker) { close(g.started); <-g.release }, crisp.Key("acct"))
		<-g.started
		// EDF prefers later messages with earlier deadlines; the key must not.
		var futs []*future.Future[string]
		for i, d := range []time.Duration{time.Hour, time.Minute, time.Second} {
			name := string(rune('a' + i))
			futs = append(futs, crisp.Call(a, func(*crisp.Proc, *worker) (string, error) {
				tr.enter(name)
				tr.leave(name)
				return name, nil
			}, crisp.Key("acct"), crisp.By(mock.Now().Add(d))))
		}
		g.open()
		for _, f := range futs {
			_, err := f.Get()
			require.NoError(t, err)
		}
		assert.Equal(t, []string{"a", "b", "c"}, tr.order(), "workers: %d", n)
	}
}

// holdKey starts a message on grp that holds key until the gate it
// returns is opened; done reports that it has finished.
func holdKey(grp crisp.Ref[*worker], key any) (g *gate, done *atomic.Bool) {
	g, done = newGate(), new(atomic.Bool)
	crisp.Tell(grp, func(*crisp.Proc, *worker) {
		close(g.started)
		<-g.release
		done.Store(true)
	}, crisp.Key(key))
	<-g.started
	return g, done
}

// A message sent with a context keeps its keys: the context's record
// must not replace the keys' (it did, and such a message ran beside the
// key's holder).
func TestAKeyWithAContextStillHoldsTheKey(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	g, holderDone := holdKey(grp, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	blocked := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return holderDone.Load(), nil },
		crisp.Context(ctx), crisp.Key(1))
	free := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return true, nil })
	_, err := free.Get()
	require.NoError(t, err)
	assert.False(t, blocked.Ready(), "the keyed message ran while key 1 was held")
	g.open()
	done, err := blocked.Get()
	require.NoError(t, err)
	assert.True(t, done, "the keyed one waited for the holder")
}

func TestKeylessMessagesPassBlockedOnes(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	g, holderDone := holdKey(grp, 1)
	blocked := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return holderDone.Load(), nil }, crisp.Key(1))
	free := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return holderDone.Load(), nil })
	done, err := free.Get()
	require.NoError(t, err)
	assert.False(t, done, "the keyless message ran while key 1 was held")
	g.open()
	done, err = blocked.Get()
	require.NoError(t, err)
	assert.True(t, done, "the keyed one waited for the holder")
}

// A message blocked behind another on its key still misses its deadline
// on time, and releases nothing: the one behind it waits for the holder.
func TestABlockedMessageMissesAndReleasesNothing(t *testing.T) {
	sys, mock := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(3))
	g, holderDone := holdKey(grp, "k")
	late := crisp.Call(grp, record2("late"), crisp.Key("k"), crisp.Within(time.Second))
	next := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return holderDone.Load(), nil }, crisp.Key("k"))
	mock.Add(time.Second)
	_, err := late.Get()
	requireMissed(t, err, t0.Add(time.Second), t0.Add(time.Second))
	g.open()
	done, err := next.Get()
	require.NoError(t, err)
	assert.True(t, done, "the miss released nothing: next waited for the holder")
}

func record2(name string) func(*crisp.Proc, *worker) (string, error) {
	return func(*crisp.Proc, *worker) (string, error) { return name, nil }
}

func TestATransferWaitsForBothKeys(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(3))
	ga, gb := newGate(), newGate()
	var aDone, bDone atomic.Bool
	crisp.Tell(grp, func(*crisp.Proc, *worker) { close(ga.started); <-ga.release; aDone.Store(true) }, crisp.Key("A"))
	crisp.Tell(grp, func(*crisp.Proc, *worker) { close(gb.started); <-gb.release; bDone.Store(true) }, crisp.Key("B"))
	<-ga.started
	<-gb.started
	transfer := crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return aDone.Load() && bDone.Load(), nil },
		crisp.Key("A"), crisp.Key("B"))
	ga.open()
	gb.open()
	both, err := transfer.Get()
	require.NoError(t, err)
	assert.True(t, both, "the transfer started only once both holders had finished")
}

func TestAddAndRemoveWorkers(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(1))
	assert.False(t, grp.RemoveWorker(), "the last worker stays")
	grp.AddWorker(&worker{id: 1})
	grp.AddWorker(&worker{id: 2})
	assert.Equal(t, 3, grp.Workers())
	meet := barrier(3)
	var futs []*future.Future[bool]
	for range 3 {
		futs = append(futs, crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) { return meet(), nil }))
	}
	for _, f := range futs {
		ok, err := f.Get()
		require.NoError(t, err)
		assert.True(t, ok, "three workers ran at once")
	}
	assert.True(t, grp.RemoveWorker())
	assert.True(t, grp.RemoveWorker())
	assert.Equal(t, 1, grp.Workers())
	var inside, maxInside atomic.Int32
	futs = futs[:0]
	for range 20 {
		futs = append(futs, crisp.Call(grp, func(*crisp.Proc, *worker) (bool, error) {
			n := inside.Add(1)
			for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
			}
			runtime.Gosched()
			inside.Add(-1)
			return true, nil
		}))
	}
	for _, f := range futs {
		_, err := f.Get()
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), maxInside.Load(), "one worker left: one message at a time")
}

func TestStoppingAGroup(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	g := newGate()
	running := crisp.Call(grp, func(*crisp.Proc, *worker) (string, error) {
		close(g.started)
		<-g.release
		return "finished", nil
	}, crisp.Key(1))
	<-g.started
	queued := crisp.Call(grp, record2("queued"), crisp.Key(1))
	grp.Stop()
	_, err := queued.Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	_, err = crisp.Call(grp, record2("after")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	g.open()
	v, err := running.Get()
	require.NoError(t, err)
	assert.Equal(t, "finished", v)
}

func TestAwaitInAGroupHoldsTheWorker(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	other := crisp.Spawn(sys, &worker{})
	v, err := crisp.Call(grp, func(p *crisp.Proc, _ *worker) (string, error) {
		return crisp.Await(p, crisp.Call(other, record2("awaited")))
	}).Get()
	require.NoError(t, err)
	assert.Equal(t, "awaited", v)
	_, err = crisp.Call(grp, func(p *crisp.Proc, _ *worker) (int, error) {
		p.Suspend()
		return 0, nil
	}).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "crisp: Suspend in an actor group", pe.Value)
}

func TestKeysMustBeComparable(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &worker{})
	assert.PanicsWithValue(t, "crisp: Key with a value that is not comparable ([]int)", func() {
		crisp.Tell(a, func(*crisp.Proc, *worker) {}, crisp.Key([]int{1}))
	})
	v, err := crisp.Call(a, record2("same key twice"), crisp.Key(7), crisp.Key(7)).Get()
	require.NoError(t, err, "a key named twice does not block its own message")
	assert.Equal(t, "same key twice", v)

	t.Run("nil is a key like any other", func(t *testing.T) {
		g := crisp.SpawnGroup(sys, workers(2))
		var firstDone atomic.Bool
		var first, second *future.Future[bool]
		require.NotPanics(t, func() {
			first = crisp.Call(g, func(*crisp.Proc, *worker) (bool, error) {
				runtime.Gosched() // leave the other worker time to start second, were it free to
				firstDone.Store(true)
				return true, nil
			}, crisp.Key(nil))
			second = crisp.Call(g, func(*crisp.Proc, *worker) (bool, error) {
				return firstDone.Load(), nil
			}, crisp.Key(nil))
		})
		_, err := first.Get()
		require.NoError(t, err)
		after, err := second.Get()
		require.NoError(t, err)
		assert.True(t, after, "the second message starts once the first has given the nil key back")
	})
}

func TestGroupMissesAreReportedByTheWatchdog(t *testing.T) {
	sys, mock := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	ga, gb := newGate(), newGate()
	crisp.Tell(grp, func(*crisp.Proc, *worker) { close(ga.started); <-ga.release })
	crisp.Tell(grp, func(*crisp.Proc, *worker) { close(gb.started); <-gb.release })
	<-ga.started
	<-gb.started
	f := crisp.Call(grp, record2("x"), crisp.Within(time.Second))
	mock.Add(time.Second)
	_, err := f.Get()
	assert.ErrorIs(t, err, deadline.ErrMissed)
	ga.open()
	gb.open()
}

// A Then continuation on a group runs on a worker a group runner hands
// it, like any message, even when it becomes ready while the group is
// idle: it once took a single actor's runner and worker 0's state, which
// a later message could be given at the same time.
func TestAGroupContinuationTakesAFreeWorker(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	var (
		mu      sync.Mutex
		inside  = map[int]int{} // worker id -> handlers on it now
		overlap []int
	)
	enter := func(w *worker) {
		mu.Lock()
		defer mu.Unlock()
		if inside[w.id]++; inside[w.id] > 1 {
			overlap = append(overlap, w.id)
		}
	}
	leave := func(w *worker) {
		mu.Lock()
		defer mu.Unlock()
		inside[w.id]--
	}
	g := newGate()
	pr := future.NewPromise[int](nil)
	f := crisp.CallNext(grp, func(p *crisp.Proc, _ *worker) crisp.Next[*worker, int] {
		return crisp.Then(p, pr.Future(), func(_ *crisp.Proc, w *worker, v int, err error) crisp.Next[*worker, int] {
			enter(w)
			defer leave(w)
			close(g.started)
			<-g.release
			return crisp.Return[*worker](v, err)
		})
	})
	require.NoError(t, sys.WaitIdle(context.Background())) // every runner has left
	pr.Resolve(7, nil)
	<-g.started // the continuation holds a worker
	var ran []*future.Future[int]
	for range 2 {
		ran = append(ran, crisp.Call(grp, func(_ *crisp.Proc, w *worker) (int, error) {
			enter(w)
			defer leave(w)
			return w.id, nil
		}))
	}
	_, err := ran[0].Get() // one worker is free: one of them runs now
	require.NoError(t, err)
	g.open()
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	_, err = ran[1].Get()
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, overlap, "workers that ran two messages at once")
}

// On a group, a continuation can run on another worker before the
// handler that made it has returned: its result must still reach the
// handler's caller (it was dropped, and the future never resolved).
func TestAGroupContinuationThatRunsFirstStillAnswers(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, workers(2))
	pr := future.NewPromise[int](nil)
	pr.Resolve(20, nil)
	kRan := make(chan struct{})
	f := crisp.CallNext(grp, func(p *crisp.Proc, _ *worker) crisp.Next[*worker, int] {
		next := crisp.Then(p, pr.Future(), func(_ *crisp.Proc, _ *worker, v int, err error) crisp.Next[*worker, int] {
			close(kRan)
			return crisp.Return[*worker](v+1, err)
		})
		select {
		case <-kRan: // the other worker has run k already
		case <-time.After(10 * time.Second): // a guard: no free worker ran k
			return crisp.Return[*worker](0, errors.New("k did not run on the other worker"))
		}
		return next
	})
	require.NoError(t, sys.WaitIdle(context.Background()))
	require.True(t, f.Ready(), "the caller's future is resolved")
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, 21, v)
}

// A group whose every worker would wait for a future of the group itself
// has no worker left to produce it: the last to try gets ErrDeadlock, as
// a single actor's handler does for a Get on its own actor (issue 14,
// item 3).
func TestAGroupWaitingOnlyForItselfIsDeadlocked(t *testing.T) {
	sys, _ := newSystem(t)
	// guard bounds the outer Gets: only a broken runtime hangs.
	guard := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("a group of one, with Get, GetWithin and GetContext", func(t *testing.T) {
		g := crisp.SpawnGroup(sys, workers(1), crisp.WithName("solo"))
		gets := map[string]func(*future.Future[string]) (string, error){
			"Get":        (*future.Future[string]).Get,
			"GetWithin":  func(f *future.Future[string]) (string, error) { return f.GetWithin(time.Hour) },
			"GetContext": func(f *future.Future[string]) (string, error) { return f.GetContext(context.Background()) },
		}
		for name, get := range gets {
			inner, err := crisp.Call(g, func(*crisp.Proc, *worker) (error, error) {
				_, err := get(crisp.Call(g, record2("inner")))
				return err, nil
			}).GetContext(guard(t))
			require.NoError(t, err, name)
			assert.ErrorIs(t, inner, crisp.ErrDeadlock, name)
			assert.ErrorContains(t, inner, "solo", name)
		}
	})

	t.Run("a group of two whose workers both wait for it", func(t *testing.T) {
		g := crisp.SpawnGroup(sys, workers(2))
		var started sync.WaitGroup
		started.Add(2)
		both := func(*crisp.Proc, *worker) (error, error) {
			started.Done()
			started.Wait() // both workers are busy: nobody runs the inner calls meanwhile
			_, err := crisp.Call(g, record2("inner")).Get()
			return err, nil
		}
		x, y := crisp.Call(g, both), crisp.Call(g, both)
		ex, err := x.GetContext(guard(t))
		require.NoError(t, err)
		ey, err := y.GetContext(guard(t))
		require.NoError(t, err)
		deadlocked := errors.Is(ex, crisp.ErrDeadlock) != errors.Is(ey, crisp.ErrDeadlock)
		assert.True(t, deadlocked, "exactly one is refused (%v, %v)", ex, ey)
		assert.True(t, ex == nil || ey == nil, "the other gets its result once the refused one returns (%v, %v)", ex, ey)
	})

	t.Run("a worker waiting for a message that needs a key it holds", func(t *testing.T) {
		g := crisp.SpawnGroup(sys, workers(2))
		inner, err := crisp.Call(g, func(*crisp.Proc, *worker) (error, error) {
			_, err := crisp.Call(g, record2("inner"), crisp.Key("k")).Get()
			return err, nil
		}, crisp.Key("k")).GetContext(guard(t))
		require.NoError(t, err)
		assert.ErrorIs(t, inner, crisp.ErrDeadlock, "the other worker is free, but the key is not")
	})

	t.Run("a goroutine outside the group waits as usual", func(t *testing.T) {
		g := crisp.SpawnGroup(sys, workers(1))
		v, err := crisp.Call(g, record2("outer")).GetContext(guard(t))
		require.NoError(t, err)
		assert.Equal(t, "outer", v)
	})
}

// suspendHolding makes a process of a suspend, awaiting a promise, while
// it holds key, and returns the function that resolves the promise and
// checks that the process then finishes with its value.
func suspendHolding(t *testing.T, sys *crisp.System, mock *clock.Mock, a *crisp.Actor[*state], key any) (release func()) {
	t.Helper()
	pr := future.NewPromise[string](mock)
	holder := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
		return crisp.Await(p, pr.Future()) // suspends, keeping the key
	}, crisp.Key(key))
	waitIdle(t, sys)
	return func() {
		t.Helper()
		pr.Resolve("done", nil)
		v, err := holder.Get()
		require.NoError(t, err)
		assert.Equal(t, "done", v)
	}
}

// A message waiting for a key that a suspended process holds is not
// taken by anyone while the actor is idle: the watchdog must still fail
// it at its deadline. Found by the reference model once it learnt keys:
// the message's future stayed unresolved until Shutdown.
func TestAMessageWaitingForAKeyIsMissedAtItsDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	release := suspendHolding(t, sys, mock, a, "k")
	blocked := crisp.Call(a, record("blocked"), crisp.Key("k"), crisp.Within(time.Minute))
	waitIdle(t, sys)
	require.False(t, blocked.Ready(), "it waits for the key")

	mock.Add(time.Minute)
	waitIdle(t, sys)
	require.True(t, blocked.Ready(), "missed at its deadline, though its key is still held")
	_, err := blocked.Get()
	var me *deadline.MissedError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, t0.Add(time.Minute), me.Detected)

	release()
}

// A message that waited for a key behind one that then missed its
// deadline may start at that instant: on an otherwise idle actor, the
// watchdog's miss must set a runner going. Found by the reference model
// with keys: the message sat in the policy's queue with no runner.
func TestAMessageFreedByAMissStartsAtOnce(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	release := suspendHolding(t, sys, mock, a, "a")
	first := crisp.Call(a, record("first"), crisp.Key("a"), crisp.Key("b"), crisp.Within(time.Minute))
	second := crisp.Call(a, record("second"), crisp.Key("b")) // behind first in b's line
	waitIdle(t, sys)
	require.False(t, second.Ready())

	mock.Add(time.Minute)
	waitIdle(t, sys)
	_, err := first.Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	require.True(t, second.Ready(), "key b is free and second heads its line: it runs")
	v, err := second.Get()
	require.NoError(t, err)
	assert.Equal(t, "second", v)

	release()
}

// The same when the message ahead is dropped because its context ended.
func TestAMessageFreedByACancelStarts(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	release := suspendHolding(t, sys, mock, a, "a")
	ctx, cancel := context.WithCancel(context.Background())
	first := crisp.Call(a, record("first"), crisp.Key("a"), crisp.Key("b"), crisp.Context(ctx))
	second := crisp.Call(a, record("second"), crisp.Key("b")) // behind first in b's line
	waitIdle(t, sys)
	require.False(t, second.Ready())

	cancel()
	_, err := first.Get()
	require.ErrorIs(t, err, context.Canceled)
	guard, stop := context.WithTimeout(context.Background(), 10*time.Second) // only a broken runtime waits
	defer stop()
	v, err := second.GetContext(guard)
	require.NoError(t, err, "key b is free and second heads its line: it runs")
	assert.Equal(t, "second", v)

	release()
}
