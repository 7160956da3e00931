package crisp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/runq"
	"github.com/crisprt/crisp/policy"
)

// An actor's unfinished work is kept three ways, all guarded by its mu:
//
//   - the list, in the order entries joined it, holds every message the
//     actor has accepted and not yet finished: queued, ready to resume,
//     and suspended. It is the record from which a stopped actor fails
//     everything and a broken policy queue is rebuilt.
//   - the policy's queue holds what is ready (stQueued and stReady), in
//     the order of execution; queued counts it, and each message's inQ
//     says whether the queue holds it. The queue is user code and may lie:
//     every Pop is checked against inQ and queued, and Len against queued
//     (see take), at O(1) cost; a queue caught lying is rebuilt from the
//     list, and one that lies again at once is replaced by arrival order
//     for good.
//   - the deadline index holds the queued new messages that have a
//     deadline, earliest first: what the watchdog looks at.

// failure is an outcome to deliver once the actor's lock is released:
// resolving a future runs its waiters' callbacks, which may need the
// lock. It is err, or, if err is nil, a deadline missed at at.
type failure struct {
	m   *message
	err error
	at  time.Time
}

// failures is a list of outcomes gathered under an actor's lock. Lists
// are pooled: the watchdog gathers one per actor it expires, up to
// millions a second, and a goroutine that allocates while the collector
// marks is made to help it mark (a heap of 100,000 parked callers' stacks
// makes that help long), so the miss path allocates as little as it can.
type failures []failure

var failurePool = sync.Pool{New: func() any { return new(failures) }}

// unlock releases a.mu, then delivers the outcomes recorded while it
// was held (see addFailure): futures are resolved and hooks called
// outside the lock.
func (a *core) unlock() {
	var failed *failures
	if qs := a.qs; qs != nil && qs.failed != nil {
		failed = qs.failed
		qs.failed = nil
	}
	a.mu.Unlock()
	a.failAll(failed)
}

// deliverFailed delivers the outcomes recorded so far, releasing a.mu
// meanwhile, if there are any. Called with a.mu held; it holds it again
// on return.
func (a *core) deliverFailed() {
	if a.qs != nil && a.qs.failed != nil {
		a.unlock()
		a.mu.Lock()
	}
}

// addFailure records f for delivery after unlocking. Called with a.mu
// held.
func (a *core) addFailure(f failure) {
	qs := a.queues()
	if qs.failed == nil {
		qs.failed = failurePool.Get().(*failures)
	}
	*qs.failed = append(*qs.failed, f)
}

// failAll delivers fs, taken from a.qs.failed (nil if there were none),
// and gives the list back to the pool. Called without a.mu.
func (a *core) failAll(fs *failures) {
	if fs == nil {
		return
	}
	for i, f := range *fs {
		(*fs)[i] = failure{}
		if f.err == nil {
			a.miss(f.m, f.at)
		} else {
			a.fail(f.m.work(), f.err)
		}
	}
	if cap(*fs) <= 64 { // keep no list a burst has grown large
		*fs = (*fs)[:0]
		failurePool.Put(fs)
	}
}

// fail delivers err as j's outcome, logging what no future will tell.
func (a *core) fail(j job, err error) {
	j.hdr().ext.releaseCtx()
	a.report(j, err)
}

// report is fail for a message that no longer watches a context, or
// whose context has ended: it leaves the message's ext.stop alone.
func (a *core) report(j job, err error) {
	m := j.hdr()
	if m.counted {
		a.uncount(m)
	}
	j.fail(err)
	if m.obs != 0 {
		a.observeEnd(m, err, false, time.Time{})
	}
	if j.answered() {
		return
	}
	if a.sys.onDead != nil {
		a.deadLetter(m, j, err)
	}
	// A Tell has no future: a panic or a policy failure would otherwise
	// go unseen.
	switch e := err.(type) {
	case *PanicError:
		a.sys.log.LogAttrs(m.logContext(), slog.LevelError, "handler panicked",
			slog.String("actor", a.displayName()), slog.String("message", m.name(j)), m.deadlineAttr(a.sys),
			slog.Any("panic", e.Value), slog.String("stack", string(e.Stack)))
	case *PolicyError:
		a.sys.log.LogAttrs(m.logContext(), slog.LevelError, "policy panicked while ordering the message",
			slog.String("actor", a.displayName()), slog.String("message", m.name(j)), m.deadlineAttr(a.sys),
			slog.Any("panic", e.Value), slog.String("stack", string(e.Stack)))
	}
}

// logContext is the context to log about m with: the one it was sent
// with, so that a handler of the logger sees its values (a trace, a
// request id).
func (m *message) logContext() context.Context {
	if m.ext != nil && m.ext.ctx != nil {
		return m.ext.ctx
	}
	return context.Background()
}

// deadlineAttr is m's start deadline as a log attribute; empty (dropped
// by slog) for a message without one.
func (m *message) deadlineAttr(s *System) slog.Attr {
	if m.dk == 0 {
		return slog.Attr{}
	}
	return slog.Time("deadline", m.deadlineOf(s))
}

// miss fails m, which could not start by its deadline, and tells the
// actor's miss hook.
func (a *core) miss(m *message, now time.Time) {
	j := m.work()
	if m.counted {
		a.uncount(m)
	}
	err := &deadline.MissedError{
		Actor:    a.displayName(),
		Message:  m.name(j),
		Deadline: m.deadlineOf(a.sys),
		Detected: now,
	}
	m.ext.releaseCtx()
	j.fail(err)
	if m.obs != 0 {
		a.observeEnd(m, err, true, now)
	}
	if ctx := m.logContext(); a.sys.log.Enabled(ctx, slog.LevelDebug) {
		a.sys.log.LogAttrs(ctx, slog.LevelDebug, "deadline missed",
			slog.String("actor", err.Actor), slog.String("message", err.Message),
			slog.Time("deadline", err.Deadline), slog.Time("detected", err.Detected),
			slog.Duration("lateness", err.Lateness()))
	}
	if a.cfg.onMiss != nil {
		a.callMissHook(m, err)
	}
	if a.sys.onDead != nil && !j.answered() {
		a.deadLetter(m, j, err)
	}
}

func (a *core) callMissHook(m *message, err *deadline.MissedError) {
	defer func() {
		if r := recover(); r != nil {
			a.sys.log.LogAttrs(m.logContext(), slog.LevelError, "miss hook panicked",
				slog.String("actor", err.Actor), slog.String("message", err.Message),
				slog.Time("deadline", err.Deadline), slog.Any("panic", r))
		}
	}()
	a.cfg.onMiss(err)
}

// drain moves the intake into the actor's queue, oldest first, giving
// each message its arrival number. Called with a.mu held.
func (a *core) drain() {
	if h := a.intake.Swap(nil); h != nil {
		a.drainList(h)
	}
}

// makeQueue gives the actor a policy queue if it has none (an idle
// actor drops its queue) before a message of the intake is listed: plain
// messages (placePlain) need none, and a queue made for every drain of
// more than one message was, in ring-1k, one allocation for each actor
// two tokens met at. push would make it too, but there, three calls
// deeper in a runner's stack, the allocation took a newly started runner
// past the 2 KiB a goroutine starts with, and every such runner copied
// its stack (ring-1k 30% slower, the copy 40% of its CPU profile).
// Called with a.mu held.
func (a *core) makeQueue() {
	if qs := a.queues(); qs.q == nil {
		qs.q = a.newQueue()
	}
}

// next is drain followed by take, with a shortcut: when nothing is
// queued and exactly one message arrived, every policy must choose it,
// so it is claimed without passing through the policy's queue. An actor
// with a lane takes from it too (nextLaned). Called with a.mu held.
func (a *core) next() (m *message, j job, resume bool) {
	if l := a.lane.Load(); l != nil {
		return a.nextLaned(l)
	}
	return a.nextArrived()
}

// nextArrived is next for an actor without a lane.
func (a *core) nextArrived() (m *message, j job, resume bool) {
	var h *message
	if a.intake.Load() != nil {
		h = a.intake.Swap(nil)
	}
	if h != nil && h.next == nil && a.queued == 0 && a.pn == 0 && !h.keyed() {
		a.newArrivals()
		if j := h.work(); h.state.CompareAndSwap(stQueued, h.takeState(j)) {
			a.seq++
			h.seq = a.seq
			return h, j, false
		}
		return nil, nil, false // cancelled on the way
	}
	if h != nil {
		a.drainList(h)
	} else if a.pn == 0 && (a.qs == nil || a.qs.q == nil) {
		return nil, nil, false // nothing queued: take's frame is not small
	}
	return a.take()
}

// drainList queues the intake list h (newest first). Called with a.mu
// held.
func (a *core) drainList(h *message) {
	a.newArrivals()
	var rev *message
	for h != nil {
		next := h.next
		h.next = rev
		rev, h = h, next
	}
	l := a.lane.Load()
	for m := rev; m != nil; {
		next := m.next
		m.next = nil
		if m.state.Load() == stQueued { // not cancelled on the way
			if l != nil && m.seq > l.popped.Load() {
				a.laneBefore(l, m) // lane entries that arrived before it
			}
			a.place(m)
		}
		m = next
	}
	if a.pn+a.queued >= laneFlood && a.flags.Load()&fFlood == 0 && a.laneable() {
		a.flags.Or(fFlood) // a flood: see lane.go
	}
}

// place gives m, just arrived, its arrival number and queues it: among
// the plain messages if it can be, else in the list and the policy's
// queue. Called with a.mu held.
func (a *core) place(m *message) {
	a.seq++
	m.seq = a.seq
	if !a.plainOK(m) || !a.placePlain(m) {
		a.makeQueue()
		a.link(m) // folds the plain messages in first
		a.enqueue(m)
	}
}

// plainOK reports whether m may join the plain messages (placePlain
// says whether it can): it is a new message without a context or keys,
// the actor's policy orders messages without a deadline by arrival and
// after every message with one (EDF, FIFO), and the actor holds nothing
// else: no list (nothing queued, suspended or ready), no conditions or
// keys, and it is not a group. Folding the plain messages into the list
// when anything else arrives keeps the policy's order. An actor that
// has suspended processes before, or has hooks, keeps its coopState,
// but once its list is empty its messages are plain again. Called with
// a.mu held.
func (a *core) plainOK(m *message) bool {
	if !a.cfg.plain || m.ext != nil || m.resumed || a.cfg.grp != nil {
		return false
	}
	qs := a.qs
	return qs == nil || qs.qhead == nil && (qs.coop == nil || len(qs.coop.conds) == 0 && len(qs.coop.keys) == 0)
}

// placePlain adds m, which plainOK accepts, to the plain messages, and
// reports whether it could.
//
// The plain messages are in deadline order, those with one first, which
// is both policies' order (EDF breaks ties by arrival), and their
// earliest deadline is the first's, for the watchdog (firstDeadline,
// expireDue). A message without a deadline joins at the end, and so
// does one whose deadline is no earlier than the last one's: messages
// sent to an actor with one Within from one goroutine arrive so, and a
// flood with deadlines skips the list, the policy's queue and the
// deadline index as one without does (bench: deadlines cost counting
// 1.96x, fork-join 1.97x before; issue 13 asks for 15%).
//
// Under EDF any other message spills: it waits in the deadline index
// alone, unlinked and out of the policy's queue, and take compares the
// index's first with the plain messages' first. Senders on several
// goroutines read the clock and then push, so a flood with one Within
// arrives nearly, not exactly, in deadline order (with four senders,
// about one message in a million came 0.7 us to 27 ms of deadline
// behind the last one, 12 to 570,000 places back; the far ones' senders
// were likely preempted between the two), and one message out of order
// used to send the actor's whole backlog through the list, the
// policy's queue and the deadline index until the backlog emptied,
// which in a flood it seldom does. Under FIFO it cannot join: the list
// and the policy take it. Called with a.mu held.
func (a *core) placePlain(m *message) bool {
	if d := m.dk; d != 0 && a.ptail != nil {
		if last := a.ptail.dk; last == 0 || d < last {
			if !a.cfg.edf {
				return false
			}
			a.deadlineIndex().Push(m)
			a.pn++
			return true
		}
	}
	a.pushPlain(m)
	return true
}

// spilled reports whether messages spilled from the plain ones
// (placePlain) wait in the deadline index: with no list, the index holds
// nothing else. Called with a.mu held.
func (a *core) spilled() bool {
	qs := a.qs
	return qs != nil && qs.qhead == nil && qs.dl != nil && qs.dl.Len() > 0
}

// deadlines returns the actor's deadline index, or nil if it has none.
// Called with a.mu held.
func (a *core) deadlines() *runq.Queue[*message] {
	if a.qs == nil {
		return nil
	}
	return a.qs.dl
}

// deadlineIndex returns the actor's deadline index, made if it has none.
// Called with a.mu held.
func (a *core) deadlineIndex() *runq.Queue[*message] {
	qs := a.queues()
	if qs.dl == nil {
		qs.dl = runq.New(earlierDeadline, dlIndex)
	}
	return qs.dl
}

// pushPlain appends m to the plain messages. Called with a.mu held.
func (a *core) pushPlain(m *message) {
	if a.ptail != nil {
		a.ptail.next = m
	} else {
		a.phead = m
	}
	a.ptail = m
	a.pn++
}

// fold moves the plain messages, in order, and those spilled from them
// (placePlain) into the list and the policy's queue, where everything
// else is: before anything else joins the list. Called with a.mu held.
func (a *core) fold() {
	var spill []*message
	for a.spilled() {
		spill = append(spill, a.qs.dl.Pop())
	}
	h := a.phead
	a.phead, a.ptail, a.pn = nil, nil, 0
	if h == nil && spill == nil {
		return
	}
	a.makeQueue()
	for h != nil {
		next := h.next
		h.next = nil
		if h.state.Load() == stQueued {
			a.link(h)
			a.enqueue(h)
		}
		h = next
	}
	for _, m := range spill {
		if m.state.Load() == stQueued {
			a.link(m)
			a.enqueue(m)
		}
	}
}

// takePlain takes the first message still to run of the plain ones and
// those spilled from them: the earlier in EDF's order of the plain
// messages' first and the deadline index's (a plain message without a
// deadline comes after every one with one). Called with a.mu held.
func (a *core) takePlain() (*message, job) {
	for {
		m := a.plainFirst()
		switch {
		case m == nil:
			return nil, nil
		case m == a.phead:
			a.popPlain(m)
		default:
			a.qs.dl.Pop()
			a.pn--
		}
		if j := m.work(); m.state.CompareAndSwap(stQueued, m.takeState(j)) {
			return m, j
		}
	}
}

// plainFirst returns the earlier in EDF's order of the first plain
// message and the first in the deadline index (those spilled from the
// plain messages), or nil if there are none. Called with a.mu held.
func (a *core) plainFirst() *message {
	m := a.phead
	if a.spilled() {
		if s := a.qs.dl.Peek(); m == nil || m.dk == 0 || earlierDeadline(s, m) {
			m = s
		}
	}
	return m
}

// popPlain takes m, the first plain message, off them. Called with a.mu
// held.
func (a *core) popPlain(m *message) {
	a.phead = m.next
	m.next = nil
	a.pn--
	if a.phead == nil {
		a.ptail = nil
	}
}

// enqueue readies m, which is in the list: a new message joins the
// deadline index if it has a deadline, and the lines of its keys if it
// has any; it enters the policy's queue unless a key holds it back. A
// resumed process or continuation enters the policy's queue. Called with
// a.mu held.
func (a *core) enqueue(m *message) {
	if !m.resumed {
		if m.dk != 0 {
			a.deadlineIndex().Push(m)
		}
		if m.keyed() && !a.joinLines(m) {
			return // waits in its lines for a key
		}
	}
	a.push(m)
}

// push adds m to the policy's queue. Called with a.mu held.
func (a *core) push(m *message) {
	a.makeQueue()
	if perr := a.qpush(m); perr != nil {
		// The policy cannot order m: m fails and never runs (or, if it
		// is a suspended process, never resumes). The queue may be left
		// in any state, so it is rebuilt from the list.
		a.dequeued(m)
		if m.keyed() {
			a.leaveLines(m)
		}
		a.abort(m, perr)
		a.rebuild()
		return
	}
	m.inQ = true
	a.queued++
}

// newQueue returns an empty queue of the actor's policy or, once that
// policy has proved broken (fFIFO, or a NewQueue that panics or returns
// nil), of arrival order. Called with a.mu held.
//
// Its frame stays small, the logging out of line: it runs deep in a new
// runner's stack (see makeQueue).
func (a *core) newQueue() policy.Queue {
	if a.flags.Load()&fFIFO == 0 {
		q, perr := a.qnew()
		if perr == nil && q != nil {
			return q
		}
		a.noQueue(perr)
	}
	return policy.FIFO().NewQueue()
}

// noQueue turns the actor to arrival order for good: its policy gave no
// queue. Called with a.mu held.
//
//go:noinline
func (a *core) noQueue(perr *PolicyError) {
	a.flags.Or(fFIFO | fNoReuse)
	a.sys.log.LogAttrs(context.Background(), slog.LevelError, "policy gave no queue; taking work in arrival order",
		slog.String("actor", a.displayName()), slog.Any("fault", faultValue(perr)))
}

// faultValue makes a nil *PolicyError a nil any, for logging.
func faultValue(perr *PolicyError) any {
	if perr == nil {
		return "NewQueue returned nil"
	}
	return perr
}

func dlIndex(m *message) *int32 { return &m.dli }

// abort ends m, which is queued, ready or suspended, with err: a message
// fails; a suspended process is ended (its goroutine exits through
// runtime.Goexit, running its deferred calls, and its future gets err);
// a continuation is dropped and its result, if anyone waits for it, is
// err. Called with a.mu held.
func (a *core) abort(m *message, err error) {
	switch st := m.state.Load(); st {
	case stQueued:
		if m.state.CompareAndSwap(stQueued, stFailed) {
			a.addFailure(failure{m: m, err: err})
		}
	case stSuspended, stReady:
		if !m.state.CompareAndSwap(st, stStopped) {
			return
		}
		if p := a.procOf(m); p != nil {
			a.forgetProc(m) // ended
			p.extra().stopErr = err
			if p.x != nil && p.x.timed {
				a.sys.wd.Cancel(&p.x.wd)
			}
			// The system stays busy until the process's goroutine has
			// failed its message (abandon): whatever waits on that
			// future must see it resolved at this instant.
			a.sys.busy.Add(1)
			p.signal()
			return
		}
		a.addFailure(failure{m: m, err: err})
	}
}

// link appends m to the list, after the plain messages and those
// spilled from them, which it folds into the list first. Called with
// a.mu held.
func (a *core) link(m *message) {
	if a.pn > 0 {
		a.fold()
	}
	m.linked = true
	qs := a.queues()
	m.prev, m.next = qs.qtail, nil
	if qs.qtail != nil {
		qs.qtail.next = m
	} else {
		qs.qhead = m
	}
	qs.qtail = m
}

// unlink takes m off the list. Called with a.mu held.
func (a *core) unlink(m *message) {
	qs := a.qs // a listed message's actor has queues
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		qs.qhead = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		qs.qtail = m.prev
	}
	m.prev, m.next, m.linked = nil, nil, false
}

// dequeued takes m, just popped from the policy's queue, off the list
// and the deadline index. Called with a.mu held.
func (a *core) dequeued(m *message) {
	a.unlink(m)
	if dl := a.qs.dl; dl != nil && m.dk != 0 && !m.resumed { // resumed work is in no index: see procSlot
		dl.Remove(m)
	}
}

// unqueue takes m, which someone has just decided, out of every
// structure it may still be in. Called with a.mu held.
func (a *core) unqueue(m *message) {
	if !m.linked {
		return
	}
	a.dequeued(m)
	if m.keyed() {
		a.leaveLines(m)
	}
	if !m.inQ {
		return // not in the queue: nothing to ask it
	}
	m.inQ = false
	ok, perr := a.qremove(m)
	switch {
	case perr != nil:
		a.queueFault(perr, false)
	case !ok:
		a.queueFault("Remove did not find an item it was given and has not returned", false)
	default:
		a.queued--
	}
}

// The policy's queue runs user code (a comparison, or a whole custom
// queue); a panic there must cost the work being ordered, not the actor
// or the process. qpush, qpop and qremove turn such a panic into a
// *PolicyError.

func (a *core) qpush(m *message) (perr *PolicyError) {
	defer recoverPolicy(&perr)
	a.qs.q.Push(m.item(a.sys))
	return nil
}

// qpop pops, and reads Len after the pop, so that take can check both.
func (a *core) qpop() (it *policy.Item, n int, perr *PolicyError) {
	defer recoverPolicy(&perr)
	q := a.qs.q
	it = q.Pop()
	return it, q.Len(), nil
}

func (a *core) qnew() (q policy.Queue, perr *PolicyError) {
	defer recoverPolicy(&perr)
	return a.cfg.pol.NewQueue(), nil
}

func (a *core) qremove(m *message) (ok bool, perr *PolicyError) {
	defer recoverPolicy(&perr)
	return a.qs.q.Remove(m.pi.Load()), nil
}

func recoverPolicy(perr **PolicyError) {
	if r := recover(); r != nil {
		*perr = &PolicyError{Value: r, Stack: debug.Stack()}
	}
}

// rebuild replaces a policy queue that may be inconsistent with a fresh
// one holding every ready entry of the list. An entry the policy cannot
// push even into a fresh queue is aborted with the policy's panic.
// Called with a.mu held.
func (a *core) rebuild() {
	a.flags.Or(fNoReuse)
	qs := a.queues()
	qs.q = a.newQueue()
	a.queued = 0
	for m := qs.qhead; m != nil; {
		next := m.next
		m.inQ = false // the old queue is gone; every inQ entry is listed
		switch st := m.state.Load(); {
		case st == stQueued && m.keyed() && m.ext.blocked > 0:
			// waits in its lines: stays listed, out of the queue
		case st == stQueued, st == stReady:
			if perr := a.qpush(m); perr != nil {
				a.dequeued(m)
				if m.keyed() {
					a.leaveLines(m)
				}
				a.abort(m, perr)
				a.rebuild() // start over without m
				return
			}
			m.inQ = true
			a.queued++
		case st == stSuspended: // not ready: stays listed, out of the queue
		default: // decided; its decider will find it gone
			a.dequeued(m)
		}
		m = next
	}
}

// take pops the next ready entry and claims it, or returns nil when
// nothing is ready. resume reports a suspended process to hand the actor
// to (its state is then stRunning); otherwise the entry is a message or
// a continuation to run (stTaken).
//
// The queue is user code, and every way it can lie is caught at O(1)
// cost per pop (see popped): a Pop that panics, returns nothing while
// work is queued, returns an item it was not given, returns an item a
// second time or keeps one it returned, or a Len that disagrees. The
// queue is then rebuilt from the list; if the rebuilt queue lies again
// within the same take, the actor gives its policy up for arrival order
// (FIFO), which cannot lie. A broken policy thus costs order, never
// work, and take always ends: at most two rebuilds, then a trusted
// queue. Called with a.mu held.
func (a *core) take() (m *message, j job, resume bool) {
	if a.pn > 0 { // then nothing else is queued
		if m, j := a.takePlain(); m != nil {
			return m, j, false
		}
	}
	faults := 0
	for a.qs != nil && a.qs.q != nil {
		it, n, perr := a.qpop()
		m, j, fault := a.popped(it, n, perr)
		if fault == nil {
			if m == nil {
				return nil, nil, false // empty, as it should be
			}
			if m, j, resume, ok := a.claim(m, j); ok {
				m.giveItemBack(a)
				return m, j, resume
			}
			continue // decided by someone else, who will find it gone
		}
		faults++
		if faults > 2 {
			// Arrival order misbehaved: crisp's own bookkeeping is wrong.
			panic(fmt.Sprintf("crisp: internal error: the arrival-order queue misbehaved: %v", fault))
		}
		a.queueFault(fault, faults == 2)
	}
	return nil, nil, false
}

// popped checks what one Pop returned (it, and n, the queue's Len
// after it) against the bookkeeping: each entry's inQ and the count
// queued. It returns the entry popped, or nil if the queue is rightly
// empty, or the fault found; an entry is taken out of the count only
// when nothing is wrong. Called with a.mu held.
func (a *core) popped(it *policy.Item, n int, perr *PolicyError) (*message, job, any) {
	if perr != nil {
		return nil, nil, perr
	}
	if it == nil {
		if a.queued != 0 {
			return nil, nil, fmt.Sprintf("Pop returned nothing, but %d items are queued", a.queued)
		}
		if n != 0 {
			return nil, nil, fmt.Sprintf("Len reports %d items, but none is queued", n)
		}
		return nil, nil, nil
	}
	j, ok := (*plumb.Ref(unsafe.Pointer(it))).(job)
	if !ok || j.actor() != a || j.hdr().pi.Load() != it {
		return nil, nil, "Pop returned an item it was not given"
	}
	m := j.hdr()
	if !m.inQ {
		return nil, nil, "Pop returned an item it does not hold: one it returned already, or one removed"
	}
	if want := int(a.queued) - 1; n != want {
		// Pop kept what it returned (a peek), or Len lies.
		return nil, nil, fmt.Sprintf("Len reports %d items after Pop, but %d are queued", n, want)
	}
	m.inQ = false
	a.queued--
	return m, j, nil
}

// queueFault logs what the policy's queue did wrong and replaces the
// queue with one rebuilt from the list. again says the queue misbehaved
// already in this take, after a rebuild: the actor then gives its policy
// up and takes its work in arrival order from now on. Called with a.mu
// held.
func (a *core) queueFault(fault any, again bool) {
	if again && a.flags.Load()&fFIFO == 0 {
		a.flags.Or(fFIFO)
		a.sys.log.LogAttrs(context.Background(), slog.LevelError, "policy queue misbehaved again after a rebuild; taking work in arrival order from now on",
			slog.String("actor", a.displayName()), slog.Any("fault", fault))
	} else {
		a.sys.log.LogAttrs(context.Background(), slog.LevelError, "policy queue misbehaved; rebuilding it",
			slog.String("actor", a.displayName()), slog.Any("fault", fault))
	}
	a.rebuild()
}

// claim takes ready entry m for running: it leaves the list, and its
// state moves on. It reports false if someone else decided m first.
// Called with a.mu held.
func (a *core) claim(m *message, j job) (*message, job, bool, bool) {
	switch m.state.Load() {
	case stQueued:
		if m.state.CompareAndSwap(stQueued, m.takeState(j)) {
			a.dequeued(m)
			if m.keyed() {
				a.takeKeys(m)
			}
			return m, j, false, true
		}
	case stReady:
		if a.procOf(m) == nil { // a continuation: run it here
			if m.state.CompareAndSwap(stReady, stTaken) {
				a.dequeued(m)
				return m, j, false, true
			}
		} else if m.state.CompareAndSwap(stReady, stRunning) {
			a.dequeued(m)
			return m, j, true, true
		}
	}
	return nil, nil, false, false
}
