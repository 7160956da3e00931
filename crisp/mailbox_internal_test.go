package crisp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// TestFullMailboxesLoseNothing is a chaos run of bounded mailboxes and
// admission control on the real clock: eight senders, and handlers,
// send Calls and Tells with random deadlines, costs and contexts to
// actors and groups of capacity 1 to 4, failing or waiting when full,
// some with admission control; handlers take a little time, panic now
// and then, and send on (inheriting their context and deadline); actors
// are stopped at random, and the system is shut down while senders
// still send. It checks, whatever the interleaving: every future
// resolves; every Tell either ran or reached the dead-letter hook,
// exactly once (a panicking one both); a refusal is never a miss; no
// actor's count of queued messages exceeds its capacity; and every
// count is back to zero at the end, every place given back.
func TestFullMailboxesLoseNothing(t *testing.T) {
	round := time.Second
	if testing.Short() {
		round = 300 * time.Millisecond
	}
	for seed := uint64(1); seed <= 2; seed++ {
		runMailboxChaos(t, seed, round)
		if t.Failed() {
			return
		}
	}
}

type chaosTell struct {
	ran, dead atomic.Int32
	panics    bool
}

func runMailboxChaos(t *testing.T, seed uint64, round time.Duration) {
	var (
		tellsMu sync.Mutex
		tells   = map[string]*chaosTell{}
		bad     atomic.Int32
		badMsg  atomic.Value
	)
	violation := func(s string) {
		bad.Add(1)
		badMsg.Store(s)
	}
	sys := NewSystem(WithDeadLetters(func(d DeadLetter) {
		tellsMu.Lock()
		ct := tells[d.Message]
		tellsMu.Unlock()
		if ct == nil {
			violation("a dead letter for an unknown message " + d.Message)
			return
		}
		if ct.dead.Add(1) > 1 {
			violation("two dead letters for " + d.Message)
		}
		if errors.Is(d.Reason, ErrFull) || errors.Is(d.Reason, ErrInfeasible) {
			if errors.Is(d.Reason, deadline.ErrMissed) {
				violation("a refusal that is a miss")
			}
		}
	}), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))

	r0 := rand.New(rand.NewPCG(seed, 17))
	type target struct {
		ref   Ref[*int]
		bound *bound
	}
	var targets []target
	for i := range 6 {
		opts := []ActorOption{WithCapacity(1+r0.IntN(4), WhenFull(r0.IntN(2)))}
		if i%2 == 0 {
			opts = append(opts, WithAdmission())
		}
		if i%3 == 0 {
			g := SpawnGroup(sys, []*int{new(int), new(int)}, opts...)
			targets = append(targets, target{g, g.a.bound})
		} else {
			a := Spawn(sys, new(int), opts...)
			targets = append(targets, target{a, a.bound})
		}
	}
	var (
		futsMu sync.Mutex
		futs   []*future.Future[int]
		nameN  atomic.Int64
	)
	var send func(r *rand.Rand, depth int)
	send = func(r *rand.Rand, depth int) {
		tg := targets[r.IntN(len(targets))]
		name := "m" + strconv.FormatInt(nameN.Add(1), 10)
		opts := []SendOption{MessageName(name)}
		switch r.IntN(4) {
		case 0:
			opts = append(opts, Within(time.Duration(r.IntN(2000))*time.Microsecond))
		case 1:
			opts = append(opts, Within(time.Duration(1+r.IntN(3))*time.Millisecond), Cost(time.Duration(r.IntN(300))*time.Microsecond))
		}
		if depth > 0 || r.IntN(3) == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(3000))*time.Microsecond)
			defer cancel()
			opts = append(opts, Context(ctx))
		}
		spin, panics, fanout := r.IntN(30), r.IntN(20) == 0, depth < 1 && r.IntN(4) == 0
		seed2 := r.Uint64()
		body := func(p *Proc) int {
			if b := tg.bound; b.capacity > 0 && b.n.Load() > b.capacity {
				violation("a count above the capacity")
			}
			for range spin {
				runtime.Gosched()
			}
			if fanout {
				send(rand.New(rand.NewPCG(seed2, 1)), depth+1)
			}
			if panics {
				panic("chaos")
			}
			return 1
		}
		if r.IntN(3) == 0 {
			ct := &chaosTell{panics: panics}
			tellsMu.Lock()
			tells[name] = ct
			tellsMu.Unlock()
			Tell(tg.ref, func(p *Proc, _ *int) {
				if ct.ran.Add(1) > 1 {
					violation("a Tell ran twice")
				}
				body(p)
			}, opts...)
			return
		}
		f := Call(tg.ref, func(p *Proc, _ *int) (int, error) { return body(p), nil }, opts...)
		futsMu.Lock()
		futs = append(futs, f)
		futsMu.Unlock()
	}

	start := time.Now()
	end, shut := start.Add(round), start.Add(round*9/10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for now := time.Now(); now.Before(end); now = time.Now() {
				if i == 0 && !now.Before(shut) {
					// Shut down while the other senders still send.
					assert.NoError(t, sys.Shutdown(ctx))
					shut = end
				}
				send(r, 0)
				if r.IntN(5000) == 0 {
					targets[r.IntN(len(targets))].ref.Stop()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, sys.Shutdown(ctx))

	var refused, full, missed int
	for _, f := range futs {
		if !f.Ready() {
			violation("a future unresolved after Shutdown")
			continue
		}
		_, err := f.Get()
		switch {
		case errors.Is(err, ErrFull), errors.Is(err, ErrInfeasible):
			if errors.Is(err, deadline.ErrMissed) {
				violation("a refusal that is a miss")
			}
			if errors.Is(err, ErrFull) {
				full++
			} else {
				refused++
			}
		case errors.Is(err, deadline.ErrMissed):
			missed++
		}
	}
	for name, ct := range tells {
		ran, dead := ct.ran.Load(), ct.dead.Load()
		switch {
		case ct.panics && ran == 1 && dead == 1:
		case !ct.panics && ran+dead == 1:
		case ran == 0 && dead == 1:
		default:
			violation("Tell " + name + ": ran " + strconv.Itoa(int(ran)) + " times, " + strconv.Itoa(int(dead)) + " dead letters")
		}
	}
	for _, tg := range targets {
		if n := tg.bound.n.Load(); n != 0 {
			violation("a count of " + strconv.FormatInt(n, 10) + " left after Shutdown")
		}
		if ad := tg.bound.adm; ad != nil && (ad.root != nil || ad.total != 0) {
			violation("admission control still holds queued work after Shutdown")
		}
	}
	t.Logf("seed %d: %d Calls (%d full, %d refused as infeasible, %d missed), %d Tells", seed, len(futs), full, refused, missed, len(tells))
	if bad.Load() > 0 {
		assert.Fail(t, "violations", "%d, the last: %v", bad.Load(), badMsg.Load())
	}
}

// A message starting on a full mailbox with admission control is
// running, by the estimate, before its place is given back: the sender
// that place wakes (WaitWhenFull) estimates at once and must count the
// message's cost, which is neither queued any more nor, before the fix,
// yet running. The waiting sender's channel is unbuffered here, so the
// runner's hand-off waits while the test looks at the estimate, as a
// real sender would the moment it wakes.
func TestAStartingMessageIsRunningBeforeItsPlaceIsGivenBack(t *testing.T) {
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0, WithCapacity(1, WaitWhenFull), WithAdmission())
	b, ad := a.bound, a.bound.adm

	e := &admEntry{dl: sys.now().Add(time.Hour), cost: 10 * time.Millisecond}
	ad.mu.Lock()
	ad.total += e.cost
	ad.count++
	ad.mu.Unlock()
	b.n.Store(1) // the message's place: the mailbox is full
	m := &message{counted: true, ext: &msgExt{adm: e}}

	woken := make(chan struct{}) // unbuffered: see above
	b.wmu.Lock()
	b.wq = append(b.wq, woken)
	b.waiters.Add(1)
	b.wmu.Unlock()

	p := &Proc{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.started(p, m)
	}()
	// The place is given back (the count drops) just before the wake;
	// the hand-off then waits for the receive below.
	for b.n.Load() != 0 {
		runtime.Gosched()
	}
	ad.mu.Lock()
	r, running := ad.running[p]
	queued := ad.count
	ad.mu.Unlock()
	<-woken
	<-done

	assert.True(t, running, "the message is not running when its place wakes a sender")
	assert.Equal(t, e.cost, r.cost)
	assert.Zero(t, queued)
	assert.False(t, m.counted)
	assert.Zero(t, b.n.Load())

	ad.mu.Lock()
	delete(ad.running, p)
	ad.mu.Unlock()
}
