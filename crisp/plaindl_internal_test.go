package crisp

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// Messages with deadlines sent in deadline order (the usual case: one
// Within for all) queue as plain messages, in arrival order, skipping the
// list, the policy's queue and the deadline index. Under EDF one out of
// that order spills: it waits in the deadline index alone, and the
// others stay plain; under FIFO it sends them all to the policy. Either
// way they run in the policy's order, and those whose deadlines pass
// while they wait are reported at the very instant on virtual time.
func TestDeadlinesInOrderQueueAsPlainMessages(t *testing.T) {
	secs := func(ss ...float64) []time.Duration {
		ds := make([]time.Duration, len(ss))
		for i, s := range ss {
			ds[i] = time.Duration(s * float64(time.Second))
		}
		return ds
	}
	for _, c := range []struct {
		name           string
		fifo           bool
		dls            []time.Duration // 0: no deadline
		plain, spilled int             // else all listed
	}{
		{"in order", false, secs(1, 2, 3, 4, 5, 6), 6, 0},
		{"the last the earliest", false, secs(1, 2, 3, 4, 5, 0.5), 5, 1},
		{"out of order here and there", false, secs(1, 3, 2.5, 4, 6, 5, 1.5, 7, 7, 6.5), 6, 4},
		{"equal deadlines keep arrival order", false, secs(1, 3, 3, 4, 3, 4, 3), 5, 2},
		{"a deadline after messages without one", false, secs(1, 3, 0, 0, 2.5, 4), 4, 2},
		{"out of order under FIFO", true, secs(1, 2, 3, 4, 5, 0.5), 0, 0},
		{"in order under FIFO", true, secs(1, 2, 3, 3, 5, 6), 6, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			mock := clock.NewMock()
			sys := NewSystem(WithClock(mock), WithLogger(discard()))
			var opts []ActorOption
			if c.fifo {
				opts = append(opts, WithPolicy(policy.FIFO()))
			}
			a := Spawn(sys, 0, opts...)
			release, held := make(chan struct{}), make(chan struct{})
			Tell(a, func(*Proc, int) { close(held); <-release })
			<-held
			var (
				mu  sync.Mutex
				ran []int
			)
			n := len(c.dls)
			futs := make([]*future.Future[int], n)
			for i, d := range c.dls {
				var send []SendOption
				if d > 0 {
					send = append(send, Within(d))
				}
				futs[i] = Call(a, func(*Proc, int) (int, error) {
					mu.Lock()
					ran = append(ran, i)
					mu.Unlock()
					return i, nil
				}, send...)
			}
			a.core.mu.Lock()
			a.core.drain()
			listed, spilled := int(a.core.queued), 0
			if a.core.spilled() {
				spilled = a.core.qs.dl.Len()
			}
			plain := int(a.core.pn) - spilled
			noQueue := a.core.qs == nil || a.core.qs.q == nil
			a.core.mu.Unlock()
			if c.plain+c.spilled > 0 {
				require.Equal(t, c.plain, plain, "plain")
				require.Equal(t, c.spilled, spilled, "spilled")
				require.Zero(t, listed, "listed")
				// The queue is made when something is listed: a drain
				// of plain messages alone allocated one the runner then
				// dropped (ring-1k: one for each actor two tokens met).
				require.True(t, noQueue, "a policy queue was made for plain messages")
			} else {
				require.Zero(t, plain+spilled, "a deadline out of order stayed plain")
				require.Equal(t, n, listed)
			}

			// Those due within two seconds pass while the handler holds
			// the actor; the rest run in the policy's order: EDF, those
			// without a deadline last, ties in arrival order; or FIFO.
			// The clock goes from one deadline to the next only once the
			// watchdog has failed what was due: a single step of two
			// seconds let a watchdog that ran late (a loaded machine) read
			// the clock at two seconds and report a miss at one.
			var dues []time.Duration
			for _, d := range c.dls {
				if d > 0 && d <= 2*time.Second && !slices.Contains(dues, d) {
					dues = append(dues, d)
				}
			}
			slices.Sort(dues)
			var at time.Duration
			for _, due := range dues {
				mock.Add(due - at)
				at = due
				for i, d := range c.dls {
					if d == due {
						<-futs[i].Done()
					}
				}
			}
			mock.Add(2*time.Second - at)
			var left []int
			for i, d := range c.dls {
				if d == 0 || d > 2*time.Second {
					left = append(left, i)
					require.False(t, futs[i].Ready(), "call %d, not due, was resolved", i)
					continue
				}
				_, err := futs[i].Get()
				var me *deadline.MissedError
				require.True(t, errors.As(err, &me), "call %d: %v", i, err)
				require.Equal(t, me.Deadline, me.Detected, "call %d reported late on virtual time", i)
			}
			if !c.fifo {
				key := func(i int) time.Duration {
					if c.dls[i] == 0 {
						return time.Hour
					}
					return c.dls[i]
				}
				slices.SortStableFunc(left, func(i, j int) int { return cmp.Compare(key(i), key(j)) })
			}
			close(release)
			require.NoError(t, sys.WaitIdle(context.Background()))
			mu.Lock()
			require.Equal(t, left, ran)
			mu.Unlock()
			a.core.mu.Lock()
			require.Zero(t, a.core.pn, "plain messages counted after all ran or missed")
			a.core.mu.Unlock()
			require.NoError(t, sys.Shutdown(context.Background()))
		})
	}
}

// An actor keeps its coopState once a process of it has suspended, or
// once it has lifecycle state (someone waits for its end, it has hooks
// or a supervisor). Its messages are plain all the same while its list
// is empty; they are listed while a process is suspended (the policy
// weighs the process, when it resumes, with them) or a condition waits.
func TestAnActorWithCoopStateQueuesPlainMessagesOnceItsListIsEmpty(t *testing.T) {
	pending := future.NewPromise[int](nil)
	defer pending.Resolve(0, nil)
	for _, c := range []struct {
		name   string
		before func(p *Proc, a *Actor[int]) // in a first handler
		plain  bool
	}{
		{"someone waits for its end", func(_ *Proc, a *Actor[int]) { _ = a.Done() }, true},
		{"a process suspended and resumed", func(p *Proc, _ *Actor[int]) { p.Suspend() }, true},
		{"a process is suspended", func(p *Proc, _ *Actor[int]) {
			if _, err := Await(p, pending.Future()); err != nil {
				panic(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sys := NewSystem(WithClock(clock.NewMock()), WithLogger(discard()))
			defer sys.Shutdown(context.Background())
			a := Spawn(sys, 0)
			Tell(a, func(p *Proc, _ int) { c.before(p, a) })
			require.NoError(t, sys.WaitIdle(context.Background()))
			a.core.mu.Lock()
			hasCoop := a.core.cs() != nil
			a.core.mu.Unlock()
			require.True(t, hasCoop, "the first handler left the actor no coopState")

			release, held := make(chan struct{}), make(chan struct{})
			Tell(a, func(*Proc, int) { close(held); <-release })
			<-held
			const n = 5
			for range n {
				// Detached keeps them messages: without an option, a
				// Tell to a held actor queues only its handler (lane.go).
				Tell(a, func(*Proc, int) {}, Detached())
			}
			a.core.mu.Lock()
			a.core.drain()
			plain, listed := int(a.core.pn), int(a.core.queued)
			a.core.mu.Unlock()
			close(release)
			if c.plain {
				require.Equal(t, n, plain, "plain")
				require.Zero(t, listed, "listed")
			} else {
				require.Zero(t, plain, "plain")
				require.Equal(t, n, listed, "listed")
			}
			require.NoError(t, sys.WaitIdle(context.Background()))
		})
	}
}
