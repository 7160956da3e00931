package crisp

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/internal/gid"
)

// Bounded mailboxes and admission control.
//
// An actor spawned with WithCapacity or WithAdmission has a bound: what
// decides, at send, whether a message may be queued at all. Every
// message the bound lets in is counted (message.counted) until it leaves
// the queue: when it starts (runOne), or when it is decided otherwise
// (missed: miss; stopped, cancelled, failed by the policy: report).
// Exactly one of those happens to each message, by the winner of the
// compare-and-swap out of stQueued, so each counted message is
// uncounted exactly once, before its future resolves: a caller that
// learns of an outcome may send again at once and find the room freed.
//
// The count is one atomic integer, incremented before the message is
// pushed on the lock-free intake and decremented as above, so the
// capacity is never exceeded: at most Capacity messages are queued and
// not started at any instant (messages being started, running or
// suspended are not queued and do not count).
//
// An actor without a bound has a nil bound pointer: its senders pay one
// nil check in admit, its runner one test of a message flag (in a word
// already loaded) when a message starts and one nil check after its
// handler returns.

// WhenFull says what a send to a full mailbox does: see WithCapacity.
type WhenFull uint8

const (
	// FailWhenFull fails a message sent to a full mailbox at once: a
	// Call's future resolves with a *FullError, a Tell goes to the
	// system's dead-letter hook. The sender never waits.
	FailWhenFull WhenFull = iota
	// WaitWhenFull makes the sender of a message to a full mailbox wait
	// until there is room, until the message's start deadline (then a
	// *FullError with Waited set), or until the message's context ends
	// (then the context's error). A handler that waits holds its own
	// actor (its worker) meanwhile; one sending to its own actor, which
	// cannot make room while it waits, fails at once instead. Handlers
	// of two actors waiting for room in each other's full mailboxes wait
	// for each other: give such sends a deadline or a context.
	WaitWhenFull
)

// ErrFull is the sentinel of a *FullError: errors.Is(err, ErrFull)
// reports a message refused because its actor's mailbox was full.
var ErrFull = errors.New("crisp: mailbox full")

// FullError is the outcome of a message refused at send because its
// actor's mailbox held Capacity messages (WithCapacity). It never ran,
// and it is not a miss: errors.Is(err, deadline.ErrMissed) is false.
type FullError struct {
	// Actor and Message name the actor and the message refused.
	Actor, Message string
	// Capacity is the actor's capacity.
	Capacity int
	// Waited reports that the sender waited for room (WaitWhenFull)
	// until the message's start deadline.
	Waited bool
}

func (e *FullError) Error() string {
	if e.Waited {
		return fmt.Sprintf("crisp: mailbox of actor %s full (capacity %d) until the start deadline of message %s", e.Actor, e.Capacity, e.Message)
	}
	return fmt.Sprintf("crisp: mailbox of actor %s full (capacity %d): message %s refused", e.Actor, e.Capacity, e.Message)
}

// Is makes errors.Is(err, ErrFull) true.
func (e *FullError) Is(target error) bool { return target == ErrFull }

// WithCapacity bounds the actor's (the group's) mailbox to n messages
// queued and not yet started; when says what a send to a full mailbox
// does. Messages running or suspended do not count, nor continuations
// (Then) and resumed processes, which were admitted as messages already.
// The count is exact: the mailbox never holds more than n. Without this
// option a mailbox is unbounded and a send never blocks. It panics if n
// is less than 1.
func WithCapacity(n int, when WhenFull) ActorOption {
	if n < 1 {
		panic("crisp: WithCapacity with a capacity less than 1")
	}
	return ActorOption{func(c *actorConfig) { c.capacity, c.whenFull = int64(n), when }}
}

// bound is the per-actor state of WithCapacity and WithAdmission.
type bound struct {
	capacity int64 // 0: unbounded
	wait     bool  // WaitWhenFull
	n        atomic.Int64
	waiters  atomic.Int32    // senders in wq
	wmu      sync.Mutex      // guards wq
	wq       []chan struct{} // senders waiting for room, oldest first

	adm *admission // nil without WithAdmission
}

// newBound returns the bound cfg asks for, or nil.
func newBound(cfg *actorConfig) *bound {
	if cfg.capacity == 0 && !cfg.admit {
		return nil
	}
	b := &bound{capacity: cfg.capacity, wait: cfg.whenFull == WaitWhenFull}
	if cfg.admit {
		b.adm = newAdmission(cfg)
	}
	return b
}

// pass lets m through a's bound, or fails it: the mailbox is full (after
// waiting, with WaitWhenFull) or admission control refuses it. It
// reports whether m may be queued. Called by admit, with o.dl set and,
// when m has a deadline, o.now read.
//
//go:noinline
func (a *core) pass(m *message, j job, o *sendOpts) bool {
	b := a.bound
	if a.stopped() {
		return true // admit fails it with ErrStopped, which says more
	}
	if b.capacity > 0 && !b.reserve() {
		err := a.waitRoom(m, j, o)
		if err != nil {
			m.state.Store(stFailed)
			if _, full := err.(*FullError); full || err == ErrStopped {
				a.refuse(m, j, err) // refused: the observer hears EventRefused
			} else {
				a.fail(j, err) // its context ended while it waited: cancelled
			}
			return false
		}
	}
	if b.adm != nil {
		if err := a.admitWork(m, j, o); err != nil {
			b.unreserve()
			m.state.Store(stFailed)
			a.refuse(m, j, err)
			return false
		}
	}
	m.counted = true
	return true
}

// reserve takes a place in the mailbox, if one is free. A
// compare-and-swap loop rather than an add undone on failure: the count
// never passes the capacity, even for an instant, so no sender is
// refused for a place another has only tried to take.
func (b *bound) reserve() bool {
	for {
		n := b.n.Load()
		if n >= b.capacity {
			return false
		}
		if b.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unreserve gives a place back and wakes the oldest waiting sender. It
// does nothing on an unbounded mailbox.
func (b *bound) unreserve() {
	if b.capacity == 0 {
		return
	}
	b.n.Add(-1)
	if b.waiters.Load() > 0 {
		b.wakeOne()
	}
}

func (b *bound) wakeOne() {
	b.wmu.Lock()
	if len(b.wq) > 0 {
		ch := b.wq[0]
		b.wq[0] = nil
		b.wq = b.wq[1:]
		b.waiters.Add(-1)
		ch <- struct{}{}
	}
	b.wmu.Unlock()
}

// wakeAll wakes every waiting sender: the actor stopped.
func (b *bound) wakeAll() {
	b.wmu.Lock()
	for _, ch := range b.wq {
		ch <- struct{}{}
	}
	b.waiters.Add(-int32(len(b.wq)))
	b.wq = nil
	b.wmu.Unlock()
}

// dropWaiter takes ch out of the queue of waiting senders as its sender
// gives up. If ch was woken already, the wake-up is passed on: the room
// it announced must not be lost.
func (b *bound) dropWaiter(ch chan struct{}) {
	b.wmu.Lock()
	for i, c := range b.wq {
		if c == ch {
			b.wq = append(b.wq[:i], b.wq[i+1:]...)
			b.waiters.Add(-1)
			b.wmu.Unlock()
			return
		}
	}
	b.wmu.Unlock()
	select {
	case <-ch: // woken: pass the room on
		if b.n.Load() < b.capacity && b.waiters.Load() > 0 {
			b.wakeOne()
		}
	default:
	}
}

// waitRoom is pass's answer to a full mailbox: nil once a place is
// reserved (WaitWhenFull), else the message's error.
func (a *core) waitRoom(m *message, j job, o *sendOpts) error {
	b := a.bound
	full := &FullError{Actor: a.displayName(), Message: m.name(j), Capacity: int(b.capacity)}
	if !b.wait || a.sendsToItself() {
		return full
	}
	var done <-chan struct{}
	if o.ctx != nil {
		done = o.ctx.Done()
	}
	var timeout <-chan time.Time
	if !o.dl.IsZero() {
		t := a.sys.clk.Timer(o.dl.Sub(o.now))
		defer t.Stop()
		timeout = t.C
	}
	ch := make(chan struct{}, 1)
	for {
		b.wmu.Lock()
		b.wq = append(b.wq, ch)
		b.waiters.Add(1)
		b.wmu.Unlock()
		// Stop sets its flag before it wakes the waiters, and a place
		// freed before the registration above woke nobody: look once
		// more at both.
		if a.stopped() {
			b.dropWaiter(ch)
			return ErrStopped
		}
		if b.reserve() {
			b.dropWaiter(ch)
			return nil
		}
		select {
		case <-ch:
			if a.stopped() {
				return ErrStopped
			}
			if b.reserve() {
				if o.haveNow {
					o.now = a.sys.now() // admission control estimates from here
				}
				return nil
			}
			// Another sender took the place first: wait again, at the
			// back.
		case <-done:
			b.dropWaiter(ch)
			return o.ctx.Err()
		case <-timeout:
			b.dropWaiter(ch)
			full.Waited = true
			return full
		}
	}
}

// sendsToItself reports whether the caller is a handler of a itself,
// which would wait for good for room only it can make.
func (a *core) sendsToItself() bool {
	me := gid.Current()
	if g := a.cfg.grp; g != nil {
		a.mu.Lock()
		p := g.runnerOn(me)
		a.mu.Unlock()
		return p != nil
	}
	return a.holder.Load() == uintptr(me)
}

// uncount gives m's place back: m has started or been decided. Called
// once per counted message, by whoever decided it, before its outcome
// is delivered.
//
//go:noinline
func (a *core) uncount(m *message) {
	m.counted = false
	b := a.bound
	if b.adm != nil && m.ext != nil && m.ext.adm != nil {
		b.adm.leave(m.ext.adm)
	}
	b.unreserve()
}

// stopBound wakes the senders waiting for room in a stopped actor's
// mailbox: each fails with ErrStopped.
func (a *core) stopBound() {
	if a.bound != nil {
		a.bound.wakeAll()
	}
}
