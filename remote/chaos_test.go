package remote_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/remote"
)

// Job is a chaos request: what its handler does.
type Job struct {
	ID    int64
	Op    string // "ok", "error", "panic", "sleep"
	Sleep time.Duration
}

var (
	chaosWork  = remote.NewEndpoint[Job, int64]("chaos.work")
	chaosKeyed = remote.NewEndpoint[Job, int64]("chaos.keyed", remote.Partitions(4))
)

// chaosRuns records, in the serving nodes (this process), how many
// times each request's handler ran. (That none starts after its
// deadline is crisp's own chaos test's to check, with a clock that
// records when the runtime took each message: a reading inside the
// handler comes later.)
type chaosRuns struct {
	mu      sync.Mutex
	started map[int64]int
}

func (r *chaosRuns) handler(p *crisp.Proc, _ *Counter, j Job) (int64, error) {
	r.mu.Lock()
	r.started[j.ID]++
	r.mu.Unlock()
	switch j.Op {
	case "error":
		return 0, errors.New("chaos error")
	case "panic":
		panic("chaos panic")
	case "sleep":
		p.Sleep(j.Sleep)
	}
	return j.ID, nil
}

// chaosMember is one serving node: an actor for the shared endpoint and
// a group for the keyed one, both replaced when the chaos stops them.
type chaosMember struct {
	node  *remote.Node
	sys   *crisp.System
	own   []int
	svcs  []*remote.Service
	actor *crisp.Actor[*Counter]
}

func (m *chaosMember) serve(t *testing.T, runs *chaosRuns) {
	m.actor = crisp.Spawn(m.sys, &Counter{})
	g := crisp.SpawnGroup(m.sys, []*Counter{{}, {}, {}})
	s1, err := remote.Serve(m.node, chaosWork, m.actor, runs.handler, remote.MaxInFlight(24))
	require.NoError(t, err)
	s2, err := remote.Serve(m.node, chaosKeyed, g, runs.handler, remote.OwnPartitions(m.own...))
	require.NoError(t, err)
	m.svcs = []*remote.Service{s1, s2}
}

// TestChaosRemote is the chaos test's remote mode: random calls from
// several goroutines to two serving nodes, over an embedded NATS server,
// for a second (300ms with -short): deadlines short, zero, already past
// or absent, contexts cancelled at random, keys, priorities, tags,
// handlers that fail, panic or outlast the bound; meanwhile actors are
// stopped and their services closed and served again. Then it checks
// what holds whatever the interleaving: every future resolves, by its
// bound plus scheduling lag; every outcome is an answer or a typed
// failure; an answered call ran exactly once and a missed, refused or
// unserved one never ran; and no goroutine is left (TestMain).
func TestChaosRemote(t *testing.T) {
	total := time.Second
	if testing.Short() {
		total = 300 * time.Millisecond
	}
	const allowance = 100 * time.Millisecond
	runs := &chaosRuns{started: map[int64]int{}}
	sys := newSystem(t, clock.New())
	hub := newNode(t, remote.Allowance(allowance), remote.MaxWait(time.Second))
	var members []*chaosMember
	for _, own := range [][]int{{0, 1}, {2, 3}} {
		m := &chaosMember{node: newNode(t, remote.URL(hub.URL())), sys: sys, own: own}
		m.serve(t, runs)
		members = append(members, m)
	}

	type call struct {
		id       int64
		op       string
		bound    time.Time
		resolved time.Time
		err      error
		value    int64
	}
	var (
		mu    sync.Mutex
		calls []*call
		wg    sync.WaitGroup
		ids   atomic.Int64
	)
	end := time.Now().Add(total)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			outstanding := make(chan struct{}, 32)
			for time.Now().Before(end) {
				j := Job{ID: ids.Add(1), Op: []string{"ok", "ok", "ok", "ok", "ok", "ok", "error", "panic", "sleep"}[rng.IntN(9)]}
				if j.Op == "sleep" {
					j.Sleep = time.Duration(rng.IntN(20)) * time.Millisecond
					if rng.IntN(10) == 0 {
						j.Sleep = 200 * time.Millisecond // outlasts its bound
					}
				}
				outstanding <- struct{}{} // at most 32 calls out per sender
				var opts []remote.CallOption
				within := time.Duration(-1) // none
				switch rng.IntN(5) {
				case 0: // none
				case 1:
					within = time.Duration(rng.IntN(50)) * time.Millisecond
				case 2:
					within = -time.Millisecond // already past
				default:
					within = time.Duration(50+rng.IntN(200)) * time.Millisecond
				}
				if within != -1 {
					opts = append(opts, remote.Within(within))
				}
				if rng.IntN(4) == 0 {
					ctx, cancel := context.WithCancel(context.Background())
					opts = append(opts, remote.Context(ctx))
					defer cancel()
					if rng.IntN(2) == 0 {
						time.AfterFunc(time.Duration(rng.IntN(20))*time.Millisecond, cancel)
					}
				}
				opts = append(opts, remote.Priority(rng.IntN(3)), remote.Tag(fmt.Sprint("t", rng.IntN(3))))
				ep := chaosWork
				if rng.IntN(3) == 0 {
					ep = chaosKeyed
					opts = append(opts, remote.Key(fmt.Sprint("k", rng.IntN(8))))
				}
				c := &call{id: j.ID, op: j.Op}
				start := time.Now()
				f := remote.Call(hub, ep, j, opts...)
				c.bound = start.Add(time.Second) // MaxWait: calls without a deadline
				if within != -1 {
					c.bound = start.Add(max(within, 0) + allowance)
				}
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
				wg.Go(func() {
					c.value, c.err = awaitFuture(f)
					c.resolved = time.Now()
					<-outstanding
				})
			}
		})
	}
	// The chaos: stop a member's actor (its queued calls fail with
	// ErrStopped), close its services, serve again on fresh actors.
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		for time.Now().Before(end) {
			m := members[rng.IntN(len(members))]
			m.actor.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for _, s := range m.svcs {
				assert.NoError(t, s.Close(ctx))
			}
			cancel()
			m.serve(t, runs)
			pause := time.NewTimer(time.Duration(20+rng.IntN(60)) * time.Millisecond) // pacing the chaos
			<-pause.C
		}
	})
	wg.Wait()

	counts := map[string]int{}
	var worst time.Duration
	worstKind := ""
	runs.mu.Lock()
	defer runs.mu.Unlock()
	for _, c := range calls {
		k := outcomeKind(c.err)
		counts[k]++
		if l := c.resolved.Sub(c.bound); l > worst {
			worst, worstKind = l, k
		}
		n := runs.started[c.id]
		switch k {
		case "ok":
			assert.Equal(t, 1, n, "answered call %d ran %d times", c.id, n)
			assert.Equal(t, c.id, c.value)
		case "missed", "refused", "unknown endpoint", "no responders":
			assert.Zero(t, n, "call %d (%s) ran", c.id, k)
		case "hang", "other":
			t.Errorf("call %d: %v", c.id, c.err)
		default:
			assert.LessOrEqual(t, n, 1, "call %d ran %d times", c.id, n)
		}
	}
	t.Logf("futures: %d calls, all resolved: %v; worst lateness past the bound %v (%s)", len(calls), counts, max(worst, 0), worstKind)
	assert.Less(t, worst, time.Second, "every future resolves by its bound, give or take scheduling")
	assert.NotZero(t, counts["ok"])
	assert.NotZero(t, counts["missed"])
}

// outcomeKind names the kind of a remote call's outcome, for the
// chaos and multi-process tests' counts.
func outcomeKind(err error) string {
	var pe *crisp.PanicError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, deadline.ErrMissed):
		return "missed"
	case errors.Is(err, remote.ErrNoAnswer):
		return "no answer"
	case errors.Is(err, remote.ErrRefused):
		return "refused"
	case errors.Is(err, remote.ErrUnknownEndpoint):
		return "unknown endpoint"
	case errors.Is(err, remote.ErrNoResponders):
		return "no responders"
	case errors.Is(err, crisp.ErrStopped):
		return "stopped"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &pe):
		return "panicked"
	case strings.HasSuffix(err.Error(), "chaos error"):
		return "handler error"
	case err.Error() == "hang: the future did not resolve in 30s":
		return "hang"
	}
	return "other"
}
