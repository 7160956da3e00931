package future_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
)

// settled waits, boundedly, for package ready's count to return to zero:
// the goroutines it counted may still be on their way to run.
func settled(t *testing.T) {
	t.Helper()
	for i := 0; ready.N() != 0 && i < 100_000; i++ {
		runtime.Gosched()
	}
	require.Zero(t, ready.N(), "goroutines counted as ready and never done")
}

// A goroutine blocked in Get, GetWithin or GetContext counts as ready
// once the result wakes it (runners with a backlog yield to it), and not
// after it has run; one whose wait ends otherwise (its time, its context)
// leaves nothing counted, whether the result comes after or never.
func TestWaitsLeaveNothingCountedAsReady(t *testing.T) {
	t.Run("woken by the result", func(t *testing.T) {
		clk, started := signalClock()
		for _, get := range []func(f *future.Future[int]) (int, error){
			func(f *future.Future[int]) (int, error) { return f.Get() },
			func(f *future.Future[int]) (int, error) { return f.GetWithin(time.Hour) },
			func(f *future.Future[int]) (int, error) { return f.GetContext(t.Context()) },
		} {
			const waiters = 8
			p := future.NewPromise[int](clk)
			got := make(chan int, waiters)
			for range waiters {
				go func() { v, _ := get(p.Future()); got <- v }()
			}
			for len(started) > 0 { // GetWithin's timers
				<-started
			}
			p.Resolve(7, nil)
			for range waiters {
				require.Equal(t, 7, <-got)
			}
			for len(started) > 0 {
				<-started
			}
			settled(t)
		}
	})
	t.Run("timed out, then resolved", func(t *testing.T) {
		clk, started := signalClock()
		p := future.NewPromise[int](clk)
		errs := make(chan error, 1)
		go func() { _, err := p.Future().GetWithin(time.Second); errs <- err }()
		<-started
		clk.Add(time.Second)
		require.ErrorIs(t, <-errs, future.ErrTimeout)
		p.Resolve(1, nil)
		settled(t)
	})
	t.Run("on the real clock, woken by the result or timed out", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := future.NewPromise[int](nil)
			errs := make(chan error, 4)
			for _, d := range []time.Duration{time.Second, time.Second, time.Hour, time.Hour} {
				go func() { _, err := p.Future().GetWithin(d); errs <- err }()
			}
			<-time.After(time.Second) // on the bubble's clock
			for range 2 {
				require.ErrorIs(t, <-errs, future.ErrTimeout)
			}
			p.Resolve(1, nil)
			for range 2 {
				require.NoError(t, <-errs)
			}
			require.Zero(t, ready.N())
		})
	})
	t.Run("context ended, then resolved", func(t *testing.T) {
		p := future.NewPromise[int](nil)
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		go func() { _, err := p.Future().GetContext(ctx); errs <- err }()
		cancel()
		require.ErrorIs(t, <-errs, context.Canceled)
		p.Resolve(1, nil)
		settled(t)
	})
}

// soonThenNot is a source that says the result is soon once, then not:
// the actor's runner stepped aside while its caller spun.
type soonThenNot struct{ asked atomic.Int32 }

func (s *soonThenNot) Clock() clock.Clock { return nil }
func (s *soonThenNot) CheckWait() error   { return nil }
func (s *soonThenNot) ResultSoon() bool   { return s.asked.Add(1) == 1 }

// A waiter that began to spin stops at the first yield after its source
// says the result is no longer soon, and parks: spinning on would keep
// it at the back of the run queue, where a result that came would not
// wake it.
func TestAWaiterStopsSpinningOnceTheResultIsNoLongerSoon(t *testing.T) {
	// On a machine a slow yield has marked busy (a loaded test machine
	// may) the waiter would not spin at all.
	defer ready.HoldQuiet()()
	synctest.Test(t, func(t *testing.T) {
		p := future.NewPromise[int](nil)
		src := &soonThenNot{}
		var cell any = src // the runtime's reference the future points at
		plumb.SetSourceAt(p, &cell)
		got := make(chan int, 1)
		go func() {
			v, _ := p.Future().Get()
			got <- v
		}()
		synctest.Wait() // the waiter has parked
		require.EqualValues(t, 2, src.asked.Load(), "the waiter asked its source %d times: it spun on after being told the result was not soon", src.asked.Load())
		p.Resolve(7, nil)
		require.Equal(t, 7, <-got)
	})
}

// soonAlways is a source that always says the result is soon, counting
// how often it was asked: once before a spin, and once after each of its
// yields.
type soonAlways struct{ asked atomic.Int32 }

func (s *soonAlways) Clock() clock.Clock { return nil }
func (s *soonAlways) CheckWait() error   { return nil }
func (s *soonAlways) ResultSoon() bool   { s.asked.Add(1); return true }

// waitAsking has a goroutine wait for a fresh future whose source always
// says the result is soon (with GetWithin if timed, else Get), and
// returns how often the waiter asked its source before it parked.
func waitAsking(t *testing.T, timed bool) int32 {
	t.Helper()
	var asked int32
	synctest.Test(t, func(t *testing.T) {
		p := future.NewPromise[int](nil)
		src := &soonAlways{}
		var cell any = src
		plumb.SetSourceAt(p, &cell)
		got := make(chan int, 1)
		go func() {
			var v int
			if timed {
				v, _ = p.Future().GetWithin(time.Hour)
			} else {
				v, _ = p.Future().Get()
			}
			got <- v
		}()
		synctest.Wait() // the waiter has parked
		asked = src.asked.Load()
		p.Resolve(7, nil)
		require.Equal(t, 7, <-got)
	})
	return asked
}

// Beside code that never yields (ready.Busy), a waiter parks at once,
// however soon its source says the result is: a spinning waiter waits in
// the run queue every processor takes from, behind the CPU-bound
// goroutines' time slices, while a parked one is woken onto the
// resolver's processor.
func TestOnABusyMachineAWaiterParksWithoutSpinning(t *testing.T) {
	for _, timed := range []bool{false, true} {
		ready.SetBusy(true)
		asked := waitAsking(t, timed)
		ready.SetBusy(false)
		require.EqualValues(t, 1, asked, "busy, timed %v: the waiter spun (asked its source %d times)", timed, asked)

		release := ready.HoldQuiet()
		asked = waitAsking(t, timed)
		release()
		require.Greater(t, asked, int32(1), "quiet, timed %v: the waiter did not spin", timed)
	}
}

// A spin's first yield is timed: if it comes back slow, the waiter
// marks the machine busy and parks at once, without asking its source
// again.
func TestASlowFirstYieldMarksTheMachineBusyAndTheWaiterParks(t *testing.T) {
	ready.SetBusy(false)
	defer ready.SetBusy(false)
	var c atomic.Int64
	c.Store(-1 << 62) // below the counter's reading at initialisation: ns
	defer ready.SetCounter(func() int64 { return c.Add(ready.SlowTicks + 1) })()
	asked := waitAsking(t, true)
	require.EqualValues(t, 1, asked, "the waiter asked its source %d times: it spun on after a slow yield", asked)
	require.True(t, ready.Busy(), "a slow yield did not mark the machine busy")
}

// Timed waits on the real clock race their timers against resolutions,
// and later waits take over the nodes of waits that timed out: every
// wait ends with the result or a timeout, a wait that began after the
// resolution has the result, and nothing stays counted as ready.
func TestTimedWaitsRacingTheirResolutionsLoseNothing(t *testing.T) {
	const futures, waiters = 300, 6
	for range futures {
		p := future.NewPromise[int](nil)
		f := p.Future()
		done := make(chan error, waiters)
		for i := range waiters {
			go func() {
				var err error
				for range 3 { // each a fresh wait, which may take over a timed-out one's node
					var v int
					v, err = f.GetWithin(time.Duration(i*7) * time.Microsecond)
					if err == nil && v != 5 {
						err = fmt.Errorf("GetWithin returned %d, want 5", v)
					}
				}
				done <- err
			}()
		}
		p.Resolve(5, nil)
		for range waiters {
			if err := <-done; err != nil && !errors.Is(err, future.ErrTimeout) {
				t.Fatal(err)
			}
		}
		v, err := f.GetWithin(time.Hour) // resolved: at once
		require.NoError(t, err)
		require.Equal(t, 5, v)
	}
	settled(t)
}

// A waiter on a future without a source (a plain Promise's) spins on a
// busy machine as on a quiet one: only the sources crisp gives its
// calls make waiters park at once.
func TestOnABusyMachineAWaiterWithoutASourceStillSpins(t *testing.T) {
	var reads atomic.Int64
	defer ready.SetClock(func() int64 { return 1 })()              // the busy rest never ends
	defer ready.SetCounter(func() int64 { return reads.Add(1) })() // no yield is slow
	ready.SetBusy(true)
	defer ready.SetBusy(false)
	reads.Store(0)
	synctest.Test(t, func(t *testing.T) {
		p := future.NewPromise[int](nil)
		got := make(chan int, 1)
		go func() {
			v, _ := p.Future().GetWithin(time.Hour)
			got <- v
		}()
		synctest.Wait() // the waiter has parked
		require.EqualValues(t, 2, reads.Load(), "the waiter did not time its spin's first yield: it did not spin")
		p.Resolve(7, nil)
		require.Equal(t, 7, <-got)
	})
}
