package timeliness

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/vclock"
)

// VirtualLagRun is the lag scenario on virtual time.
type VirtualLagRun struct {
	Pending int   `json:"pending"`
	Actors  int   `json:"actors"`
	Misses  int64 `json:"misses"`
	// NonZero counts misses whose caller saw a clock reading other than
	// the deadline when its Get returned.
	NonZero int64 `json:"nonzero"`
	// MaxAbs is the largest |lag| seen, exactly (not through a
	// histogram).
	MaxAbs time.Duration `json:"max_abs_ns"`
}

// VirtualLag runs the idle lag scenario on a virtual clock (package
// vclock): pending waiting goroutines, each with one probe pending at a
// time on one of actors actors, each actor held by a handler sleeping
// (Proc.Sleep) past the end of the run. Each waiter's deadlines follow
// the same schedule as on the real clock (mean gap span); the run covers
// window of virtual time. When a waiter's Get returns the miss, it reads
// the virtual clock: the lag is that reading minus the deadline.
//
// The driver moves the clock only when the system is idle and every
// waiter is either blocked on an unresolved future or done, so each
// waiter reads the clock at the instant its miss was delivered.
func VirtualLag(ctx context.Context, pending, actors int, span, window time.Duration, seed uint64) (VirtualLagRun, error) {
	res := VirtualLagRun{Pending: pending, Actors: actors}
	vc := vclock.New(epoch)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(discard))
	as := make([]*crisp.Actor[*lagActor], actors)
	for i := range as {
		as[i] = crisp.Spawn(sys, &lagActor{}, crisp.WithPolicy(policy.ByPriority()))
		crisp.Tell(as[i], func(p *crisp.Proc, _ *lagActor) { p.Sleep(100 * 24 * time.Hour) })
	}
	if err := sys.WaitIdle(ctx); err != nil { // every actor is held
		_ = sys.Shutdown(context.WithoutCancel(ctx))
		return res, err
	}

	var (
		misses, nonzero, maxAbs atomic.Int64
		changed                 = make(chan struct{}, 1)
		wg                      sync.WaitGroup
	)
	// active counts the waiters that may still act at this instant: not
	// blocked in Get on an unresolved future, and not done. A waiter
	// leaves it just before it blocks; the resolution of its future,
	// which happens inside the system (on the goroutine that fails the
	// probe), puts it back before the system can count as idle.
	var active atomic.Int64
	active.Store(int64(pending))
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	lead := span
	for i := range pending {
		wg.Go(func() {
			defer func() { active.Add(-1); poke() }()
			r := rand.New(rand.NewPCG(seed, uint64(i)+1<<32))
			off := lead + time.Duration(r.Int64N(int64(span)))
			a := as[i%len(as)]
			for off <= lead+window {
				dl := epoch.Add(off)
				f := crisp.Call(a, probe, crisp.By(dl))
				if !plumb.OnResolve(f, func() { active.Add(1) }) {
					active.Add(1)
				}
				active.Add(-1)
				poke()
				_, err := f.Get()
				lag := vc.Now().Sub(dl)
				var me *deadline.MissedError
				if !errors.As(err, &me) {
					return
				}
				misses.Add(1)
				if lag != 0 {
					nonzero.Add(1)
				}
				for lag = max(lag, -lag); ; {
					m := maxAbs.Load()
					if int64(lag) <= m || maxAbs.CompareAndSwap(m, int64(lag)) {
						break
					}
				}
				off += span/2 + time.Duration(r.Int64N(int64(span)))
			}
		})
	}
	settled := func() bool { return active.Load() == 0 }
	idle := func(ctx context.Context) error {
		for {
			if err := sys.WaitIdle(ctx); err != nil {
				return err
			}
			if settled() {
				return nil
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	err := vc.RunUntil(ctx, idle, epoch.Add(lead+window+span))
	serr := sys.Shutdown(context.WithoutCancel(ctx)) // fails what is still queued, ending the waiters
	wg.Wait()
	if err == nil {
		err = serr
	}
	res.Misses, res.NonZero, res.MaxAbs = misses.Load(), nonzero.Load(), time.Duration(maxAbs.Load())
	return res, err
}
