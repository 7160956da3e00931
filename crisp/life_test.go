package crisp_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// journal is a log shared by the states of one test, which may outlive
// any one of them (restarts).
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) read() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

// hooked is a state with every lifecycle hook.
type hooked struct {
	j    *journal
	name string
}

func (h *hooked) Started(p *crisp.Proc)  { h.j.add(h.name + " started") }
func (h *hooked) Stopping(p *crisp.Proc) { h.j.add(h.name + " stopping") }
func (h *hooked) Stopped(p *crisp.Proc)  { h.j.add(h.name + " stopped") }

func note(msg string) func(*crisp.Proc, *hooked) (string, error) {
	return func(_ *crisp.Proc, h *hooked) (string, error) {
		h.j.add(h.name + " " + msg)
		return msg, nil
	}
}

func TestHooksRunInOrderOnTheActor(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		sys, _ := newSystem(t)
		j := &journal{}
		a := crisp.Spawn(sys, &hooked{j: j, name: "a"})
		_, err := crisp.Call(a, note("one")).Get()
		require.NoError(t, err)
		a.Stop()
		<-a.Done()
		assert.NoError(t, a.Err())
		assert.Equal(t, []string{"a started", "a one", "a stopped"}, j.read(), "Stopping runs only for a graceful stop")
	})
	t.Run("Drain", func(t *testing.T) {
		sys, _ := newSystem(t)
		j := &journal{}
		a := crisp.Spawn(sys, &hooked{j: j, name: "a"})
		g := newGate()
		crisp.Tell(a, func(*crisp.Proc, *hooked) {
			close(g.started)
			<-g.release
		})
		<-g.started
		one := crisp.Call(a, note("one"))
		two := crisp.Call(a, note("two"))
		a.Drain()
		refused := crisp.Call(a, note("refused"))
		g.open()
		<-a.Done()
		for _, f := range []*future.Future[string]{one, two} {
			_, err := f.Get()
			assert.NoError(t, err)
		}
		_, err := refused.Get()
		assert.ErrorIs(t, err, crisp.ErrStopped)
		assert.Equal(t, []string{"a started", "a stopping", "a one", "a two", "a stopped"}, j.read())
	})
	t.Run("restart", func(t *testing.T) {
		sys, _ := newSystem(t)
		j := &journal{}
		gen := 0
		fresh := func() *hooked { gen++; return &hooked{j: j, name: "b" + string(rune('0'+gen))} }
		a := crisp.Spawn(sys, fresh(), crisp.Restart(fresh))
		_, err := crisp.Call(a, func(*crisp.Proc, *hooked) (int, error) { panic("x") }).Get()
		require.Error(t, err)
		_, err = crisp.Call(a, note("after")).Get()
		require.NoError(t, err)
		a.Stop()
		<-a.Done()
		assert.Equal(t, []string{"b1 started", "b2 started", "b2 after", "b2 stopped"}, j.read(),
			"the fresh state starts before the next message; the discarded one is not told")
	})
	t.Run("Shutdown", func(t *testing.T) {
		j := &journal{}
		sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
		a := crisp.Spawn(sys, &hooked{j: j, name: "c"})
		waitIdle(t, sys)
		require.NoError(t, sys.Shutdown(context.Background()))
		<-a.Done()
		assert.Equal(t, []string{"c started", "c stopped"}, j.read())
	})
}

func TestGracefulStopResolvesEveryFuture(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pr := future.NewPromise[string](mock)
	suspended := crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
		v, err := crisp.Await(p, pr.Future())
		s.ran = append(s.ran, v)
		return v, err
	})
	waitIdle(t, sys)
	g := newGate()
	hold(t, a, g)
	var futs []*future.Future[string]
	for i, within := range []time.Duration{0, 5 * time.Millisecond, time.Hour} {
		var opts []crisp.SendOption
		if within > 0 {
			opts = append(opts, crisp.Within(within))
		}
		futs = append(futs, crisp.Call(a, record(string(rune('a'+i))), opts...))
	}
	a.Drain()
	a.Drain() // idempotent
	refused := crisp.Call(a, record("refused"))
	mock.Add(5 * time.Millisecond) // b misses while the gate holds the actor
	g.open()
	waitIdle(t, sys)
	select {
	case <-a.Done():
		t.Fatal("ended with a process still suspended")
	default:
	}
	pr.Resolve("late", nil)
	<-a.Done()
	v, err := suspended.Get()
	require.NoError(t, err)
	assert.Equal(t, "late", v)
	_, err = futs[0].Get()
	assert.NoError(t, err)
	_, err = futs[1].Get()
	assert.ErrorIs(t, err, deadline.ErrMissed)
	_, err = futs[2].Get()
	assert.NoError(t, err)
	_, err = refused.Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	assert.NoError(t, a.Err())
}

func TestDrainOfAnIdleActorStopsItAtOnce(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	a.Drain()
	<-a.Done()
	_, err := crisp.Call(a, record("x")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)

	g := crisp.SpawnGroup(sys, []*state{{}, {}})
	f := crisp.Call(g, record("y"))
	_, err = f.Get()
	require.NoError(t, err)
	g.Drain()
	<-g.Done()
	_, err = crisp.Call(g, record("z")).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
}

func TestDoneAfterTheEndIsClosed(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	a.Stop()
	waitIdle(t, sys)
	<-a.Done()
	assert.NoError(t, a.Err())
	assert.NoError(t, crisp.Spawn(sys, &state{}).Err(), "nil before the end")
}

func TestWatchTellsTheWatcher(t *testing.T) {
	sys, _ := newSystem(t)
	watcher := crisp.Spawn(sys, &state{})
	var made incarnations
	target := crisp.Spawn(sys, made.fresh(), crisp.WithName("target"), crisp.StopOnPanic())
	crisp.Watch(watcher, target, func(p *crisp.Proc, s *state, err error) {
		s.ran = append(s.ran, p.Name()+": "+err.Error())
	})
	_, err := crisp.Call(target, func(*crisp.Proc, *incarnation) (int, error) { panic("gone") }).Get()
	require.Error(t, err)
	<-target.Done()
	waitIdle(t, sys)
	assert.Equal(t, []string{"watch target: crisp: handler panicked: gone"}, ranOn(t, watcher))

	// Watching an actor that has ended already tells at once.
	crisp.Watch(watcher, target, func(_ *crisp.Proc, s *state, err error) {
		s.ran = append(s.ran, "again")
	})
	waitIdle(t, sys)
	assert.Len(t, ranOn(t, watcher), 2)

	assert.PanicsWithValue(t, "crisp: Watch with a nil target or function", func() {
		crisp.Watch[*state](watcher, nil, func(*crisp.Proc, *state, error) {})
	})
}

func TestIdleTimeout(t *testing.T) {
	sys, mock := newSystem(t)
	j := &journal{}
	a := crisp.Spawn(sys, &hooked{j: j, name: "i"}, crisp.IdleTimeout(10*time.Millisecond))
	advance(t, sys, mock, time.Millisecond, 6)
	_, err := crisp.Call(a, note("work")).Get() // at 6 ms: idle from here
	require.NoError(t, err)
	waitIdle(t, sys)
	advance(t, sys, mock, time.Millisecond, 9)
	select {
	case <-a.Done():
		t.Fatal("stopped before its idle timeout")
	default:
	}
	advance(t, sys, mock, time.Millisecond, 1)
	<-a.Done()
	assert.ErrorIs(t, a.Err(), crisp.ErrIdle)
	assert.Equal(t, []string{"i started", "i work", "i stopping", "i stopped"}, j.read())
}

func TestEscalationToAParentActor(t *testing.T) {
	sys, _ := newSystem(t)
	parent := crisp.Spawn(sys, &state{})
	var made incarnations
	child := crisp.Spawn(sys, made.fresh(), crisp.WithName("child"), crisp.Restart(made.fresh),
		crisp.RestartLimit(1, 0), crisp.OnEscalate(func(e *crisp.EscalationError) {
			crisp.Tell(parent, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, e.Error()) })
		}))
	for range 3 {
		crisp.Tell(child, func(*crisp.Proc, *incarnation) { panic("bad") })
	}
	<-child.Done()
	waitIdle(t, sys)
	assert.Equal(t, []string{"crisp: actor child gave up after 1 restarts: bad"}, ranOn(t, parent))
	var ee *crisp.EscalationError
	require.ErrorAs(t, child.Err(), &ee)
	var pe *crisp.PanicError
	assert.True(t, errors.As(child.Err(), &pe), "unwraps to the last panic")
}

// panicky has hooks that panic.
type panicky struct{ j *journal }

func (s *panicky) Started(*crisp.Proc) { s.j.add("started"); panic("in Started") }
func (s *panicky) Stopped(*crisp.Proc) { s.j.add("stopped"); panic("in Stopped") }

func TestHooksThatPanic(t *testing.T) {
	var rec recorder
	sys, _ := newSystem(t, crisp.WithLogger(slog.New(&rec)))
	j := &journal{}
	a := crisp.Spawn(sys, &panicky{j: j}, crisp.WithName("p"))
	v, err := crisp.Call(a, func(*crisp.Proc, *panicky) (int, error) { return 1, nil }).Get()
	require.NoError(t, err, "a Started that panics is a handler's panic: without supervision the actor goes on")
	assert.Equal(t, 1, v)
	a.Stop()
	<-a.Done()
	assert.NoError(t, a.Err())
	assert.Equal(t, []string{"started", "stopped"}, j.read())
	var panics []string
	for _, r := range rec.records() {
		if r.msg == "handler panicked" {
			panics = append(panics, r.attrs["message"].String()+": "+r.attrs["panic"].String())
		}
	}
	assert.Equal(t, []string{"Started: in Started", "Stopped: in Stopped"}, panics)
}

func TestEscalationWithoutAFunctionIsLogged(t *testing.T) {
	var rec recorder
	sys, _ := newSystem(t, crisp.WithLogger(slog.New(&rec)))
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.WithName("gives-up"), crisp.Restart(made.fresh), crisp.RestartLimit(0, 0))
	b := crisp.Spawn(sys, made.fresh(), crisp.WithName("panics"), crisp.Restart(made.fresh), crisp.RestartLimit(1, 0),
		crisp.OnEscalate(func(*crisp.EscalationError) { panic("in OnEscalate") }))
	crisp.Tell(b, func(*crisp.Proc, *incarnation) { panic("one") })
	crisp.Tell(b, func(*crisp.Proc, *incarnation) { panic("two") })
	<-b.Done()
	for range 3 { // RestartLimit(0, 0) is no limit
		crisp.Tell(a, func(*crisp.Proc, *incarnation) { panic("again") })
	}
	waitIdle(t, sys)
	assert.NoError(t, a.Err())
	msgs := map[string]string{}
	for _, r := range rec.records() {
		if r.level == slog.LevelError && r.msg != "handler panicked" {
			msgs[r.msg] = r.attrs["actor"].String()
		}
	}
	assert.Equal(t, map[string]string{"escalation function panicked": "panics"}, msgs)

	c := crisp.Spawn(sys, made.fresh(), crisp.WithName("gives-up"), crisp.Restart(made.fresh), crisp.RestartLimit(1, 0))
	crisp.Tell(c, func(*crisp.Proc, *incarnation) { panic("one") })
	crisp.Tell(c, func(*crisp.Proc, *incarnation) { panic("two") })
	<-c.Done()
	found := false
	for _, r := range rec.records() {
		if r.msg == "actor gave up restarting" {
			found = true
			assert.Equal(t, "gives-up", r.attrs["actor"].String())
		}
	}
	assert.True(t, found, "logged when nobody hears the escalation")
}

func TestAfterWithNoDelaySendsAtOnce(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &ticks{})
	tm := crisp.After(a, 0, func(p *crisp.Proc, s *ticks) { s.note(p) })
	waitIdle(t, sys)
	assert.Equal(t, []time.Duration{0}, ticksOf(t, a))
	assert.False(t, tm.Stop())
}

// records returns what r has recorded so far.
func (r *recorder) records() []loggedRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]loggedRecord(nil), r.recs...)
}

func TestDrainOfABusyGroupLetsItsQueueFinish(t *testing.T) {
	sys, _ := newSystem(t)
	g := crisp.SpawnGroup(sys, []*state{{}, {}})
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var held []*future.Future[string]
	for range 2 {
		held = append(held, crisp.Call(g, func(_ *crisp.Proc, s *state) (string, error) {
			started <- struct{}{}
			<-release
			return "held", nil
		}))
	}
	<-started
	<-started
	var queued []*future.Future[string]
	for _, name := range []string{"a", "b", "c"} {
		queued = append(queued, crisp.Call(g, record(name)))
	}
	g.Drain()
	refused := crisp.Call(g, record("refused"))
	close(release)
	<-g.Done()
	for _, f := range append(held, queued...) {
		_, err := f.Get()
		assert.NoError(t, err)
	}
	_, err := refused.Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	assert.NoError(t, g.Err())
}
