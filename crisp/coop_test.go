package crisp_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// logged appends to the actor's log: for tests on the order of events.
func logged(s *state, ev string) { s.ran = append(s.ran, ev) }

func TestAwaitLetsALaterMessageRunFirst(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pr := future.NewPromise[string](nil)

	first := crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
		logged(s, "first starts")
		v, err := crisp.Await(p, pr.Future())
		logged(s, "first resumes with "+v)
		return v, err
	})
	waitIdle(t, sys) // first is suspended: the actor is free
	crisp.Call(a, record("second"))
	waitIdle(t, sys)
	assert.False(t, first.Ready())

	pr.Resolve("answer", nil)
	v, err := first.Get()
	require.NoError(t, err)
	assert.Equal(t, "answer", v)
	assert.Equal(t, []string{"first starts", "second", "first resumes with answer"}, ranOn(t, a))
}

func TestAwaitCondResumesOnlyAfterTheMessageThatMakesItTrue(t *testing.T) {
	sys, _ := newSystem(t)
	type gateState struct {
		state
		open  bool
		evals int
	}
	a := crisp.Spawn(sys, &gateState{})
	waiter := crisp.Call(a, func(p *crisp.Proc, s *gateState) (int, error) {
		logged(&s.state, "waiter starts")
		p.AwaitCond(func() bool { s.evals++; return s.open })
		logged(&s.state, "waiter resumes")
		return s.evals, nil
	})
	waitIdle(t, sys)
	for i := range 3 {
		crisp.Tell(a, func(_ *crisp.Proc, s *gateState) { logged(&s.state, "noise "+strconv.Itoa(i)) })
	}
	crisp.Tell(a, func(_ *crisp.Proc, s *gateState) { logged(&s.state, "opener"); s.open = true })
	crisp.Tell(a, func(_ *crisp.Proc, s *gateState) { logged(&s.state, "after") })
	evals, err := waiter.Get()
	require.NoError(t, err)

	got, err := crisp.Call(a, func(_ *crisp.Proc, s *gateState) ([]string, error) { return s.ran, nil }).Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"waiter starts", "noise 0", "noise 1", "noise 2", "opener", "waiter resumes", "after"}, got,
		"the condition holds after the opener finishes, and the waiter, with the earlier arrival, goes first")
	assert.LessOrEqual(t, evals, 6, "checked once at the call and once per finished message, never polled")
}

func TestResumedProcessesAndNewMessagesFollowEDF(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	var proms []*future.Promise[int]
	var futs []*future.Future[string]
	// Three processes with deadlines 30s, 10s and 50s suspend.
	for _, d := range []int{30, 10, 50} {
		pr := future.NewPromise[int](nil)
		proms = append(proms, pr)
		name := "resumed " + strconv.Itoa(d)
		futs = append(futs, crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
			crisp.Await(p, pr.Future())
			logged(s, name)
			return name, nil
		}, crisp.Within(time.Duration(d)*time.Second)))
	}
	waitIdle(t, sys)
	got := queued(t, a, func() {
		for _, pr := range proms {
			pr.Resolve(1, nil) // ready, behind the gate
		}
		for _, d := range []int{20, 40, 5} {
			crisp.Call(a, record("new "+strconv.Itoa(d)), crisp.By(mock.Now().Add(time.Duration(d)*time.Second)))
		}
	})
	assert.Equal(t, []string{"new 5", "resumed 10", "new 20", "resumed 30", "new 40", "resumed 50"}, got)
	for _, f := range futs {
		_, err := f.Get()
		assert.NoError(t, err)
	}
}

func TestDeadlinesFailQueuedMessagesWhileOthersAreSuspended(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pr := future.NewPromise[int](nil)
	suspended := crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
		crisp.Await(p, pr.Future())
		return "resumed", nil
	}, crisp.Within(time.Second)) // started: its own deadline no longer matters
	waitIdle(t, sys)

	g := newGate()
	hold(t, a, g)
	late := crisp.Call(a, record("late"), crisp.Within(5*time.Second))
	mock.Add(5 * time.Second)
	_, err := late.Get()
	requireMissed(t, err, t0.Add(5*time.Second), t0.Add(5*time.Second))

	g.open()
	pr.Resolve(1, nil)
	v, err := suspended.Get()
	require.NoError(t, err, "a suspended process is never failed for its deadline")
	assert.Equal(t, "resumed", v)
}

// A message sent in the instant a process resumes (its actor handed to
// it by the future's resolution, its goroutine not yet back in its
// handler) finds no handler running, so its sender leaves its deadline
// to the runner: the resumed process is that runner, and the watchdog
// must fail the message at its deadline while the process runs on. The
// promise is resolved, and the message sent, from the test's goroutine,
// which runs on while the process's goroutine waits to be scheduled;
// were the process back in its handler first, the sender itself would
// have the message watched, and the test would pass without showing
// anything: so it runs several times, half of them with a crowd of
// plain messages sent first (more than the intake the process looks
// through before queueing it whole).
func TestAMessageSentAsAProcessResumesIsMissedAtItsDeadline(t *testing.T) {
	for i := range 10 {
		sys, mock := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		pr := future.NewPromise[int](nil)
		g := newGate()
		crisp.Tell(a, func(p *crisp.Proc, _ *state) {
			crisp.Await(p, pr.Future())
			close(g.started)
			<-g.release // holds the actor, resumed
		})
		waitIdle(t, sys) // suspended; nothing else to run
		now := sys.Clock().Now()
		pr.Resolve(1, nil)
		for range i % 2 * 300 {
			crisp.Tell(a, func(*crisp.Proc, *state) {})
		}
		late := crisp.Call(a, record("late"), crisp.Within(10*time.Millisecond))
		<-g.started
		mock.Add(10 * time.Millisecond)
		select {
		case <-late.Done():
		case <-time.After(10 * time.Second): // a guard: the miss comes at once
			g.open()
			t.Fatal("the message was not missed at its deadline while the resumed process ran")
		}
		_, err := late.Get()
		requireMissed(t, err, now.Add(10*time.Millisecond), now.Add(10*time.Millisecond))
		g.open()
		assert.Equal(t, []string(nil), ranOn(t, a), "a missed message never runs")
	}
}

func TestASuspendedProcessIsNotFailedAtItsDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	var misses atomic.Int32
	a := crisp.Spawn(sys, &state{}, crisp.WithMissHook(func(*deadline.MissedError) { misses.Add(1) }))
	pr := future.NewPromise[int](nil)
	f := crisp.Call(a, func(p *crisp.Proc, _ *state) (time.Time, error) {
		crisp.Await(p, pr.Future())
		return p.Deadline(), nil
	}, crisp.Within(time.Second))
	waitIdle(t, sys)
	mock.Add(time.Hour)
	waitIdle(t, sys)
	pr.Resolve(0, nil)
	d, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Second), d, "it keeps its deadline")
	assert.Zero(t, misses.Load())
}

// recursiveM is Listing 1 of the ABS paper: a synchronous chain of plain
// calls, each level sending compute to its own actor and awaiting it.
type counterState struct{ result int }

func compute(_ *crisp.Proc, s *counterState) (int, error) { s.result++; return s.result, nil }

func recursiveM(p *crisp.Proc, self *crisp.Actor[*counterState], i int) int {
	if i > 0 {
		recursiveM(p, self, i-1)
	}
	v, err := crisp.Await(p, crisp.Call(self, compute))
	if err != nil {
		panic(err)
	}
	return v
}

func TestNestedAwaitsKeepTheStack(t *testing.T) {
	sys, _ := newSystem(t)
	st := &counterState{}
	a := crisp.Spawn(sys, st)
	var futs []*future.Future[int]
	for range 50 {
		futs = append(futs, crisp.Call(a, func(p *crisp.Proc, _ *counterState) (int, error) {
			return recursiveM(p, a, 5), nil
		}))
	}
	for _, f := range futs {
		_, err := f.Get()
		require.NoError(t, err)
	}
	total, _ := crisp.Call(a, func(_ *crisp.Proc, s *counterState) (int, error) { return s.result, nil }).Get()
	assert.Equal(t, 50*6, total, "six computes per call, all run")
}

func TestSelfDeadlockIsAnErrorNotAHang(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithName("svc"))

	t.Run("Get on a message of the same actor", func(t *testing.T) {
		_, err := crisp.Call(a, func(_ *crisp.Proc, _ *state) (string, error) {
			return crisp.Call(a, record("inner")).Get()
		}).Get()
		assert.ErrorIs(t, err, crisp.ErrDeadlock)
		assert.ErrorContains(t, err, "svc")
	})
	t.Run("GetWithin and GetContext too", func(t *testing.T) {
		_, err := crisp.Call(a, func(_ *crisp.Proc, _ *state) (string, error) {
			return crisp.Call(a, record("inner")).GetWithin(time.Hour)
		}).Get()
		assert.ErrorIs(t, err, crisp.ErrDeadlock)
		_, err = crisp.Call(a, func(_ *crisp.Proc, _ *state) (string, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return crisp.Call(a, record("inner")).GetContext(ctx)
		}).Get()
		assert.ErrorIs(t, err, crisp.ErrDeadlock)
	})
	t.Run("Await of its own result", func(t *testing.T) {
		own := make(chan *future.Future[string], 1)
		f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
			return crisp.Await(p, <-own)
		})
		own <- f
		_, err := f.Get()
		assert.ErrorIs(t, err, crisp.ErrDeadlock)
	})
	t.Run("Await of a message of the same actor is fine", func(t *testing.T) {
		v, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
			return crisp.Await(p, crisp.Call(a, record("inner")))
		}).Get()
		require.NoError(t, err)
		assert.Equal(t, "inner", v)
	})
	t.Run("Get on another actor's message blocks only this one", func(t *testing.T) {
		b := crisp.Spawn(sys, &state{})
		v, err := crisp.Call(a, func(_ *crisp.Proc, _ *state) (string, error) {
			return crisp.Call(b, record("from b")).Get()
		}).Get()
		require.NoError(t, err)
		assert.Equal(t, "from b", v)
	})
	t.Run("the actor goes on afterwards", func(t *testing.T) {
		v, err := crisp.Call(a, record("next")).Get()
		require.NoError(t, err)
		assert.Equal(t, "next", v)
	})
}

func TestGetInAHandlerBlocksTheActor(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pr := future.NewPromise[string](nil)
	blocked := crisp.Call(a, func(_ *crisp.Proc, s *state) (string, error) {
		logged(s, "getting")
		v, err := pr.Future().Get()
		logged(s, "got "+v)
		return v, err
	})
	later := crisp.Call(a, record("later"))
	// Nothing can run on a while its handler blocks in Get.
	assert.False(t, later.Ready())
	pr.Resolve("x", nil)
	_, err := blocked.Get()
	require.NoError(t, err)
	_, err = later.Get()
	require.NoError(t, err)
	assert.Equal(t, []string{"getting", "got x", "later"}, ranOn(t, a))
}

func TestStopEndsSuspendedProcesses(t *testing.T) {
	for _, how := range []string{"Stop", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
			defer sys.Shutdown(context.Background())
			a := crisp.Spawn(sys, &state{})
			never := future.NewPromise[int](nil) // resolved by nobody
			var deferred atomic.Int32
			var futs []*future.Future[int]
			for range 10 {
				futs = append(futs, crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
					defer deferred.Add(1)
					return crisp.Await(p, never.Future())
				}))
			}
			cond := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
				defer deferred.Add(1)
				p.AwaitCond(func() bool { return false })
				return 0, nil
			})
			futs = append(futs, cond)
			then := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
				return crisp.Then(p, never.Future(), func(*crisp.Proc, *state, int, error) crisp.Next[*state, int] {
					t.Error("a dropped continuation ran")
					return crisp.Next[*state, int]{}
				})
			})
			futs = append(futs, then)
			waitIdle(t, sys)

			if how == "Stop" {
				a.Stop()
			} else {
				require.NoError(t, sys.Shutdown(context.Background()))
			}
			for _, f := range futs {
				_, err := f.Get()
				assert.ErrorIs(t, err, crisp.ErrStopped)
			}
			require.NoError(t, sys.Shutdown(context.Background()))
			assert.Equal(t, int32(11), deferred.Load(), "every suspended process ran its deferred calls")
		})
	}
}

// Many processes suspend and resume on one actor; a counter of processes
// inside a handler must never exceed one.
func TestAtMostOneProcessRunsAtAnyInstant(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := crisp.Spawn(sys, &state{})
	helper := crisp.Spawn(sys, &state{})
	var inside, maxInside atomic.Int32
	enter := func() {
		n := inside.Add(1)
		for {
			m := maxInside.Load()
			if n <= m || maxInside.CompareAndSwap(m, n) {
				break
			}
		}
	}
	leave := func() { inside.Add(-1) }

	var futs []*future.Future[int]
	for i := range 200 {
		futs = append(futs, crisp.Call(a, func(p *crisp.Proc, s *state) (int, error) {
			enter()
			defer leave()
			for k := range 5 {
				switch (i + k) % 3 {
				case 0:
					leave()
					crisp.Await(p, crisp.Call(helper, func(*crisp.Proc, *state) (int, error) { return k, nil }))
					enter()
				case 1:
					leave()
					p.Suspend()
					enter()
				case 2:
					leave()
					crisp.Await(p, crisp.Call(a, func(*crisp.Proc, *state) (int, error) {
						enter()
						defer leave()
						return k, nil
					}))
					enter()
				}
			}
			return i, nil
		}))
	}
	for i, f := range futs {
		v, err := f.Get()
		require.NoError(t, err)
		require.Equal(t, i, v)
	}
	assert.Equal(t, int32(1), maxInside.Load())
}

func TestAwaitWithinTimesOutOnTheSystemClock(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pr := future.NewPromise[string](nil)
	type outcome struct {
		v   string
		err error
		at  time.Time
	}
	f := crisp.Call(a, func(p *crisp.Proc, s *state) (outcome, error) {
		v, err := crisp.AwaitWithin(p, pr.Future(), 3*time.Second)
		logged(s, "timed wait over")
		return outcome{v, err, p.Now()}, nil
	})
	waitIdle(t, sys)
	crisp.Call(a, record("meanwhile"))
	mock.Add(3*time.Second - time.Nanosecond)
	waitIdle(t, sys)
	assert.False(t, f.Ready())
	mock.Add(time.Nanosecond)
	got, err := f.Get()
	require.NoError(t, err)
	assert.ErrorIs(t, got.err, future.ErrTimeout)
	assert.Equal(t, t0.Add(3*time.Second), got.at)
	assert.Equal(t, []string{"meanwhile", "timed wait over"}, ranOn(t, a))

	pr.Resolve("late", nil) // the future was left alone
	v, err := pr.Future().Get()
	require.NoError(t, err)
	assert.Equal(t, "late", v)

	t.Run("resolved in time", func(t *testing.T) {
		pr := future.NewPromise[string](nil)
		f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
			return crisp.AwaitWithin(p, pr.Future(), time.Minute)
		})
		waitIdle(t, sys)
		pr.Resolve("on time", nil)
		v, err := f.Get()
		require.NoError(t, err)
		assert.Equal(t, "on time", v)
		mock.Add(time.Hour) // the cancelled timeout must not fire into anything
		waitIdle(t, sys)
	})
}

// A timed-out AwaitWithin leaves its callback on the future; when that
// future resolves later, it must not wake the same process out of a later
// wait.
func TestAStaleWakeUpIsIgnored(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	first := future.NewPromise[string](nil)
	second := future.NewPromise[string](nil)
	f := crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
		_, err := crisp.AwaitWithin(p, first.Future(), time.Second)
		logged(s, "first: "+err.Error())
		v, err := crisp.Await(p, second.Future())
		logged(s, "second: "+v)
		return v, err
	})
	waitIdle(t, sys)
	mock.Add(time.Second)
	waitIdle(t, sys) // timed out; now suspended on second
	first.Resolve("stale", nil)
	waitIdle(t, sys)
	assert.False(t, f.Ready(), "the first future's late callback must not resume the second wait")
	second.Resolve("right", nil)
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "right", v)
	assert.Equal(t, []string{"first: " + future.ErrTimeout.Error(), "second: right"}, ranOn(t, a))
}

func TestSuspendLetsTheScheduleDecide(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	in := func(d time.Duration) crisp.SendOption { return crisp.By(mock.Now().Add(d)) }
	got := queued(t, a, func() {
		crisp.Call(a, func(p *crisp.Proc, s *state) (int, error) {
			logged(s, "urgent before")
			p.Suspend() // nothing is more urgent: it goes on at once
			logged(s, "urgent after")
			return 0, nil
		}, in(time.Second))
		crisp.Call(a, func(p *crisp.Proc, s *state) (int, error) {
			logged(s, "relaxed before")
			crisp.Tell(a, func(_ *crisp.Proc, s *state) { logged(s, "sent by relaxed") }, in(time.Minute))
			p.Suspend() // what it just sent is more urgent than itself
			logged(s, "relaxed after")
			return 0, nil
		}, in(time.Hour))
		crisp.Call(a, record("middle"), in(30*time.Minute))
	})
	assert.Equal(t, []string{"urgent before", "urgent after", "middle", "relaxed before", "sent by relaxed", "relaxed after"}, got)
}

func TestThen(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	b := crisp.Spawn(sys, &state{})

	t.Run("the handler's result comes from the continuation", func(t *testing.T) {
		f := crisp.CallNext(a, func(p *crisp.Proc, s *state) crisp.Next[*state, string] {
			logged(s, "asks b")
			return crisp.Then(p, crisp.Call(b, record("b's answer")), func(p *crisp.Proc, s *state, v string, err error) crisp.Next[*state, string] {
				logged(s, "continues with "+v)
				return crisp.Return[*state]("got "+v, err)
			})
		})
		v, err := f.Get()
		require.NoError(t, err)
		assert.Equal(t, "got b's answer", v)
	})
	t.Run("chained", func(t *testing.T) {
		f := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
			return crisp.Then(p, crisp.Call(b, record("1")), func(p *crisp.Proc, _ *state, v string, err error) crisp.Next[*state, int] {
				n, _ := strconv.Atoi(v)
				return crisp.Then(p, crisp.Call(b, record("2")), func(_ *crisp.Proc, _ *state, w string, err error) crisp.Next[*state, int] {
					m, _ := strconv.Atoi(w)
					return crisp.Return[*state](n+m, err)
				})
			})
		})
		v, err := f.Get()
		require.NoError(t, err)
		assert.Equal(t, 3, v)
	})
	t.Run("errors and panics reach the caller", func(t *testing.T) {
		boom := errors.New("b failed")
		_, err := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
			return crisp.Then(p, crisp.Call(b, func(*crisp.Proc, *state) (int, error) { return 0, boom }),
				func(_ *crisp.Proc, _ *state, v int, err error) crisp.Next[*state, int] {
					return crisp.Return[*state](v, err)
				})
		}).Get()
		assert.ErrorIs(t, err, boom)
		_, err = crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
			return crisp.Then(p, crisp.Call(b, record("x")), func(*crisp.Proc, *state, string, error) crisp.Next[*state, int] {
				panic("in the continuation")
			})
		}).Get()
		var pe *crisp.PanicError
		assert.ErrorAs(t, err, &pe)
	})
	t.Run("an interface result from a continuation", func(t *testing.T) {
		v, err := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, fmt.Stringer] {
			return crisp.Then(p, crisp.Call(b, record("x")), func(*crisp.Proc, *state, string, error) crisp.Next[*state, fmt.Stringer] {
				return crisp.Return[*state, fmt.Stringer](time.Second, nil)
			})
		}).Get()
		require.NoError(t, err)
		assert.Equal(t, "1s", v.String())
	})
	t.Run("a Next returned now resolves at once", func(t *testing.T) {
		v, err := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, string] {
			return crisp.Return[*state]("now", nil)
		}).Get()
		require.NoError(t, err)
		assert.Equal(t, "now", v)
		v, err = crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, string] {
			return crisp.Next[*state, string]{}
		}).Get()
		require.NoError(t, err)
		assert.Empty(t, v, "the zero Next is the zero value and no error")
	})
	t.Run("a Next made by another handler's Then is refused", func(t *testing.T) {
		never := future.NewPromise[int](nil)
		var kept crisp.Next[*state, int]
		_, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
			kept = crisp.Then(p, never.Future(), func(*crisp.Proc, *state, int, error) crisp.Next[*state, int] {
				return crisp.Return[*state](1, nil)
			})
			return 0, nil
		}).Get()
		require.NoError(t, err)
		_, err = crisp.CallNext(a, func(*crisp.Proc, *state) crisp.Next[*state, int] { return kept }).Get()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "crisp: a handler returned a Next made by another handler's Then")
		never.Resolve(0, nil) // the detached continuation runs, and its result is dropped
		waitIdle(t, sys)
	})
	t.Run("detached continuations run and their results are dropped", func(t *testing.T) {
		done := make(chan string, 1)
		v, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
			crisp.Then(p, crisp.Call(b, record("later")), func(_ *crisp.Proc, _ *state, v string, _ error) crisp.Next[*state, int] {
				done <- v
				return crisp.Next[*state, int]{}
			})
			return "now", nil
		}).Get()
		require.NoError(t, err)
		assert.Equal(t, "now", v)
		assert.Equal(t, "later", <-done)
	})
	t.Run("a detached Then of a wrong state type is a misuse panic", func(t *testing.T) {
		// Returned from a CallNext handler, the same Then does not compile.
		_, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
			crisp.Then(p, crisp.Call(b, record("x")), func(*crisp.Proc, *counterState, string, error) crisp.Next[*counterState, int] {
				return crisp.Next[*counterState, int]{}
			})
			return 0, nil
		}).Get()
		var pe *crisp.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, fmt.Sprint(pe.Value), "crisp: Then with state type")
	})
	t.Run("continuations keep the message's keys in the policy's order", func(t *testing.T) {
		sys, mock := newSystem(t)
		c := crisp.Spawn(sys, &state{}, crisp.WithPolicy(policy.ByPriority()))
		pr := future.NewPromise[int](nil)
		for _, prio := range []int{1, 3} {
			crisp.CallNext(c, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
				return crisp.Then(p, pr.Future(), func(p *crisp.Proc, s *state, _ int, _ error) crisp.Next[*state, int] {
					logged(s, "continuation "+strconv.Itoa(p.Priority()))
					return crisp.Next[*state, int]{}
				})
			}, crisp.Priority(prio))
		}
		waitIdle(t, sys)
		got := queued(t, c, func() {
			pr.Resolve(0, nil)
			crisp.Call(c, record("new 2"), crisp.Priority(2), crisp.Within(time.Minute))
		})
		assert.Equal(t, []string{"continuation 3", "new 2", "continuation 1"}, got)
		_ = mock
	})
}

func TestAwaitCondPanicsInTheWaitingProcess(t *testing.T) {
	sys, _ := newSystem(t)
	type s2 struct{ armed bool }
	a := crisp.Spawn(sys, &s2{})
	f := crisp.Call(a, func(p *crisp.Proc, s *s2) (int, error) {
		p.AwaitCond(func() bool {
			if s.armed {
				panic("bad condition")
			}
			return false
		})
		return 0, nil
	})
	waitIdle(t, sys)
	crisp.Tell(a, func(_ *crisp.Proc, s *s2) { s.armed = true })
	_, err := f.Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "bad condition", pe.Value)
}

func TestProcOutsideItsHandlerIsAMisusePanic(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	leaked := make(chan *crisp.Proc, 1)
	_, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) { leaked <- p; return 0, nil }).Get()
	require.NoError(t, err)
	p := <-leaked
	assert.PanicsWithValue(t, "crisp: Suspend with a Proc outside its handler's goroutine", p.Suspend)

	_, err = crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
		var wg sync.WaitGroup
		var got any
		wg.Add(1)
		go func() { // another goroutine, while the handler runs
			defer wg.Done()
			defer func() { got = recover() }()
			p.AwaitCond(func() bool { return true })
		}()
		wg.Wait()
		if got == nil {
			return 0, errors.New("no panic")
		}
		return 0, nil
	}).Get()
	assert.NoError(t, err)
}

func TestSuspendedProcessesHoldOnlyTheirGoroutines(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	never := future.NewPromise[int](nil)
	before := runtime.NumGoroutine()
	for range 100 {
		crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) { return crisp.Await(p, never.Future()) })
	}
	waitIdle(t, sys)
	assert.Equal(t, before+100, runtime.NumGoroutine(), "one parked goroutine per suspended process, no runner")
	a.Stop()
}

// Two processes of one actor awaiting one future resume in the order
// the policy gives them, here arrival order: the earlier registers its
// wake-up first, before it lets the later one start. (The wake-up was
// once registered after the actor was passed on, so the later process
// could register first and be woken first; the conformance suite saw it
// under -race.)
func TestProcessesAwaitingOneFutureResumeInPolicyOrder(t *testing.T) {
	for i := range 300 {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		pr := future.NewPromise[string](nil)
		g := newGate()
		hold(t, a, g) // both wait in the queue, and start back to back
		for _, name := range []string{"A", "B"} {
			crisp.Tell(a, func(p *crisp.Proc, s *state) {
				_, _ = crisp.Await(p, pr.Future())
				logged(s, name)
			})
		}
		g.open()
		waitIdle(t, sys)
		pr.Resolve("go", nil)
		waitIdle(t, sys)
		require.Equal(t, []string{"A", "B"}, ranOn(t, a), "round %d", i)
	}
}
