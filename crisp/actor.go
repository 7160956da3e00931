package crisp

import (
	"context"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

// Actor is an actor with state of type S. Its handlers, sent with Call
// and Tell, run one at a time, each receiving the state; only handlers
// touch the state, so it needs no lock. S is usually a pointer to a
// struct, so that handlers can change it.
//
// An idle actor holds no goroutine: a runner starts when work arrives
// and exits shortly after none is ready. All methods are safe for
// concurrent use.
type Actor[S any] struct {
	core
	state S
}

// core is the part of an actor that does not depend on its state type.
type core struct {
	sys      *System
	pol      policy.Policy
	name     string
	onMiss   func(*deadline.MissedError)
	typeName func() string
	shard    uint8

	mu        sync.Mutex   // guards everything below, and queued messages' prev, next, watched
	q         policy.Queue // ready work in policy order; nil until first used
	qhead     *message     // queued work in the order it was queued
	qtail     *message
	seq       uint64   // last arrival number given out
	active    bool     // a goroutine holds the actor: runs its work or looks for more
	live      bool     // in the system's live list
	stopped   bool     //
	running   *message // the process the holder has started, if any
	unwatched *message // a deadlined message queued to a free actor, not yet watched
	sprev     *core    // live-list links, guarded by the shard's mu
	snext     *core
}

// ActorOption configures an actor at Spawn.
type ActorOption interface{ applyActor(*core) }

type actorOptionFunc func(*core)

func (f actorOptionFunc) applyActor(c *core) { f(c) }

// WithPolicy sets the order in which the actor takes its ready work; the
// default is policy.EDF().
func WithPolicy(p policy.Policy) ActorOption {
	return actorOptionFunc(func(c *core) {
		if p != nil {
			c.pol = p
		}
	})
}

// WithName names the actor in errors and logs. By default an actor is
// named after its state type.
func WithName(name string) ActorOption {
	return actorOptionFunc(func(c *core) { c.name = name })
}

// WithMissHook sets a function told of every message of the actor that
// misses its deadline, after its future has been failed: the actor's own
// extension of the watchdog. It runs on whichever goroutine noticed the
// miss (usually the watchdog's) and must be quick; a panic in it is
// logged and otherwise ignored.
func WithMissHook(f func(*deadline.MissedError)) ActorOption {
	return actorOptionFunc(func(c *core) { c.onMiss = f })
}

var shardSeq atomic.Uint32

// Spawn creates an actor with the given initial state on sys. The actor
// costs a few hundred bytes and no goroutine until it has work. Spawn
// panics if sys is nil; on a system that has shut down it returns an
// actor whose messages all fail with ErrStopped.
func Spawn[S any](sys *System, state S, opts ...ActorOption) *Actor[S] {
	if sys == nil {
		panic("crisp: Spawn on a nil system")
	}
	a := &Actor[S]{state: state}
	a.sys = sys
	a.pol = policy.EDF()
	a.typeName = typeName[S]
	a.shard = uint8(shardSeq.Add(1) % nShards)
	for _, o := range opts {
		o.applyActor(&a.core)
	}
	if sys.closed.Load() {
		a.stopped = true
	}
	return a
}

func typeName[S any]() string { return reflect.TypeFor[S]().String() }

// Stop stops the actor: messages still queued fail with ErrStopped, and
// so does every later message. A handler already running finishes and
// delivers its own result. Stop does not wait for it. Stop is idempotent.
func (a *Actor[S]) Stop() { a.stop() }

// Name returns the actor's name.
func (a *Actor[S]) Name() string { return a.displayName() }

// System returns the system the actor belongs to.
func (a *Actor[S]) System() *System { return a.sys }

func (a *core) displayName() string {
	if a.name != "" {
		return a.name
	}
	return a.typeName()
}

// runnerGrace is how many times an idle runner yields the processor,
// looking for new work, before it gives up the actor and exits. An actor
// in a conversation (request, reply, request) then keeps its goroutine
// instead of starting one per message, while an idle actor still holds
// none for more than a few microseconds.
const runnerGrace = 4

// enqueue queues m on a (or fails it if a cannot take it) and makes sure
// a goroutine holds a. now is the clock reading made at send, valid if m
// has a deadline.
func (a *core) enqueue(m *message, j job, now time.Time, ctx context.Context) {
	s := a.sys
	a.mu.Lock()
	if a.stopped || (!a.live && !s.join(a)) {
		a.stopped = true
		a.mu.Unlock()
		m.state.Store(stStopped)
		j.fail(ErrStopped)
		return
	}
	a.live = true
	if a.q == nil {
		a.q = a.pol.NewQueue()
	}
	a.seq++
	m.item.Seq = a.seq
	m.state.Store(stQueued)
	var failed []failure
	if perr := a.qpush(m); perr != nil {
		// The policy cannot order m: m fails and never runs. The queue
		// may be left in any state, so it is rebuilt from the list of
		// what is queued.
		m.state.Store(stFailed)
		failed = append(a.rebuild(), failure{j, perr})
	} else {
		a.link(m)
		if !m.item.Deadline.IsZero() {
			if a.running != nil || a.qhead != m {
				m.watched = s.wd.Watch(&m.wd, m, m.item.Deadline, now)
			} else {
				// The actor is free and will take m next: the watchdog is
				// needed only if something gets ahead of m (see loop).
				a.unwatched = m
			}
		}
		if ctx != nil {
			m.ext = &msgContext{ctx: ctx}
			if ctx.Done() != nil {
				m.ext.stop = context.AfterFunc(ctx, func() { a.cancel(m) })
			}
		}
	}
	if !a.active {
		a.active = true
		s.busy.Add(1)
		s.gor.Add(1)
		go a.run(nil)
	}
	a.mu.Unlock()
	a.failAll(failed)
}

// failure is an outcome to deliver once the actor's lock is released:
// resolving a future runs its waiters' callbacks, which may need the
// lock.
type failure struct {
	j   job
	err error
}

func (a *core) failAll(fs []failure) {
	for _, f := range fs {
		a.fail(f.j, f.err)
	}
}

// fail delivers err as j's outcome, logging what no future will tell.
func (a *core) fail(j job, err error) {
	j.hdr().ext.release()
	j.fail(err)
	if j.answered() {
		return
	}
	// A Tell has no future: a panic or a policy failure would otherwise
	// go unseen.
	switch e := err.(type) {
	case *PanicError:
		a.sys.log.Error("crisp: handler panicked", "actor", a.displayName(), "message", j.hdr().name(j), "panic", e.Value, "stack", string(e.Stack))
	case *PolicyError:
		a.sys.log.Error("crisp: policy panicked", "actor", a.displayName(), "message", j.hdr().name(j), "panic", e.Value, "stack", string(e.Stack))
	}
}

// cancel drops m because its context ended before it started.
func (a *core) cancel(m *message) {
	a.mu.Lock()
	if !m.state.CompareAndSwap(stQueued, stCancelled) {
		a.mu.Unlock()
		return
	}
	watched := m.watched
	m.watched = false
	failed := a.unqueue(m)
	a.mu.Unlock()
	if watched {
		a.sys.wd.Cancel(&m.wd)
	}
	a.failAll(failed)
	a.fail(m.item.Payload.(job), m.ext.ctx.Err())
}

// miss fails m, which could not start by its deadline, and tells the
// actor's miss hook.
func (a *core) miss(m *message, j job, now time.Time) {
	err := &deadline.MissedError{
		Actor:    a.displayName(),
		Message:  m.name(j),
		Deadline: m.item.Deadline,
		Detected: now,
	}
	m.ext.release()
	j.fail(err)
	if a.sys.log.Enabled(context.Background(), slog.LevelDebug) {
		a.sys.log.Debug("crisp: deadline missed", "err", err)
	}
	if a.onMiss != nil {
		a.callMissHook(err)
	}
}

func (a *core) callMissHook(err *deadline.MissedError) {
	defer func() {
		if r := recover(); r != nil {
			a.sys.log.Error("crisp: miss hook panicked", "actor", a.displayName(), "panic", r)
		}
	}()
	a.onMiss(err)
}

// link appends m to the list of queued messages. Called with a.mu held.
func (a *core) link(m *message) {
	m.prev, m.next = a.qtail, nil
	if a.qtail != nil {
		a.qtail.next = m
	} else {
		a.qhead = m
	}
	a.qtail = m
}

// unlink removes m from the list of queued messages. Called with a.mu held.
func (a *core) unlink(m *message) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		a.qhead = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		a.qtail = m.prev
	}
	m.prev, m.next = nil, nil
}

// unqueue takes queued m out of the list and the policy's queue. If the
// policy panics, the queue is rebuilt and the failures it caused are
// returned for delivery after unlocking. Called with a.mu held.
func (a *core) unqueue(m *message) []failure {
	a.dequeued(m)
	if _, perr := a.qremove(m); perr != nil {
		return a.rebuild()
	}
	return nil
}

// The policy's queue runs user code (a comparison, or a whole custom
// queue); a panic there must cost the work being ordered, not the actor
// or the process. qpush, qpop and qremove turn such a panic into a
// *PolicyError.

func (a *core) qpush(m *message) (perr *PolicyError) {
	defer recoverPolicy(&perr)
	a.q.Push(&m.item)
	return nil
}

func (a *core) qpop() (it *policy.Item, perr *PolicyError) {
	defer recoverPolicy(&perr)
	return a.q.Pop(), nil
}

func (a *core) qremove(m *message) (ok bool, perr *PolicyError) {
	defer recoverPolicy(&perr)
	return a.q.Remove(&m.item), nil
}

func recoverPolicy(perr **PolicyError) {
	if r := recover(); r != nil {
		*perr = &PolicyError{Value: r, Stack: debug.Stack()}
	}
}

// rebuild replaces a queue the policy may have left inconsistent with a
// fresh one holding every queued message. A message the policy cannot
// push even into a fresh queue fails with the policy's panic. Called with
// a.mu held; the failures are delivered by the caller after unlocking.
func (a *core) rebuild() []failure {
	var failed []failure
	a.q = a.pol.NewQueue()
	for m := a.qhead; m != nil; {
		next := m.next
		if perr := a.qpush(m); perr != nil {
			a.q = a.pol.NewQueue() // start over without m
			if m.state.CompareAndSwap(stQueued, stFailed) {
				failed = append(failed, failure{m.item.Payload.(job), perr})
			}
			a.unlink(m)
			if a.unwatched == m {
				a.unwatched = nil
			}
			if m.watched {
				m.watched = false
				a.sys.wd.Cancel(&m.wd)
			}
			return append(failed, a.rebuild()...)
		}
		m = next
	}
	return failed
}

// take pops the next queued message, or returns nil when nothing is
// ready. A queue that misbehaves (panics, loses work, returns an item it
// was never given) is rebuilt; if it misbehaves again at once, this take
// falls back to arrival order, so that a broken policy costs order, never
// work. Entries a broken queue kept after they left are skipped. Called
// with a.mu held; failures are for delivery after unlocking.
func (a *core) take() (*message, job, []failure) {
	var failed []failure
	rebuilt := false
	for a.q != nil {
		it, perr := a.qpop()
		var fault any
		switch {
		case perr != nil:
			fault = perr
		case it == nil:
			if a.qhead == nil {
				return nil, nil, failed
			}
			fault = "the queue is empty but work is queued"
		default:
			j, ok := it.Payload.(job)
			if !ok || j.actor() != a {
				fault = "the queue returned an item it was not given"
				break
			}
			m := j.hdr()
			if m.state.Load() != stQueued {
				continue // failed or left while the queue was broken
			}
			a.dequeued(m)
			return m, j, failed
		}
		if a.qhead == nil {
			return nil, nil, failed // nothing is queued, whatever the queue says
		}
		a.sys.log.Error("crisp: policy queue misbehaved; rebuilding it", "actor", a.displayName(), "fault", fault)
		if rebuilt {
			m := a.qhead
			a.dequeued(m)
			return m, m.item.Payload.(job), failed
		}
		rebuilt = true
		failed = append(failed, a.rebuild()...)
	}
	return nil, nil, failed
}

// dequeued takes m, just chosen to run, off the list of queued work.
// Called with a.mu held.
func (a *core) dequeued(m *message) {
	a.unlink(m)
	if a.unwatched == m {
		a.unwatched = nil
	}
}

// run is the body of every goroutine that holds an actor. p is the
// goroutine's process context (made here for a new runner).
func (a *core) run(p *Proc) {
	if p == nil {
		p = &Proc{a: a}
	}
	returned := false
	defer func() {
		if !returned {
			// Handlers' panics are recovered in invoke: a panic here is
			// the runtime's own bug and must surface, not deadlock.
			if r := recover(); r != nil {
				panic(r)
			}
			a.abandon(p) // the handler called runtime.Goexit
		}
		a.sys.goroutineDone()
	}()
	a.loop(p)
	returned = true
}

// loop runs the actor's ready work until there is none, then releases
// the actor. It is entered and left without a.mu held.
func (a *core) loop(p *Proc) {
	s := a.sys
	grace := runnerGrace
	a.mu.Lock()
	for {
		if a.stopped {
			a.release()
			a.mu.Unlock()
			return
		}
		m, j, failed := a.take()
		if failed != nil {
			a.mu.Unlock()
			a.failAll(failed)
			a.mu.Lock()
			continue
		}
		if m == nil {
			if grace > 0 {
				grace--
				a.mu.Unlock()
				runtime.Gosched()
				a.mu.Lock()
				continue
			}
			a.release()
			a.mu.Unlock()
			return
		}
		grace = runnerGrace
		m.state.Store(stTaken)
		a.running = m
		watched := m.watched
		m.watched = false
		// m goes first. If a deadlined message queued to the free actor
		// is still waiting, it is now behind m: from here on only the
		// watchdog can tell its caller of a miss in time.
		var late *message
		if u := a.unwatched; u != nil {
			a.unwatched = nil
			if u.watched = s.wd.Watch(&u.wd, u, u.item.Deadline, s.clk.Now()); !u.watched {
				late = u
			}
		}
		a.mu.Unlock()

		if watched {
			s.wd.Cancel(&m.wd)
		}
		if late != nil {
			late.Expire(s.clk.Now())
		}
		if !m.item.Deadline.IsZero() {
			if now := s.clk.Now(); !now.Before(m.item.Deadline) {
				m.state.Store(stMissed)
				a.miss(m, j, now)
				a.mu.Lock()
				a.running = nil
				continue
			}
		}
		m.state.Store(stRunning)
		m.ext.release()
		p.m = m
		a.invoke(p, j)
		p.m = nil
		a.mu.Lock()
		a.running = nil
	}
}

// invoke runs j's handler, turning a panic into j's *PanicError. A
// runtime.Goexit passes through (recover returns nil for it); run's
// deferred abandon deals with it.
func (a *core) invoke(p *Proc, j job) {
	defer func() {
		if r := recover(); r != nil {
			a.fail(j, &PanicError{Value: r, Stack: debug.Stack()})
		}
	}()
	j.run(p)
}

// release gives up the actor: no goroutine holds it any more. Called with
// a.mu held.
func (a *core) release() {
	a.active = false
	if a.live && a.qhead == nil {
		a.live = false
		a.sys.leave(a)
	}
	a.sys.busyDone()
}

// abandon runs when a handler ends its goroutine with runtime.Goexit
// instead of returning. The message fails and the actor passes to a new
// goroutine if work is waiting.
func (a *core) abandon(p *Proc) {
	m := p.m
	p.m = nil
	if m != nil {
		a.fail(m.item.Payload.(job), errGoexit)
	}
	a.mu.Lock()
	a.running = nil
	if a.qhead != nil && !a.stopped {
		a.sys.gor.Add(1)
		go a.run(nil)
	} else {
		a.release()
	}
	a.mu.Unlock()
}

// stop stops the actor: everything queued fails with ErrStopped.
func (a *core) stop() {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	a.stopped = true
	var drained []*message
	for m := a.qhead; m != nil; {
		next := m.next
		m.prev, m.next = nil, nil
		if m.state.CompareAndSwap(stQueued, stStopped) {
			drained = append(drained, m)
		}
		m = next
	}
	a.qhead, a.qtail, a.q, a.unwatched = nil, nil, nil, nil
	if !a.active && a.live {
		a.live = false
		a.sys.leave(a)
	}
	a.mu.Unlock()
	for _, m := range drained {
		// m left the queue as stopped: nothing else touches it now.
		if m.watched {
			m.watched = false
			a.sys.wd.Cancel(&m.wd)
		}
		a.fail(m.item.Payload.(job), ErrStopped)
	}
}
