package crisp

import (
	"errors"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/crisprt/crisp/internal/watchdog"
)

// An actor's life: its hooks, its end, those watching for it, its
// graceful stop and its idle timeout.
//
// An actor ends when it has stopped (Stop, Drain once its work is done,
// StopOnPanic, RestartLimit, IdleTimeout, Shutdown) and no handler of it
// runs any more: its runner has let it go after running the Stopped
// hook, if the state has one. Then Done closes, Err tells why, and each
// watcher (Watch) is sent its notification. Processes that the stop
// ended (suspended ones) may still be running their deferred calls.
//
// The state below lives in the actor's coopState, made only when a
// feature needs it; the runner's paths test one flag bit (fLife) for
// hooks, backoffs and draining, and the release path one (fIdle) for the
// idle timeout.

// ErrIdle is the Err of an actor stopped by its IdleTimeout.
var ErrIdle = errors.New("crisp: actor stopped after its idle timeout")

// StartedHook is implemented by a state that wants to act as its actor
// starts: Started runs on the actor, as a handler (it may send, and its
// panic is supervised like a handler's), before any message: right after
// Spawn, and on the fresh state of each restart (see Restart).
// Hooks are called for actors made by Spawn, not for groups.
type StartedHook interface{ Started(p *Proc) }

// StoppingHook is implemented by a state that wants to act as its actor
// begins a graceful stop (Drain, IdleTimeout): Stopping runs on the
// actor, as a handler, before the queued work the stop lets finish. It
// may not send to its own actor (which refuses new messages by then),
// but may cancel timers or tell others.
type StoppingHook interface{ Stopping(p *Proc) }

// StoppedHook is implemented by a state that wants to act once its actor
// has stopped, however it stopped: Stopped runs on the actor, as the
// last handler, after every other handler has returned, and before Done
// closes. A panic in it is logged. A state discarded by a restart is not
// told.
type StoppedHook interface{ Stopped(p *Proc) }

// hookKind names a lifecycle hook.
type hookKind uint8

const (
	hookStarted hookKind = iota
	hookStopping
	hookStopped
)

// lifeOps is what the lifecycle needs of the typed actor (*Actor[S]).
type lifeOps interface {
	restartWorker(p *Proc, fresh any) error
	hasStarted() bool
	hookJob(k hookKind) job
}

// lifeState is an actor's lifecycle state. Guarded by the actor's mu.
type lifeState struct {
	a   *core
	ops lifeOps

	// Supervision (supervise.go).
	restarts     []time.Time // restarts within the window, oldest first
	restartCount int         // restarts ever
	escalated    bool
	pauseFor     time.Duration // a backoff the runner is to start at its next turn
	paused       bool          // in a backoff: pauseEntry is watched and the actor held by nobody
	pauseEntry   watchdog.Entry
	benches      int        // a group's workers benched or about to be
	benched      []*bench   // a group's workers in a backoff
	toBench      []benchReq // a group's workers to bench as their runners free them

	// Hooks due at the runner's next turn.
	startPending    bool
	stoppingPending bool
	stoppedRan      bool

	draining bool
	enrolled bool // in the system's lifers: someone waits for the end

	// The end.
	isEnded  bool
	err      error // why it ended; set before it has
	doneCh   chan struct{}
	watchers []func(error)

	idleEntry watchdog.Entry

	timers map[*timer]struct{}
}

// lifeOf returns the actor's lifecycle state, making it if need be.
// Called with a.mu held.
func (a *core) lifeOf() *lifeState {
	x := a.more()
	if x.life == nil {
		x.life = &lifeState{a: a}
	}
	return x.life
}

// life returns the actor's lifecycle state, or nil. Called with a.mu
// held.
func (a *core) life() *lifeState {
	c := a.cs()
	if c == nil {
		return nil
	}
	return c.life
}

// setEnd records why the actor is ending, unless a reason is recorded
// already. Called with a.mu held.
func (lf *lifeState) setEnd(err error) {
	if lf.err == nil && !lf.isEnded {
		lf.err = err
	}
}

// ended marks the actor's end: Done closes and watchers are told.
// Idempotent. Called with a.mu held. Telling watchers sends Tells
// without options, which take no actor's lock (a busy watcher's is only
// tried), so it is safe under this one.
func (lf *lifeState) ended() {
	if lf.isEnded {
		return
	}
	lf.isEnded = true
	if lf.enrolled {
		lf.a.sys.unenroll(lf.a)
	}
	ws := lf.watchers
	lf.watchers = nil
	for _, w := range ws { // before Done closes: whoever sees it closed finds them sent
		w(lf.err)
	}
	if lf.doneCh != nil {
		close(lf.doneCh)
	}
}

// over reports whether the actor has ended, whether or not its
// lifecycle state recorded it. Called with a.mu held.
func (a *core) over() bool {
	if lf := a.life(); lf != nil && lf.isEnded {
		return true
	}
	if !a.stopped() {
		return false
	}
	if a.cfg.grp != nil {
		return a.cfg.grp.runners.Load() == 0
	}
	return !a.active()
}

// endIfOver records the end of an actor that has just let go of its
// last runner. Called with a.mu held.
func (a *core) endIfOver() {
	if lf := a.life(); lf != nil && a.over() {
		lf.ended()
	}
}

// dropLive takes the actor, let go, out of the system's live list.
// Called with a.mu held.
func (a *core) dropLive() { a.sys.leave(a) }

// Done returns a channel closed when the actor has ended: it has stopped
// and its last handler (the Stopped hook, if any) has returned.
func (a *Actor[S]) Done() <-chan struct{} { return a.done() }

// Err returns nil until the actor has ended, and then why: nil for Stop,
// Drain and Shutdown, ErrIdle for an IdleTimeout, the *PanicError for
// StopOnPanic, an *EscalationError for a RestartLimit reached (or the
// *PanicError of a Restart factory that panicked).
func (a *Actor[S]) Err() error { return a.endErr() }

// Done returns a channel closed when the group has ended: see
// Actor.Done.
func (g *Group[S]) Done() <-chan struct{} { return g.a.done() }

// Err returns why the group ended: see Actor.Err.
func (g *Group[S]) Err() error { return g.a.endErr() }

func (a *core) done() <-chan struct{} {
	defer a.stopIfShutDown()
	a.mu.Lock()
	defer a.mu.Unlock()
	lf := a.lifeOf()
	lf.enroll()
	if lf.doneCh == nil {
		lf.doneCh = make(chan struct{})
		if a.over() {
			lf.ended()
			if !isClosed(lf.doneCh) {
				close(lf.doneCh)
			}
		}
	}
	return lf.doneCh
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (a *core) endErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	lf := a.life()
	if lf == nil || !a.over() {
		return nil
	}
	return lf.err
}

// Watchable is an actor or a group whose end can be watched: *Actor[S]
// and *Group[S] implement it.
type Watchable interface {
	Name() string
	Done() <-chan struct{}
	Err() error

	lifeCore() *core
}

func (a *Actor[S]) lifeCore() *core { return &a.core }
func (g *Group[S]) lifeCore() *core { return &g.a.core }

// Watch tells watcher when target ends: fn runs on watcher, as a Tell's
// handler, with target's Err. If target has ended already, the Tell is
// sent at once. A watcher that has stopped by then is not told. Watch
// panics if watcher, target or fn is nil.
func Watch[W any](watcher Ref[W], target Watchable, fn func(p *Proc, s W, err error)) {
	w := actorOf(watcher, "Watch")
	if target == nil || fn == nil {
		panic("crisp: Watch with a nil target or function")
	}
	t := target.lifeCore()
	tell := func(err error) {
		Tell(w, func(p *Proc, s W) { fn(p, s, err) }, MessageName("watch "+t.displayName()))
	}
	t.mu.Lock()
	lf := t.lifeOf()
	if t.over() {
		lf.ended()
		t.mu.Unlock()
		tell(lf.err)
		return
	}
	lf.enroll()
	lf.watchers = append(lf.watchers, tell)
	t.mu.Unlock()
	t.stopIfShutDown()
}

// Drain stops the actor gracefully: from now on it refuses new messages
// (they fail at once with ErrStopped), runs its StoppingHook, if any,
// lets the messages already queued run (or miss their deadlines, as
// usual) and suspended processes finish, and then stops as Stop does.
// Every future resolves. Drain does not wait: use Done. Drain is
// idempotent, and does nothing after Stop.
func (a *Actor[S]) Drain() { a.drainStop(nil) }

// Drain stops the group gracefully, as Actor.Drain stops an actor (a
// group runs no hooks).
func (g *Group[S]) Drain() { g.a.drainStop(nil) }

// drainStop begins a graceful stop; why is the actor's Err.
func (a *core) drainStop(why error) {
	a.mu.Lock()
	if a.stopped() || a.flags.Load()&fDraining != 0 {
		a.mu.Unlock()
		return
	}
	lf := a.lifeOf()
	lf.setEnd(why)
	lf.draining = true
	a.flags.Or(fDraining | fLife)
	if a.cfg.grp != nil {
		empty := a.cfg.grp.runners.Load() == 0 && a.empty()
		a.mu.Unlock()
		if empty {
			a.stop()
		}
		return
	}
	lf.stoppingPending = lf.ops != nil && lf.ops.hookJob(hookStopping) != nil
	if a.acquire() { // idle: a runner does the rest (lifeTurn)
		a.sys.busy.Add(1)
		a.countRunner()
		a.mu.Unlock()
		go a.run(nil)
		return
	}
	a.mu.Unlock()
}

// empty reports whether the actor has no work: nothing queued, arrived,
// suspended or ready. Called with a.mu held.
func (a *core) empty() bool {
	return !a.listed() && a.pn == 0 && a.queued == 0 && !a.arrived()
}

// lifeTurn does what fLife marks as due, on runner p of a single actor,
// at the top of its schedule loop: start a backoff, run hooks, finish a
// graceful stop. It reports lifeExit when the runner is to exit without
// the actor (a backoff began), lifeAgain when the loop must look again
// (the actor stopped), else lifeOn. Called with a.mu held; returns with
// it unless it reports lifeExit.
//
//go:noinline
func (a *core) lifeTurn(p *Proc) lifeStep {
	lf := a.life()
	if lf == nil {
		a.flags.And(^uint32(fLife))
		return lifeOn
	}
	if d := lf.pauseFor; d > 0 {
		lf.pauseFor = 0
		if a.pause(p, d) {
			a.mu.Unlock()
			return lifeExit
		}
	}
	if lf.startPending {
		lf.startPending = false
		a.runHook(p, lf, hookStarted)
		if a.stopped() {
			return lifeAgain
		}
		if lf.pauseFor > 0 { // Started panicked and the actor restarts
			return lifeAgain
		}
	}
	if lf.stoppingPending {
		lf.stoppingPending = false
		a.runHook(p, lf, hookStopping)
	}
	if lf.draining && a.empty() {
		a.mu.Unlock()
		a.stop()
		a.mu.Lock()
		return lifeAgain
	}
	if !lf.draining && !lf.startPending && !lf.stoppingPending && lf.pauseFor == 0 {
		a.flags.And(^uint32(fLife))
	}
	return lifeOn
}

type lifeStep uint8

const (
	lifeOn lifeStep = iota
	lifeAgain
	lifeExit
)

// runHook runs hook k of the actor's state on p, as a handler, if the
// state has it. Called with a.mu held; it releases it meanwhile.
func (a *core) runHook(p *Proc, lf *lifeState, k hookKind) {
	if lf.ops == nil {
		return
	}
	j := lf.ops.hookJob(k)
	if j == nil {
		return
	}
	a.mu.Unlock()
	m := j.hdr()
	m.state.Store(stRunning)
	a.beginHandler()
	p.m = m
	if k == hookStopped {
		a.invokeLogged(p, j) // the actor has stopped: nothing to supervise
	} else {
		a.invoke(p, j)
	}
	p.m = nil
	a.flags.And(^uint32(fHandling))
	a.mu.Lock()
}

// invokeLogged runs j's handler; a panic goes to j's outcome (the log,
// for a hook) and nowhere else.
func (a *core) invokeLogged(p *Proc, j job) {
	defer func() {
		if r := recover(); r != nil {
			a.fail(j, newPanicError(r))
		}
	}()
	j.run(p)
}

// quitLife runs the Stopped hook of a stopped actor on its last runner,
// p, lets the actor go (release) and marks its end. Called with a.mu
// held.
//
//go:noinline
func (a *core) quitLife(p *Proc) {
	lf := a.cs().life
	if lf.ops != nil && !lf.stoppedRan {
		lf.stoppedRan = true
		a.runHook(p, lf, hookStopped)
	}
	p.flushHanded() // the hook's runner held back, counted by this runner's unit until the release
	// The system stays busy from here until the watchers' Tells are
	// sent, so that WaitIdle cannot return between the release and them.
	a.sys.busy.Add(1)
	a.release()
	a.endIfOver()
	a.sys.busyDone()
}

// stopLife is Stop's part for the lifecycle: timers and backoffs end,
// and an actor nobody holds ends now, or, if its state has a Stopped
// hook, gets a runner to run it. Called with a.mu held, after fStopped
// is set.
//
//go:noinline
func (a *core) stopLife() {
	lf := a.cs().life
	for t := range lf.timers {
		t.cancelLocked()
	}
	lf.timers = nil
	a.sys.wd.Cancel(&lf.idleEntry)
	a.unpause(lf)
	for _, b := range lf.benched {
		if a.sys.wd.Cancel(&b.wd) {
			a.cfg.grp.free = append(a.cfg.grp.free, b.w)
		}
	}
	lf.benched, lf.toBench, lf.benches = nil, nil, 0
	if a.cfg.grp == nil && !lf.stoppedRan && lf.ops != nil && lf.ops.hookJob(hookStopped) != nil && a.acquire() {
		// Nobody holds the actor: a runner runs the hook (quit).
		a.sys.busy.Add(1)
		a.spawn(nil)
		return
	}
	a.endIfOver()
}

// IdleTimeout stops the actor gracefully (as Drain does, with ErrIdle as
// its Err) once it has been idle for d on the system's clock: no message
// queued, running or suspended since its runner last let it go (or since
// Spawn). A d of zero or less means no timeout, the default. One
// watchdog entry per actor, re-armed each time the actor goes idle,
// serves it. Groups take no idle timeout.
func IdleTimeout(d time.Duration) ActorOption {
	return ActorOption{func(c *actorConfig) { c.idle = d }}
}

// idleTarget is an actor as the watchdog sees it for its idle timeout.
type idleTarget core

// armIdle starts the actor's idle timeout over, as it goes idle. Called
// with a.mu held.
//
//go:noinline
func (a *core) armIdle() {
	if a.stopped() || !a.empty() {
		return
	}
	lf := a.lifeOf()
	now := a.sys.now()
	a.sys.wd.Watch(&lf.idleEntry, (*idleTarget)(a), now.Add(a.cfg.idle), now)
}

// Expire stops the actor if it is still idle.
func (t *idleTarget) Expire(time.Time) {
	a := (*core)(t)
	a.mu.Lock()
	idle := !a.active() && !a.stopped() && a.empty()
	a.mu.Unlock()
	if idle {
		a.drainStop(ErrIdle)
	}
}

// hookBit is hook k's bit in actorConfig.hooks.
func hookBit(k hookKind) uint8 { return 1 << k }

var hookTypes = [...]reflect.Type{
	hookStarted:  reflect.TypeFor[StartedHook](),
	hookStopping: reflect.TypeFor[StoppingHook](),
	hookStopped:  reflect.TypeFor[StoppedHook](),
}

// hooksOf returns the hooks state type t implements, once per type.
func hooksOf(t reflect.Type) uint8 {
	var b uint8
	for k, h := range hookTypes {
		if t.Implements(h) {
			b |= hookBit(hookKind(k))
		}
	}
	return b
}

// initLife sets up the lifecycle state of a new actor with supervision,
// an idle timeout or hooks. op names the caller in misuse panics.
func (a *Actor[S]) initLife(op string) {
	c := a.cfg
	if c.sup != nil {
		checkSup[S](c.sup, op)
	}
	a.mu.Lock()
	lf := a.lifeOf()
	lf.ops = a
	if c.hooks&(hookBit(hookStopping)|hookBit(hookStopped)) != 0 {
		lf.enroll() // Shutdown must reach it to run them
	}
	if c.idle > 0 && op != "SpawnGroup" {
		a.flags.Or(fIdle)
		a.armIdle()
	}
	a.mu.Unlock()
}

// kickStart runs a new actor's Started hook: a runner takes the actor at
// once (lifeTurn).
func (a *Actor[S]) kickStart() {
	a.mu.Lock()
	lf := a.lifeOf()
	lf.startPending = true
	a.flags.Or(fLife)
	a.mu.Unlock()
	a.start()
}

func (a *Actor[S]) hasStarted() bool {
	return a.cfg.grp == nil && a.cfg.hooks&hookBit(hookStarted) != 0
}

// hookJob returns a message that runs hook k of the actor's state, or
// nil if the state has no such hook (or the actor is a group).
func (a *Actor[S]) hookJob(k hookKind) job {
	if a.cfg.grp != nil || a.cfg.hooks&hookBit(k) == 0 {
		return nil
	}
	var fn func(*Proc, S)
	var name string
	switch k {
	case hookStarted:
		fn, name = func(p *Proc, s S) { any(s).(StartedHook).Started(p) }, "Started"
	case hookStopping:
		fn, name = func(p *Proc, s S) { any(s).(StoppingHook).Stopping(p) }, "Stopping"
	default:
		fn, name = func(p *Proc, s S) { any(s).(StoppedHook).Stopped(p) }, "Stopped"
	}
	t := &tell[S]{a: a, fn: fn}
	t.meta().Name = name
	t.job = t
	return t
}

func newPanicError(r any) *PanicError { return &PanicError{Value: r, Stack: debug.Stack()} }

// benchWatch keeps a group whose last runner leaves while a worker is
// benched looking busy to senders and the watchdog, so that its queued
// deadlines stay watched. Called with a.mu held.
//
//go:noinline
func (a *core) benchWatch() {
	if lf := a.life(); lf != nil && lf.benches > 0 && !a.stopped() {
		a.flags.Or(fHandling)
		a.watchQueued()
	}
}

// enroll makes the actor one that Shutdown stops even when idle: someone
// waits for its end (Done, Watch) or its state has stop hooks. The
// system then holds it until it ends. Called with a.mu held.
func (lf *lifeState) enroll() {
	if !lf.enrolled && !lf.isEnded {
		lf.enrolled = true
		lf.a.sys.enroll(lf.a)
	}
}

// enroll records a among the actors Shutdown stops. Called with a.mu
// held.
func (s *System) enroll(a *core) {
	s.lifeMu.Lock()
	if s.lifers == nil {
		s.lifers = make(map[*core]struct{})
	}
	s.lifers[a] = struct{}{}
	s.lifeMu.Unlock()
}

// unenroll forgets a, which has ended. Called with a.mu held.
func (s *System) unenroll(a *core) {
	s.lifeMu.Lock()
	delete(s.lifers, a)
	s.lifeMu.Unlock()
}

// lifersNow returns the actors with a lifecycle state that have not
// ended.
func (s *System) lifersNow() []*core {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	out := make([]*core, 0, len(s.lifers))
	for a := range s.lifers {
		out = append(out, a)
	}
	return out
}

// stopIfShutDown stops a, which may just have got a lifecycle state
// after Shutdown collected the actors to stop. Called without a.mu.
func (a *core) stopIfShutDown() {
	if a.sys.closed.Load() && !a.stopped() {
		a.stop()
	}
}
