package crisp_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

func requireInfeasible(t *testing.T, err error) *crisp.InfeasibleError {
	t.Helper()
	var inf *crisp.InfeasibleError
	require.ErrorAs(t, err, &inf)
	assert.ErrorIs(t, err, crisp.ErrInfeasible)
	assert.NotErrorIs(t, err, deadline.ErrMissed, "a refusal is not a miss")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, crisp.ErrFull)
	return inf
}

func TestAdmissionRefusesAtSendWhatCostHintsSayCannotStartInTime(t *testing.T) {
	var dead deadLetters
	sys, _ := newSystem(t, crisp.WithDeadLetters(dead.hook))
	misses := 0
	a := crisp.Spawn(sys, &state{}, crisp.WithName("node"), crisp.WithAdmission(),
		crisp.WithMissHook(func(*deadline.MissedError) { misses++ }))
	g := newGate()
	hold(t, a, g) // no hint and nothing measured yet: estimated at 0

	// Start deadline t0+10ms, 10ms of work: nothing ahead, admitted.
	fa := crisp.Call(a, record("a"), crisp.By(t0.Add(20*time.Millisecond)), crisp.Cost(10*time.Millisecond))
	// The same again: it would start after a's 10ms, at its start
	// deadline: refused, at once.
	fb := crisp.Call(a, record("b"), crisp.By(t0.Add(20*time.Millisecond)), crisp.Cost(10*time.Millisecond), crisp.MessageName("b"))
	require.True(t, fb.Ready())
	_, err := fb.Get()
	inf := requireInfeasible(t, err)
	assert.Equal(t, crisp.InfeasibleError{Actor: "node", Message: "b", Deadline: t0.Add(10 * time.Millisecond), At: t0,
		Wait: 10 * time.Millisecond, Cost: 10 * time.Millisecond}, *inf)
	// Under EDF an urgent message goes first: nothing is ahead of it.
	fc := crisp.Call(a, record("c"), crisp.Within(5*time.Millisecond))
	assert.False(t, fc.Ready(), "admitted")
	// A later one waits for a (10ms) and c (no estimate): admitted.
	fd := crisp.Call(a, record("d"), crisp.By(t0.Add(30*time.Millisecond)), crisp.Cost(5*time.Millisecond))
	assert.False(t, fd.Ready(), "admitted")
	// A Tell that cannot start in time is a dead letter.
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.By(t0.Add(11*time.Millisecond)), crisp.Cost(time.Millisecond), crisp.MessageName("told"))
	letters := dead.all()
	require.Len(t, letters, 1)
	assert.Equal(t, "told", letters[0].Message)
	requireInfeasible(t, letters[0].Reason)
	// Messages without a deadline are always admitted.
	fe := crisp.Call(a, record("e"))

	g.open()
	for _, f := range []interface{ Get() (string, error) }{fa, fc, fd, fe} {
		_, err := f.Get()
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"c", "a", "d", "e"}, ranOn(t, a))
	assert.Zero(t, misses, "a refusal never reaches the miss hook")
}

func TestAdmissionUnderAnotherPolicyCountsEverythingQueued(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithAdmission(), crisp.WithPolicy(policy.FIFO()))
	g := newGate()
	hold(t, a, g)
	defer func() { g.open() }()
	crisp.Tell(a, func(*crisp.Proc, *state) {}, crisp.By(t0.Add(time.Hour)), crisp.Cost(10*time.Millisecond))
	// In arrival order the urgent message waits for the one before it.
	_, err := crisp.Call(a, record("urgent"), crisp.Within(5*time.Millisecond)).Get()
	inf := requireInfeasible(t, err)
	assert.Equal(t, 10*time.Millisecond, inf.Wait)
}

func TestAdmissionSharesTheWorkAheadAmongAGroupsWorkers(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, []*state{{}, {}}, crisp.WithAdmission())
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		crisp.Tell(grp, func(*crisp.Proc, *state) {
			started <- struct{}{}
			<-release
		})
		<-started
	}
	defer close(release)
	by := crisp.By(t0.Add(30 * time.Millisecond))
	cost := crisp.Cost(10 * time.Millisecond) // start deadline t0+20ms
	var waits []time.Duration
	for range 5 {
		_, err := crisp.Call(grp, record("x"), by, cost).GetWithin(0)
		if inf, ok := err.(*crisp.InfeasibleError); ok {
			waits = append(waits, inf.Wait)
		}
	}
	// Admitted with 0, 5, 10 and 15ms of work ahead per worker; the
	// fifth would wait 20ms, until its start deadline.
	assert.Equal(t, []time.Duration{20 * time.Millisecond}, waits)
}

func TestAdmissionLearnsHandlerRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := crisp.Spawn(sys, &state{}, crisp.WithAdmission())
		work := func(d time.Duration) func(*crisp.Proc, *state) (string, error) {
			return func(*crisp.Proc, *state) (string, error) {
				virtualSleep(d) // a handler that runs for d
				return "", nil
			}
		}
		_, err := crisp.Call(a, work(8*time.Millisecond)).Get()
		require.NoError(t, err)
		// The runner records the run time as its handler returns, which
		// is after the caller may have its result: let it.
		synctest.Wait()

		// The measured 8ms is now every message's estimate: the running
		// one's, and the new ones'.
		g := newGate()
		hold(t, a, g)
		_, err = crisp.Call(a, record("x"), crisp.Within(8*time.Millisecond)).GetWithin(0)
		inf := requireInfeasible(t, err)
		assert.Equal(t, 8*time.Millisecond, inf.Wait, "the running handler's estimate")
		assert.Equal(t, 8*time.Millisecond, inf.Cost)
		f := crisp.Call(a, work(16*time.Millisecond), crisp.Within(9*time.Millisecond))
		_, err = crisp.Call(a, record("y"), crisp.Within(9*time.Millisecond)).GetWithin(0)
		inf = requireInfeasible(t, err)
		assert.Equal(t, 16*time.Millisecond, inf.Wait, "the running handler's and the queued message's")
		g.open()
		_, err = f.Get()
		require.NoError(t, err)

		// Measurements so far: 8ms, 0 (the gate, which waited in no
		// virtual time), 16ms: 8, 8-8/8 = 7, 7+(16-7)/8 = 8.125ms.
		g = newGate()
		hold(t, a, g)
		_, err = crisp.Call(a, record("z"), crisp.Within(time.Millisecond)).GetWithin(0)
		inf = requireInfeasible(t, err)
		assert.Equal(t, 8125*time.Microsecond, inf.Cost)
		g.open()
	})
}

func TestAdmissionCountsAFreeWorkerAsNoWait(t *testing.T) {
	sys, _ := newSystem(t)
	grp := crisp.SpawnGroup(sys, []*state{{}, {}}, crisp.WithAdmission())
	release := make(chan struct{})
	started := make(chan struct{})
	crisp.Tell(grp, func(*crisp.Proc, *state) {
		close(started)
		<-release
	}, crisp.By(t0.Add(time.Hour)), crisp.Cost(time.Minute)) // one worker busy for a minute, by its hint
	<-started
	defer close(release)
	// The other worker is free: no wait, however long the running one's
	// hint.
	f := crisp.Call(grp, record("urgent"), crisp.Within(time.Millisecond), crisp.Cost(time.Microsecond))
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "urgent", v)
	// With both busy, a message that must start within a millisecond
	// would wait for half a minute by the estimate.
	hold := make(chan struct{})
	defer close(hold)
	began := make(chan struct{})
	crisp.Tell(grp, func(*crisp.Proc, *state) { close(began); <-hold }, crisp.By(t0.Add(time.Hour)), crisp.Cost(time.Minute))
	<-began
	_, err = crisp.Call(grp, record("late"), crisp.Within(time.Millisecond), crisp.Cost(time.Microsecond)).Get()
	inf := requireInfeasible(t, err)
	assert.Equal(t, time.Minute, inf.Wait, "two minutes of running hints over two workers")
}
