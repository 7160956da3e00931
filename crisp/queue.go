package crisp

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/runq"
	"github.com/crisprt/crisp/policy"
)

// An actor's queued work is kept three ways, all guarded by its mu: a
// list in queuing order (the record of what is queued, from which a
// broken policy queue can be rebuilt and a stopped actor drained), the
// policy's queue (the order of execution), and, for messages with a
// deadline, the deadline index (what the watchdog looks at).

// failure is an outcome to deliver once the actor's lock is released:
// resolving a future runs its waiters' callbacks, which may need the
// lock. It is err, or, if err is nil, a deadline missed at at.
type failure struct {
	m   *message
	err error
	at  time.Time
}

// takeFailed hands over the failures gathered under the lock. Called
// with a.mu held.
func (a *core) takeFailed() []failure {
	if a.failed == nil {
		return nil
	}
	f := *a.failed
	a.failed = nil
	return f
}

// addFailure records f for delivery after unlocking. Called with a.mu
// held.
func (a *core) addFailure(f failure) {
	if a.failed == nil {
		a.failed = new([]failure)
	}
	*a.failed = append(*a.failed, f)
}

func (a *core) failAll(fs []failure) {
	for _, f := range fs {
		if f.err == nil {
			a.miss(f.m, f.at)
		} else {
			a.fail(f.m.item.Payload.(job), f.err)
		}
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

// miss fails m, which could not start by its deadline, and tells the
// actor's miss hook.
func (a *core) miss(m *message, now time.Time) {
	j := m.item.Payload.(job)
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
	if a.cfg.onMiss != nil {
		a.callMissHook(err)
	}
}

func (a *core) callMissHook(err *deadline.MissedError) {
	defer func() {
		if r := recover(); r != nil {
			a.sys.log.Error("crisp: miss hook panicked", "actor", a.displayName(), "panic", r)
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

// next is drain followed by take, with a shortcut: when nothing is
// queued and exactly one message arrived, every policy must choose it,
// so it is claimed without passing through the policy's queue. Called
// with a.mu held.
func (a *core) next() (*message, job) {
	h := a.intake.Swap(nil)
	if h != nil && h.next == nil && a.queued == 0 {
		if h.state.CompareAndSwap(stQueued, stTaken) {
			a.seq++
			h.item.Seq = a.seq
			return h, h.item.Payload.(job)
		}
		return nil, nil // cancelled on the way
	}
	if h != nil {
		a.drainList(h)
	}
	return a.take()
}

// drainList queues the intake list h (newest first). Called with a.mu
// held.
func (a *core) drainList(h *message) {
	var rev *message
	for h != nil {
		next := h.next
		h.next = rev
		rev, h = h, next
	}
	for m := rev; m != nil; {
		next := m.next
		m.next = nil
		if m.state.Load() == stQueued { // not cancelled on the way
			a.seq++
			m.item.Seq = a.seq
			a.queue(m)
		}
		m = next
	}
}

// queue adds m to the list, the policy's queue and the deadline index.
// Called with a.mu held.
func (a *core) queue(m *message) {
	if a.q == nil {
		a.q = a.cfg.pol.NewQueue()
	}
	if perr := a.qpush(m); perr != nil {
		// The policy cannot order m: m fails and never runs. The queue
		// may be left in any state, so it is rebuilt from the list.
		if m.state.CompareAndSwap(stQueued, stFailed) {
			a.addFailure(failure{m: m, err: perr})
		}
		a.rebuild()
		return
	}
	a.link(m)
	if !m.item.Deadline.IsZero() {
		if a.dl == nil {
			a.dl = runq.New(earlierDeadline, dlIndex)
		}
		a.dl.Push(m)
	}
}

func dlIndex(m *message) *int { return &m.dli }

// link appends m to the list of queued messages. Called with a.mu held.
func (a *core) link(m *message) {
	m.linked = true
	m.prev, m.next = a.qtail, nil
	if a.qtail != nil {
		a.qtail.next = m
	} else {
		a.qhead = m
	}
	a.qtail = m
	a.queued++
}

// dequeued takes m off the list and the deadline index (not the policy's
// queue: m has just been popped from it, or will be removed by the
// caller). Called with a.mu held.
func (a *core) dequeued(m *message) {
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
	m.prev, m.next, m.linked = nil, nil, false
	a.queued--
	if a.dl != nil && !m.item.Deadline.IsZero() {
		a.dl.Remove(m)
	}
}

// unqueue takes m out of every structure, if it is still queued. Called
// with a.mu held.
func (a *core) unqueue(m *message) {
	if !m.linked {
		return
	}
	a.dequeued(m)
	if _, perr := a.qremove(m); perr != nil {
		a.rebuild()
	}
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

// rebuild replaces a policy queue that may be inconsistent with a fresh
// one holding every queued message. A message the policy cannot push even
// into a fresh queue fails with the policy's panic. Called with a.mu held.
func (a *core) rebuild() {
	a.q = a.cfg.pol.NewQueue()
	for m := a.qhead; m != nil; {
		next := m.next
		if m.state.Load() != stQueued { // decided; its decider will not find it queued
			a.dequeued(m)
			m = next
			continue
		}
		if perr := a.qpush(m); perr != nil {
			if m.state.CompareAndSwap(stQueued, stFailed) {
				a.addFailure(failure{m: m, err: perr})
			}
			a.dequeued(m)
			a.rebuild() // start over without m
			return
		}
		m = next
	}
}

// take pops the next queued message and claims it, or returns nil when
// nothing is ready. A queue that misbehaves (panics, loses work, returns
// an item it was never given) is rebuilt; if it misbehaves again at once,
// this take falls back to queuing order, so that a broken policy costs
// order, never work. Called with a.mu held.
func (a *core) take() (*message, job) {
	rebuilt := false
	for a.q != nil {
		it, perr := a.qpop()
		var fault any
		switch {
		case perr != nil:
			fault = perr
		case it == nil:
			if a.qhead == nil {
				return nil, nil
			}
			fault = "the queue is empty but work is queued"
		default:
			j, ok := it.Payload.(job)
			if !ok || j.actor() != a {
				fault = "the queue returned an item it was not given"
				break
			}
			m := j.hdr()
			if !m.linked {
				continue // left while the queue was broken
			}
			a.dequeued(m)
			if !m.state.CompareAndSwap(stQueued, stTaken) {
				continue // missed, cancelled or failed; its decider found it gone
			}
			return m, j
		}
		if a.qhead == nil {
			return nil, nil // nothing is queued, whatever the queue says
		}
		a.sys.log.Error("crisp: policy queue misbehaved; rebuilding it", "actor", a.displayName(), "fault", fault)
		if rebuilt {
			m := a.qhead
			a.dequeued(m)
			if m.state.CompareAndSwap(stQueued, stTaken) {
				return m, m.item.Payload.(job)
			}
			continue
		}
		rebuilt = true
		a.rebuild()
	}
	return nil, nil
}
