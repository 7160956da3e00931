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
	"github.com/crisprt/crisp/future"
)

// Inside a synctest bubble the real clock is virtual: these tests run
// the system on its default clock and still get exact times.

func TestInABubbleGetWithinTimesOutExactlyAndALaterGetSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		a := crisp.Spawn(sys, &state{})
		release := make(chan struct{})
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		f := crisp.Call(a, func(*crisp.Proc, *state) (string, error) {
			<-release
			return "slow", nil
		})
		start := time.Now()
		_, err := f.GetWithin(time.Second)
		assert.ErrorIs(t, err, future.ErrTimeout)
		assert.Equal(t, time.Second, time.Since(start))
		assert.False(t, f.Ready(), "a timed-out get leaves the future alone")

		close(release)
		released = true
		v, err := f.Get()
		require.NoError(t, err)
		assert.Equal(t, "slow", v)
	})
}

func TestInABubbleTheCallerLearnsOfAMissAtTheDeadline(t *testing.T) {
	for name, opts := range map[string][]crisp.Option{
		"default": nil,
		// Precision spins on the real clock; in a bubble the clock stands
		// still, and the watchdog must notice and stay exact.
		"with precision": {crisp.WithPrecision(time.Millisecond)},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys := crisp.NewSystem(append(opts, crisp.WithLogger(quiet))...)
				defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
				a := crisp.Spawn(sys, &state{})
				release := make(chan struct{})
				defer close(release)
				crisp.Tell(a, func(*crisp.Proc, *state) { <-release }) // the actor is busy for a long time
				synctest.Wait()
				start := time.Now()
				f := crisp.Call(a, record("late"), crisp.Within(250*time.Millisecond))
				_, err := f.Get()
				var miss *deadline.MissedError
				require.ErrorAs(t, err, &miss)
				assert.Equal(t, 250*time.Millisecond, time.Since(start), "told at the deadline, not when the actor frees up")
				assert.Equal(t, time.Duration(0), miss.Lateness())
			})
		})
	}
}

func TestInABubbleManyDeadlinesAcrossActorsFireExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		release := make(chan struct{})
		defer close(release)
		var futs []*future.Future[string]
		for i := range 50 {
			a := crisp.Spawn(sys, &state{})
			crisp.Tell(a, func(*crisp.Proc, *state) { <-release })
			synctest.Wait()
			for k := range 20 {
				futs = append(futs, crisp.Call(a, record("x"), crisp.Within(time.Duration(1+(i*20+k)%97)*time.Millisecond)))
			}
		}
		for _, f := range futs {
			_, err := f.Get()
			var miss *deadline.MissedError
			require.ErrorAs(t, err, &miss)
			assert.Equal(t, time.Duration(0), miss.Lateness())
		}
	})
}

// A group counts the waits of its workers for its own futures only while
// they last: a wait that ended, resolved or timed out, leaves a worker
// free to wait again (issue 14, item 3). The bubble makes sure each wait
// has really begun (the worker is blocked) before it is ended.
func TestInABubbleAGroupForgetsWaitsThatEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		g := crisp.SpawnGroup(sys, workers(2))
		rounds := []struct {
			name string
			get  func(*future.Future[string]) (string, error)
			want error
		}{
			{"Get", (*future.Future[string]).Get, nil},
			{"GetWithin", func(f *future.Future[string]) (string, error) { return f.GetWithin(time.Hour) }, nil},
			{"GetContext", func(f *future.Future[string]) (string, error) { return f.GetContext(context.Background()) }, nil},
			{"GetWithin timing out", func(f *future.Future[string]) (string, error) { return f.GetWithin(time.Second) }, future.ErrTimeout},
			{"Get again", (*future.Future[string]).Get, nil},
		}
		for _, r := range rounds {
			release := make(chan struct{})
			x := crisp.Call(g, func(*crisp.Proc, *worker) (string, error) {
				return r.get(crisp.Call(g, func(*crisp.Proc, *worker) (string, error) {
					<-release
					return "inner", nil
				}))
			})
			synctest.Wait() // the one worker waits for the other, which waits for release
			if r.want != nil {
				// Nothing else can happen: virtual time runs to the
				// timeout, and the wait ends without a result.
				_, err := x.Get()
				assert.ErrorIs(t, err, r.want, r.name)
				close(release)
				continue
			}
			close(release)
			v, err := x.Get()
			require.NoError(t, err, r.name)
			assert.Equal(t, "inner", v, r.name)
		}
	})
}
