package crisp_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// incarnation is a supervised state: each restart makes a new one.
type incarnation struct {
	gen  int
	seen int // messages this incarnation ran
}

// incarnations counts the states a factory made.
type incarnations struct {
	mu sync.Mutex
	n  int
}

func (c *incarnations) fresh() *incarnation {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return &incarnation{gen: c.n}
}

func (c *incarnations) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestARestartingActorKeepsEveryOtherOutcomeInPolicyOrder(t *testing.T) {
	for _, backoff := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(fmt.Sprintf("backoff %v", backoff), func(t *testing.T) {
			sys, mock := newSystem(t)
			var made incarnations
			a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh), crisp.Backoff(backoff, backoff))

			// Hold the actor, queue 30 messages with shuffled deadlines,
			// and let it go: EDF runs them earliest deadline first, and
			// every third to run panics.
			g := newGate()
			crisp.Tell(a, func(*crisp.Proc, *incarnation) {
				close(g.started)
				<-g.release
			})
			<-g.started
			const n = 30
			rng := rand.New(rand.NewPCG(1, 2))
			order := rng.Perm(n) // message i has the order[i]-th deadline
			var ran []int        // message indices in the order they ran; only the actor appends
			futs := make([]*future.Future[int], n)
			for i := range n {
				dl := t0.Add(time.Hour + time.Duration(order[i])*time.Second)
				futs[i] = crisp.Call(a, func(p *crisp.Proc, s *incarnation) (int, error) {
					ran = append(ran, i)
					if len(ran)%3 == 0 {
						panic(fmt.Sprintf("crash on message %d", i))
					}
					s.seen++
					return s.gen, nil
				}, crisp.By(dl))
			}
			g.open()
			for range n { // each backoff ends only when the clock moves on
				waitIdle(t, sys)
				mock.Add(backoff)
			}
			waitIdle(t, sys)

			require.Len(t, ran, n, "every message ran")
			want := make([]int, n)
			for i := range n {
				want[order[i]] = i
			}
			assert.Equal(t, want, ran, "in EDF order, restarts or not")
			for k, i := range ran {
				v, err := futs[i].Get()
				if (k+1)%3 == 0 {
					var pe *crisp.PanicError
					assert.ErrorAs(t, err, &pe, "message %d", i)
					continue
				}
				require.NoError(t, err, "message %d", i)
				assert.Equal(t, 1+(k+1)/3, v, "message %d ran on the incarnation after %d restarts", i, (k+1)/3)
			}
			assert.Equal(t, 1+n/3, made.count(), "one restart per panic")
		})
	}
}

func TestAMessageWhoseDeadlinePassesDuringABackoffIsMissedAtItsDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh), crisp.Backoff(10*time.Millisecond, time.Second))

	crash := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { panic("boom") })
	_, err := crash.Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	waitIdle(t, sys)

	// The actor waits out its backoff until t0+10ms.
	late := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { return 1, nil }, crisp.Within(4*time.Millisecond))
	later := crisp.Call(a, func(_ *crisp.Proc, s *incarnation) (int, error) { return s.gen, nil }, crisp.Within(20*time.Millisecond))
	waitIdle(t, sys)
	assert.False(t, late.Ready())

	mock.Add(4 * time.Millisecond)
	waitIdle(t, sys)
	require.True(t, late.Ready(), "reported at its deadline, during the backoff")
	_, err = late.Get()
	var me *deadline.MissedError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, t0.Add(4*time.Millisecond), me.Detected)
	assert.False(t, later.Ready(), "the backoff goes on")

	mock.Add(6 * time.Millisecond)
	waitIdle(t, sys)
	v, err := later.Get()
	require.NoError(t, err)
	assert.Equal(t, 2, v, "ran on the fresh state after the backoff")
}

func TestARestartStormHitsTheLimitAndEscalatesOnce(t *testing.T) {
	var mu sync.Mutex
	var escalated []*crisp.EscalationError
	sys, mock := newSystem(t, crisp.WithEscalation(func(e *crisp.EscalationError) {
		mu.Lock()
		escalated = append(escalated, e)
		mu.Unlock()
	}))
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.WithName("storm"), crisp.Restart(made.fresh),
		crisp.Backoff(time.Millisecond, 4*time.Millisecond), crisp.RestartLimit(3, time.Second))
	done := a.Done()

	var crashedAt []time.Time
	futs := make([]*future.Future[int], 10)
	for i := range futs {
		futs[i] = crisp.Call(a, func(p *crisp.Proc, _ *incarnation) (int, error) {
			crashedAt = append(crashedAt, p.Now())
			panic("storm")
		})
	}
	for range 20 {
		waitIdle(t, sys)
		mock.Add(time.Millisecond)
	}
	waitIdle(t, sys)

	require.Len(t, crashedAt, 4, "three restarts, then the limit")
	assert.Equal(t, []time.Time{t0, t0.Add(time.Millisecond), t0.Add(3 * time.Millisecond), t0.Add(7 * time.Millisecond)},
		crashedAt, "backoffs of 1, 2 and 4 ms")
	for i, f := range futs {
		_, err := f.Get()
		if i < 4 {
			var pe *crisp.PanicError
			assert.ErrorAs(t, err, &pe)
		} else {
			assert.ErrorIs(t, err, crisp.ErrStopped, "message %d, queued when the actor gave up", i)
		}
	}
	mu.Lock()
	require.Len(t, escalated, 1, "escalated exactly once")
	e := escalated[0]
	mu.Unlock()
	assert.Equal(t, "storm", e.Actor)
	assert.Equal(t, 3, e.Restarts)
	assert.Equal(t, t0.Add(7*time.Millisecond), e.At)
	assert.Equal(t, "storm", e.Panic.Value)
	select {
	case <-done:
	default:
		t.Fatal("the actor has not ended")
	}
	var got *crisp.EscalationError
	require.ErrorAs(t, a.Err(), &got)
	assert.Same(t, e, got)
	assert.Equal(t, 4, made.count())
	_, err := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { return 0, nil }).Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
}

func TestRestartsOutsideTheWindowDoNotCount(t *testing.T) {
	escalations := 0
	sys, mock := newSystem(t, crisp.WithEscalation(func(*crisp.EscalationError) { escalations++ }))
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh), crisp.RestartLimit(2, 10*time.Millisecond))
	for range 5 { // one panic every 6 ms: never more than two in 10 ms
		_, err := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { panic("now and then") }).Get()
		var pe *crisp.PanicError
		require.ErrorAs(t, err, &pe)
		waitIdle(t, sys)
		mock.Add(6 * time.Millisecond)
	}
	waitIdle(t, sys)
	assert.Equal(t, 0, escalations)
	assert.Equal(t, 6, made.count())
	assert.NoError(t, a.Err())
}

func TestStopOnPanicStopsTheActor(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.StopOnPanic())
	g := newGate()
	hold(t, a, g)
	crash := crisp.Call(a, func(*crisp.Proc, *state) (int, error) { panic("fatal") })
	queued := crisp.Call(a, record("never"))
	g.open()
	<-a.Done()
	_, err := crash.Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	_, err = queued.Get()
	assert.ErrorIs(t, err, crisp.ErrStopped)
	require.ErrorAs(t, a.Err(), &pe)
	assert.Equal(t, "fatal", pe.Value)
	waitIdle(t, sys)
}

func TestAGroupRestartsOnlyTheFailedWorker(t *testing.T) {
	sys, mock := newSystem(t)
	var made incarnations
	states := []*incarnation{made.fresh(), made.fresh(), made.fresh()}
	grp := crisp.SpawnGroup(sys, states, crisp.Restart(made.fresh), crisp.Backoff(5*time.Millisecond, 5*time.Millisecond))

	// One message crashes its worker; others run beside it.
	crashedGen := 0
	work := func(crash bool) func(*crisp.Proc, *incarnation) (int, error) {
		return func(_ *crisp.Proc, s *incarnation) (int, error) {
			if crash {
				crashedGen = s.gen
				panic("one worker")
			}
			return s.gen, nil
		}
	}
	_, err := crisp.Call(grp, work(true)).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	waitIdle(t, sys)
	assert.Equal(t, 4, made.count(), "one fresh state")
	others := []int{1, 2, 3}
	others = slices.DeleteFunc(others, func(g int) bool { return g == crashedGen })

	// The two other workers serve while the restarted one waits out its
	// backoff: they run several messages at once.
	hold := make(chan struct{})
	var before []*future.Future[int]
	for range 6 {
		before = append(before, crisp.Call(grp, func(_ *crisp.Proc, s *incarnation) (int, error) {
			<-hold
			return s.gen, nil
		}))
	}
	close(hold)
	waitIdle(t, sys)
	for _, f := range before {
		v, err := f.Get()
		require.NoError(t, err)
		assert.Contains(t, others, v, "only the workers not benched")
	}
	mock.Add(5 * time.Millisecond)
	waitIdle(t, sys)

	// Back from its bench, the worker serves with its fresh state: three
	// messages held at once need all three workers.
	hold = make(chan struct{})
	var after []*future.Future[int]
	started := make(chan struct{}, 3)
	for range 3 {
		after = append(after, crisp.Call(grp, func(_ *crisp.Proc, s *incarnation) (int, error) {
			started <- struct{}{}
			<-hold
			return s.gen, nil
		}))
	}
	for range 3 {
		<-started
	}
	close(hold)
	var all []int
	for _, f := range after {
		v, err := f.Get()
		require.NoError(t, err)
		all = append(all, v)
	}
	slices.Sort(all)
	assert.Equal(t, append(others, 4), all, "the fresh worker serves again; the others kept their states")
	assert.Equal(t, 3, grp.Workers())
}

func TestARestartFactoryThatPanicsStopsTheActor(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.Restart(func() *state { panic("no fresh state") }))
	_, err := crisp.Call(a, func(*crisp.Proc, *state) (int, error) { panic("first") }).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	<-a.Done()
	require.ErrorAs(t, a.Err(), &pe)
	assert.Equal(t, "no fresh state", pe.Value)
}

func TestRestartMisuse(t *testing.T) {
	sys, _ := newSystem(t)
	assert.PanicsWithValue(t, "crisp: Spawn with Restart(nil)", func() {
		crisp.Spawn(sys, &state{}, crisp.Restart[*state](nil))
	})
	assert.PanicsWithValue(t, "crisp: Spawn with Restart of a func() *crisp_test.incarnation for an actor of state type *crisp_test.state", func() {
		crisp.Spawn(sys, &state{}, crisp.Restart(func() *incarnation { return nil }))
	})
}

func TestSuspendedProcessesFinishOnTheStateTheyWereGiven(t *testing.T) {
	sys, _ := newSystem(t)
	var made incarnations
	a := crisp.Spawn(sys, made.fresh(), crisp.Restart(made.fresh))
	pr := future.NewPromise[int](sys.Clock())
	waiting := crisp.Call(a, func(p *crisp.Proc, s *incarnation) (int, error) {
		v, err := crisp.Await(p, pr.Future())
		return s.gen*100 + v, err
	})
	waitIdle(t, sys)
	_, err := crisp.Call(a, func(*crisp.Proc, *incarnation) (int, error) { panic("while another waits") }).Get()
	require.Error(t, err)
	pr.Resolve(7, nil)
	v, err := waiting.Get()
	require.NoError(t, err)
	assert.Equal(t, 107, v, "the suspended process finished on the discarded state")
	gen, err := crisp.Call(a, func(_ *crisp.Proc, s *incarnation) (int, error) { return s.gen, nil }).Get()
	require.NoError(t, err)
	assert.Equal(t, 2, gen)
}

func TestAGroupWithItsOnlyWorkerBenchedReportsMissesAtTheirDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	var made incarnations
	grp := crisp.SpawnGroup(sys, []*incarnation{made.fresh()}, crisp.Restart(made.fresh), crisp.Backoff(10*time.Millisecond, 10*time.Millisecond))
	_, err := crisp.Call(grp, func(*crisp.Proc, *incarnation) (int, error) { panic("x") }).Get()
	require.Error(t, err)
	waitIdle(t, sys)
	late := crisp.Call(grp, func(*crisp.Proc, *incarnation) (int, error) { return 0, nil }, crisp.Within(3*time.Millisecond))
	later := crisp.Call(grp, func(_ *crisp.Proc, s *incarnation) (int, error) { return s.gen, nil }, crisp.Within(20*time.Millisecond))
	waitIdle(t, sys)
	mock.Add(3 * time.Millisecond)
	waitIdle(t, sys)
	require.True(t, late.Ready(), "missed at its deadline while the worker is benched")
	_, err = late.Get()
	var me *deadline.MissedError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, t0.Add(3*time.Millisecond), me.Detected)
	assert.False(t, later.Ready())
	mock.Add(7 * time.Millisecond)
	waitIdle(t, sys)
	v, err := later.Get()
	require.NoError(t, err)
	assert.Equal(t, 2, v)
}
