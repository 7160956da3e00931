package future_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// result is what a waiting goroutine hands back to the test: the pair it
// got and the time (on the clock under test) at which it got it.
type result[T any] struct {
	v   T
	err error
	at  time.Time
}

// hookClock is a mock clock that counts the timers started on it and
// calls onTimer, on the goroutine that started the timer, right after each
// one is registered. A test uses it to know that a GetWithin is timing on
// the mock before it moves the mock: clock.Mock itself cannot say so, and
// moving it earlier would start the timer late.
type hookClock struct {
	*clock.Mock
	timers  atomic.Int32
	onTimer func(d time.Duration)
}

func (c *hookClock) Timer(d time.Duration) *clock.Timer {
	t := c.Mock.Timer(d)
	c.timers.Add(1)
	if c.onTimer != nil {
		c.onTimer(d)
	}
	return t
}

// signalClock returns a hookClock that sends on the returned channel each
// time a timer is started.
func signalClock() (*hookClock, <-chan time.Duration) {
	started := make(chan time.Duration, 1)
	return &hookClock{Mock: clock.NewMock(), onTimer: func(d time.Duration) { started <- d }}, started
}

// goid returns the current goroutine's id, read from its stack header
// ("goroutine 17 [running]:"). Tests use it only to check on which
// goroutine a callback ran.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	fields := strings.Fields(string(buf[:n]))
	id, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		panic(fmt.Sprintf("cannot read goroutine id from %q", buf[:n]))
	}
	return id
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

var errBoom = errors.New("boom")

func TestResolvedExactlyOnce(t *testing.T) {
	t.Run("racing resolvers, one wins and every reader sees its pair", func(t *testing.T) {
		const rounds, resolvers, readers = 20, 32, 8
		for range rounds {
			p := future.NewPromise[int](nil)
			f := p.Future()
			errs := make([]error, resolvers)
			for i := range errs {
				errs[i] = fmt.Errorf("resolver %d", i)
			}

			start := make(chan struct{})
			won := make([]bool, resolvers)
			seen := make([]result[int], readers)
			var wg sync.WaitGroup
			for i := range resolvers {
				wg.Go(func() {
					<-start
					if i%2 == 0 {
						won[i] = p.Resolve(i, errs[i])
					} else {
						won[i] = p.Fail(errs[i])
					}
				})
			}
			for i := range readers {
				wg.Go(func() {
					<-start
					v, err := f.Get()
					seen[i] = result[int]{v: v, err: err}
				})
			}
			close(start)
			wg.Wait()

			winners := 0
			var want result[int]
			for i, ok := range won {
				if ok {
					winners++
					want.err = errs[i]
					if i%2 == 0 {
						want.v = i
					}
				}
			}
			require.Equal(t, 1, winners, "exactly one Resolve or Fail reports true")
			for i, r := range seen {
				assert.Equal(t, want.v, r.v, "reader %d value", i)
				assert.Same(t, want.err, r.err, "reader %d error", i)
			}
			v, err := f.Get()
			assert.Equal(t, want.v, v)
			assert.Same(t, want.err, err)
		}
	})

	t.Run("later resolutions report false and change nothing", func(t *testing.T) {
		p := future.NewPromise[string](nil)
		require.True(t, p.Resolve("first", nil))
		assert.False(t, p.Resolve("second", errBoom))
		assert.False(t, p.Fail(errBoom))

		v, err := p.Future().Get()
		assert.Equal(t, "first", v)
		assert.NoError(t, err)
	})

	t.Run("a failed future cannot be resolved afterwards", func(t *testing.T) {
		p := future.NewPromise[string](nil)
		require.True(t, p.Fail(errBoom))
		assert.False(t, p.Resolve("late", nil))

		v, err := p.Future().Get()
		assert.Empty(t, v)
		assert.Same(t, errBoom, err)
	})
}

func TestGet(t *testing.T) {
	t.Run("blocks until resolved", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[string](nil)
			got := make(chan result[string], 1)
			go func() {
				v, err := p.Future().Get()
				got <- result[string]{v: v, err: err}
			}()

			synctest.Wait() // the reader is parked in Get
			select {
			case r := <-got:
				t.Fatalf("Get returned %+v before the future was resolved", r)
			default:
			}
			assert.False(t, p.Future().Ready())

			require.True(t, p.Resolve("ok", nil))
			r := <-got
			assert.Equal(t, "ok", r.v)
			assert.NoError(t, r.err)
		})
	})

	t.Run("returns the same pair on every call", func(t *testing.T) {
		p := future.NewPromise[*int](nil)
		x := new(int)
		require.True(t, p.Resolve(x, errBoom))
		f := p.Future()
		for range 3 {
			v, err := f.Get()
			assert.Same(t, x, v)
			assert.Same(t, errBoom, err)
		}
		assert.True(t, f.Ready())
	})

	t.Run("delivers a value and an error together as given", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		require.True(t, p.Resolve(7, errBoom))
		v, err := p.Future().Get()
		assert.Equal(t, 7, v)
		assert.Same(t, errBoom, err)
	})

	t.Run("delivers a value with no error", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		require.True(t, p.Resolve(7, nil))
		v, err := p.Future().Get()
		assert.Equal(t, 7, v)
		assert.NoError(t, err)
	})

	t.Run("Fail delivers the zero value and the error", func(t *testing.T) {
		p := future.NewPromise[[]int](nil)
		require.True(t, p.Fail(errBoom))
		v, err := p.Future().Get()
		assert.Nil(t, v)
		assert.Same(t, errBoom, err)
	})

	t.Run("Ready becomes true once resolved", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		assert.False(t, p.Future().Ready())
		p.Resolve(1, nil)
		assert.True(t, p.Future().Ready())
	})
}

func TestGetWithinOnMockClock(t *testing.T) {
	const d = 5 * time.Second

	t.Run("times out exactly at d", func(t *testing.T) {
		clk, started := signalClock()
		p := future.NewPromise[int](clk)
		f := p.Future()
		t0 := clk.Now()

		got := make(chan result[int], 1)
		go func() {
			v, err := f.GetWithin(d)
			got <- result[int]{v: v, err: err, at: clk.Now()}
		}()

		assert.Equal(t, d, <-started, "the waiter times d on the future's clock")
		clk.Add(d - time.Nanosecond)
		select {
		case r := <-got:
			t.Fatalf("GetWithin returned %+v a nanosecond before d", r)
		default:
		}

		clk.Add(time.Nanosecond)
		r := <-got
		assert.Equal(t, future.ErrTimeout, r.err)
		assert.Zero(t, r.v)
		assert.Equal(t, t0.Add(d), r.at)
		assert.False(t, f.Ready(), "a timeout does not resolve the future")
	})

	t.Run("a timeout leaves the future resolvable", func(t *testing.T) {
		clk, started := signalClock()
		p := future.NewPromise[string](clk)
		f := p.Future()

		got := make(chan result[string], 1)
		go func() {
			v, err := f.GetWithin(d)
			got <- result[string]{v: v, err: err}
		}()
		<-started
		clk.Add(d)
		require.ErrorIs(t, (<-got).err, future.ErrTimeout)

		assert.False(t, f.Ready())
		assert.False(t, isClosed(f.Done()))
		require.True(t, p.Resolve("late", nil), "the timeout did not resolve the future")
		v, err := f.Get()
		assert.Equal(t, "late", v)
		assert.NoError(t, err)
		v, err = f.GetWithin(d)
		assert.Equal(t, "late", v)
		assert.NoError(t, err)
	})

	t.Run("a value arriving before d is returned and the timer stopped", func(t *testing.T) {
		clk, started := signalClock()
		p := future.NewPromise[string](clk)
		f := p.Future()
		t0 := clk.Now()

		got := make(chan result[string], 1)
		go func() {
			v, err := f.GetWithin(d)
			got <- result[string]{v: v, err: err, at: clk.Now()}
		}()
		<-started
		clk.Add(d - time.Nanosecond)
		require.True(t, p.Resolve("in time", errBoom))

		r := <-got
		assert.Equal(t, "in time", r.v)
		assert.Same(t, errBoom, r.err)
		assert.Equal(t, t0.Add(d-time.Nanosecond), r.at)
		// WaitForAllTimers moves the mock to its last pending timer, or
		// leaves it where it is if there is none.
		assert.Equal(t, t0.Add(d-time.Nanosecond), clk.WaitForAllTimers(), "GetWithin left its timer running")
	})

	t.Run("resolved at the instant of the timeout returns the value", func(t *testing.T) {
		// The waiter is held between starting its timer and selecting; the
		// test fires the timer and resolves the future at that same mock
		// instant, so both cases of GetWithin's select are ready and it
		// picks one at random. Either way the value must win. Enough rounds
		// take both cases (the chance of missing one is 2^-31).
		for range 32 {
			inTimer, release := make(chan struct{}), make(chan struct{})
			clk := &hookClock{Mock: clock.NewMock(), onTimer: func(time.Duration) {
				inTimer <- struct{}{}
				<-release
			}}
			p := future.NewPromise[int](clk)
			f := p.Future()

			got := make(chan result[int], 1)
			go func() {
				v, err := f.GetWithin(d)
				got <- result[int]{v: v, err: err}
			}()
			<-inTimer
			clk.Add(d) // the timer fires: its channel holds a tick
			require.True(t, p.Resolve(42, nil))
			close(release)

			r := <-got
			require.NoError(t, r.err)
			require.Equal(t, 42, r.v)
		}
	})

	t.Run("an already resolved future starts no timer", func(t *testing.T) {
		clk := &hookClock{Mock: clock.NewMock()}
		p := future.NewPromise[int](clk)
		require.True(t, p.Resolve(3, errBoom))
		f := p.Future()

		v, err := f.GetWithin(d)
		assert.Equal(t, 3, v)
		assert.Same(t, errBoom, err)
		allocs := testing.AllocsPerRun(100, func() { _, _ = f.GetWithin(d) })
		assert.Zero(t, allocs, "allocations per GetWithin on a resolved future")
		assert.Zero(t, clk.timers.Load(), "timers started")
	})
}

func TestGetWithinOnlyChecksForZeroOrNegative(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
		t.Run("pending future with d "+d.String(), func(t *testing.T) {
			clk := &hookClock{Mock: clock.NewMock()}
			p := future.NewPromise[int](clk)
			f := p.Future()

			v, err := f.GetWithin(d)
			assert.Equal(t, future.ErrTimeout, err)
			assert.Zero(t, v)
			assert.Zero(t, clk.timers.Load(), "timers started")
			assert.False(t, f.Ready())
		})
		t.Run("resolved future with d "+d.String(), func(t *testing.T) {
			clk := &hookClock{Mock: clock.NewMock()}
			p := future.NewPromise[int](clk)
			require.True(t, p.Resolve(9, nil))

			v, err := p.Future().GetWithin(d)
			assert.NoError(t, err)
			assert.Equal(t, 9, v)
			assert.Zero(t, clk.timers.Load(), "timers started")
		})
	}
}

func TestGetWithinInSynctestBubble(t *testing.T) {
	t.Run("times out exactly at d on the real clock, which is virtual here", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const d = 90 * time.Millisecond
			p := future.NewPromise[string](nil)
			f := p.Future()
			t0 := time.Now()

			got := make(chan result[string], 1)
			go func() {
				v, err := f.GetWithin(d)
				got <- result[string]{v: v, err: err, at: time.Now()}
			}()

			<-time.After(d - time.Nanosecond)
			synctest.Wait()
			select {
			case r := <-got:
				t.Fatalf("GetWithin returned %+v a nanosecond before d", r)
			default:
			}

			<-time.After(time.Nanosecond)
			r := <-got
			assert.Equal(t, future.ErrTimeout, r.err)
			assert.Empty(t, r.v)
			assert.Equal(t, d, r.at.Sub(t0))

			require.True(t, p.Resolve("late", nil), "the timeout did not resolve the future")
			v, err := f.Get()
			assert.Equal(t, "late", v)
			assert.NoError(t, err)
		})
	})

	t.Run("a value arriving before d is returned when it arrives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const d = time.Second
			p := future.NewPromise[int](nil)
			t0 := time.Now()
			go func() {
				<-time.After(d / 2)
				p.Resolve(5, nil)
			}()

			v, err := p.Future().GetWithin(d)
			assert.NoError(t, err)
			assert.Equal(t, 5, v)
			assert.Equal(t, d/2, time.Since(t0))
		})
	})
}

func TestGetContext(t *testing.T) {
	t.Run("an already cancelled context returns its error at once", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		f := p.Future()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()

		v, err := f.GetContext(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, v)
		assert.False(t, f.Ready(), "giving up does not resolve the future")

		require.True(t, p.Resolve(4, nil))
		v, err = f.Get()
		assert.Equal(t, 4, v)
		assert.NoError(t, err)
	})

	t.Run("a resolved future wins over an ended context", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		require.True(t, p.Resolve(4, errBoom))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()

		v, err := p.Future().GetContext(ctx)
		assert.Equal(t, 4, v)
		assert.Same(t, errBoom, err)
	})

	t.Run("a context cancelled while waiting returns its error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[int](nil)
			f := p.Future()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()

			got := make(chan result[int], 1)
			go func() {
				v, err := f.GetContext(ctx)
				got <- result[int]{v: v, err: err}
			}()
			synctest.Wait() // the reader is parked in GetContext
			select {
			case r := <-got:
				t.Fatalf("GetContext returned %+v before the context ended", r)
			default:
			}

			cancel()
			r := <-got
			assert.ErrorIs(t, r.err, context.Canceled)
			assert.Zero(t, r.v)
			assert.False(t, f.Ready())

			require.True(t, p.Resolve(8, nil))
			v, err := f.GetContext(t.Context())
			assert.Equal(t, 8, v)
			assert.NoError(t, err)
		})
	})

	t.Run("a context deadline passing while waiting returns DeadlineExceeded at the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[int](nil)
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			v, err := p.Future().GetContext(ctx)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.NotErrorIs(t, err, future.ErrTimeout)
			assert.Zero(t, v)
			assert.Equal(t, time.Minute, time.Since(t0))
		})
	})

	t.Run("a value arriving while waiting is returned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[int](nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()

			got := make(chan result[int], 1)
			go func() {
				v, err := p.Future().GetContext(ctx)
				got <- result[int]{v: v, err: err}
			}()
			synctest.Wait()
			require.True(t, p.Resolve(6, errBoom))
			r := <-got
			assert.Equal(t, 6, r.v)
			assert.Same(t, errBoom, r.err)
		})
	})

	t.Run("a context without Done waits like Get", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[int](nil)
			ctx := context.Background()
			require.Nil(t, ctx.Done())

			got := make(chan result[int], 1)
			go func() {
				v, err := p.Future().GetContext(ctx)
				got <- result[int]{v: v, err: err}
			}()
			synctest.Wait() // the reader is parked, not spinning
			select {
			case r := <-got:
				t.Fatalf("GetContext returned %+v before resolution", r)
			default:
			}

			require.True(t, p.Resolve(11, nil))
			r := <-got
			assert.Equal(t, 11, r.v)
			assert.NoError(t, r.err)
		})
	})
}

func TestDone(t *testing.T) {
	t.Run("repeated calls before resolution return the same open channel", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		f := p.Future()
		d1 := f.Done()
		require.True(t, plumb.OnResolve(p.Future(), func() {}))
		d2 := f.Done()
		assert.Equal(t, d1, d2)
		assert.False(t, isClosed(d1))
	})

	t.Run("the channel is closed by the time Resolve returns", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		f := p.Future()
		d := f.Done()
		require.True(t, p.Resolve(1, nil))
		assert.True(t, isClosed(d))
	})

	t.Run("after resolution it returns a closed channel", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		require.True(t, p.Fail(errBoom))
		f := p.Future()
		assert.True(t, isClosed(f.Done()))
		assert.True(t, isClosed(f.Done()))
	})

	t.Run("concurrent first calls agree on one channel", func(t *testing.T) {
		const callers = 32
		f := future.NewPromise[int](nil).Future()
		start := make(chan struct{})
		chans := make([]<-chan struct{}, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				<-start
				chans[i] = f.Done()
			})
		}
		close(start)
		wg.Wait()
		for i, ch := range chans {
			assert.Equal(t, chans[0], ch, "caller %d", i)
		}
	})

	t.Run("polling a pending future does not allocate", func(t *testing.T) {
		f := future.NewPromise[int](nil).Future()
		first := f.Done()
		same := 0
		allocs := testing.AllocsPerRun(10_000, func() {
			if f.Done() == first {
				same++
			}
		})
		assert.Zero(t, allocs, "allocations per Done call")
		assert.Equal(t, 10_001, same, "AllocsPerRun calls once more to warm up")
	})
}

func TestOnResolve(t *testing.T) {
	t.Run("callbacks run once, in registration order, on the resolving goroutine", func(t *testing.T) {
		const n = 10
		p := future.NewPromise[int](nil)
		f := p.Future()
		var order []int // written only by callbacks, read after Resolve returns
		var ran []uint64
		for i := range n {
			require.True(t, plumb.OnResolve(f, func() {
				order = append(order, i)
				ran = append(ran, goid())
			}))
		}

		type resolverReport struct {
			id    uint64
			order []int
			ran   []uint64
		}
		done := make(chan resolverReport)
		go func() {
			id := goid()
			p.Resolve(1, nil)
			// The callbacks have all run by now, on this goroutine.
			done <- resolverReport{id: id, order: order, ran: ran}
		}()
		rep := <-done

		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, rep.order)
		require.Len(t, rep.ran, n)
		for i, id := range rep.ran {
			assert.Equal(t, rep.id, id, "callback %d ran on goroutine %d, not the resolver %d", i, id, rep.id)
		}

		assert.False(t, p.Resolve(2, nil))
		assert.False(t, p.Fail(errBoom))
		assert.Equal(t, want, order, "no callback ran a second time")
	})

	t.Run("a callback sees the future resolved", func(t *testing.T) {
		p := future.NewPromise[string](nil)
		f := p.Future()
		var inside result[string]
		var ready, doneClosed bool
		require.True(t, plumb.OnResolve(f, func() {
			ready = f.Ready()
			doneClosed = isClosed(f.Done())
			inside.v, inside.err = f.Get()
		}))
		require.True(t, p.Resolve("x", errBoom))
		assert.True(t, ready)
		assert.True(t, doneClosed)
		assert.Equal(t, "x", inside.v)
		assert.Same(t, errBoom, inside.err)
	})

	t.Run("after resolution it reports false and does not call", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		require.True(t, p.Resolve(1, nil))
		called := false
		assert.False(t, plumb.OnResolve(p.Future(), func() { called = true }))
		assert.False(t, called)
	})

	t.Run("callbacks registered from many goroutines each run exactly once", func(t *testing.T) {
		const n = 64
		p := future.NewPromise[int](nil)
		f := p.Future()
		var calls [n]atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { assert.True(t, plumb.OnResolve(f, func() { calls[i].Add(1) })) })
		}
		wg.Wait()
		require.True(t, p.Resolve(1, nil))
		for i := range calls {
			assert.Equal(t, int32(1), calls[i].Load(), "callback %d", i)
		}
	})
}

func TestErrTimeout(t *testing.T) {
	var timeout interface{ Timeout() bool }
	require.ErrorAs(t, future.ErrTimeout, &timeout)
	assert.True(t, timeout.Timeout())
	assert.NotErrorIs(t, future.ErrTimeout, context.DeadlineExceeded)
	assert.NotErrorIs(t, future.ErrTimeout, context.Canceled)
	assert.Contains(t, future.ErrTimeout.Error(), "timed out")

	p := future.NewPromise[int](nil)
	_, err := p.Future().GetWithin(0)
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", err), future.ErrTimeout)
}

func TestZeroFutureIsNeverReady(t *testing.T) {
	t.Run("checks report pending", func(t *testing.T) {
		var f future.Future[int]
		assert.False(t, f.Ready())
		assert.False(t, isClosed(f.Done()))
		_, err := f.GetWithin(0)
		assert.Equal(t, future.ErrTimeout, err)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = f.GetContext(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.False(t, f.Ready())
	})

	t.Run("a timed wait times out on the real clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var f future.Future[int]
			t0 := time.Now()
			v, err := f.GetWithin(time.Hour)
			assert.Equal(t, future.ErrTimeout, err)
			assert.Zero(t, v)
			assert.Equal(t, time.Hour, time.Since(t0))
			assert.False(t, f.Ready())
		})
	})
}

// TestManyWaitersOfEachKind is meant for -race: waiters of every kind
// start together with one resolver, and each must see the resolver's pair.
func TestManyWaitersOfEachKind(t *testing.T) {
	const rounds, each, kinds = 20, 8, 5
	type payload struct{ n int }
	for round := range rounds {
		p := future.NewPromise[*payload](nil)
		f := p.Future()
		want := &payload{n: round}
		wantErr := fmt.Errorf("round %d", round)
		ctx, cancel := context.WithCancel(t.Context())

		start := make(chan struct{})
		got := make(chan result[*payload], each*kinds)
		var wg sync.WaitGroup
		for range each {
			wg.Go(func() {
				<-start
				v, err := f.Get()
				got <- result[*payload]{v: v, err: err}
			})
			wg.Go(func() {
				<-start
				v, err := f.GetWithin(time.Hour)
				got <- result[*payload]{v: v, err: err}
			})
			wg.Go(func() {
				<-start
				v, err := f.GetContext(ctx)
				got <- result[*payload]{v: v, err: err}
			})
			wg.Go(func() {
				<-start
				<-f.Done()
				if !f.Ready() {
					t.Error("Done closed before Ready")
				}
				v, err := f.GetWithin(0)
				got <- result[*payload]{v: v, err: err}
			})
			wg.Go(func() {
				<-start
				report := func() {
					v, err := f.GetWithin(0)
					got <- result[*payload]{v: v, err: err}
				}
				if !plumb.OnResolve(f, report) {
					report()
				}
			})
		}
		wg.Go(func() {
			<-start
			if !p.Resolve(want, wantErr) {
				t.Error("the only resolver lost")
			}
		})
		close(start)
		wg.Wait()
		cancel()
		close(got)

		count := 0
		for r := range got {
			count++
			assert.Same(t, want, r.v)
			assert.Same(t, wantErr, r.err)
		}
		assert.Equal(t, each*kinds, count, "waiters that reported")
	}
}

// TestDoneWhileResolving is meant for -race: pollers call Done, which
// walks the waiter list to find its channel, while a resolver takes that
// list over and wakes it. The channel is registered first and callbacks
// after it, so every Done call walks past all the callbacks.
func TestDoneWhileResolving(t *testing.T) {
	const rounds, callbacks, pollers = 20, 32, 4
	for range rounds {
		p := future.NewPromise[int](nil)
		f := p.Future()
		first := f.Done()
		var calls atomic.Int32
		for range callbacks {
			require.True(t, plumb.OnResolve(f, func() { calls.Add(1) }))
		}

		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range pollers {
			wg.Go(func() {
				<-start
				for {
					d := f.Done()
					if isClosed(d) {
						return
					}
					if d != first {
						t.Errorf("poller %d got a second channel while pending", i)
						return
					}
					runtime.Gosched() // let the resolver in
				}
			})
		}
		wg.Go(func() {
			<-start
			p.Resolve(1, nil)
		})
		close(start)
		wg.Wait()

		assert.True(t, isClosed(first))
		assert.Equal(t, int32(callbacks), calls.Load())
	}
}
