package crisp

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/policy"
)

// ErrDeadlock is matched by the error of a wait that could never end:
// a process of an actor waiting, while holding it, for work only that
// actor can do (Get on a future of its own actor), or awaiting its own
// result; in a group, the last worker to wait for a future of the group
// while all the others do, or a worker waiting for a message that needs
// a key its own message holds.
var ErrDeadlock = errors.New("crisp: self-deadlock")

// coopState is the part of an actor that only cooperative scheduling,
// Sleep and synchronised data use, kept apart so that an actor that uses
// none of them stays small. Guarded by the actor's mu.
type coopState struct {
	conds   []*message // processes suspended in AwaitCond
	dirty   bool       // something ran, released or arrived since conds were checked
	scratch []condWait // reused by checkConds
	spare   *Proc      // a runner parked for the next process to suspend, or nil
	// procs holds the goroutines of the suspended and ready processes,
	// from suspension (register) until one is handed the actor back
	// (handTo) or ended (abort); free lists its empty slots. A process's
	// message holds its slot in dli (see procSlot), not a pointer in an
	// extension: a suspended process then keeps no 184-byte msgExt only
	// to point at its goroutine, and finding it costs an index.
	procs    []*Proc
	free     []int32
	sleepers []*Proc // processes in Sleep (at most one runs, but it may be any)

	keys map[any]*keyLine // lines of the keys named by queued or running messages

	life *lifeState // hooks, supervision, timers, the end (lifecycle.go); nil until used

	park parked // the runner parked in a conversation (convo.go); guarded by its shard's parkList lock
}

// more returns the actor's coopState, making it if need be. Called with
// a.mu held.
func (a *core) more() *coopState {
	qs := a.queues()
	if qs.coop == nil {
		qs.coop = &coopState{}
	}
	return qs.coop
}

// newArrivals notes that messages arrived: conditions are re-checked.
// Called with a.mu held.
func (a *core) newArrivals() {
	if c := a.cs(); c != nil {
		c.dirty = true
	}
}

// Await returns f's result. If f is resolved it returns at once;
// otherwise the process releases its actor, which goes on with its other
// ready work, and continues when f is resolved and the actor's policy
// picks it (with its message's deadline, priority and tag; a process
// that has started is never failed for its deadline). The process keeps
// its goroutine and stack meanwhile, so Await may be called from any
// depth of plain function calls in a handler.
//
// Awaiting the future of the very message the process runs can never
// end: Await returns an error matching ErrDeadlock instead.
func Await[T any](p *Proc, f *future.Future[T]) (T, error) {
	p.check("Await")
	if f.Ready() {
		return f.Get()
	}
	if err := p.awaitsItself(plumb.SourceOf(f)); err != nil {
		var zero T
		return zero, err
	}
	if p.a.cfg.grp != nil { // a group's worker waits in place
		return f.Get()
	}
	p.awaitResolved(f)
	return f.Get()
}

// awaitResolved is park for Await, written out: it registers the
// process on f (a *future.Future, as plumb takes it) from its own frame,
// not from a callback under suspend's. The registration allocates the
// waiter's node, the deepest point of an Await, and a runner's stack
// starts at 2 KiB: through park, suspend and a closure, a process whose
// handler's own frames took more than 64 bytes outgrew it there (go test
// -bench ABSListing1: copying stacks was 19% of the Await style's
// profile at N = 2,500); from here, one whose handler's frames take
// 208 bytes (see stack_internal_test.go: awaitMargin). A process deeper
// still has the runner it starts for its actor's next work grow its
// stack first, so that the next process as deep does not copy its
// frames (passOn, deepSuspension).
//
// The process itself is the callback, not a closure naming this wait as
// AwaitWithin's: an Await's registration never outlives it (the future
// resolves before the process goes on), so any wake-up it gives is for
// the current wait.
func (p *Proc) awaitResolved(f any) {
	m, a := p.m, p.a
	epoch := p.suspendStart(false)
	a.mu.Unlock()
	if !plumb.OnResolveWaker(f, (*awaitWaker)(m)) {
		a.resume(m, epoch, false)
	}
	a.mu.Lock()
	p.suspendEnd()
	p.waitSignal()
	p.resumed()
}

// awaitWaker is the message of a process in Await, as its future's
// callback: it makes the process ready.
type awaitWaker message

func (w *awaitWaker) Wake() {
	m := (*message)(w)
	m.work().actor().resume(m, 0, false)
}

// AwaitWithin is Await giving up after d on the system's clock: it then
// returns future.ErrTimeout, leaving f alone. A d of zero or less only
// checks.
func AwaitWithin[T any](p *Proc, f *future.Future[T], d time.Duration) (T, error) {
	p.check("AwaitWithin")
	var zero T
	if f.Ready() {
		return f.Get()
	}
	if d <= 0 {
		return zero, future.ErrTimeout
	}
	if err := p.awaitsItself(plumb.SourceOf(f)); err != nil {
		return zero, err
	}
	if p.a.cfg.grp != nil { // a group's worker waits in place
		return f.GetWithin(d)
	}
	m, a, x := p.m, p.a, p.extra()
	p.park(func(epoch uint32) {
		now := a.sys.now()
		a.mu.Lock()
		if m.state.Load() == stSuspended && p.epoch == epoch {
			x.timed = a.sys.wd.Watch(&x.wd, (*procTimer)(p), now.Add(d), now)
			x.timedMsg, x.timedEpoch = m, epoch
		}
		a.mu.Unlock()
		if !plumb.OnResolve(f, func() { a.resume(m, epoch, false) }) {
			a.resume(m, epoch, false)
		}
	})
	if x.timedOut {
		x.timedOut = false
		if f.Ready() { // resolved at the very instant of the timeout
			return f.Get()
		}
		return zero, future.ErrTimeout
	}
	return f.Get()
}

// procTimer is a Proc as the watchdog's target, for AwaitWithin and
// Sleep.
type procTimer Proc

func (t *procTimer) Expire(time.Time) {
	p := (*Proc)(t)
	a := p.a
	ready.Lock(&a.mu) // counted while it waits: see ready.Lock
	if p.x.sleeping {
		p.x.sleeping, p.x.timed = false, false
		a.sys.busy.Add(1) // busy again before the wake, so WaitIdle cannot slip between
		p.signal()
		a.mu.Unlock()
		return
	}
	m, epoch := p.x.timedMsg, p.x.timedEpoch
	a.mu.Unlock()
	if m == nil {
		// A Sleep that Stop cut short after the watchdog had taken its
		// entry into a batch (Cancel then finds nothing): nothing to do.
		return
	}
	a.resume(m, epoch, true)
}

// Sleep keeps the actor for d on the system's clock, as a handler that
// works for d would: the process waits without releasing its actor, so
// the actor's other work waits too (and may miss its deadlines, which the
// watchdog reports). The wait is the watchdog's, and counts as idle for
// WaitIdle: under a virtual clock (package vclock) time moves on to its
// end, which is how simulations give handlers a duration, as Real-Time
// ABS's duration statement does. If the actor stops meanwhile, Sleep
// returns at once and the handler goes on.
func (p *Proc) Sleep(d time.Duration) {
	p.check("Sleep")
	if d <= 0 {
		return
	}
	p.flushHanded()
	a, x := p.a, p.extra()
	now := a.sys.now()
	a.mu.Lock()
	if a.stopped() {
		a.mu.Unlock()
		return
	}
	x.timed = a.sys.wd.Watch(&x.wd, (*procTimer)(p), now.Add(d), now)
	if !x.timed { // the system is shutting down
		a.mu.Unlock()
		return
	}
	x.sleeping = true
	x.timedMsg = nil // the entry is a Sleep's: see procTimer.Expire
	p.expectSignal() // the signal (Expire, wakeSleepers) takes a.mu
	more := a.more()
	more.sleepers = append(more.sleepers, p)
	a.listWork() // held by a process Shutdown must wake
	a.sys.busyDone()
	a.mu.Unlock()
	p.waitSignal()
	a.mu.Lock()
	a.dropSleeper(p)
	a.mu.Unlock()
}

// dropSleeper takes p off the list of sleeping processes. Called with
// a.mu held.
func (a *core) dropSleeper(p *Proc) {
	c := a.cs()
	if c == nil {
		return
	}
	ss := c.sleepers
	for i, q := range ss {
		if q == p {
			ss[i] = ss[len(ss)-1]
			ss[len(ss)-1] = nil
			c.sleepers = ss[:len(ss)-1]
			return
		}
	}
}

// wakeSleepers cuts every Sleep short: the actor is stopping. Called with
// a.mu held.
func (a *core) wakeSleepers() {
	c := a.cs()
	if c == nil {
		return
	}
	for _, p := range c.sleepers {
		if p.x.sleeping {
			p.x.sleeping = false
			a.sys.wd.Cancel(&p.x.wd)
			a.sys.busy.Add(1)
			p.signal()
		}
	}
}

// AwaitCond returns once cond reports true. If it does now, AwaitCond
// returns at once; otherwise the process releases its actor, and cond
// is checked again, on the actor, each time another of its processes
// finishes or releases it, or new messages arrive (never by polling).
// cond reads the actor's state; it must be quick and must not block. A
// panic in cond is raised again in the waiting process.
func (p *Proc) AwaitCond(cond func() bool) {
	p.check("AwaitCond")
	p.notInGroup("AwaitCond")
	if cond() {
		return
	}
	x := p.extra()
	x.cond = cond
	p.park(func(uint32) {})
	x.cond = nil
	if r := x.condPanic; r != nil {
		x.condPanic = nil
		panic(r)
	}
}

// Suspend releases the actor and makes the process ready again at once:
// the actor's policy decides whether other ready work runs first.
func (p *Proc) Suspend() {
	p.check("Suspend")
	p.notInGroup("Suspend")
	p.park(nil)
}

// notInGroup panics in a group's handler: its workers have states of
// their own, which no one condition or resumption could tell apart.
func (p *Proc) notInGroup(op string) {
	if p.a.cfg.grp != nil {
		panic("crisp: " + op + " in an actor group")
	}
}

// check panics if p is used outside its handler.
func (p *Proc) check(op string) {
	if p.g != gid.Current() || p.m == nil { // g first: only this goroutine may read m
		panic("crisp: " + op + " with a Proc outside its handler's goroutine")
	}
}

// awaitsItself reports the deadlock of a process awaiting the result of
// its own message.
func (p *Proc) awaitsItself(src plumb.Source) error {
	if src == nil {
		return nil
	}
	own := p.m
	if k, ok := own.work().(continuation); ok {
		own = k.resultOwner()
	}
	if j, ok := src.(job); ok && own != nil && j.hdr() == own {
		return fmt.Errorf("%w: message %s of actor %s awaits its own result", ErrDeadlock, own.name(own.work()), p.a.displayName())
	}
	return nil
}

// park suspends the running process: it calls arm to set up what will
// make it ready (arm may do so at once), releases the actor, and waits
// until the actor is handed back. A nil arm means ready at once
// (Suspend): the process is queued before the actor chooses its next
// work, so the policy weighs it with everything else. If the actor stops
// meanwhile, the goroutine ends through runtime.Goexit (its deferred
// calls run) and the message gets ErrStopped.
func (p *Proc) park(arm func(epoch uint32)) {
	p.suspend(arm)
	p.waitSignal()
	p.resumed()
}

// suspend arms the wake-up sources for park, giving them the number of
// this suspension (a wake-up for an earlier one is ignored), and then
// releases the actor. Arming while the actor is still held makes the
// order of registration the order of suspension: two processes of one
// actor awaiting one future are woken, and weighed by the policy, in the
// order they suspended, and the system counts as busy (the actor is
// held) until the wake-ups are set.
//
//go:noinline
func (p *Proc) suspend(arm func(epoch uint32)) {
	epoch := p.suspendStart(arm == nil)
	if arm != nil {
		// Without a.mu: arm may resume the process at once (its future
		// is resolved already), which takes the lock; the process is then
		// queued as ready, and the runner passOn finds will hand the
		// actor back.
		p.a.mu.Unlock()
		arm(epoch)
		p.a.mu.Lock()
	}
	p.suspendEnd()
}

// suspendStart is suspend up to the arming: it records the suspension
// (ready at once if ready) and returns its number, with a.mu held; or,
// if the actor has stopped, ends the goroutine (endStopped).
//
//go:noinline
func (p *Proc) suspendStart(ready bool) uint32 {
	p.flushHanded() // the runner held back must not wait for this process
	a := p.a
	if p.m.obs != 0 {
		a.observeSuspend(p.m)
	}
	a.flags.And(^uint32(fHandling))
	a.mu.Lock()
	if c := a.cs(); c != nil && len(c.conds) > 0 {
		// This process releases the actor: conditions may hold now.
		a.mu.Unlock()
		a.checkConds()
		a.mu.Lock()
	}
	if a.stopped() {
		p.endStopped()
	}
	return p.register(ready)
}

// suspendEnd is suspend after the arming: it puts the actor in the
// system's live list, where Shutdown finds its suspended processes
// (listWork: if the system is shutting down and had not listed the
// actor, the actor is stopped, which ends the process), gives the actor
// up (passOn) and releases a.mu.
func (p *Proc) suspendEnd() {
	a := p.a
	a.listWork()
	a.passOn()
	a.unlock()
}

// endStopped ends the process whose actor stopped while its handler
// ran, as a suspended one would end. It gives the actor up first
// (release ends its runner's busy count), and stays busy itself, like an
// aborted process, until abandon has failed its message. Called with
// a.mu held; it does not return.
//
//go:noinline
func (p *Proc) endStopped() {
	a := p.a
	p.extra().stopErr = ErrStopped
	a.sys.busy.Add(1)
	a.release()
	a.endIfOver()
	a.mu.Unlock()
	runtime.Goexit()
}

// register records the process's suspension in its actor's list (and
// among the conditions to check, for AwaitCond), ready at once if ready
// (Suspend), and returns the suspension's number. Called with a.mu held.
func (p *Proc) register(ready bool) uint32 {
	a, m := p.a, p.m
	more := a.more()
	if n := len(more.free); n > 0 {
		slot := more.free[n-1]
		more.free = more.free[:n-1]
		more.procs[slot] = p
		m.dli = procSlot(slot)
	} else {
		more.procs = append(more.procs, p)
		m.dli = procSlot(int32(len(more.procs) - 1))
	}
	p.expectSignal() // all who signal hold a.mu
	p.epoch++
	m.resumed = true // outside the deadline index for good: see procSlot
	a.link(m)
	if ready {
		m.state.Store(stReady)
		a.enqueue(m)
	} else {
		m.state.Store(stSuspended)
	}
	if p.x != nil && p.x.cond != nil {
		more.conds = append(more.conds, m)
	}
	return p.epoch
}

// resumed runs when park's goroutine is woken: it holds the actor again,
// or must end because the actor stopped.
//
//go:noinline
func (p *Proc) resumed() {
	if p.stopping() != nil {
		runtime.Goexit()
	}
	if p.x != nil {
		p.x.timed = false
	}
	p.a.holder.Store(uintptr(p.g))
	if p.m.obs != 0 {
		p.a.observeResume(p.m)
	}
	p.a.beginResumed()
}

// resume makes suspended process (or pending continuation) m ready, once:
// the first of its wake-up sources wins. epoch names the suspension the
// wake-up is for (0: whichever is current); a wake-up for an earlier one
// is ignored. timedOut says the winner is an AwaitWithin's timeout. If
// the actor is idle and nothing else is ready, m takes the actor at once.
func (a *core) resume(m *message, epoch uint32, timedOut bool) {
	ready.Lock(&a.mu) // counted while it waits: see ready.Lock
	p := a.procOf(m)
	if epoch != 0 && (p == nil || p.epoch != epoch) {
		a.mu.Unlock()
		return // a stale wake-up
	}
	if !m.state.CompareAndSwap(stSuspended, stReady) {
		a.mu.Unlock()
		return
	}
	if p != nil && p.x != nil {
		p.x.timedOut = timedOut
		if p.x.timed && !timedOut {
			a.sys.wd.Cancel(&p.x.wd)
		}
		if p.x.cond != nil {
			a.dropCond(m)
		}
	}
	m.resumed = true
	if a.cfg.grp == nil && a.queued == 0 && a.pn == 0 && !a.arrived() && !a.stopped() && a.acquire() {
		a.sys.busy.Add(1)
		a.unlink(m)
		if p != nil {
			m.state.Store(stRunning)
			a.handTo(m, p)
		} else {
			m.state.Store(stTaken)
			a.spawn(m)
		}
		a.mu.Unlock()
		return
	}
	a.enqueue(m)
	a.unlock()
	switch {
	case a.stopped():
	case a.cfg.grp != nil: // a continuation on a group: a group runner takes it
		a.startGroup()
	default:
		a.start()
	}
}

// procSlot is the value of a started message's dli that names slot s
// of coop.procs. dli is a queued message's position in the deadline
// index (-1 when in none, -2 and below in its run); once a message has
// started it is in no index (enqueue and dequeued pass resumed work by),
// and its dli is free to name its process's goroutine. A continuation's
// dli stays 0: it names none.
func procSlot(s int32) int32 { return -2 - s }

// procOf returns the goroutine of suspended or ready process m, or nil
// (m is a continuation). Called with a.mu held.
func (a *core) procOf(m *message) *Proc {
	if a.cs() == nil || m.dli > -2 {
		return nil
	}
	return a.cs().procs[-2-m.dli]
}

// forgetProc takes process m off procs: it runs again, or has ended.
// Once every slot is free, a table of more than a few is let go: a
// burst of suspensions leaves nothing behind. Called with a.mu held.
func (a *core) forgetProc(m *message) {
	c := a.cs()
	slot := -2 - m.dli
	m.dli = -1
	c.procs[slot] = nil
	c.free = append(c.free, slot)
	if len(c.free) == len(c.procs) {
		if len(c.procs) > 64 {
			c.procs, c.free = nil, nil
		} else {
			c.procs, c.free = c.procs[:0], c.free[:0]
		}
	}
}

// dropCond takes m off the list of condition waiters. Called with a.mu
// held.
func (a *core) dropCond(m *message) {
	st := a.cs()
	cs := st.conds
	for i, c := range cs {
		if c == m {
			cs[i] = cs[len(cs)-1]
			cs[len(cs)-1] = nil
			st.conds = cs[:len(cs)-1]
			return
		}
	}
}

// checkConds evaluates the conditions of the processes in AwaitCond and
// makes ready those that hold (or panic). Only the goroutine holding the
// actor calls it, without a.mu: conditions read the actor's state.
func (a *core) checkConds() {
	a.mu.Lock()
	c := a.cs()
	c.dirty = false
	ws := c.scratch[:0]
	for _, m := range c.conds {
		ws = append(ws, condWait{m, a.procOf(m)})
	}
	a.mu.Unlock()
	for i, w := range ws {
		ws[i] = condWait{}
		p := w.p
		if p == nil || p.x == nil || p.x.cond == nil {
			continue
		}
		if ok, r := evalCond(p.x.cond); ok || r != nil {
			p.x.condPanic = r
			a.resume(w.m, 0, false)
		}
	}
	a.mu.Lock()
	c.scratch = ws[:0]
	a.mu.Unlock()
}

// condWait is a process in AwaitCond, as checkConds finds it.
type condWait struct {
	m *message
	p *Proc
}

func evalCond(cond func() bool) (ok bool, r any) {
	defer func() { r = recover() }()
	return cond(), nil
}

// continuation is the job of a Then continuation, as a Next holds it.
type continuation interface {
	job
	resultTo(s sink)
	resultOwner() *message
}

// Next is what a handler sent with CallNext, and a continuation made by
// Then, return: a result now (Return), or a continuation whose result
// becomes theirs later (Then). Its S is the actor's state type, so that
// a handler cannot return a continuation made for another kind of actor:
// that is a compile error. The zero Next is the zero T with a nil error.
type Next[S, T any] struct {
	k   continuation // nil: v and err are the result
	v   T
	err error
}

// Return makes a Next holding the result v, err now.
func Return[S, T any](v T, err error) Next[S, T] { return Next[S, T]{v: v, err: err} }

// errForeignNext is the outcome of a handler that returned a Next made by
// another handler's Then: only the handler that called Then may hand its
// result on.
var errForeignNext = errors.New("crisp: a handler returned a Next made by another handler's Then")

// Then arranges for k to run on p's actor, with its state, once f is
// resolved, and returns at once: the heap-continuation style, in which no
// goroutine waits (Await keeps the process's goroutine instead). k runs
// as a continuation of p's message: the actor's policy orders it with
// that message's deadline, priority and tag, and it can no longer miss
// its deadline.
//
// A handler sent with CallNext that returns Then's Next hands its result
// to k: the future resolves with what k returns, and k may itself return
// another Then's Next, chaining. Elsewhere (a Tell, a Call, a Next that
// is dropped) k runs detached and its result is dropped. If the actor
// stops first, k never runs and the future gets ErrStopped.
//
//	f := crisp.CallNext(a, func(p *crisp.Proc, s *State) crisp.Next[*State, int] {
//		return crisp.Then(p, crisp.Call(db, query), func(p *crisp.Proc, s *State, rows []Row, err error) crisp.Next[*State, int] {
//			return crisp.Return[*State](len(rows), err)
//		})
//	})
//
// S must be the state type of p's actor: the compiler checks it when the
// Next is returned from a CallNext handler; a detached Then with another
// state type is a misuse panic.
func Then[S, T, U any](p *Proc, f *future.Future[T], k func(p *Proc, s S, v T, err error) Next[S, U]) Next[S, U] {
	p.check("Then")
	a, ok := p.m.work().actorAny().(*Actor[S])
	if !ok {
		panic(fmt.Sprintf("crisp: Then with state type %s on actor %s of another state type", typeName[S](), p.a.displayName()))
	}
	if k == nil {
		panic("crisp: Then with a nil continuation")
	}
	c := &cont[S, T, U]{a: a, f: f, k: k}
	x := p.extra()
	x.thens = append(x.thens, c) // p's process made it: see Proc.madeHere
	c.dk, c.seq, c.resumed = p.m.dk, p.m.seq, true
	if pi := p.m.pi.Load(); pi != nil && (pi.Priority != 0 || pi.Tag != nil || pi.Name != "") {
		c.pi.Store(&policy.Item{Priority: pi.Priority, Tag: pi.Tag, Name: pi.Name})
	}
	c.job = c
	if x := p.m.ext; x != nil && x.passesOn() {
		// The continuation goes on with its handler's request: its sends
		// inherit as the handler's would (propagate.go).
		c.ext = &msgExt{ctx: x.ctx, finish: x.finish}
	}
	if x := p.m.ext; x != nil && !x.given.IsZero() {
		c.extOf().given = x.given // the sender's own time, for reports (setDeadline)
	}
	c.state.Store(stSuspended)
	core := &a.core
	core.mu.Lock()
	if core.stopped() {
		c.state.Store(stStopped)
		core.mu.Unlock()
		return Next[S, U]{k: c}
	}
	core.link(&c.message)
	core.listWork() // pending, it is Shutdown's to fail
	core.mu.Unlock()
	if !plumb.OnResolveWaker(f, c) {
		c.Wake()
	}
	return Next[S, U]{k: c}
}

// cont is a continuation registered by Then. It is 128 bytes on amd64,
// one of Go's size classes (suspend_internal_test.go holds it to at
// most 192, also one): a pending Then costs it and its future's 32-byte
// node.
type cont[S, T, U any] struct {
	message
	a  *Actor[S]
	f  *future.Future[T]
	k  func(*Proc, S, T, error) Next[S, U]
	to sink // where k's result goes; nil while detached. Guarded by a.mu.

	// early holds k's result when k ran before anyone named where it
	// goes: on a group, k may run on another worker before the handler
	// that called Then has returned and called resultTo; on a single
	// actor, the handler may have suspended meanwhile; and a detached
	// continuation is never named a place. nil until k has run so, which
	// keeps the result's fields out of every pending continuation.
	// Guarded by a.mu.
	early *contResult[U]
}

// contResult is the result of a continuation that ran before its
// result had anywhere to go.
type contResult[U any] struct {
	v    U
	err  error
	next continuation // k returned another Then's results
}

// Wake makes the continuation ready: c is its future's callback.
func (c *cont[S, T, U]) Wake()         { c.a.resume(&c.message, 0, false) }
func (c *cont[S, T, U]) hdr() *message { return &c.message }
func (c *cont[S, T, U]) recycle()      {}
func (c *cont[S, T, U]) actor() *core  { return &c.a.core }
func (c *cont[S, T, U]) actorAny() any { return c.a }
func (c *cont[S, T, U]) handler() any  { return c.k }
func (c *cont[S, T, U]) answered() bool {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return c.to != nil
}

func (c *cont[S, T, U]) resultOwner() *message {
	if o, ok := c.to.(job); ok {
		return o.hdr()
	}
	return nil
}

// resultTo makes s receive k's result. Called by the runner when the
// handler that called Then returns its results.
func (c *cont[S, T, U]) resultTo(s sink) {
	c.a.mu.Lock()
	c.to = s
	stopped := c.state.Load() == stStopped
	r := c.early
	c.a.mu.Unlock()
	switch {
	case r != nil && r.next != nil:
		r.next.resultTo(s)
	case r != nil:
		deliverTo(s, r.v, r.err)
	case stopped:
		s.fail(ErrStopped)
	}
}

// deliverTo hands a continuation's result to s. s always takes a U: the
// Next types make every continuation of a chain produce its CallNext's
// result type (an untyped delivery, with boxing, was needed while the
// chain ran through the error result).
func deliverTo[U any](s sink, v U, err error) { s.(typedSink[U]).deliverTyped(v, err) }

func (c *cont[S, T, U]) fail(err error) {
	c.a.mu.Lock()
	to := c.to
	c.a.mu.Unlock()
	if to != nil {
		to.fail(err)
	}
}

func (c *cont[S, T, U]) run(p *Proc) {
	v, err := c.f.Get()
	n := c.k(p, c.a.stateOf(p), v, err)
	c.k = nil
	p.a.flags.And(^uint32(fHandling))
	u, uerr, next := n.v, n.err, n.k
	chained := next != nil && p.madeHere(next)
	if next != nil && !chained {
		uerr = errForeignNext
	}
	c.a.mu.Lock()
	to := c.to
	if to == nil { // detached, or its maker has not returned yet: keep the result
		if chained {
			c.early = &contResult[U]{next: next}
		} else {
			c.early = &contResult[U]{v: u, err: uerr}
		}
	}
	c.a.mu.Unlock()
	switch {
	case to == nil:
	case chained:
		next.resultTo(to) // the next continuation answers
	default:
		deliverTo(to, u, uerr)
	}
}
