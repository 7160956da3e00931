package crisp

import (
	"context"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
)

// SendOption sets a property of one message: its deadline, cost, context,
// priority, tag or name. Options are plain values, applied in order
// without allocating.
type SendOption struct {
	kind sendKind
	n    int64 // Within's duration, Priority's value
	t    time.Time
	v    any // Tag's value, Context's context
	s    string
}

type sendKind uint8

const (
	optNone sendKind = iota
	optWithin
	optBy
	optContext
	optPriority
	optTag
	optName
	optKey
	optCost
)

// Within gives the message a start deadline d from now on the system's
// clock. A d of zero or less means "must start now": the message is
// missed at once and never queued. With several deadline options the
// earliest wins.
func Within(d time.Duration) SendOption { return SendOption{kind: optWithin, n: int64(d)} }

// By gives the message an absolute start deadline. A deadline already
// passed fails the message at once; the zero time means no deadline.
func By(t time.Time) SendOption { return SendOption{kind: optBy, t: t} }

// Context ties the message to ctx: it takes the earlier of its own
// deadline and ctx's, it fails at once with ctx.Err() if ctx has already
// ended, and it is dropped with ctx.Err() if ctx ends before it starts.
// The handler sees ctx as Proc.Context.
func Context(ctx context.Context) SendOption { return SendOption{kind: optContext, v: ctx} }

// Priority sets the message's priority for policies that use one
// (policy.ByPriority): larger runs first. The default is 0.
func Priority(n int) SendOption { return SendOption{kind: optPriority, n: int64(n)} }

// Tag attaches any value to the message for the actor's policy to read
// (a customer, a tenant, a class of service). Passing a non-pointer value
// may allocate, as any conversion to an interface does.
func Tag(v any) SendOption { return SendOption{kind: optTag, v: v} }

// MessageName names the message in errors, logs and traces (Proc.Name,
// policy.Item.Name). By default a message is named after its handler
// function.
func MessageName(name string) SendOption { return SendOption{kind: optName, s: name} }

// Cost says the handler runs for about d, and turns the message's
// deadline into a finishing deadline: the message must start by its
// deadline minus d, so that it can finish in time, or not at all. That
// earlier instant is the message's start deadline in every respect: the
// policy orders by it (under EDF, least slack first), the watchdog fails
// the message when it passes, and Proc.Deadline and a
// *deadline.MissedError report it. Use it when late work is worthless:
// an overloaded actor then drops what it could no longer finish in time
// instead of running it late and making later messages late too. Cost
// has no effect on a message without a deadline; with several Cost
// options the last wins. It panics if d is negative.
func Cost(d time.Duration) SendOption {
	if d < 0 {
		panic("crisp: Cost with a negative duration")
	}
	return SendOption{kind: optCost, n: int64(d)}
}

// Key names data that the message reads or writes: messages to one actor
// or group with a key in common never run at the same time and start in
// the order they were sent, whatever the policy says; the policy orders
// the messages whose keys are free. A message may carry several keys (a
// transfer between two accounts carries both). Keys are compared with ==;
// nil is a key like any other; a key that is not comparable is a misuse
// panic. On a single actor, which runs one message at a time anyway, a
// key keeps the messages that share it in arrival order, and a process
// that waits (Await, AwaitCond, Sleep, Suspend) keeps its keys meanwhile.
func Key(k any) SendOption { return SendOption{kind: optKey, v: k} }

// Call sends fn to an actor (or a group) and returns the future of its
// result. fn runs on the actor, with its state, after the work the
// actor's policy puts before it; no other handler of the actor (of the
// group's worker) runs meanwhile. The future resolves
// exactly once: with fn's results, or with a *deadline.MissedError if fn
// could not start by the message's deadline, a *PanicError if fn
// panicked, ErrStopped if the actor stopped first, or the context's error.
//
// Call never blocks. It panics if to or fn is nil.
func Call[S, T any](to Ref[S], fn func(p *Proc, s S) (T, error), opts ...SendOption) *future.Future[T] {
	a := actorOf(to, "Call")
	if fn == nil {
		panic("crisp: Call with a nil handler")
	}
	c := &call[S, T]{a: a, fn: fn}
	plumb.SetSource(&c.pr, c)
	a.send(&c.message, c, opts)
	return c.pr.Future()
}

// CallNext is Call for a handler whose result may come later: fn returns
// a Next, either Return's result now or Then's continuation, whose own
// result (possibly through further Thens) resolves the future. No
// goroutine waits meanwhile, and the actor serves other messages. See
// Then.
//
// CallNext never blocks. It panics if to or fn is nil.
func CallNext[S, T any](to Ref[S], fn func(p *Proc, s S) Next[S, T], opts ...SendOption) *future.Future[T] {
	a := actorOf(to, "CallNext")
	if fn == nil {
		panic("crisp: CallNext with a nil handler")
	}
	c := &callNext[S, T]{next: fn}
	c.a = a
	plumb.SetSource(&c.pr, &c.call)
	a.send(&c.message, c, opts)
	return c.pr.Future()
}

// Tell sends fn to an actor (or a group) without a future: fire and forget. It obeys
// the same options and order as Call; a Tell that misses its deadline is
// reported only to the actor's miss hook, and one that panics only to the
// system's logger. Tell never blocks. It panics if to or fn is nil.
func Tell[S any](to Ref[S], fn func(p *Proc, s S), opts ...SendOption) {
	a := actorOf(to, "Tell")
	if fn == nil {
		panic("crisp: Tell with a nil handler")
	}
	var t *tell[S]
	if a.reuse.Load() != nil {
		t = a.reuse.Swap(nil)
	}
	if t == nil {
		t = &tell[S]{a: a}
	}
	t.fn = fn
	a.send(&t.message, t, opts)
}

// send applies opts to m and queues it on a, or fails it at once.
func (a *core) send(m *message, j job, opts []SendOption) {
	s := a.sys
	var (
		dl      time.Time
		now     time.Time
		haveNow bool
		ctx     context.Context
		cost    time.Duration
	)
	for i := range opts {
		o := &opts[i]
		switch o.kind {
		case optWithin:
			if !haveNow {
				now, haveNow = s.now(), true
			}
			dl = deadline.Earliest(dl, now.Add(time.Duration(o.n)))
		case optBy:
			dl = deadline.Earliest(dl, o.t)
		case optContext:
			ctx, _ = o.v.(context.Context)
		case optPriority:
			m.item.Priority = int(o.n)
		case optTag:
			m.item.Tag = o.v
		case optName:
			m.item.Name = o.s
		case optKey:
			if m.ext == nil || m.ext.keys == nil {
				m.setKeys(opts) // all keys at once, on the first
			}
		case optCost:
			cost = time.Duration(o.n)
		}
	}
	setJob(&m.item, j)
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			m.state.Store(stCancelled)
			j.fail(err)
			return
		}
		if cd, ok := ctx.Deadline(); ok {
			dl = deadline.Earliest(dl, cd)
		}
	}
	if cost > 0 && !dl.IsZero() {
		dl = dl.Add(-cost)
	}
	m.item.Deadline = dl
	if !dl.IsZero() {
		if !haveNow {
			now = s.now()
		}
		if !now.Before(dl) {
			m.state.Store(stMissed)
			a.miss(m, now)
			return
		}
	}
	if ctx != nil {
		if m.ext == nil {
			m.ext = &msgExt{}
		}
		m.ext.ctx = ctx // beside any keys setKeys recorded
		if ctx.Done() != nil {
			m.ext.stop = context.AfterFunc(ctx, func() { a.cancel(m) })
		}
	}
	// m.state is stQueued (the zero value) from here: a context that ends
	// now cancels it, and the intake's drain skips it.
	if a.stopped() {
		if m.state.CompareAndSwap(stQueued, stStopped) {
			a.fail(j, ErrStopped)
		}
		return
	}
	for {
		h := a.intake.Load()
		m.next = h
		if a.intake.CompareAndSwap(h, m) {
			break
		}
	}
	if a.stopped() { // stopped meanwhile: nobody will drain the intake
		a.failStrays(a.intake.Swap(nil))
		return
	}
	if a.grp != nil {
		a.startGroup()
	} else {
		a.start()
	}
	if a.handling() && a.holder.Load() != uintptr(gid.Current()) && a.mu.TryLock() {
		// The actor is busy (and not with this sender, whose own stack
		// should stay shallow) and its lock free: queue the message now
		// rather than leave it to the runner or, worse, to the watchdog,
		// which would have to sort a backlog before failing what is due.
		a.drain()
		if !dl.IsZero() {
			a.watchQueued()
		}
		failed := a.takeFailed()
		a.mu.Unlock()
		a.failAll(failed)
		return
	}
	if !dl.IsZero() {
		a.needWatch(dl, now)
	}
}

// cancel drops m because its context ended before it started. It runs
// on context.AfterFunc's goroutine, possibly before send has stored the
// stop function AfterFunc returned: it must not touch m.ext.stop, which
// has nothing left to stop anyway.
func (a *core) cancel(m *message) {
	if !m.state.CompareAndSwap(stQueued, stCancelled) {
		return
	}
	a.report(jobOf(&m.item), m.ext.ctx.Err())
	a.mu.Lock()
	a.unqueue(m)
	ready := a.unblocked()
	failed := a.takeFailed()
	a.mu.Unlock()
	a.failAll(failed)
	if ready {
		a.startAny()
	}
}
