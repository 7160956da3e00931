package crisp

import (
	"runtime"
	"runtime/debug"

	"github.com/crisprt/crisp/internal/gid"
)

// How an actor passes between goroutines.
//
// At most one goroutine holds an actor at a time (fActive): it runs the
// actor's ready work in the loop below, and it is the only goroutine that
// touches the actor's state. A goroutine starts holding an actor when a
// sender finds it idle (start), and stops when nothing is ready (release).
//
// When a handler suspends (Await, AwaitCond, Suspend), its goroutine G
// keeps the handler's stack but gives up the actor: under the actor's
// lock it marks the process suspended, keeps it on the actor's list, and
// passes the actor on (passOn): to a new runner goroutine if a message or
// continuation is ready, to the goroutine of a process ready to resume,
// or to nobody. G then parks on its Proc's wake channel. When what G
// waits for happens, the process becomes ready (resume) and the policy
// orders it with everything else: whichever goroutine holds the actor
// and takes it from the queue hands the actor over by sending on G's wake
// channel, then exits; G carries on in its handler, and when the handler
// returns G goes on as the actor's runner. If the actor is idle when the
// process becomes ready and nothing else is, the actor goes to G at once,
// with no goroutine started. A send on the wake channel is the only way
// the actor moves to a parked goroutine, so at most one process of an
// actor runs at any instant.

// runnerGrace is how many times an idle runner yields the processor,
// looking for new work, before it gives up the actor and exits. An actor
// in a conversation (request, reply, request) then keeps its goroutine
// instead of starting one per message, while an idle actor still holds
// none for more than a few microseconds.
const runnerGrace = 4

// start makes sure a goroutine holds the actor, after work was pushed.
func (a *core) start() {
	if !a.acquire() {
		return
	}
	a.sys.busy.Add(1)
	a.sys.gor.Add(1)
	go a.run(nil)
}

// run is the body of every runner goroutine. first, if not nil, is a
// message or continuation already taken for it to run.
func (a *core) run(first *message) {
	p := &Proc{a: a, g: gid.Current()}
	returned := false
	defer func() {
		if !returned {
			// Handlers' panics are recovered in invoke: a panic here is
			// the runtime's own bug and must surface, not deadlock.
			if r := recover(); r != nil {
				panic(r)
			}
			a.abandon(p) // runtime.Goexit in a handler, or a stopped process
		}
		a.sys.goroutineDone()
	}()
	a.mu.Lock()
	if !a.live {
		if a.sys.join(a) {
			a.live = true
		} else { // the system is shutting down
			a.mu.Unlock()
			a.stop()
			a.mu.Lock()
		}
	}
	a.loop(p, first)
	returned = true
}

// loop runs the actor's ready work until there is none, then releases
// the actor, or hands it to a resumed process and returns. It is entered
// with a.mu held, holding the actor, and left without a.mu.
func (a *core) loop(p *Proc, first *message) {
	s := a.sys
	grace := runnerGrace
	a.holder.Store(uintptr(p.g))
	for {
		if a.stopped() {
			if first != nil {
				a.addFailure(failure{m: first, err: ErrStopped})
				first = nil
			}
			a.release()
			failed := a.takeFailed()
			a.mu.Unlock()
			a.failAll(failed)
			return
		}
		if a.coop != nil && a.coop.dirty && len(a.coop.conds) > 0 {
			a.mu.Unlock()
			a.checkConds()
			a.mu.Lock()
			continue
		}
		var (
			m      *message
			j      job
			resume bool
		)
		if first != nil {
			m, j, first = first, first.item.Payload.(job), nil
		} else {
			m, j, resume = a.next()
		}
		if m != nil && !resume {
			// Deadlines still queued behind m are the watchdog's to
			// report once m runs.
			a.watchQueued()
		}
		if a.failed != nil {
			failed := a.takeFailed()
			a.mu.Unlock()
			a.failAll(failed)
			a.mu.Lock()
		}
		if m == nil {
			if grace > 0 {
				a.mu.Unlock()
				for ; grace > 0 && a.intake.Load() == nil; grace-- {
					runtime.Gosched()
				}
				a.mu.Lock()
				continue
			}
			if a.release() {
				a.mu.Unlock()
				return
			}
			grace = runnerGrace
			continue
		}
		if resume {
			a.handTo(m)
			a.mu.Unlock()
			return // the actor is the resumed process's now
		}
		grace = runnerGrace
		a.mu.Unlock()

		if dl := m.item.Deadline; !dl.IsZero() && !m.item.Resumed {
			if now := s.clk.Now(); !now.Before(dl) {
				m.state.Store(stMissed)
				a.miss(m, now)
				a.mu.Lock()
				continue
			}
		}
		m.state.Store(stRunning)
		m.ext.releaseCtx()
		a.beginHandler()

		p.m = m
		a.invoke(p, j)
		p.m = nil
		a.flags.And(^uint32(fHandling))
		a.mu.Lock()
		if a.coop != nil {
			a.coop.dirty = true // a process finished: conditions may hold now
		}
	}
}

// beginHandler marks the actor busy in a handler. A sender that read
// handling as false pushed before this store, and so is in the intake
// now: the check below covers it. Called without a.mu.
func (a *core) beginHandler() {
	a.flags.Or(fHandling)
	if a.intake.Load() != nil {
		a.mu.Lock()
		a.drain()
		a.watchQueued()
		failed := a.takeFailed()
		a.mu.Unlock()
		a.failAll(failed)
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

// handTo gives the actor to resumed process m's goroutine. Called with
// a.mu held, by the goroutine giving the actor up.
func (a *core) handTo(m *message) {
	a.holder.Store(uintptr(m.ext.proc.g))
	m.ext.proc.wake <- struct{}{}
}

// passOn gives the actor, which the calling goroutine holds and is
// giving up while its process waits, to the next ready work, or releases
// it. Called with a.mu held.
func (a *core) passOn() {
	for {
		m, _, resume := a.next()
		if m == nil {
			if a.release() {
				return
			}
			continue // work arrived meanwhile
		}
		if resume {
			a.handTo(m)
			return
		}
		a.sys.gor.Add(1)
		go a.run(m)
		return
	}
}

// release gives up the actor and reports true, unless work arrived in
// the meantime: then the actor is kept and release reports false. Called
// with a.mu held.
func (a *core) release() bool {
	a.holder.Store(0)
	a.flags.And(^uint32(fActive))
	// A sender that pushed before the store above saw the actor held and
	// started nothing: look once more.
	if !a.stopped() && a.intake.Load() != nil && a.acquire() {
		return false
	}
	if a.live && a.qhead == nil {
		a.live = false
		a.sys.leave(a)
	}
	if a.qhead == nil { // let an idle actor's queues be collected
		a.q, a.dl = nil, nil
	}
	a.sys.busyDone()
	return true
}

// abandon runs when a goroutine leaves through runtime.Goexit: either a
// suspended process ended because its actor stopped (it holds no actor),
// or a handler called Goexit (its message fails and the actor passes to
// a new goroutine).
func (a *core) abandon(p *Proc) {
	m := p.m
	p.m = nil
	if p.stopErr != nil {
		if m != nil {
			a.fail(m.item.Payload.(job), p.stopErr)
		}
		return
	}
	a.flags.And(^uint32(fHandling))
	if m != nil {
		a.fail(m.item.Payload.(job), errGoexit)
	}
	a.sys.gor.Add(1)
	go a.run(nil) // still active: the new goroutine takes the actor over
}
