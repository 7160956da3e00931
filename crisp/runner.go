package crisp

import (
	"runtime"
	"runtime/debug"
)

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
	if !a.live {
		if s.join(a) {
			a.live = true
		} else { // the system is shutting down
			a.mu.Unlock()
			a.stop()
			a.mu.Lock()
		}
	}
	for {
		if a.stopped() {
			a.release()
			a.mu.Unlock()
			return
		}
		m, j := a.next()
		if m != nil {
			// Deadlines still queued behind m are the watchdog's to
			// report once m's handler runs.
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
		grace = runnerGrace
		a.mu.Unlock()

		if dl := m.item.Deadline; !dl.IsZero() {
			if now := s.clk.Now(); !now.Before(dl) {
				m.state.Store(stMissed)
				a.miss(m, now)
				a.mu.Lock()
				continue
			}
		}
		m.state.Store(stRunning)
		m.ext.release()

		// A sender that read handling as false pushed before this store,
		// and so is in the intake now: the check below covers it.
		a.flags.Or(fHandling)
		if a.intake.Load() != nil {
			a.mu.Lock()
			a.drain()
			a.watchQueued()
			failed := a.takeFailed()
			a.mu.Unlock()
			a.failAll(failed)
		}

		p.m = m
		a.invoke(p, j)
		p.m = nil
		a.flags.And(^uint32(fHandling))
		a.mu.Lock()
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

// release gives up the actor and reports true, unless work arrived in
// the meantime: then the actor is kept and release reports false. Called
// with a.mu held.
func (a *core) release() bool {
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

// abandon runs when a handler ends its goroutine with runtime.Goexit
// instead of returning. The message fails and the actor passes to a new
// goroutine.
func (a *core) abandon(p *Proc) {
	a.flags.And(^uint32(fHandling))
	if m := p.m; m != nil {
		p.m = nil
		a.fail(m.item.Payload.(job), errGoexit)
	}
	a.sys.gor.Add(1)
	go a.run(nil) // still active: the new goroutine takes the actor over
}
