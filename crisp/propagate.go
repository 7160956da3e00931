package crisp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/gid"
)

// Deadline propagation.
//
// A message sent from inside a handler inherits from that handler's
// message, unless sent with Detached:
//
//   - its context, if it has none of its own (Context): the child is
//     then cancelled if the parent's context ends before it starts, and
//     bounded by that context's deadline;
//   - its finishing deadline, if the parent was sent with a deadline and
//     a Cost (the parent's deadline before Cost took its run time off):
//     the child's deadline is the earlier of its own and the parent's
//     finishing deadline, and the child's own Cost, if any, is taken off
//     that. A child without a Cost must so start by the parent's
//     finishing deadline; one with a Cost, finish by it. Work the parent
//     asks for after it should have finished is worthless to it. A
//     child without a Cost passes the parent's finishing deadline on to
//     its own children.
//
// Inheritance only narrows: a child never gets a later deadline than it
// asked for, nor loses a context it was given.
//
// How a send knows it runs in a handler. Go has no goroutine-local
// storage; internal/gid identifies the calling goroutine in about 2 ns
// on amd64 and arm64. A handler whose message has something to pass on
// (a context or a finishing deadline) is recorded, for as long as it
// runs (across Awaits too: its goroutine keeps its stack), in parents,
// keyed by its goroutine. A send looks there only while some handler is
// recorded (inheriting is not zero): other programs pay one atomic load
// of a global that is written only when such handlers start and end,
// and handlers without a context or a Cost pay nothing. A recorded
// handler costs a map store and delete under one of 64 mutexes; a send
// while one runs anywhere in the process, a lookup under one.

// parents maps the goroutine of each running handler with something to
// pass on to its message. Plain maps under sharded mutexes, rather than
// a sync.Map, whose Store allocates for each new key: every handler
// with a context would pay an allocation.
var parents parentTable

type parentTable struct{ shards [64]parentShard }

type parentShard struct {
	mu sync.Mutex // guards m
	m  map[gid.ID]*message
	_  [48]byte // a cache line each
}

func (t *parentTable) shard(g gid.ID) *parentShard {
	u := uintptr(g)
	return &t.shards[(u>>6^u>>12)%64] // g descriptors are a few hundred bytes apart
}

func (t *parentTable) store(g gid.ID, m *message) {
	s := t.shard(g)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[gid.ID]*message)
	}
	s.m[g] = m
	s.mu.Unlock()
}

func (t *parentTable) load(g gid.ID) *message {
	s := t.shard(g)
	s.mu.Lock()
	m := s.m[g]
	s.mu.Unlock()
	return m
}

func (t *parentTable) delete(g gid.ID) {
	s := t.shard(g)
	s.mu.Lock()
	delete(s.m, g)
	s.mu.Unlock()
}

// inheriting counts the entries of parents, on a cache line of its own:
// every send reads it.
var inheriting struct {
	_ [64]byte
	n atomic.Int32
	_ [60]byte
}

// Detached sends the message as if from outside any handler: it
// inherits neither the sending handler's context nor its finishing
// deadline (see the package documentation's "Deadline propagation").
func Detached() SendOption { return SendOption{kind: optDetached} }

// inherit gathers what the handler running on the calling goroutine, if
// any, passes on to the message being sent.
//
//go:noinline
func (o *sendOpts) inherit() {
	m := parents.load(gid.Current())
	if m == nil {
		return
	}
	x := m.ext // set: only messages with an ext are recorded
	if o.ctx == nil {
		o.ctx = x.ctx
	}
	if !x.finish.IsZero() {
		o.parent = x // its finish stays put while its handler runs, and sends
	}
}

// passesOn reports whether a handler of a message with this ext has
// something for the messages it sends to inherit.
func (x *msgExt) passesOn() bool { return x.ctx != nil || !x.finish.IsZero() }

// invokeInheriting is invoke for a handler whose message passes
// something on: it is recorded in parents while it runs.
//
//go:noinline
func (a *core) invokeInheriting(p *Proc, j job, m *message) {
	g := gid.Current()
	parents.store(g, m)
	inheriting.n.Add(1)
	defer func() {
		parents.delete(g)
		inheriting.n.Add(-1)
	}()
	a.invoke(p, j)
}

// setFinish records m's finishing deadline, the deadline its Cost was
// taken from, for the messages its handler sends.
//
//go:noinline
func (m *message) setFinish(t time.Time) {
	m.extOf().finish = t
}

// narrow bounds the message's deadline by the inherited finishing
// deadline (its Cost, if any, is taken off after), and passes that on to
// its own children unless its Cost will give it an earlier one.
//
//go:noinline
func (o *sendOpts) narrow(m *message) {
	finish := o.parent.finish
	o.dl = deadline.Earliest(o.dl, finish)
	if o.cost == 0 {
		m.setFinish(finish)
	}
}
