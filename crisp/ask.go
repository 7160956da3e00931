package crisp

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// Ask sends fn to an actor (or a group) as Call does and waits for its
// result: Call(to, fn, opts...).Get() in one step, for a caller that
// has nothing else to do meanwhile. The result is the one the future
// would have given, with every failure Call documents (a missed
// deadline, a panic, a stopped actor, a context's end); a wait that
// Get refuses, such as an actor's handler asking its own actor, returns
// Get's error, and the message stays queued.
//
// Nobody but the caller sees the future, so Ask's message serves a
// later Ask once the result is read and the handler has finished: a
// synchronous request to an actor allocates only what fn captures, where
// Call and Get allocate the message and its future every time. A
// program that asks in a loop makes fewer garbage collections, which
// on a machine busy with CPU-bound code cost the program's other
// goroutines up to a time slice each (BENCHMARKS.md, twenty-fourth
// session).
//
// Ask blocks until the result arrives: give the message a deadline
// (Within, By) or a context (Context) to bound when it may start, or
// use AskWithin to bound the wait. It panics if to or fn is nil.
func Ask[S, T any](to Ref[S], fn func(p *Proc, s S) (T, error), opts ...SendOption) (T, error) {
	c := newAsk(askee(to, fn, "Ask"), fn)
	c.send(opts)
	return c.answer(plumb.Wait(c.pr.Future(), &c.spare))
}

// AskWithin is Ask with a bound on the wait: Call(to, fn,
// opts...).GetWithin(d) in one step. If the result has not arrived
// within d, measured on the system's clock, it returns
// future.ErrTimeout; the message is not withdrawn, and may still run
// (send it with a deadline or a context to bound that), its result
// then going unread. A d of zero or less returns future.ErrTimeout at
// once, without sending. It panics if to or fn is nil.
func AskWithin[S, T any](to Ref[S], d time.Duration, fn func(p *Proc, s S) (T, error), opts ...SendOption) (T, error) {
	a := askee(to, fn, "AskWithin")
	if d <= 0 {
		var zero T
		return zero, future.ErrTimeout
	}
	c := newAsk(a, fn)
	c.send(opts)
	return c.answer(plumb.WaitWithin(c.pr.Future(), d, &c.spare))
}

// answer reads the answer once the asker's wait is over (werr: its
// error in place of the result, or nil if the future is resolved), and
// lets go.
func (c *askCall[S, T]) answer(werr error) (v T, err error) {
	if werr == nil {
		v, err = c.pr.Future().Get() // resolved: returns at once
	} else {
		err = werr
	}
	c.release()
	return v, err
}

// askCall is the message of an Ask: a Call whose future only the asking
// goroutine sees (160 bytes, a Call's 144 and its count and spare). It
// has two holders, the asker until it has read the result and the
// runner until it has finished with the message (recycle);
// the last to let go (release) clears it and keeps it in its actor's
// shard (shard.asks) for a later Ask of the same types to an actor of
// that shard. A message that did not run to the end on its runner
// (missed, stopped, cancelled, suspended), or had holders of its own (a
// context, keys, an admission record), is never let go by its runner,
// and goes to the collector as a Call's does.
type askCall[S, T any] struct {
	call[S, T]
	refs atomic.Int32 // holders left
	// spare is the record of the asker's parked wait (plumb.Wait), kept
	// with the message: a later Ask that reuses the message, and parks,
	// parks on it. The message is reused only once its runner has
	// resolved its future, so no resolution of an earlier wait can reach
	// it.
	spare unsafe.Pointer
}

// askee returns the actor to ask, or panics for op (Ask, AskWithin) if
// to or fn is nil.
func askee[S, T any](to Ref[S], fn func(p *Proc, s S) (T, error), op string) *Actor[S] {
	a := actorOf(to, op)
	if fn == nil {
		panic("crisp: " + op + " with a nil handler")
	}
	return a
}

// newAsk returns a cleared askCall of fn for a, reused if a's shard has
// one of these types, with its job and future's source set and two
// holders.
func newAsk[S, T any](a *Actor[S], fn func(p *Proc, s S) (T, error)) *askCall[S, T] {
	sh := &a.sys.shards[a.shard()]
	var c *askCall[S, T]
	if m := sh.takeAsk(); m != nil {
		if r, ok := m.job.(*askCall[S, T]); ok {
			c = r
			c.a, c.fn = a, fn
		} else {
			sh.putAsk(m) // another Ask's: left for it
		}
	}
	if c == nil {
		c = &askCall[S, T]{call: call[S, T]{a: a, fn: fn}}
		c.job = c
	}
	c.refs.Store(2)
	plumb.SetSourceAt(&c.pr, &c.job)
	return c
}

// send sends c as Call sends its message.
func (c *askCall[S, T]) send(opts []SendOption) {
	a := &c.a.core
	switch {
	case a.plainSend(opts):
		a.send(&c.message)
	case a.withinOnly(opts):
		a.sendWithin(&c.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&c.message, opts)
	}
}

// recycle is the runner's letting go, once the message has run to the
// end (run's loop): as a Call's, and then, if nothing else holds the
// message (finishedAlone, as for a Tell's), release.
func (c *askCall[S, T]) recycle() {
	mine := c.finishedAlone(&c.a.core)
	c.call.recycle()
	if mine {
		c.release()
	}
}

// release lets go of one holder's hold; the last clears the message
// and keeps it for a later Ask.
func (c *askCall[S, T]) release() {
	if c.refs.Add(-1) != 0 {
		return
	}
	a := &c.a.core
	c.message = message{job: c} // the job stays: it tells the message's types (newAsk); spare stays too
	c.a, c.fn = nil, nil
	c.pr = future.Promise[T]{}
	a.sys.shards[a.shard()].putAsk(&c.message)
}

// takeAsk returns a message kept by putAsk, or nil.
func (sh *shard) takeAsk() *message {
	for i := range sh.asks {
		if sh.asks[i].Load() != nil {
			if m := sh.asks[i].Swap(nil); m != nil {
				return m
			}
		}
	}
	return nil
}

// putAsk keeps m, an Ask's message let go by both holders, unless the
// shard keeps as many as it may already (m then goes to the collector).
func (sh *shard) putAsk(m *message) {
	for i := range sh.asks {
		if sh.asks[i].CompareAndSwap(nil, m) {
			return
		}
	}
}
