package crisp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// eventLog keeps every event, and lets a test wait until n terminal
// events have arrived: a cancellation's runs on the context's goroutine,
// which WaitIdle does not count.
type eventLog struct {
	mu        sync.Mutex
	events    []crisp.Event
	terminals int
	want      int
	reached   chan struct{}
}

func newEventLog() *eventLog { return &eventLog{reached: make(chan struct{})} }

func (r *eventLog) Observe(e crisp.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if e.Kind.Terminal() {
		r.terminals++
		if r.want > 0 && r.terminals == r.want {
			close(r.reached)
		}
	}
}

// waitTerminals waits for n terminal events; the real-time bound only
// turns a hang into a failure.
func (r *eventLog) waitTerminals(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	if r.terminals >= n {
		r.mu.Unlock()
		return
	}
	r.want = n
	r.mu.Unlock()
	select {
	case <-r.reached:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d of %d terminal events arrived", r.terminals, n)
	}
}

// byMessage groups the events by message name, in the order observed.
func (r *eventLog) byMessage() map[string][]crisp.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]crisp.Event{}
	for _, e := range r.events {
		out[e.Message] = append(out[e.Message], e)
	}
	return out
}

// wantKind is the terminal event a future's outcome calls for.
func wantKind(err error) crisp.EventKind {
	var pe *crisp.PanicError
	switch {
	case err == nil:
		return crisp.EventFinished
	case errors.Is(err, deadline.ErrMissed):
		return crisp.EventMissed
	case errors.As(err, &pe):
		return crisp.EventPanicked
	case errors.Is(err, crisp.ErrStopped):
		return crisp.EventStopped // or Refused: checkLife tells them apart
	case errors.Is(err, context.Canceled):
		return crisp.EventCancelled
	}
	return 0
}

// checkLife checks one message's events against its future's outcome:
// Sent first, exactly one terminal event last and matching the outcome,
// Started at most once and only for an outcome that ran, and
// Suspended/Resumed alternating in between.
func checkLife(t *testing.T, name string, evs []crisp.Event, outcome error, refused bool) {
	t.Helper()
	require.NotEmpty(t, evs, "%s: no events", name)
	assert.Equal(t, crisp.EventSent, evs[0].Kind, "%s: first event", name)
	last := evs[len(evs)-1]
	want := wantKind(outcome)
	if refused && errors.Is(outcome, crisp.ErrStopped) { // sent to a stopped actor, and not missed at once
		want = crisp.EventRefused
	}
	assert.Equal(t, want, last.Kind, "%s: terminal event for outcome %v", name, outcome)
	if last.Kind != crisp.EventFinished {
		assert.Equal(t, outcome, last.Err, "%s: the event's error is the future's", name)
	}
	started, suspended := 0, false
	for i, e := range evs {
		assert.Equal(t, evs[0].ID, e.ID, "%s: one ID", name)
		if i < len(evs)-1 {
			assert.False(t, e.Kind.Terminal(), "%s: a terminal event before the last: %v", name, e.Kind)
		}
		switch e.Kind {
		case crisp.EventStarted:
			started++
		case crisp.EventSuspended:
			assert.False(t, suspended, "%s: suspended twice", name)
			suspended = true
		case crisp.EventResumed:
			assert.True(t, suspended, "%s: resumed without suspending", name)
			suspended = false
		}
	}
	ran := last.Kind == crisp.EventFinished || last.Kind == crisp.EventPanicked || last.Started
	if ran {
		assert.Equal(t, 1, started, "%s: started once", name)
	} else {
		assert.Zero(t, started, "%s: never started", name)
	}
}

func TestObserverSeesEveryTransitionOnce(t *testing.T) {
	rec := newEventLog()
	sys, mock := newSystem(t, crisp.WithObserver(rec))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("a"))

	futures := map[string]*future.Future[string]{}
	call := func(name string, fn func(*crisp.Proc, *state) (string, error), opts ...crisp.SendOption) {
		futures[name] = crisp.Call(a, fn, append(opts, crisp.MessageName(name))...)
	}

	g := newGate()
	hold(t, a, g) // a is busy: what follows queues
	call("runs", record("runs"))
	call("runs late enough", record("x"), crisp.Within(time.Hour))
	call("misses in the queue", record("y"), crisp.Within(time.Second))
	call("missed at send", record("z"), crisp.Within(0))
	call("panics", func(*crisp.Proc, *state) (string, error) { panic("boom") })
	ctx, cancel := context.WithCancel(context.Background())
	call("cancelled", record("c"), crisp.Context(ctx))
	p := future.NewPromise[int](mock)
	call("suspends", func(pr *crisp.Proc, _ *state) (string, error) {
		v, err := crisp.Await(pr, p.Future())
		return fmt.Sprint(v), err
	})
	cancel()
	// To the deadline, and on only once the watchdog has reported the
	// miss: its goroutine reads the clock as it runs, and a clock moved
	// past the deadline meanwhile would make the report late (it was, in
	// CI, under -race on a loaded machine: Lag 1s).
	mock.Add(time.Second)
	_, err := futures["misses in the queue"].Get() // the watchdog's, while the gate holds a
	require.ErrorIs(t, err, deadline.ErrMissed)
	mock.Add(time.Second)
	g.open()
	waitIdle(t, sys)
	p.Resolve(7, nil)
	waitIdle(t, sys)

	// A process suspended when its actor stops ends with ErrStopped.
	call("suspended at stop", func(pr *crisp.Proc, _ *state) (string, error) {
		_, err := crisp.Await(pr, future.NewPromise[int](mock).Future())
		return "", err
	})
	waitIdle(t, sys)
	a.Stop()
	waitIdle(t, sys)
	call("refused", record("r"))

	rec.waitTerminals(t, len(futures)+1) // and the gate's Tell

	lives := rec.byMessage()
	for name, f := range futures {
		_, err := f.Get()
		checkLife(t, name, lives[name], err, name == "refused")
	}
	checkLife(t, "gate", lives["gate"], nil, false)
	assert.Len(t, lives, len(futures)+1, "no events for anything else")

	// The figures an event carries.
	started := lives["runs late enough"][1]
	require.Equal(t, crisp.EventStarted, started.Kind)
	assert.Equal(t, 2*time.Second, started.Wait, "queued from t0 to the gate's opening")
	assert.Equal(t, time.Hour-2*time.Second, started.Slack)
	missed := lives["misses in the queue"][1]
	require.Equal(t, crisp.EventMissed, missed.Kind)
	assert.Zero(t, missed.Lag, "on virtual time the watchdog fires at the deadline")
	assert.Equal(t, t0.Add(time.Second), missed.Time)
	assert.Equal(t, "a", missed.Actor)
	susp := lives["suspended at stop"]
	assert.True(t, susp[len(susp)-1].Started, "a suspended process stopped had started")
	assert.Equal(t, crisp.EventSuspended, susp[len(susp)-2].Kind)
}

// TestObserverMatchesFuturesAtRandom sends random mixes of messages
// (deadlines, keys, panics, awaits, cancellations, a stop part-way), to
// two actors and a group of two workers, and checks
// every message's events against its future's outcome.
func TestObserverMatchesFuturesAtRandom(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 18))
			rec := newEventLog()
			sys, mock := newSystem(t, crisp.WithObserver(rec))
			actors := []crisp.Ref[*state]{
				crisp.Spawn(sys, &state{}, crisp.WithName("x")),
				crisp.Spawn(sys, &state{}, crisp.WithName("y")),
				crisp.SpawnGroup(sys, []*state{{}, {}}, crisp.WithName("g")),
			}
			type sent struct {
				f       *future.Future[string]
				refused bool
			}
			futures := map[string]sent{}
			var promises []*future.Promise[int]
			var cancels []context.CancelFunc
			stopped := map[int]bool{}
			for i := range 200 {
				ai := r.IntN(len(actors))
				a := actors[ai]
				name := fmt.Sprint("m", i)
				opts := []crisp.SendOption{crisp.MessageName(name)}
				if r.IntN(2) == 0 {
					opts = append(opts, crisp.Within(time.Duration(r.IntN(5))*time.Second))
				}
				if r.IntN(4) == 0 {
					opts = append(opts, crisp.Key(r.IntN(3))) // on the group, keys make messages wait for one another
				}
				if r.IntN(8) == 0 {
					ctx, cancel := context.WithCancel(context.Background())
					cancels = append(cancels, cancel)
					opts = append(opts, crisp.Context(ctx))
				}
				var fn func(*crisp.Proc, *state) (string, error)
				switch k := r.IntN(6); {
				case k == 0:
					fn = func(*crisp.Proc, *state) (string, error) { panic(name) }
				case k == 1 && ai < 2: // a group's Await holds its worker: the system would not go idle
					pr := future.NewPromise[int](mock)
					promises = append(promises, pr)
					fn = func(p *crisp.Proc, _ *state) (string, error) {
						_, err := crisp.Await(p, pr.Future())
						return name, err
					}
				default:
					fn = record(name)
				}
				futures[name] = sent{crisp.Call(a, fn, opts...), stopped[ai]}
				switch r.IntN(20) {
				case 0:
					// Only while idle: a mock clock moved while a send is in
					// flight may pass an instant the watchdog is arming a
					// timer for, which then fires only at the next Add
					// (clock.Mock's rule, DESIGN.md "Lifecycle").
					waitIdle(t, sys)
					mock.Add(time.Second)
					waitIdle(t, sys)
				case 1:
					if len(promises) > 0 {
						promises[0].Resolve(1, nil)
						promises = promises[1:]
					}
				case 2:
					if len(cancels) > 0 {
						cancels[0]()
						cancels = cancels[1:]
					}
				case 3:
					if i > 100 && !stopped[ai] {
						waitIdle(t, sys)
						a.Stop()
						stopped[ai] = true
					}
				}
			}
			for _, c := range cancels {
				c()
			}
			for _, p := range promises {
				p.Resolve(2, nil)
			}
			waitIdle(t, sys)
			mock.Add(10 * time.Second)
			waitIdle(t, sys)
			rec.waitTerminals(t, len(futures))
			lives := rec.byMessage()
			for name, s := range futures {
				_, err := s.f.Get()
				checkLife(t, name, lives[name], err, s.refused)
			}
			assert.Len(t, lives, len(futures))
		})
	}
}

func TestObserverPanicIsContained(t *testing.T) {
	sys, _ := newSystem(t, crisp.WithObserver(crisp.ObserverFunc(func(e crisp.Event) {
		panic("observer bug")
	})))
	a := crisp.Spawn(sys, &state{})
	v, err := crisp.Call(a, record("one")).Get()
	require.NoError(t, err)
	assert.Equal(t, "one", v, "the outcome is the handler's")
}

func TestSeveralObserversAreAllTold(t *testing.T) {
	r1, r2 := newEventLog(), newEventLog()
	sys, _ := newSystem(t, crisp.WithObserver(r1), crisp.WithObserver(r2), crisp.WithObserver(nil))
	a := crisp.Spawn(sys, &state{})
	_, err := crisp.Call(a, record("one"), crisp.MessageName("one")).Get()
	require.NoError(t, err)
	waitIdle(t, sys)
	for _, r := range []*eventLog{r1, r2} {
		kinds := []crisp.EventKind{}
		for _, e := range r.byMessage()["one"] {
			kinds = append(kinds, e.Kind)
		}
		assert.Equal(t, []crisp.EventKind{crisp.EventSent, crisp.EventStarted, crisp.EventFinished}, kinds)
	}
}

func TestEventKindNames(t *testing.T) {
	assert.Equal(t, "missed", crisp.EventMissed.String())
	assert.Equal(t, "restarted", crisp.EventRestarted.String())
	assert.Equal(t, "EventKind(99)", crisp.EventKind(99).String())
	assert.True(t, crisp.EventRefused.Terminal())
	assert.False(t, crisp.EventRestarted.Terminal())
	assert.False(t, crisp.EventSent.Terminal())
}

// BenchmarkObserver compares a Call+Get round trip, and a Tell, on a
// system without an observer, with a no-op observer, and with one that
// only counts: the price of observation per message.
func BenchmarkObserver(b *testing.B) {
	var n atomic.Int64
	cases := []struct {
		name string
		opts []crisp.Option
	}{
		{"none", nil},
		{"no-op", []crisp.Option{crisp.WithObserver(crisp.ObserverFunc(func(crisp.Event) {}))}},
		{"counting", []crisp.Option{crisp.WithObserver(crisp.ObserverFunc(func(crisp.Event) { n.Add(1) }))}},
	}
	for _, c := range cases {
		b.Run("call/"+c.name, func(b *testing.B) {
			sys := crisp.NewSystem(append([]crisp.Option{crisp.WithLogger(quiet)}, c.opts...)...)
			defer sys.Shutdown(context.Background())
			a := crisp.Spawn(sys, &counter{})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := crisp.Call(a, incr).Get(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("tell/"+c.name, func(b *testing.B) {
			sys := crisp.NewSystem(append([]crisp.Option{crisp.WithLogger(quiet)}, c.opts...)...)
			defer sys.Shutdown(context.Background())
			a := crisp.Spawn(sys, &counter{})
			b.ReportAllocs()
			for b.Loop() {
				crisp.Tell(a, func(_ *crisp.Proc, c *counter) { c.n++ })
			}
			if err := sys.WaitIdle(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func TestRefusalsAndObserverPanicsAreLogged(t *testing.T) {
	rec := &recorder{}
	sys, _ := newSystem(t, crisp.WithLogger(slog.New(rec)), crisp.WithObserver(crisp.ObserverFunc(func(e crisp.Event) {
		if e.Kind == crisp.EventStarted {
			panic("observer bug")
		}
	})))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("a"))
	v, err := crisp.Call(a, record("one"), crisp.MessageName("one")).Get()
	require.NoError(t, err)
	assert.Equal(t, "one", v, "the observer's panic changes no outcome")
	a.Stop()
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-1")
	_, err = crisp.Call(a, record("two"), crisp.MessageName("two"), crisp.Context(ctx)).Get()
	require.ErrorIs(t, err, crisp.ErrStopped)
	waitIdle(t, sys)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.recs, 2)
	assert.Equal(t, "observer panicked", rec.recs[0].msg)
	assert.Equal(t, slog.LevelError, rec.recs[0].level)
	assert.Equal(t, "started", rec.recs[0].attrs["event"].String())
	assert.Equal(t, "observer bug", rec.recs[0].attrs["panic"].String())
	assert.Equal(t, "message refused", rec.recs[1].msg)
	assert.Equal(t, slog.LevelDebug, rec.recs[1].level)
	assert.Equal(t, "two", rec.recs[1].attrs["message"].String())
	assert.Equal(t, "req-1", rec.recs[1].ctx.Value(ctxKey{}), "logged with the message's context")
}

// A CallNext whose handler returns a continuation is one message: its
// Finished marks the handler's return, and the continuation, which runs
// later on the actor, has no events of its own.
func TestObserverSeesACallNextAsOneMessage(t *testing.T) {
	rec := newEventLog()
	sys, mock := newSystem(t, crisp.WithObserver(rec))
	a := crisp.Spawn(sys, &state{}, crisp.WithName("a"))
	p := future.NewPromise[string](mock)
	f := crisp.CallNext(a, func(pr *crisp.Proc, _ *state) crisp.Next[*state, string] {
		return crisp.Then(pr, p.Future(), func(_ *crisp.Proc, _ *state, v string, err error) crisp.Next[*state, string] {
			return crisp.Return[*state](v+"!", err)
		})
	}, crisp.MessageName("next"))
	waitIdle(t, sys)
	p.Resolve("done", nil)
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "done!", v)
	waitIdle(t, sys)
	var kinds []crisp.EventKind
	rec.mu.Lock()
	for _, e := range rec.events {
		kinds = append(kinds, e.Kind)
	}
	rec.mu.Unlock()
	assert.Equal(t, []crisp.EventKind{crisp.EventSent, crisp.EventStarted, crisp.EventFinished}, kinds)
}

// TestObserverSeesRefusalsAndRestarts: a full mailbox's and admission
// control's refusals end their messages with EventRefused (never a
// miss), and a supervised restart is one EventRestarted, emitted before
// the panicking message's EventPanicked.
func TestObserverSeesRefusalsAndRestarts(t *testing.T) {
	rec := newEventLog()
	sys, _ := newSystem(t, crisp.WithObserver(rec))
	full := crisp.Spawn(sys, &state{}, crisp.WithName("full"), crisp.WithCapacity(1, crisp.FailWhenFull))
	adm := crisp.Spawn(sys, &state{}, crisp.WithName("adm"), crisp.WithAdmission())
	sup := crisp.Spawn(sys, &state{}, crisp.WithName("sup"), crisp.Restart(func() *state { return &state{} }))

	futures := map[string]*future.Future[string]{}
	call := func(to crisp.Ref[*state], name string, fn func(*crisp.Proc, *state) (string, error), opts ...crisp.SendOption) {
		futures[name] = crisp.Call(to, fn, append(opts, crisp.MessageName(name))...)
	}
	g, h := newGate(), newGate()
	hold(t, full, g)
	hold(t, adm, h)
	call(full, "queued", record("q"))
	call(full, "full", record("f"))
	// long must start within 5s and takes 35s: infeasible, which must
	// start within 30s, would start at 35s at the earliest.
	call(adm, "long", record("l"), crisp.Within(40*time.Second), crisp.Cost(35*time.Second))
	call(adm, "infeasible", record("i"), crisp.Within(90*time.Second), crisp.Cost(time.Minute))
	call(sup, "crash", func(*crisp.Proc, *state) (string, error) { panic("boom") })
	call(sup, "after", record("a"))
	g.open()
	h.open()
	waitIdle(t, sys)
	rec.waitTerminals(t, len(futures)+2) // and the gates' Tells

	lives := rec.byMessage()
	for name, f := range futures {
		_, err := f.Get()
		refused := name == "full" || name == "infeasible"
		if refused {
			require.Error(t, err, name)
			assert.NotErrorIs(t, err, deadline.ErrMissed, "%s: a refusal is never a miss", name)
			evs := lives[name]
			require.Len(t, evs, 2, name)
			assert.Equal(t, crisp.EventSent, evs[0].Kind, name)
			assert.Equal(t, crisp.EventRefused, evs[1].Kind, name)
			assert.Equal(t, err, evs[1].Err, name)
			continue
		}
		checkLife(t, name, lives[name], err, false)
	}
	assert.ErrorIs(t, lives["full"][1].Err, crisp.ErrFull)
	assert.ErrorIs(t, lives["infeasible"][1].Err, crisp.ErrInfeasible)

	restarts := lives[""] // an actor's event has no message
	require.Len(t, restarts, 1, "one restart")
	assert.Equal(t, crisp.EventRestarted, restarts[0].Kind)
	assert.Equal(t, "sup", restarts[0].Actor)
	assert.Zero(t, restarts[0].ID)
	var pe *crisp.PanicError
	require.ErrorAs(t, restarts[0].Err, &pe)
	assert.Equal(t, "boom", pe.Value)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	restartAt, panickedAt := -1, -1
	for i, e := range rec.events {
		switch {
		case e.Kind == crisp.EventRestarted:
			restartAt = i
		case e.Kind == crisp.EventPanicked && e.Message == "crash":
			panickedAt = i
		}
	}
	assert.Less(t, restartAt, panickedAt, "the restart is told before the panic's terminal event")
}

// Messages sent at once from many goroutines, to several actors, each
// get an ID of their own, never 0, though the IDs come from several
// counters.
func TestObservedMessagesSentConcurrentlyHaveDistinctIDs(t *testing.T) {
	rec := newEventLog()
	sys, _ := newSystem(t, crisp.WithObserver(rec))
	actors := []*crisp.Actor[*state]{crisp.Spawn(sys, &state{}), crisp.Spawn(sys, &state{}), crisp.Spawn(sys, &state{})}
	const senders, each = 8, 200
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				crisp.Tell(actors[(g+i)%len(actors)], func(*crisp.Proc, *state) {})
			}
		})
	}
	wg.Wait()
	waitIdle(t, sys)
	rec.waitTerminals(t, senders*each)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ids := map[uint64]bool{}
	for _, e := range rec.events {
		if e.Kind != crisp.EventSent {
			continue
		}
		require.NotZero(t, e.ID)
		require.False(t, ids[e.ID], "ID %d given twice", e.ID)
		ids[e.ID] = true
	}
	assert.Len(t, ids, senders*each)
}

// TestObservedTellsReusedKeepTheirOwnLives: a Tell's message is reused
// by the next Tell once it has run, and with an observer its figures
// are reused with it; every Tell still has its own ID and one whole
// life: Sent, Started, Finished.
func TestObservedTellsReusedKeepTheirOwnLives(t *testing.T) {
	rec := newEventLog()
	sys, _ := newSystem(t, crisp.WithObserver(rec))
	a := crisp.Spawn(sys, &state{})
	const n = 50
	for i := range n {
		crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.MessageName(fmt.Sprint("t", i)))
		waitIdle(t, sys) // it has run: the next Tell may reuse its message
	}
	rec.waitTerminals(t, n)
	lives := rec.byMessage()
	ids := map[uint64]bool{}
	for i := range n {
		evs := lives[fmt.Sprint("t", i)]
		require.Len(t, evs, 3, "t%d", i)
		assert.Equal(t, []crisp.EventKind{crisp.EventSent, crisp.EventStarted, crisp.EventFinished},
			[]crisp.EventKind{evs[0].Kind, evs[1].Kind, evs[2].Kind}, "t%d", i)
		for _, e := range evs {
			assert.Equal(t, evs[0].ID, e.ID, "t%d: one ID", i)
		}
		assert.False(t, ids[evs[0].ID], "t%d: an ID of its own", i)
		ids[evs[0].ID] = true
	}
}
