package vclock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/vclock"
)

func TestTime(t *testing.T) {
	t.Run("now is the start until a driver moves it", func(t *testing.T) {
		vc := vclock.New(t0)
		vc.AfterFunc(time.Hour, func() {})
		vc.Timer(time.Minute)
		assert.Equal(t, t0, vc.Now())
	})

	t.Run("since and until measure virtual time", func(t *testing.T) {
		vc := vclock.New(t0)
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(90*time.Minute)))
		assert.Equal(t, 90*time.Minute, vc.Since(t0))
		assert.Equal(t, 30*time.Minute, vc.Until(at(2*time.Hour)))
	})

	t.Run("a monotonic reading in the start is dropped", func(t *testing.T) {
		start := time.Now()
		vc := vclock.New(start)
		assert.True(t, vc.Now() == start.Round(0), "Now is %v", vc.Now())
	})
}

func TestTimers(t *testing.T) {
	t.Run("a timer's channel receives its instant when the clock reaches it", func(t *testing.T) {
		vc := vclock.New(t0)
		tm := vc.Timer(10 * time.Minute)
		after := vc.After(10 * time.Minute)
		assert.Empty(t, tm.C)
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		require.True(t, fired)
		assert.Equal(t, at(10*time.Minute), vc.Now())
		assert.Equal(t, at(10*time.Minute), <-tm.C)
		assert.Equal(t, at(10*time.Minute), <-after)
	})

	t.Run("an AfterFunc function runs on the driver at its instant", func(t *testing.T) {
		vc := vclock.New(t0)
		var ranAt time.Time // no lock: the race detector checks it is the driver's goroutine
		vc.AfterFunc(3*time.Hour, func() { ranAt = vc.Now() })
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, at(3*time.Hour), ranAt)
		assert.Equal(t, at(3*time.Hour), vc.Now())
	})

	t.Run("timers due at one instant fire in the order they were set", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []string
		mins := []int{5, 3, 5, 1, 3, 5, 1, 5}
		for i, m := range mins {
			vc.AfterFunc(time.Duration(m)*time.Minute, func() { got = append(got, fmt.Sprintf("%dm#%d", m, i)) })
		}
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, []string{"1m#3", "1m#6", "3m#1", "3m#4", "5m#0", "5m#2", "5m#5", "5m#7"}, got)
	})

	t.Run("At calls a function at its instant, in set order with AfterFunc", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []string
		rec := func(s string) func() { return func() { got = append(got, s+" "+vc.Since(t0).String()) } }
		vc.At(at(time.Hour), rec("at"))
		vc.AfterFunc(time.Hour, rec("afterfunc"))
		vc.At(at(time.Hour), rec("at again"))
		stop := vc.At(at(30*time.Minute), rec("stopped"))
		vc.At(t0.Add(-time.Hour), rec("past"))
		assert.True(t, stop())
		assert.False(t, stop(), "stopped already")
		late := vc.At(at(2*time.Hour), rec("late"))
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, []string{"past 0s", "at 1h0m0s", "afterfunc 1h0m0s", "at again 1h0m0s", "late 2h0m0s"}, got)
		assert.False(t, late(), "called already")
	})

	t.Run("a context deadline takes its place in set order among functions", func(t *testing.T) {
		vc := vclock.New(t0)
		var (
			ctx           context.Context
			before, after error
		)
		vc.AfterFunc(time.Hour, func() { before = ctx.Err() })
		ctx, cancel := vc.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		vc.AfterFunc(time.Hour, func() { after = ctx.Err() })
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.NoError(t, before)
		assert.ErrorIs(t, after, context.DeadlineExceeded)
	})

	t.Run("timers of zero or negative duration are due at once", func(t *testing.T) {
		vc := vclock.New(t0)
		assert.Equal(t, t0, <-vc.Timer(0).C, "a timer's channel receives at the call")
		assert.Equal(t, t0, <-vc.After(-time.Second))
		ran := false
		vc.AfterFunc(-time.Hour, func() { ran = true })
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		assert.True(t, fired && ran, "a function runs at the next step")
		assert.Equal(t, t0, vc.Now(), "the clock never goes back")
	})

	t.Run("a timer set by a firing one for the same instant fires in the same step", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []string
		vc.AfterFunc(5*time.Minute, func() {
			got = append(got, "first")
			vc.AfterFunc(0, func() { got = append(got, "second") })
		})
		vc.AfterFunc(6*time.Minute, func() { got = append(got, "later") })
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		require.True(t, fired)
		assert.Equal(t, []string{"first", "second"}, got)
		assert.Equal(t, at(5*time.Minute), vc.Now())
	})
}

func TestStopAndReset(t *testing.T) {
	t.Run("stop before the instant reports true and nothing fires", func(t *testing.T) {
		vc := vclock.New(t0)
		ran := false
		f := vc.AfterFunc(time.Hour, func() { ran = true })
		tm := vc.Timer(time.Hour)
		assert.True(t, f.Stop())
		assert.True(t, tm.Stop())
		assert.False(t, f.Stop(), "a second stop")
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		assert.False(t, fired)
		assert.False(t, ran)
		assert.Empty(t, tm.C)
		assert.Equal(t, t0, vc.Now())
	})

	t.Run("stop after firing reports false", func(t *testing.T) {
		vc := vclock.New(t0)
		f := vc.AfterFunc(time.Hour, func() {})
		tm := vc.Timer(time.Hour)
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.False(t, f.Stop())
		assert.False(t, tm.Stop())
		assert.Len(t, tm.C, 1, "the fired value stays in the channel")
	})

	t.Run("reset of a pending timer reports true and moves it earlier or later", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []time.Time
		early := vc.AfterFunc(time.Hour, func() { got = append(got, vc.Now()) })
		late := vc.AfterFunc(time.Hour, func() { got = append(got, vc.Now()) })
		assert.True(t, early.Reset(10*time.Minute))
		assert.True(t, late.Reset(2*time.Hour))
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, []time.Time{at(10 * time.Minute), at(2 * time.Hour)}, got)
	})

	t.Run("reset after firing or stopping reports false and arms it again", func(t *testing.T) {
		vc := vclock.New(t0)
		n := 0
		f := vc.AfterFunc(time.Hour, func() { n++ })
		tm := vc.Timer(time.Hour)
		require.NoError(t, vc.Run(bounded(t), noIdle))
		<-tm.C
		assert.False(t, f.Reset(time.Hour))
		assert.False(t, tm.Reset(time.Hour))
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, 2, n)
		assert.Equal(t, at(2*time.Hour), <-tm.C)

		assert.False(t, f.Reset(time.Hour), "fired again")
		assert.True(t, f.Stop(), "pending")
		assert.False(t, f.Reset(30*time.Minute), "stopped")
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, 3, n)
		assert.Equal(t, at(150*time.Minute), vc.Now())
	})

	t.Run("a reset counts from the instant of the reset", func(t *testing.T) {
		vc := vclock.New(t0)
		var firedAt time.Time
		f := vc.AfterFunc(10*time.Minute, func() { firedAt = vc.Now() })
		vc.AfterFunc(4*time.Minute, func() { f.Reset(10 * time.Minute) }) // the same duration, later
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, at(14*time.Minute), firedAt)
	})

	t.Run("a timer stopped by an earlier one at the same instant does not fire", func(t *testing.T) {
		vc := vclock.New(t0)
		var second *clock.Timer
		stopped, ran := false, false
		vc.AfterFunc(time.Hour, func() { stopped = second.Stop() })
		second = vc.AfterFunc(time.Hour, func() { ran = true })
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.True(t, stopped)
		assert.False(t, ran)
	})

	t.Run("a timer reset by an earlier one at the same instant fires at its new instant", func(t *testing.T) {
		vc := vclock.New(t0)
		var second *clock.Timer
		var firedAt time.Time
		vc.AfterFunc(time.Hour, func() { second.Reset(time.Minute) })
		second = vc.AfterFunc(time.Hour, func() { firedAt = vc.Now() })
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, at(61*time.Minute), firedAt)
	})

	t.Run("stops from another goroutine while the driver runs keep their word", func(t *testing.T) {
		vc := vclock.New(t0)
		const n = 200
		var (
			mu     sync.Mutex
			ran    [n]int
			timers [n]*clock.Timer
		)
		for i := range n {
			timers[i] = vc.AfterFunc(time.Duration(i+1)*time.Minute, func() {
				mu.Lock()
				ran[i]++
				mu.Unlock()
			})
		}
		var stoppedOK [n]bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := n - 1; i >= 0; i -= 2 {
				stoppedOK[i] = timers[i].Stop()
				if i%4 == 1 && stoppedOK[i] {
					timers[i].Reset(time.Duration(n+i) * time.Minute) // fires again, later
				}
			}
		}()
		require.NoError(t, vc.Run(bounded(t), noIdle))
		<-done
		require.NoError(t, vc.Run(bounded(t), noIdle)) // the timers reset after the first run ended
		for i := range n {
			switch {
			case i%2 == 0 || !stoppedOK[i]: // never stopped, or stopped too late
				assert.Equal(t, 1, ran[i], "timer %d", i)
			case i%4 == 1:
				assert.Equal(t, 1, ran[i], "timer %d, stopped then reset", i)
			default:
				assert.Zero(t, ran[i], "timer %d, stopped", i)
			}
		}
	})
}

func TestTickers(t *testing.T) {
	// drain is an idle function that takes the tick waiting in ch, if any:
	// the driver calls it before every firing and once after the last.
	drain := func(ch <-chan time.Time, got *[]time.Time) func(context.Context) error {
		return func(context.Context) error {
			select {
			case v := <-ch:
				*got = append(*got, v)
			default:
			}
			return nil
		}
	}

	t.Run("a ticker ticks every period", func(t *testing.T) {
		vc := vclock.New(t0)
		tk := vc.Ticker(15 * time.Minute)
		defer tk.Stop()
		var got []time.Time
		require.NoError(t, vc.RunUntil(bounded(t), drain(tk.C, &got), at(time.Hour)))
		assert.Equal(t, []time.Time{at(15 * time.Minute), at(30 * time.Minute), at(45 * time.Minute), at(time.Hour)}, got)
	})

	t.Run("a tick nobody takes makes the next ones drop", func(t *testing.T) {
		vc := vclock.New(t0)
		tk := vc.Ticker(15 * time.Minute)
		defer tk.Stop()
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(time.Hour)))
		assert.Equal(t, at(15*time.Minute), <-tk.C)
		assert.Empty(t, tk.C)
	})

	t.Run("stop ends the ticks and reset starts them again with a new period", func(t *testing.T) {
		vc := vclock.New(t0)
		tk := vc.Ticker(15 * time.Minute)
		var got []time.Time
		require.NoError(t, vc.RunUntil(bounded(t), drain(tk.C, &got), at(20*time.Minute)))
		tk.Stop()
		require.NoError(t, vc.RunUntil(bounded(t), drain(tk.C, &got), at(time.Hour)))
		_, pending := vc.Next()
		assert.False(t, pending)
		tk.Reset(time.Hour)
		require.NoError(t, vc.RunUntil(bounded(t), drain(tk.C, &got), at(3*time.Hour)))
		tk.Stop()
		assert.Equal(t, []time.Time{at(15 * time.Minute), at(2 * time.Hour), at(3 * time.Hour)}, got)
	})

	t.Run("a ticker reset to a non-positive period ticks once and stops", func(t *testing.T) {
		vc := vclock.New(t0)
		tk := vc.Ticker(time.Hour)
		tk.Reset(0) // the real ticker panics; clock.Mock's accepts it
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, t0, <-tk.C)
		assert.Equal(t, t0, vc.Now())
	})

	t.Run("a non-positive period panics as in the time package", func(t *testing.T) {
		vc := vclock.New(t0)
		assert.PanicsWithValue(t, "vclock: non-positive interval for Ticker", func() { vc.Ticker(0) })
		assert.Nil(t, vc.Tick(0))
	})

	t.Run("tick's channel ticks for as long as the clock runs", func(t *testing.T) {
		vc := vclock.New(t0)
		ch := vc.Tick(10 * time.Minute)
		var got []time.Time
		require.NoError(t, vc.RunUntil(bounded(t), drain(ch, &got), at(30*time.Minute)))
		assert.Equal(t, []time.Time{at(10 * time.Minute), at(20 * time.Minute), at(30 * time.Minute)}, got)
		next, ok := vc.Next()
		assert.True(t, ok)
		assert.Equal(t, at(40*time.Minute), next)
	})
}

func TestSleep(t *testing.T) {
	t.Run("sleep returns when the clock reaches the wake-up", func(t *testing.T) {
		vc := vclock.New(t0)
		woke := make(chan time.Time)
		go func() {
			vc.Sleep(2 * time.Hour)
			woke <- vc.Now()
		}()
		assert.Equal(t, at(2*time.Hour), waitPending(t, vc))
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		require.True(t, fired)
		assert.Equal(t, at(2*time.Hour), <-woke)
	})

	t.Run("sleep of zero returns at once", func(t *testing.T) {
		vc := vclock.New(t0)
		vc.Sleep(0)
		vc.Sleep(-time.Hour)
		_, pending := vc.Next()
		assert.False(t, pending)
	})
}

func TestContexts(t *testing.T) {
	t.Run("deadline reports the virtual instant", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := vc.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.Equal(t, at(30*time.Minute), dl)
	})

	t.Run("it ends with DeadlineExceeded when the clock reaches the deadline and not before", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := vc.WithDeadline(context.Background(), at(30*time.Minute))
		defer cancel()
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(30*time.Minute-time.Nanosecond)))
		assert.NoError(t, ctx.Err())
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		require.True(t, fired)
		assert.Equal(t, at(30*time.Minute), vc.Now())
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, context.Cause(ctx), context.DeadlineExceeded)
		<-ctx.Done()
	})

	t.Run("cancel ends it with Canceled and leaves no timer", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := vc.WithTimeout(context.Background(), time.Hour)
		cancel()
		cancel()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		_, pending := vc.Next()
		assert.False(t, pending)
	})

	t.Run("a deadline already reached ends it at once", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := vc.WithDeadline(context.Background(), t0)
		defer cancel()
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})

	t.Run("it ends when its parent ends, with the parent's cause", func(t *testing.T) {
		vc := vclock.New(t0)
		parent, cancelParent := context.WithCancelCause(context.Background())
		ctx, cancel := vc.WithTimeout(parent, time.Hour)
		defer cancel()
		boom := errors.New("boom")
		cancelParent(boom)
		<-ctx.Done() // told by a goroutine of context.AfterFunc
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		assert.Equal(t, boom, context.Cause(ctx))
		_, pending := vc.Next()
		assert.False(t, pending)
	})

	t.Run("children end with it, on the goroutine that ends it", func(t *testing.T) {
		vc := vclock.New(t0)
		parent, cancelParent := vc.WithTimeout(context.Background(), time.Hour)
		defer cancelParent()
		later, cancelLater := vc.WithTimeout(parent, 2*time.Hour) // the parent's deadline wins
		defer cancelLater()
		std, cancelStd := context.WithCancel(parent)
		defer cancelStd()
		dl, _ := later.Deadline()
		assert.Equal(t, at(time.Hour), dl)

		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.ErrorIs(t, parent.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, later.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, std.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, context.Cause(std), context.DeadlineExceeded)

		p2, cancelP2 := vc.WithTimeout(context.Background(), 2*time.Hour)
		child, cancelChild := vc.WithTimeout(p2, time.Hour)
		defer cancelChild()
		cancelP2()
		assert.ErrorIs(t, child.Err(), context.Canceled)
		_, pending := vc.Next()
		assert.False(t, pending)
	})

	t.Run("context.AfterFunc runs when the deadline fires", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := vc.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		ran := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { close(ran) })
		require.NoError(t, vc.Run(bounded(t), noIdle))
		<-ran
		assert.False(t, stop())
	})
}

func TestDriving(t *testing.T) {
	t.Run("a step with no timer pending reports false and leaves the clock", func(t *testing.T) {
		vc := vclock.New(t0)
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		assert.False(t, fired)
		assert.Equal(t, t0, vc.Now())
		_, pending := vc.Next()
		assert.False(t, pending)
	})

	t.Run("a step fires every timer due at the next instant and no more", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []string
		vc.AfterFunc(10*time.Minute, func() { got = append(got, "c") })
		vc.AfterFunc(5*time.Minute, func() { got = append(got, "a") })
		vc.AfterFunc(5*time.Minute, func() { got = append(got, "b") })
		fired, err := vc.Step(bounded(t), noIdle)
		require.NoError(t, err)
		assert.True(t, fired)
		assert.Equal(t, []string{"a", "b"}, got)
		assert.Equal(t, at(5*time.Minute), vc.Now())
		next, _ := vc.Next()
		assert.Equal(t, at(10*time.Minute), next)
	})

	t.Run("run until fires timers up to and at the end, then moves the clock there", func(t *testing.T) {
		vc := vclock.New(t0)
		var got []time.Duration
		for _, h := range []time.Duration{3, 1, 2} {
			vc.AfterFunc(h*time.Hour, func() { got = append(got, vc.Since(t0)) })
		}
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(150*time.Minute)))
		assert.Equal(t, []time.Duration{time.Hour, 2 * time.Hour}, got)
		assert.Equal(t, at(150*time.Minute), vc.Now())
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(3*time.Hour)))
		assert.Equal(t, []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}, got)
		assert.Equal(t, at(3*time.Hour), vc.Now())
	})

	t.Run("run until an instant already passed leaves the clock", func(t *testing.T) {
		vc := vclock.New(t0)
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(2*time.Hour)))
		require.NoError(t, vc.RunUntil(bounded(t), noIdle, at(time.Hour)))
		assert.Equal(t, at(2*time.Hour), vc.Now())
	})

	t.Run("run goes on until no timer is pending", func(t *testing.T) {
		vc := vclock.New(t0)
		n := 0
		var again func()
		again = func() {
			if n++; n < 10 {
				vc.AfterFunc(7*time.Minute, again)
			}
		}
		vc.AfterFunc(7*time.Minute, again)
		require.NoError(t, vc.Run(bounded(t), noIdle))
		assert.Equal(t, 10, n)
		assert.Equal(t, at(70*time.Minute), vc.Now())
	})

	t.Run("run ends when its context does", func(t *testing.T) {
		vc := vclock.New(t0)
		ctx, cancel := context.WithCancel(bounded(t))
		defer cancel()
		tk := vc.Ticker(time.Minute)
		defer tk.Stop()
		vc.AfterFunc(3*time.Minute, cancel)
		err := vc.Run(ctx, noIdle)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, at(3*time.Minute), vc.Now())
	})

	t.Run("run returns the idle function's error", func(t *testing.T) {
		vc := vclock.New(t0)
		ran := false
		vc.AfterFunc(time.Minute, func() { ran = true })
		boom := errors.New("boom")
		err := vc.Run(bounded(t), func(context.Context) error { return boom })
		assert.Equal(t, boom, err)
		assert.False(t, ran)
		assert.Equal(t, t0, vc.Now())
	})

	t.Run("the idle function is waited for before every firing", func(t *testing.T) {
		vc := vclock.New(t0)
		var log []string
		for i := range 3 {
			vc.AfterFunc(time.Hour, func() { log = append(log, fmt.Sprint("fire ", i)) })
		}
		idle := func(context.Context) error { log = append(log, "idle"); return nil }
		require.NoError(t, vc.Run(bounded(t), idle))
		assert.Equal(t, []string{"idle", "fire 0", "idle", "fire 1", "idle", "fire 2", "idle"}, log)
	})

	t.Run("driving from a firing timer panics", func(t *testing.T) {
		vc := vclock.New(t0)
		vc.AfterFunc(time.Minute, func() { vc.Step(context.Background(), noIdle) })
		assert.PanicsWithValue(t, "vclock: Run, RunUntil or Step called while another is driving the clock", func() {
			vc.Run(bounded(t), noIdle)
		})
	})
}
