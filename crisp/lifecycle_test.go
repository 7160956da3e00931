package crisp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

func TestPanicBecomesPanicErrorAndTheActorGoesOn(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})

	_, err := crisp.Call(a, func(*crisp.Proc, *state) (int, error) { panic("corrupt input") }).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "corrupt input", pe.Value)
	assert.Contains(t, string(pe.Stack), "lifecycle_test.go")
	assert.Nil(t, errors.Unwrap(err))

	cause := errors.New("index out of range")
	_, err = crisp.Call(a, func(*crisp.Proc, *state) (int, error) { panic(cause) }).Get()
	assert.ErrorIs(t, err, cause, "a panic with an error unwraps to it")

	v, err := crisp.Call(a, record("after")).Get()
	require.NoError(t, err)
	assert.Equal(t, "after", v)
}

func TestAPanicInATellIsLogged(t *testing.T) {
	var buf syncBuffer
	sys, _ := newSystem(t, crisp.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("worker"))
	crisp.Tell(a, func(*crisp.Proc, *state) { panic("lost otherwise") }, crisp.MessageName("fire-and-forget"))
	waitIdle(t, sys)
	out := buf.String()
	assert.Contains(t, out, "handler panicked")
	assert.Contains(t, out, "actor=worker")
	assert.Contains(t, out, "message=fire-and-forget")
	assert.Contains(t, out, "lost otherwise")
}

// recorder is a slog.Handler that keeps each record with the context it
// was logged with.
type recorder struct {
	mu   sync.Mutex
	recs []loggedRecord
}

type loggedRecord struct {
	ctx   context.Context
	msg   string
	level slog.Level
	attrs map[string]slog.Value
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	lr := loggedRecord{ctx: ctx, msg: rec.Message, level: rec.Level, attrs: map[string]slog.Value{}}
	rec.Attrs(func(a slog.Attr) bool { lr.attrs[a.Key] = a.Value; return true })
	r.mu.Lock()
	r.recs = append(r.recs, lr)
	r.mu.Unlock()
	return nil
}

func (r *recorder) find(msg string) (loggedRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, lr := range r.recs {
		if lr.msg == msg {
			return lr, true
		}
	}
	return loggedRecord{}, false
}

type requestID struct{}

// Records about a message carry the context it was sent with and
// structured attributes, with no prefix in the message.
func TestLogsCarryTheMessagesContextAndAttributes(t *testing.T) {
	rec := new(recorder)
	sys, mock := newSystem(t, crisp.WithLogger(slog.New(rec)))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("worker"), crisp.WithMissHook(func(*deadline.MissedError) { panic("hook") }))
	ctx := context.WithValue(context.Background(), requestID{}, "r-17")

	crisp.Tell(a, func(*crisp.Proc, *state) { panic("lost otherwise") },
		crisp.MessageName("fire"), crisp.Context(ctx), crisp.Within(time.Minute))
	waitIdle(t, sys)
	lr, ok := rec.find("handler panicked")
	require.True(t, ok, "the panic is logged")
	assert.Equal(t, slog.LevelError, lr.level)
	assert.Equal(t, "r-17", lr.ctx.Value(requestID{}), "logged with the message's context")
	assert.Equal(t, "worker", lr.attrs["actor"].String())
	assert.Equal(t, "fire", lr.attrs["message"].String())
	assert.Equal(t, mock.Now().Add(time.Minute), lr.attrs["deadline"].Time())
	assert.Equal(t, "lost otherwise", lr.attrs["panic"].Any())

	g := newGate()
	crisp.Tell(a, func(*crisp.Proc, *state) { close(g.started); <-g.release })
	<-g.started
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.MessageName("late"), crisp.Context(ctx), crisp.Within(time.Second))
	mock.Add(1500 * time.Millisecond) // the watchdog or, once the gate opens, the runner reports it
	g.open()
	waitIdle(t, sys)
	lr, ok = rec.find("deadline missed")
	require.True(t, ok, "the miss is logged")
	assert.Equal(t, slog.LevelDebug, lr.level)
	assert.Equal(t, "r-17", lr.ctx.Value(requestID{}))
	assert.Equal(t, "late", lr.attrs["message"].String())
	assert.Equal(t, lr.attrs["detected"].Time().Sub(lr.attrs["deadline"].Time()), lr.attrs["lateness"].Duration())
	assert.False(t, lr.attrs["deadline"].Time().IsZero())
	lr, _ = rec.find("miss hook panicked")
	assert.Equal(t, "r-17", lr.ctx.Value(requestID{}))
	assert.Equal(t, "hook", lr.attrs["panic"].Any())
	for _, lr := range rec.recs {
		assert.NotContains(t, lr.msg, "crisp:", "no prefix inside the message")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestAHandlerThatCallsGoexitFailsAndTheActorGoesOn(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	exits := crisp.Call(a, func(*crisp.Proc, *state) (int, error) { runtime.Goexit(); return 0, nil })
	next := crisp.Call(a, record("next"))
	g.open()
	_, err := exits.Get()
	assert.ErrorContains(t, err, "runtime.Goexit")
	v, err := next.Get()
	require.NoError(t, err)
	assert.Equal(t, "next", v)
}

func TestStopFailsQueuedWorkAndLetsTheRunningHandlerFinish(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	running := crisp.Call(a, func(*crisp.Proc, *state) (string, error) {
		close(g.started)
		<-g.release
		return "finished", nil
	})
	<-g.started
	queued := []*future.Future[string]{
		crisp.Call(a, record("q1")),
		crisp.Call(a, record("q2"), crisp.Within(time.Hour)),
	}
	a.Stop()
	a.Stop() // idempotent
	for _, f := range queued {
		require.True(t, f.Ready(), "queued work fails at once")
		_, err := f.Get()
		assert.ErrorIs(t, err, crisp.ErrStopped)
	}
	_, err := crisp.Call(a, record("after")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped, "a stopped actor takes nothing new")
	crisp.Tell(a, func(*crisp.Proc, *state) { t.Error("a Tell to a stopped actor ran") })

	g.open()
	v, err := running.Get()
	require.NoError(t, err)
	assert.Equal(t, "finished", v)
}

func TestShutdownResolvesEverything(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
	var futs []*future.Future[string]
	var gates []*gate
	for range 20 {
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		gates = append(gates, g)
		hold(t, a, g)
		for range 5 {
			futs = append(futs, crisp.Call(a, record("queued"), crisp.Within(time.Hour)))
		}
	}
	done := make(chan error)
	go func() { done <- sys.Shutdown(context.Background()) }()
	for _, f := range futs {
		_, err := f.Get()
		assert.ErrorIs(t, err, crisp.ErrStopped)
	}
	for _, g := range gates { // the running handlers finish on their own
		g.open()
	}
	require.NoError(t, <-done)
	require.NoError(t, sys.Shutdown(context.Background()), "a second Shutdown is harmless")

	a := crisp.Spawn(sys, &state{})
	_, err := crisp.Call(a, record("late")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped, "actors of a shut-down system take nothing")
	_, err = futs[0].Get()
	assert.ErrorIs(t, err, crisp.ErrStopped, "Get after shutdown still answers")
}

// A running actor is in its system's live list, which Shutdown walks,
// only once it has more to do than the message its runner runs
// (core.enter): a message sent to it while it is held lists it, and so
// does a process it suspends. An actor let go is not listed, and one
// sent a message after Shutdown has begun stops as its runner starts.
// Each of these resolves with ErrStopped while the handler holding the
// actor still runs. The GetWithin bounds are guards: only a broken
// Shutdown reaches them.
func TestShutdownResolvesWhatAnUnlistedActorHolds(t *testing.T) {
	// holdPlain holds a with a Tell without options (the plain path, no
	// listing at its start) until release is called.
	holdPlain := func(a *crisp.Actor[*state]) (release func()) {
		started, rel := make(chan struct{}), make(chan struct{})
		crisp.Tell(a, func(*crisp.Proc, *state) { close(started); <-rel })
		<-started
		return func() { close(rel) }
	}
	t.Run("a plain Call to a held actor", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		release := holdPlain(a)
		queued := crisp.Call(a, record("queued"))
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(context.Background()) }()
		_, err := queued.GetWithin(10 * time.Second)
		assert.ErrorIs(t, err, crisp.ErrStopped)
		release()
		require.NoError(t, <-done)
	})
	t.Run("a Call to a held actor after Shutdown has begun", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		release := holdPlain(a)
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(context.Background()) }()
		for { // until Shutdown has begun: a new actor then takes nothing
			_, err := crisp.Call(crisp.Spawn(sys, &state{}), record("probe")).Get()
			if errors.Is(err, crisp.ErrStopped) {
				break
			}
			runtime.Gosched()
		}
		_, err := crisp.Call(a, record("late")).GetWithin(10 * time.Second)
		assert.ErrorIs(t, err, crisp.ErrStopped)
		release()
		require.NoError(t, <-done)
	})
	t.Run("a process suspended by an actor's first message", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		never := future.NewPromise[string](nil)
		f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) { return crisp.Await(p, never.Future()) })
		require.NoError(t, sys.WaitIdle(context.Background())) // suspended, the actor let go
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(context.Background()) }()
		_, err := f.GetWithin(10 * time.Second)
		assert.ErrorIs(t, err, crisp.ErrStopped)
		never.Resolve("late", nil) // only a process Shutdown missed still waits for it
		require.NoError(t, <-done)
	})
	t.Run("a Sleep in an actor's first message", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
			p.Sleep(15 * time.Second) // past the guard below: only Shutdown ends it sooner
			return "woken", nil
		})
		require.NoError(t, sys.WaitIdle(context.Background())) // a Sleep counts as idle
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(context.Background()) }()
		v, err := f.GetWithin(10 * time.Second)
		require.NoError(t, err)
		assert.Equal(t, "woken", v, "Shutdown cuts the Sleep short and the handler goes on")
		require.NoError(t, <-done)
	})
	t.Run("a Call to an idle actor after Shutdown", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		_, err := crisp.Call(a, record("before")).Get()
		require.NoError(t, err)
		require.NoError(t, sys.Shutdown(context.Background()))
		_, err = crisp.Call(a, record("after")).GetWithin(10 * time.Second)
		assert.ErrorIs(t, err, crisp.ErrStopped)
		require.NoError(t, sys.Shutdown(context.Background()))
	})
}

func TestShutdownGivesUpOnAHandlerThatDoesNotReturn(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sys.Shutdown(ctx), context.Canceled)
	g.open() // the handler returns; now shutdown can finish
	require.NoError(t, sys.Shutdown(context.Background()))
}

// blockingQueue is a policy queue whose next Pop, once armed, blocks
// until released: user code holding the actor's lock.
type blockingQueue struct {
	*policy.Heap
	armed            atomic.Bool
	entered, release chan struct{}
}

func (q *blockingQueue) Pop() *policy.Item {
	if q.armed.CompareAndSwap(true, false) {
		close(q.entered)
		<-q.release
	}
	return q.Heap.Pop()
}

// Shutdown must not wait on a lock that user code holds: a policy queue
// that blocks while the actor's lock is held used to keep Shutdown
// blocked on that lock after its context had ended (issue 14, item 1).
func TestShutdownGivesUpOnAPolicyQueueThatBlocks(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
	q := &blockingQueue{
		Heap:    policy.NewHeap(func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) }),
		entered: make(chan struct{}),
		release: make(chan struct{}),
	}
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(policy.QueueFunc(func() policy.Queue { return q })))
	g := newGate()
	hold(t, a, g)
	futs := []*future.Future[string]{crisp.Call(a, record("1")), crisp.Call(a, record("2"))}
	q.armed.Store(true)
	g.open()
	<-q.entered // the runner is in Pop, holding the actor's lock

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- sys.Shutdown(ctx) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second): // a guard: only a broken Shutdown gets here
		t.Error("Shutdown blocked on the lock the policy queue holds")
	}

	close(q.release) // the queue returns; now the shutdown can finish
	require.NoError(t, sys.Shutdown(context.Background()))
	for _, f := range futs {
		require.True(t, f.Ready(), "every future is resolved")
		if _, err := f.Get(); err != nil {
			assert.ErrorIs(t, err, crisp.ErrStopped)
		}
	}
}

// With nothing outstanding, an ended context does not make Shutdown
// fail: what is left are goroutines on their way out (issue 14, item 5).
func TestShutdownOfAnIdleSystemWithAnEndedContextIsNil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // runners exit just after the system goes idle: give them a chance to be late
		sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &state{})
		_, err := crisp.Call(a, record("1")).Get()
		require.NoError(t, err)
		waitIdle(t, sys)
		require.NoError(t, sys.Shutdown(ctx))
	}
	t.Run("and a system never used", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		assert.NoError(t, sys.Shutdown(ctx))
	})
}

func TestWaitIdle(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sys.WaitIdle(ctx), context.Canceled, "a running handler is not idle")
	g.open()
	waitIdle(t, sys)
}

func TestAnIdleActorHoldsNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	sys, _ := newSystem(t)
	var actors []*crisp.Actor[*state]
	for range 100 {
		a := crisp.Spawn(sys, &state{})
		actors = append(actors, a)
		crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, "x") })
	}
	waitIdle(t, sys)
	// Only the watchdog remains.
	assert.NoError(t, goleak.Find(before, goleak.IgnoreTopFunction("github.com/crisprt/crisp/internal/watchdog.(*Watchdog).loop")))
	runtime.KeepAlive(actors)
}

func TestAnUnreferencedIdleActorIsGarbage(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	_, err := crisp.Call(a, record("work"), crisp.Within(time.Hour)).Get()
	require.NoError(t, err)
	waitIdle(t, sys)
	w := weak.Make(a)
	a = nil
	// WaitIdle returns once the actor is let go; the runner that let it
	// go may still be on its way out (it keeps its Proc, counts itself
	// out), holding the actor on its stack until it ends. Collect until
	// it has, a bounded number of times: a reference the system keeps
	// survives them all.
	for i := 0; i < 100 && w.Value() != nil; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.True(t, w.Value() == nil, "the system kept a reference to an idle actor")
}

func TestNilActorOrHandlerPanicsWithACrispPrefix(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	var nilActor *crisp.Actor[*state]
	assert.PanicsWithValue(t, "crisp: Call to a nil actor", func() { crisp.Call(nilActor, record("x")) })
	assert.PanicsWithValue(t, "crisp: Tell to a nil actor", func() { crisp.Tell(nilActor, func(*crisp.Proc, *state) {}) })
	assert.PanicsWithValue(t, "crisp: Call with a nil handler", func() {
		crisp.Call[*state, int](a, nil)
	})
	assert.PanicsWithValue(t, "crisp: Tell with a nil handler", func() { crisp.Tell(a, nil) })
	assert.PanicsWithValue(t, "crisp: Send to a nil actor", func() { crisp.Send(nilActor, func(*crisp.Proc, *state, int) {}, 1) })
	assert.PanicsWithValue(t, "crisp: Send with a nil handler", func() { crisp.Send[*state, int](a, nil, 1) })
	assert.PanicsWithValue(t, "crisp: Spawn on a nil system", func() { crisp.Spawn(nil, &state{}) })
	var nilGroup *crisp.Group[*state]
	assert.PanicsWithValue(t, "crisp: Call to a nil actor", func() { crisp.Call(nilGroup, record("x")) })
	assert.PanicsWithValue(t, "crisp: Tell to a nil actor", func() { crisp.Tell(nilGroup, func(*crisp.Proc, *state) {}) })
	var nilRef crisp.Ref[*state]
	assert.PanicsWithValue(t, "crisp: Call to a nil actor", func() { crisp.Call(nilRef, record("x")) })
}

// A System must come from NewSystem: the zero value has no clock and no
// watchdog, and says so instead of failing with a nil dereference.
func TestAZeroSystemPanicsClearly(t *testing.T) {
	var zero crisp.System
	ctx := context.Background()
	assert.PanicsWithValue(t, "crisp: Spawn on a System not made by NewSystem", func() { crisp.Spawn(&zero, &state{}) })
	assert.PanicsWithValue(t, "crisp: SpawnGroup on a System not made by NewSystem", func() {
		crisp.SpawnGroup(&zero, []*state{{}})
	})
	assert.PanicsWithValue(t, "crisp: SpawnEach on a System not made by NewSystem", func() {
		crisp.SpawnEach(&zero, []*state{{}})
	})
	assert.PanicsWithValue(t, "crisp: Shutdown on a System not made by NewSystem", func() { _ = zero.Shutdown(ctx) })
	assert.PanicsWithValue(t, "crisp: WaitIdle on a System not made by NewSystem", func() { _ = zero.WaitIdle(ctx) })
	var nilSys *crisp.System
	assert.PanicsWithValue(t, "crisp: Shutdown on a nil system", func() { _ = nilSys.Shutdown(ctx) })
}

func TestContexts(t *testing.T) {
	t.Run("already done fails at once with its error", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f := crisp.Call(a, record("never"), crisp.Context(ctx))
		require.True(t, f.Ready())
		_, err := f.Get()
		assert.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, ranOn(t, a))
	})
	t.Run("cancelled while queued drops the message", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		hold(t, a, g)
		ctx, cancel := context.WithCancel(context.Background())
		f := crisp.Call(a, record("dropped"), crisp.Context(ctx), crisp.Within(time.Hour))
		cancel()
		_, err := f.Get()
		assert.ErrorIs(t, err, context.Canceled)
		g.open()
		assert.Empty(t, ranOn(t, a))
	})
	t.Run("its deadline counts when earlier", func(t *testing.T) {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		hold(t, a, g)
		ctx, cancel := mock.WithTimeout(context.Background(), time.Second)
		defer cancel()
		f := crisp.Call(a, record("m"), crisp.Context(ctx), crisp.Within(time.Hour))
		mock.Add(time.Second)
		_, err := f.Get()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		g.open()
	})
	t.Run("the handler sees it", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		type key struct{}
		ctx := context.WithValue(context.Background(), key{}, "request-7")
		v, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (any, error) {
			return p.Context().Value(key{}), nil
		}, crisp.Context(ctx)).Get()
		require.NoError(t, err)
		assert.Equal(t, "request-7", v)
		v, err = crisp.Call(a, func(p *crisp.Proc, _ *state) (any, error) { return p.Context(), nil }).Get()
		require.NoError(t, err)
		assert.Equal(t, context.Background(), v)
	})
	t.Run("ended after the start changes nothing", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		ctx, cancel := context.WithCancel(context.Background())
		v, err := crisp.Call(a, func(*crisp.Proc, *state) (string, error) {
			cancel()
			return "done", nil
		}, crisp.Context(ctx)).Get()
		require.NoError(t, err)
		assert.Equal(t, "done", v)
	})
}
