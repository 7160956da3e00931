package crisp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/crisprt/crisp/internal/watchdog"
)

// Supervision: what an actor does when a handler panics.
//
// Without a strategy an actor resumes: the panicking message's future
// gets a *PanicError and the actor takes its next message with the state
// as the panic left it. Restart replaces the state with a fresh one from
// a factory; StopOnPanic stops the actor. A restart happens on the runner
// that ran the panicking handler, between two handlers, under no lock
// but the actor's own hold on itself, so no other handler of the actor
// sees the swap half done. Queued work is not touched: it stays in the
// actor's queue, in its policy's order, with its deadlines, which the
// watchdog goes on reporting while the actor waits out a backoff.
//
// A backoff parks the actor without a goroutine: the runner leaves the
// actor marked active (so that no sender starts another runner) and
// handling (so that senders and the watchdog keep its queued deadlines
// watched), and a watchdog entry at the end of the backoff starts a new
// runner. In a group only the failed worker is benched: it leaves the
// pool of free workers until its entry fires, and the others go on.
//
// Everything here runs only after a panic of a supervised actor: the
// runner's paths pay one bit test (fLife) for it.

// strategy is what an actor does on a handler's panic.
type strategy uint8

const (
	stratResume strategy = iota
	stratRestart
	stratStop
)

// supConfig is an actor's supervision, set by its options.
type supConfig struct {
	strat      strategy
	fresh      any // func() S, for stratRestart
	backoff    time.Duration
	maxBackoff time.Duration
	limit      int
	window     time.Duration
	onEscalate func(*EscalationError)
}

// sup returns c's supervision, making it if need be.
func (c *actorConfig) supCfg() *supConfig {
	if c.sup == nil {
		c.sup = &supConfig{}
	} else {
		s := *c.sup // options apply to a copy: configs may be shared
		c.sup = &s
	}
	return c.sup
}

// Restart makes the actor restart on a handler's panic: the panicking
// message's future gets its *PanicError as always, and before the next
// handler runs the actor's state is replaced with fresh() (in a group,
// the failed worker's state only). Queued messages stay queued, in their
// policy's order, with their deadlines. Processes suspended at the
// restart (Await, AwaitCond) are not ended: each keeps the state its
// handler was given, the discarded one, and finishes on it; Then
// continuations run on the fresh state, which they are given when they
// run. A state that implements StartedHook has Started called on the
// fresh state before any other handler; if it panics, that is the fresh
// state's panic, and the actor restarts again (give such an actor a
// RestartLimit). With Backoff the restart waits; with RestartLimit too
// many restarts stop the actor and escalate.
//
// Spawn (SpawnGroup) panics if fresh is not a func() S for the actor's
// state type S, or is nil. If fresh panics, the actor stops, as with
// StopOnPanic, with fresh's panic as its Err.
func Restart[S any](fresh func() S) ActorOption {
	return ActorOption{func(c *actorConfig) {
		s := c.supCfg()
		s.strat, s.fresh = stratRestart, fresh
		if fresh == nil {
			s.fresh = nilFresh{}
		}
	}}
}

// nilFresh marks Restart(nil), for init's misuse panic.
type nilFresh struct{}

// StopOnPanic makes the actor stop when a handler panics: the panicking
// message's future gets its *PanicError, queued messages fail with
// ErrStopped, and the actor's Err is that *PanicError.
func StopOnPanic() ActorOption {
	return ActorOption{func(c *actorConfig) { c.supCfg().strat = stratStop }}
}

// Backoff makes each restart wait before the actor (the worker, in a
// group) takes its next message: first for the first restart, doubling
// for each earlier restart still within the RestartLimit window (every
// earlier restart, without a window), up to max. The wait is on the
// system's clock; messages queued meanwhile stay queued, and those whose
// deadline passes are reported at their deadline. A max below first is
// taken as first. Without Backoff a restart is immediate. Backoff only
// shapes Restart: without Restart it does nothing.
func Backoff(first, max time.Duration) ActorOption {
	return ActorOption{func(c *actorConfig) {
		s := c.supCfg()
		s.backoff, s.maxBackoff = first, max
		if max < first {
			s.maxBackoff = first
		}
	}}
}

// RestartLimit bounds the restarts: when a handler panics after n
// restarts within the last window of the system's clock (ever, if window
// is 0), the actor does not restart but stops, its queued messages fail
// with ErrStopped, its Err is an *EscalationError, and that error is
// escalated once: to the actor's OnEscalate function, else the system's
// (WithEscalation), else the system's logger. An n of 0 or less means
// no limit. RestartLimit only bounds Restart: without Restart it does
// nothing.
func RestartLimit(n int, window time.Duration) ActorOption {
	return ActorOption{func(c *actorConfig) {
		s := c.supCfg()
		s.limit, s.window = n, window
	}}
}

// OnEscalate sets the function told when the actor gives up restarting
// (see RestartLimit). It runs once, on the goroutine of the handler that
// panicked last, after the actor has stopped; to escalate to a parent
// actor, Tell it from f. A panic in f is logged.
func OnEscalate(f func(*EscalationError)) ActorOption {
	return ActorOption{func(c *actorConfig) { c.supCfg().onEscalate = f }}
}

// WithEscalation sets the function told when an actor without an
// OnEscalate function of its own gives up restarting. Without it the
// system logs "actor gave up restarting" at error level.
func WithEscalation(f func(*EscalationError)) Option {
	return Option{func(s *System) { s.onEscalate = f }}
}

// EscalationError is an actor's Err, and what is escalated, when the
// actor stopped because it reached its RestartLimit. It unwraps to the
// last panic.
type EscalationError struct {
	// Actor is the actor's name.
	Actor string
	// Restarts is how many restarts the window held (the limit).
	Restarts int
	// Window is the RestartLimit window (0: ever).
	Window time.Duration
	// At is when the last panic was handled, on the system's clock.
	At time.Time
	// Panic is the last handler's panic, the one not restarted from.
	Panic *PanicError
}

func (e *EscalationError) Error() string {
	return fmt.Sprintf("crisp: actor %s gave up after %d restarts: %v", e.Actor, e.Restarts, e.Panic.Value)
}

// Unwrap returns the last panic.
func (e *EscalationError) Unwrap() error { return e.Panic }

// checkSup panics, naming op, if the actor's supervision does not fit
// state type S. Called by init for actors with a supervision.
func checkSup[S any](c *supConfig, op string) {
	if c.strat != stratRestart {
		return
	}
	if _, ok := c.fresh.(func() S); !ok {
		if _, isNil := c.fresh.(nilFresh); isNil {
			panic("crisp: " + op + " with Restart(nil)")
		}
		panic(fmt.Sprintf("crisp: %s with Restart of a %T for an actor of state type %s", op, c.fresh, typeName[S]()))
	}
}

// restartWorker gives the worker p serves a fresh state. It runs on the
// goroutine holding the actor (the worker), between handlers. A panic of
// the factory is returned as a *PanicError.
func (a *Actor[S]) restartWorker(p *Proc, fresh any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	s := fresh.(func() S)()
	if p.gw == nil || p.gw.w == 0 {
		a.state = s
	} else {
		a.mu.Lock()
		a.cfg.grp.states[p.gw.w] = s
		a.mu.Unlock()
		p.gw.st = s
	}
	return nil
}

// crashed applies the actor's supervision to pe, the panic of the
// handler p has just run. It runs on p's goroutine, which still holds
// the actor (the worker), before pe is delivered, so that whoever learns
// of the panic finds the actor's response to it decided.
//
//go:noinline
func (a *core) crashed(p *Proc, pe *PanicError) {
	c := a.cfg.sup
	switch c.strat {
	case stratStop:
		a.mu.Lock()
		a.lifeOf().setEnd(pe)
		a.mu.Unlock()
		a.stop()
		return
	case stratRestart:
	default:
		return
	}
	now := a.sys.now()
	a.mu.Lock()
	lf := a.lifeOf()
	if a.stopped() || lf.escalated {
		a.mu.Unlock()
		return
	}
	k := lf.countRestarts(now, c.window)
	if c.limit > 0 && k >= c.limit {
		lf.escalated = true
		e := &EscalationError{Actor: a.displayName(), Restarts: k, Window: c.window, At: now, Panic: pe}
		lf.setEnd(e)
		a.mu.Unlock()
		a.stop()
		a.escalate(e)
		return
	}
	lf.restarts = append(lf.restarts, now)
	if keep := max(c.limit, 64); c.window == 0 && len(lf.restarts) > keep {
		// Without a window only the count matters, up to the limit (and
		// 64 doublings of the backoff): keep the memory bounded.
		lf.restarts = append(lf.restarts[:0], lf.restarts[len(lf.restarts)-keep:]...)
	}
	lf.restartCount++
	ops := lf.ops
	a.mu.Unlock()
	if err := ops.restartWorker(p, c.fresh); err != nil {
		a.mu.Lock()
		lf.setEnd(err)
		a.mu.Unlock()
		a.stop()
		return
	}
	if a.sys.obs != nil {
		a.observeRestart(pe, now)
	}
	d := c.backoffAfter(k)
	a.mu.Lock()
	if a.cfg.grp != nil {
		if d > 0 { // runGroup benches the worker as it frees it
			lf.toBench = append(lf.toBench, benchReq{p, d})
			lf.benches++
			a.flags.Or(fLife)
		}
	} else {
		lf.pauseFor = d
		lf.startPending = lf.ops.hasStarted()
		if d > 0 || lf.startPending {
			a.flags.Or(fLife)
		}
	}
	a.mu.Unlock()
}

// backoffAfter returns the backoff of a restart that follows k restarts
// within the window.
func (c *supConfig) backoffAfter(k int) time.Duration {
	d := c.backoff
	for i := 0; i < k && d > 0 && d < c.maxBackoff; i++ {
		d *= 2
	}
	if d > c.maxBackoff {
		d = c.maxBackoff
	}
	return d
}

// countRestarts forgets restarts that left the window and returns how
// many are left. Called with a.mu held.
func (lf *lifeState) countRestarts(now time.Time, window time.Duration) int {
	if window > 0 {
		from := now.Add(-window)
		i := 0
		for i < len(lf.restarts) && !lf.restarts[i].After(from) {
			i++
		}
		lf.restarts = append(lf.restarts[:0], lf.restarts[i:]...)
	}
	return len(lf.restarts)
}

// escalate tells the actor's escalation function, else the system's,
// else the logger, of e. Called without a.mu, once per actor.
func (a *core) escalate(e *EscalationError) {
	f := a.cfg.sup.onEscalate
	if f == nil {
		f = a.sys.onEscalate
	}
	if f == nil {
		a.sys.log.LogAttrs(context.Background(), slog.LevelError, "actor gave up restarting",
			slog.String("actor", e.Actor), slog.Int("restarts", e.Restarts), slog.Any("panic", e.Panic.Value))
		return
	}
	defer func() {
		if r := recover(); r != nil {
			a.sys.log.LogAttrs(context.Background(), slog.LevelError, "escalation function panicked",
				slog.String("actor", e.Actor), slog.Any("panic", r))
		}
	}()
	f(e)
}

// pause parks the actor, held by p's runner, for d: see the top of this
// file. It keeps fActive, sets fHandling, and lets the runner go. Called
// with a.mu held; the caller's runner exits without releasing the actor.
func (a *core) pause(p *Proc, d time.Duration) bool {
	lf := a.cs().life
	now := a.sys.now()
	if !a.sys.wd.Watch(&lf.pauseEntry, (*pauseTarget)(a), now.Add(d), now) {
		return false // the system is shutting down: no backoff
	}
	lf.paused = true
	a.flags.Or(fHandling)
	a.drain()
	a.watchQueued()
	a.listWork() // held by no runner (Shutdown stops lifers anyway)
	a.holder.Store(0)
	a.sys.busyDone()
	return true
}

// pauseTarget is an actor as the watchdog sees it at the end of a
// backoff.
type pauseTarget core

// Expire ends the actor's backoff: a new runner takes the actor, which
// has stayed active meanwhile.
func (t *pauseTarget) Expire(time.Time) {
	a := (*core)(t)
	a.mu.Lock()
	lf := a.cs().life
	if !lf.paused {
		a.mu.Unlock()
		return
	}
	lf.paused = false
	if a.stopped() { // stop found the entry already taken: the actor is ours to let go
		a.flags.And(^uint32(fActive | fHandling | fFlood | earlyBits))
		a.dropLive()
		lf.ended()
		a.mu.Unlock()
		return
	}
	a.flags.And(^uint32(fHandling))
	a.sys.busy.Add(1) // busy before the runner starts, so WaitIdle cannot slip between
	a.countRunner()
	a.mu.Unlock()
	go a.run(nil)
}

// unpause ends a backoff because the actor is stopping. It reports
// whether the actor is no longer held (the watchdog had not taken the
// entry yet). Called with a.mu held.
func (a *core) unpause(lf *lifeState) {
	if lf.paused && a.sys.wd.Cancel(&lf.pauseEntry) {
		lf.paused = false
		a.flags.And(^uint32(fActive | fHandling | fFlood | earlyBits))
	}
}

// benchReq is a group's worker to bench once its runner frees it.
type benchReq struct {
	p *Proc
	d time.Duration
}

// benchWorker keeps the worker p serves out of the group's free workers
// for its backoff, if it has just restarted with one, and reports
// whether it did. Called with a.mu held.
//
//go:noinline
func (a *core) benchWorker(p *Proc) bool {
	lf := a.life()
	if lf == nil {
		return false
	}
	i := 0
	for i < len(lf.toBench) && lf.toBench[i].p != p {
		i++
	}
	if i == len(lf.toBench) {
		return false
	}
	d := lf.toBench[i].d
	lf.toBench = append(lf.toBench[:i], lf.toBench[i+1:]...)
	b := &bench{a: a, w: p.gw.w}
	now := a.sys.now()
	if a.stopped() || !a.sys.wd.Watch(&b.wd, b, now.Add(d), now) {
		a.cfg.grp.free = append(a.cfg.grp.free, p.gw.w)
		a.benchDone()
		return true
	}
	lf.benched = append(lf.benched, b)
	a.flags.Or(fHandling) // queued deadlines stay watched while the group waits
	a.watchQueued()
	return true
}

// benchDone counts off a benched worker. Called with a.mu held.
func (a *core) benchDone() {
	lf := a.cs().life
	if lf.benches--; lf.benches == 0 {
		a.flags.And(^uint32(fLife))
	}
}

// bench is a group's worker waiting out a backoff.
type bench struct {
	a  *core
	w  int32
	wd watchdog.Entry
}

// Expire puts the worker back to work.
func (b *bench) Expire(time.Time) {
	a := b.a
	a.mu.Lock()
	lf := a.cs().life
	i := 0
	for i < len(lf.benched) && lf.benched[i] != b {
		i++
	}
	if i == len(lf.benched) { // stop took it
		a.mu.Unlock()
		return
	}
	lf.benched = append(lf.benched[:i], lf.benched[i+1:]...)
	a.cfg.grp.free = append(a.cfg.grp.free, b.w)
	a.benchDone()
	a.mu.Unlock()
	a.startGroup()
}
