package crisp

import (
	"context"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
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
	optDetached
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
// panicked, ErrStopped if the actor stopped first, the context's error,
// or, refused at send, a *FullError (WithCapacity) or an
// *InfeasibleError (WithAdmission). Sent from a handler, the message
// inherits the handler's context and finishing deadline unless sent
// Detached (see the package documentation).
//
// Call never blocks, unless the actor was spawned with
// WithCapacity(n, WaitWhenFull) and its mailbox is full. It panics if to
// or fn is nil.
func Call[S, T any](to Ref[S], fn func(p *Proc, s S) (T, error), opts ...SendOption) *future.Future[T] {
	a := actorOf(to, "Call")
	if fn == nil {
		panic("crisp: Call with a nil handler")
	}
	var c *call[S, T]
	if a.itemized(opts) {
		c = newWithItem[call[S, T]]()
		c.a, c.fn = a, fn
	} else {
		c = &call[S, T]{a: a, fn: fn} // set in the literal: see newTell
	}
	c.job = c
	plumb.SetSourceAt(&c.pr, &c.job) // the job: c, a Source
	switch {
	case a.plainSend(opts):
		a.send(&c.message)
	case a.withinOnly(opts):
		a.sendWithin(&c.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&c.message, opts)
	}
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
	var c *callNext[S, T]
	if a.itemized(opts) {
		c = newWithItem[callNext[S, T]]()
		c.a, c.next = a, fn
	} else {
		c = &callNext[S, T]{call: call[S, T]{a: a}, next: fn} // set in the literal: see newTell
	}
	c.job = c
	plumb.SetSourceAt(&c.pr, &c.job) // the job: c, a Source by its call
	switch {
	case a.plainSend(opts):
		a.send(&c.message)
	case a.withinOnly(opts):
		a.sendWithin(&c.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&c.message, opts)
	}
	return c.pr.Future()
}

// Tell sends fn to an actor (or a group) without a future: fire and forget. It obeys
// the same options and order as Call; a Tell that misses its deadline is
// reported only to the actor's miss hook, and one that panics only to the
// system's logger; every failure of a Tell also goes to the system's
// dead-letter hook (WithDeadLetters). Tell blocks only as Call does, on a
// full mailbox with WaitWhenFull. It panics if to or fn is nil.
func Tell[S any](to Ref[S], fn func(p *Proc, s S), opts ...SendOption) {
	a := actorOf(to, "Tell")
	if fn == nil {
		panic("crisp: Tell with a nil handler")
	}
	plain := a.plainSend(opts)
	// The lane's tests written out, not in laneTell's call: every plain
	// Tell to an actor without a lane passes here.
	if l := a.lane.Load(); l != nil || a.flags.Load()&fFlood != 0 {
		if plain {
			if laneTell(a, l, fn) {
				return
			}
		} else if a.withinOnly(opts) {
			laneTellWithin(a, l, fn, opts)
			return
		}
	}
	t := newTell(a, opts)
	t.fn = fn
	t.job = t
	switch {
	case plain:
		a.send(&t.message)
	case a.withinOnly(opts):
		a.sendWithin(&t.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&t.message, opts)
	}
}

// withItem is a message M (a tell, call or callNext) with its policy
// item beside it, in one allocation: a message that will need its item
// (core.itemized). Others make theirs only if they enter their actor's
// policy queue.
type withItem[M any] struct {
	m  M
	it policy.Item
}

// newWithItem returns a new message M (a tell, call or callNext) with
// its policy item beside it (withItem). A message that needs no item
// is made where it is sent, one frame higher: a handler's sends run on
// its runner's small stack (see stack_internal_test.go).
func newWithItem[M any, P interface {
	*M
	hdr() *message
}]() P {
	w := &withItem[M]{}
	P(&w.m).hdr().pi.Store(&w.it)
	return &w.m
}

// itemized reports whether a message sent to a with opts will need its
// policy item: it carries a priority, a tag or a name (hasMeta), or a's
// policy orders every message (plainOK: not EDF or FIFO, or a group).
// Such a message is made with its item beside it (withItem): one
// allocation, not two.
func (a *core) itemized(opts []SendOption) bool {
	return !a.cfg.plain || a.cfg.grp != nil || hasMeta(opts)
}

// hasMeta reports whether opts set a priority, a tag or a name.
func hasMeta(opts []SendOption) bool {
	for _, o := range opts {
		if k := o.kind; k == optPriority || k == optTag || k == optName {
			return true
		}
	}
	return false
}

// plainSend reports whether a message to a with opts is plain: no
// option, and nothing else to apply (unadorned). Call, CallNext and
// Tell send a plain message with send, one with one Within with
// sendWithin and any other with sendWith, each called directly: a
// handler's sends run on its runner's small stack (see
// stack_internal_test.go), and none is then under another's frame.
func (a *core) plainSend(opts []SendOption) bool { return len(opts) == 0 && a.unadorned() }

// withinOnly reports whether a message to a with opts has one Within
// and nothing else to apply (unadorned): sendWithin's message, the
// usual one with a deadline.
func (a *core) withinOnly(opts []SendOption) bool {
	return len(opts) == 1 && opts[0].kind == optWithin && a.unadorned()
}

// unadorned reports whether a message to a gets nothing beyond its own
// options: nothing to inherit from the sending handler, no observer and
// no bound.
func (a *core) unadorned() bool {
	return inheriting.n.Load() == 0 && a.sys.obs == nil && a.bound == nil
}

// sendWithin queues m, a message whose one option is Within(d)
// (withinOnly) and whose job is set (message.job), on a, or fails it
// at once: what sendWith and admit do for it, without gathering options
// that are not there. The bench's crisp+dl sends every message so: with
// this path its time over crisp's went, in the quick suite (Intel Xeon,
// 2 vCPU, 18 runs each), counting 1.55 -> 1.36, threadring 1.27 ->
// 1.15, chameneos 1.32 -> 1.24, fork-join 1.34 -> 1.29.
//
// The clock's reading stays a key (System.since), and an actor with a
// lane takes m there if its deadline comes no earlier than the lane's
// last entry's.
func (a *core) sendWithin(m *message, d time.Duration) {
	since := a.sys.since()
	k, ok := withinKey(since, d)
	if !ok {
		a.sendWithinTimes(m, a.sys.atKey(since), d)
		return
	}
	a.sendKeyed(m, k, since, a.lane.Load())
}

// sendKeyed queues m, with the deadline whose key is k (withinKey) from
// the reading since, through a's lane l if l is not nil and takes it,
// else through the intake.
func (a *core) sendKeyed(m *message, k, since int64, l *lane) {
	m.dk = k // positive (withinKey): its own deadline key
	if a.flags.Load()&(fStopped|fDraining) != 0 {
		a.refuseStopped(m)
		return
	}
	if l != nil {
		if k, since, ok := a.lanePushKeyed(l, messageSlot(m, k), nil, since); ok {
			a.needWatchKey(k, since)
			return
		}
	}
	// A deadline at least handFar away on the real clock cannot be
	// missed for a hand-off's hold (handoff.go): such a message may hand
	// off as a plain one does.
	if a.post(m, true, a.sys.farToHand(k, since)) {
		a.needWatchKey(k, since)
	}
}

// sendWithinTimes is sendWithin for a deadline that is due already or
// too far for a key (withinKey), with times: now, the clock's reading,
// and d.
//
//go:noinline
func (a *core) sendWithinTimes(m *message, now time.Time, d time.Duration) {
	dl := now.Add(d)
	m.setDeadline(a.sys, dl)
	if !now.Before(dl) {
		m.state.Store(stMissed)
		a.miss(m, now)
		return
	}
	if a.flags.Load()&(fStopped|fDraining) != 0 {
		a.refuseStopped(m)
		return
	}
	if a.post(m, true, false) {
		a.needWatch(dl, now)
	}
}

// send queues a plain message (plainSend) m, whose job is set
// (message.job), on a, or fails it at once. Its frame is small: it holds
// no sendOpts.
func (a *core) send(m *message) {
	// What admit does for such a message: no deadline; refused if a
	// stopped or drains.
	m.dk = 0
	if a.flags.Load()&(fStopped|fDraining) != 0 {
		a.refuseStopped(m)
		return
	}
	if l := a.lane.Load(); l != nil && a.laneSend(l, m) {
		return
	}
	// post, by hand: one frame fewer above start's.
	if !a.intakePush(m) {
		return
	}
	if a.cfg.grp != nil {
		a.startGroup()
	} else {
		a.startPlain()
	}
	// Left in the intake for the runner, even while a handler runs: a
	// plain message has no deadline to watch meanwhile, and its sender,
	// queueing it itself (post's TryLock and queueNow), took the actor's
	// lock and list into its own processor's cache, from which the
	// runner, spinning for the lock behind it, took them back. Without
	// that, whole processes (bench, one workload, -reps 2, paired runs,
	// AMD EPYC 2 vCPU, median of 8-10 pairs; BENCHMARKS.md, twenty-fifth
	// session): throughput-4x100 0.92x the time, counting 0.95,
	// fork-join 0.96, pingpong 0.94, savina-pingpong and threadring
	// 1.02 and 1.01; beside 2 hogs 0.99, 0.93, 1.04, 1.11 (spread
	// 0.78-1.46).
}

// sendWith applies opts to m, whose job is set (message.job), and
// queues it on a, or fails it at once: send for any message that is not
// plain (plainSend).
func (a *core) sendWith(m *message, opts []SendOption) {
	var o sendOpts
	o.read(m, opts)
	if inheriting.n.Load() != 0 && !o.detached {
		o.inherit() // a handler somewhere passes something on: see propagate.go
	}
	if o.hasWithin || !o.by.IsZero() {
		// Here rather than in admit: one frame fewer under the clock's
		// on a handler's small stack.
		o.now, o.haveNow = a.sys.now(), true
	}
	if !a.admit(m, &o) {
		return // failed at once
	}
	if l := a.lane.Load(); o.dl.IsZero() && l != nil && a.laneSend(l, m) {
		return
	}
	if a.post(m, !o.dl.IsZero(), a.handsOff(m, &o)) && !o.dl.IsZero() {
		a.needWatch(o.dl, o.now)
	}
}

// handsOff reports whether m, admitted with o, may hand off
// (handoff.go): a message without a deadline, whatever its other
// options, or one whose deadline is far enough (farToHand), as
// sendKeyed's.
func (a *core) handsOff(m *message, o *sendOpts) bool {
	return m.dk == 0 || a.sys.farToHand(m.dk, a.sys.dlKey(o.now))
}

// farToHand reports whether the deadline whose key is dk is at least
// handFar after the reading whose key is now, on the real clock: a
// hand-off's hold cannot make it miss.
func (s *System) farToHand(dk, now int64) bool {
	return s.realClock && dk-now >= int64(handFar)
}

// refuseStopped fails m, sent to a stopped or draining actor, with
// ErrStopped, as admit does.
//
//go:noinline
func (a *core) refuseStopped(m *message) {
	if m.state.CompareAndSwap(stQueued, stStopped) {
		a.refuse(m, m.work(), ErrStopped)
	}
}

// post puts m, admitted, on a's intake and makes sure a goroutine holds
// a. If a is busy with another sender's message, it queues m at once,
// and watches its deadline if watched is true. If hand is true, a
// handler's runner may hold a's runner back and go on as it (handOff).
// It reports whether m was left in the intake for the runner to queue.
func (a *core) post(m *message, watched, hand bool) bool {
	// m.state is stQueued (the zero value) from here: a context that ends
	// now cancels it, and the intake's drain skips it.
	if !a.intakePush(m) {
		return false
	}
	switch {
	case a.cfg.grp != nil:
		a.startGroup()
	case hand:
		a.startPlain()
	default:
		a.start()
	}
	if a.occupied() && a.holder.Load() != uintptr(gid.Current()) && a.mu.TryLock() {
		a.queueNow(watched)
		return false
	}
	return true
}

// queueNow queues the intake, and watches its deadlines if watched is
// true, for a sender that took a.mu while a's runner is in a handler.
// The actor is busy (and not with this sender, whose own stack should
// stay shallow) and its lock was free: the sender queues its message now
// rather than leave it to the runner or, worse, to the watchdog, which
// would have to sort a backlog before failing what is due. Returns
// without a.mu.
//
//go:noinline
func (a *core) queueNow(watched bool) {
	a.drain()
	if watched {
		a.watchQueued()
	}
	a.unlock()
}

// sendOpts is what a message's options say beyond the fields of its
// item, which read sets directly. read only gathers them, and send reads
// the clock once, so that no frame of read's or admit's is on the stack
// under the clock's: a handler's sends run on its runner's small stack
// (see stack_internal_test.go).
type sendOpts struct {
	by        time.Time     // the earliest By; zero if none
	within    time.Duration // the least Within, if hasWithin
	hasWithin bool
	haveNow   bool
	detached  bool      // Detached: inherit nothing
	now       time.Time // the clock's reading, if haveNow
	dl        time.Time // the start deadline, set by admit; zero if none
	ctx       context.Context
	cost      time.Duration
	// parent is the extension of the sending handler's message when it
	// has a finishing deadline to pass on (propagate.go); nil if none. A
	// pointer, not the time itself: sendOpts is on every send's stack,
	// often a runner's small one.
	parent *msgExt
}

// read applies opts to m's item and gathers the rest in o.
func (o *sendOpts) read(m *message, opts []SendOption) {
	for i := range opts {
		opt := &opts[i]
		switch opt.kind {
		case optWithin:
			if d := time.Duration(opt.n); !o.hasWithin || d < o.within {
				o.within, o.hasWithin = d, true
			}
		case optBy:
			o.by = deadline.Earliest(o.by, opt.t)
		case optContext:
			o.ctx, _ = opt.v.(context.Context)
		case optPriority:
			m.meta().Priority = int(opt.n)
		case optTag:
			m.meta().Tag = opt.v
		case optName:
			m.meta().Name = opt.s
		case optKey:
			if m.ext == nil || m.ext.keys == nil {
				m.setKeys(opts) // all keys at once, on the first
			}
		case optCost:
			o.cost = time.Duration(opt.n)
		case optDetached:
			o.detached = true
		}
	}
}

// admit sets m's start deadline and context, or fails m at once: its
// context has ended, its deadline has passed, or a has stopped. It
// reports whether m may be queued.
func (a *core) admit(m *message, o *sendOpts) bool {
	j := m.work()
	o.dl = o.by
	if o.hasWithin {
		o.dl = deadline.Earliest(o.dl, o.now.Add(o.within))
	}
	if o.ctx != nil && !o.mergeContext() {
		m.state.Store(stCancelled)
		if a.sys.obs != nil {
			a.sent(m, j, o)
		}
		a.report(j, o.ctx.Err()) // j.fail, the observer; a Tell's is a dead letter
		return false
	}
	if o.parent != nil {
		o.narrow(m)
	}
	if o.cost > 0 && !o.dl.IsZero() {
		m.setFinish(o.dl)
		o.dl = o.dl.Add(-o.cost)
	}
	m.setDeadline(a.sys, o.dl)
	if a.sys.obs != nil {
		a.sent(m, j, o)
	}
	if !o.dl.IsZero() {
		if !o.haveNow {
			o.now, o.haveNow = a.sys.now(), true
		}
		if !o.now.Before(o.dl) {
			m.state.Store(stMissed)
			a.miss(m, o.now)
			return false
		}
	}
	if a.bound != nil && !a.pass(m, j, o) {
		return false
	}
	if o.ctx != nil {
		a.watchContext(m, o.ctx)
	}
	if a.flags.Load()&(fStopped|fDraining) != 0 { // stopped, or draining: refused
		a.refuseStopped(m)
		return false
	}
	return true
}

// mergeContext makes the context's deadline bound o's. It reports false
// if the context has already ended.
func (o *sendOpts) mergeContext() bool {
	if o.ctx.Err() != nil {
		return false
	}
	if cd, ok := o.ctx.Deadline(); ok {
		o.dl = deadline.Earliest(o.dl, cd)
	}
	return true
}

// watchContext ties m to ctx: m is cancelled if ctx ends before it
// starts.
func (a *core) watchContext(m *message, ctx context.Context) {
	m.extOf().ctx = ctx // beside any keys setKeys recorded
	if ctx.Done() != nil {
		m.ext.stop = context.AfterFunc(ctx, func() { a.cancel(m) })
	}
}

// intakePush puts m on a's intake. It reports false if a stopped meanwhile:
// nobody will drain the intake, so push has failed what it held.
func (a *core) intakePush(m *message) bool {
	// Until the runner gives m its arrival number, m.seq counts the
	// entries pushed to the actor's lane before m came here: the runner
	// queues those of them that do not come after m first (laneBefore).
	m.seq = 0
	if l := a.lane.Load(); l != nil {
		m.seq = l.count()
	}
	for {
		h := a.intake.Load()
		m.next = h
		if a.intake.CompareAndSwap(h, m) {
			break
		}
	}
	if a.stopped() {
		a.failStrays(a.intake.Swap(nil))
		return false
	}
	return true
}

// cancel drops m because its context ended before it started. It runs
// on context.AfterFunc's goroutine, possibly before send has stored the
// stop function AfterFunc returned: it must not touch m.ext.stop, which
// has nothing left to stop anyway.
func (a *core) cancel(m *message) {
	if !m.state.CompareAndSwap(stQueued, stCancelled) {
		return
	}
	a.report(m.work(), m.ext.ctx.Err())
	a.mu.Lock()
	a.unqueue(m)
	ready := a.unblocked()
	a.unlock()
	if ready {
		a.startAny()
	}
}
