package crisp

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
)

// A message's life. Exactly one of run, miss, stop, cancel or a policy
// failure happens to it: every transition out of stQueued is a
// compare-and-swap. Whoever wins it delivers the outcome; taking the
// message out of the actor's list and queue is separate bookkeeping,
// done under the actor's lock by whoever gets there first. A started
// process may suspend and resume any number of times (stRunning,
// stSuspended, stReady, stRunning...), until it finishes or its actor
// stops (stStopped).
const (
	stQueued    uint32 = iota // in the actor's queue, not started
	stTaken                   // taken off the queue; the runner is deciding whether it may start (see takeState)
	stRunning                 // started: its handler runs, or ran
	stMissed                  // its deadline passed before it started
	stStopped                 // its actor stopped before it started or while it was suspended
	stCancelled               // its context ended before it started
	stFailed                  // the policy panicked while ordering it
	stSuspended               // started, and waiting (future, condition, time) with the actor released
	stReady                   // suspended, and now queued to go on
)

// message is the untyped part of every Call and Tell, and of every Then
// continuation: what the policy, the watchdog and the actor's
// bookkeeping need.
type message struct {
	// Guarded by the actor's mu once queued. Before that, next links the
	// actor's intake.
	next, prev *message // the actor's intake, its plain messages, or its list
	state      atomic.Uint32
	linked     bool  // in the actor's list: queued, ready, or suspended
	inQ        bool  // pushed into the actor's policy queue, and not yet popped or removed from it
	counted    bool  // holds a place in its actor's bound until it starts or is decided (mailbox.go)
	obs        uint8 // observation bits (observe.go); zero unless the system has an observer
	resumed    bool  // a continuation of a process that has started and suspended
	ownItem    bool  // pi was made alone, by item, and goes back to the spares once popped (giveItemBack)
	dli        int32 // position in the actor's deadline index

	// dk is the start deadline as a deadline key (System.dlKey), 0 for
	// none: the runner, the queues and the watchdog compare keys, and
	// only reports make times of them (deadlineOf). A word, not a
	// time.Time's three: every message is 16 bytes smaller, and a start
	// check or a lane entry makes no time (issue 13).
	dk  int64
	seq uint64 // the arrival number at the actor (policy.Item's Seq)
	// job holds the message's job (work). A Call's future points here
	// for its source, rather than holding a copy (plumb.SetSourceAt).
	job any
	ext *msgExt // non-nil for messages sent with a context or observed
	// pi is the message as the actor's policy sees it: made at send, in
	// the same allocation, if the message carries a priority, a tag or a
	// name (which only pi holds) or its actor's policy orders every
	// message (core.itemized, withItem); else when it first enters the
	// policy's queue (item). Atomic: it may be made, under the actor's
	// lock, while another goroutine reads the message's name (a caller's
	// CheckWait, an observer). Under EDF and FIFO messages in arrival
	// order, and most with a deadline, never enter the queue (placePlain):
	// without a policy.Item in every message (and with the deadline a
	// key) a Tell is 96 bytes, and a queued Call with its future 128.
	pi atomic.Pointer[policy.Item]
}

// msgExt holds what few messages need.
type msgExt struct {
	ctx     context.Context
	stop    func() bool // from context.AfterFunc; nil if ctx cannot end
	keys    []keyRef    // the data the message synchronises on (see group.go)
	blocked int         // keys whose line it does not head, or that are held
	key1    [1]keyRef   // keys' storage when there is only one
	adm     *admEntry   // its admission control record (admission.go)
	finish  time.Time   // the finishing deadline its handler's sends inherit (propagate.go)
	// given is the start deadline as the sender gave it, when the time
	// its key gives back (System.dlTime) would differ from it in any
	// field (a By time with its own monotonic or wall reading, a
	// context's deadline, one beyond the keys' range): reports give the
	// sender's own time back. Zero otherwise.
	given time.Time

	// Set only for an observed message (message.obs != 0), by the
	// goroutine making its transition (observe.go): its number; the
	// system's key of its sending, then of its start; and of the instant
	// it last suspended; the key of the runner's reading at its deadline
	// check; its name. Here, not in message, so that a program without an
	// observer does not carry them in every message.
	oid                 uint64
	ostamp, suspendedAt int64
	startKey            int64  // the reading at its deadline check, if obsRead
	oname               string // its name, looked up once
}

// releaseCtx stops watching the context once the message has started or
// left the queue. It accepts a nil receiver (no context).
func (x *msgExt) releaseCtx() {
	if x != nil && x.stop != nil {
		x.stop()
		x.stop = nil
	}
}

// jobOf returns the job of the message a policy item stands for: the
// item's runtime reference, which queues neither see nor change
// (internal/plumb), set by item.
func jobOf(it *policy.Item) job { return (*plumb.Ref(unsafe.Pointer(it))).(job) }

// work returns m's job.
func (m *message) work() job { return m.job.(job) }

// item returns m as its actor's policy sees it, made if m has none yet
// and brought up to date: its deadline, arrival number, whether it is
// resumed, and its job. Called with the actor's mu held, before m
// enters the policy's queue; s is the actor's system.
func (m *message) item(s *System) *policy.Item {
	it := m.pi.Load()
	if it == nil {
		it = spareItem()
		m.pi.Store(it)
		m.ownItem = true
	}
	it.Deadline, it.Seq, it.Resumed = m.deadlineOf(s), m.seq, m.resumed
	*plumb.Ref(unsafe.Pointer(it)) = m.job // the job as it is: no assertion to job and back
	return it
}

// spareItem returns a policy item from the stash (takeItem), or a new
// one.
func spareItem() *policy.Item {
	if it := takeItem(); it != nil {
		return it
	}
	return new(policy.Item)
}

// giveItemBack puts m's item, if item made it, in the stash (putItem):
// m has left the policy's queue, which keeps no reference to what it
// popped (policy.Queue), and its priority, tag and name, which other
// goroutines may read (itemName), are zero on such an item and stay so.
// Not when the actor's queue has misbehaved: it may hold stale items.
// Called with the actor's lock held.
func (m *message) giveItemBack(a *core) {
	if !m.ownItem || a.flags.Load()&fNoReuse != 0 {
		return
	}
	m.ownItem = false
	it := m.pi.Swap(nil)
	it.Deadline, it.Seq, it.Resumed = time.Time{}, 0, false
	*plumb.Ref(unsafe.Pointer(it)) = nil // the job: let the message go
	putItem(it)
}

// meta returns m's policy item, made if m has none yet: for setting its
// priority, tag or name at send, and for item.
func (m *message) meta() *policy.Item {
	it := m.pi.Load()
	if it == nil {
		it = new(policy.Item)
		m.pi.Store(it)
	}
	return it
}

// priority, tag and itemName return what m was sent with: Priority, Tag,
// MessageName (or zero values).
func (m *message) priority() int {
	if it := m.pi.Load(); it != nil {
		return it.Priority
	}
	return 0
}

func (m *message) tag() any {
	if it := m.pi.Load(); it != nil {
		return it.Tag
	}
	return nil
}

func (m *message) itemName() string {
	if it := m.pi.Load(); it != nil {
		return it.Name
	}
	return ""
}

// job is the typed part of a message: a Call's, a Tell's or a
// continuation's code, and where its outcome goes.
type job interface {
	hdr() *message
	actor() *core
	// actorAny returns the *Actor[S] the job runs on.
	actorAny() any
	// run calls the handler with the actor's state and delivers the
	// result. It runs on the goroutine holding the actor.
	run(p *Proc)
	// fail delivers err as the message's outcome (nobody hears it for a
	// Tell or a detached continuation).
	fail(err error)
	// handler returns the handler function, for naming the message.
	handler() any
	// answered reports whether a future receives the outcome (false for
	// a Tell, whose failures only the log hears of).
	answered() bool
	// recycle offers the message, whose handler has returned, for reuse
	// by a later send, if nothing can refer to it any more: a Tell's
	// message, which no future holds. Called with the actor's mu held,
	// after the last use of the message.
	recycle()
}

// sink receives a result that arrives after its message's handler has
// returned (a CallNext handler that returned Then's Next): the call's
// promise. Its failures come through fail (the job's), its results
// through the typedSink of its result type (see deliverTo).
type sink interface {
	fail(err error)
}

// typedSink is a sink that takes a U.
type typedSink[U any] interface {
	deliverTyped(v U, err error)
}

// call is a message sent with Call.
type call[S, T any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S) (T, error)
	// pr is embedded: one allocation per Call. A caller holding the
	// future holds the message; run drops fn so that at least what the
	// handler captured can be collected.
	pr future.Promise[T]
}

func (c *call[S, T]) hdr() *message  { return &c.message }
func (c *call[S, T]) actor() *core   { return &c.a.core }
func (c *call[S, T]) actorAny() any  { return c.a }
func (c *call[S, T]) handler() any   { return c.fn }
func (c *call[S, T]) answered() bool { return true }
func (c *call[S, T]) fail(err error) { c.pr.Fail(err) }

// recycle gives an observed call's extension back (see freeExt): the
// future keeps the message, but only the runtime reads its extension.
func (c *call[S, T]) recycle() {
	if c.obs != 0 {
		freeExt(&c.message)
	}
}

func (c *call[S, T]) run(p *Proc) {
	v, err := c.fn(p, c.a.stateOf(p))
	c.fn = nil // nothing reads it once the handler has returned
	// The handler is done: a caller woken by the result may send at once,
	// and must find the actor free rather than busy.
	p.a.flags.And(^uint32(fHandling))
	c.pr.Resolve(v, err)
}

func (c *call[S, T]) deliverTyped(v T, err error) { c.pr.Resolve(v, err) }

// Clock, CheckWait and EndWait make the call the future's Source.
func (c *call[S, T]) Clock() clock.Clock { return c.a.sys.clk }

// ResultSoon tells the future's waiters whether yielding the processor
// a few times is likely to see the result: the message is running, or
// it is queued and its actor (or a worker of its group) is free to start
// it. While another handler holds the actor, or its runner has stepped
// aside and waits for a processor (stepAside), a waiter parks at once,
// so that the result wakes it instead of leaving it at the back of a
// busy run queue.
func (c *call[S, T]) ResultSoon() bool {
	a := &c.a.core
	switch c.state.Load() {
	case stRunning:
		return true
	case stQueued:
		if g := a.cfg.grp; g != nil {
			return g.runners.Load() < g.n.Load()
		}
		return !a.occupied()
	}
	return false
}

// CheckWait refuses to let the goroutine holding the message's actor
// block on the message's future: only that actor can produce it, and it
// would be waiting for itself. On a group, it refuses a wait that would
// leave no worker to run the message (see checkGroupWait).
func (c *call[S, T]) CheckWait() error {
	a := &c.a.core
	a.sys.flushHandedHere() // a runner the waiting handler held back must not wait for it
	if a.cfg.grp != nil {
		return a.checkGroupWait(&c.message, c)
	}
	if g := a.holder.Load(); g == 0 || gid.ID(g) != gid.Current() { // groups never set holder
		return nil
	}
	return fmt.Errorf("%w: a process of actor %s waits for message %s of that same actor, which cannot run while it waits (use Await to release the actor instead)",
		ErrDeadlock, a.displayName(), c.name(c.work())) // its job: c may be a CallNext's
}

// EndWait ends a wait CheckWait allowed: a group counts its workers'
// waits for its own futures.
func (c *call[S, T]) EndWait() {
	if a := &c.a.core; a.cfg.grp != nil {
		a.endGroupWait()
	}
}

// callNext is a message sent with CallNext: a call whose handler returns
// a Next.
type callNext[S, T any] struct {
	call[S, T]
	next func(*Proc, S) Next[S, T]
}

func (c *callNext[S, T]) handler() any { return c.next }

func (c *callNext[S, T]) run(p *Proc) {
	n := c.next(p, c.a.stateOf(p))
	c.next = nil // nothing reads it once the handler has returned
	p.a.flags.And(^uint32(fHandling))
	switch {
	case n.k == nil:
		c.pr.Resolve(n.v, n.err)
	case p.madeHere(n.k):
		n.k.resultTo(&c.call) // the continuation's result comes later
	default:
		c.pr.Fail(errForeignNext)
	}
}

// tell is a message sent with Tell.
type tell[S any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S)
}

func (t *tell[S]) hdr() *message  { return &t.message }
func (t *tell[S]) actor() *core   { return &t.a.core }
func (t *tell[S]) actorAny() any  { return t.a }
func (t *tell[S]) handler() any   { return t.fn }
func (t *tell[S]) answered() bool { return false }
func (t *tell[S]) fail(error)     {}

// tellMem is the memory of a tell[S] for every S: the message, then two
// pointers (the actor, the handler function), which is all S changes.
// The stash of finished Tell messages (stash.go) holds them as *tellMem,
// one for all actors and state types.
type tellMem struct {
	message
	a, fn unsafe.Pointer
}

// newTell returns a message for a Tell to a with opts: a finished one
// from the stash (takeTell) if there is one, else a new one, with its
// policy item beside it if the message will need one (core.itemized). A
// reused message may bring the item kept from an earlier use, or make
// one when it needs it.
//
//go:noinline
func newTell[S any](a *Actor[S], opts []SendOption) *tell[S] {
	if x := takeTell(); x != nil {
		t := (*tell[S])(unsafe.Pointer(x))
		t.a = a
		return t
	}
	if a.itemized(opts) {
		t := newWithItem[tell[S]]()
		t.a = a
		return t
	}
	// The actor set in the literal, not after: made as
	// t := &tell[S]{}; t.a = a, four senders' Tells to one actor took
	// 375-450 ns a message against 200-230 (BenchmarkOneWay, go1.26.8).
	return &tell[S]{a: a}
}

// recycle clears the message and puts it in the stash (putTell) for a
// later Tell to any actor, or keeps it for its actor's lane's next entry
// (lane.keep). Called by the runner, with the actor's mu held. A message
// that carried a context or keys, or whose process suspended, had other
// holders (a context's callback, key lines, a parked goroutine) and is
// left to the collector, as is every message of an actor whose policy
// queue has misbehaved (it may still hold stale items). An extension
// that holds only an observer's figures (observe.go) had no other
// holder: it goes back to the system (freeExt), for an observed Call or
// Tell.
func (t *tell[S]) recycle() {
	if !t.finishedAlone(&t.a.core) {
		return
	}
	l := t.a.lane.Load()
	freeExt(&t.message)
	if l != nil && l.keep == nil {
		// Kept for the lane's next entry, a Tell to the same actor:
		// it stays a's and its own job (laneMaker).
		t.message.clearKept()
		if t.fn != nil { // a handler that panicked: see tell.run
			t.fn = nil
		}
		l.keep = (*tellMem)(unsafe.Pointer(t)) // see lane.keep
		return
	}
	it := t.pi.Load()
	t.message = message{}
	t.a, t.fn = nil, nil
	if it != nil { // kept, cleared (its tag may hold the user's data), for the message's next use
		*it = policy.Item{}
		t.pi.Store(it)
	}
	putTell((*tellMem)(unsafe.Pointer(t)))
}

// clearKept clears m, a finished message that stays with its actor, as
// m = message{} would but for its job and its policy item, which
// stay (the item cleared), and writes only the pointer fields that are
// not nil already: while the collector marks, each pointer written
// costs a write barrier.
func (m *message) clearKept() {
	if m.next != nil || m.prev != nil {
		m.next, m.prev = nil, nil
	}
	if m.ext != nil {
		m.ext = nil
	}
	m.setState(0)
	m.linked, m.inQ, m.counted, m.resumed, m.ownItem = false, false, false, false, false
	m.obs, m.dli, m.dk, m.seq = 0, 0, 0, 0
	if it := m.pi.Load(); it != nil {
		*it = policy.Item{} // its tag may hold the user's data
	}
}

// finishedAlone reports whether m, which a's runner has finished,
// has no holder but that runner: no context's callback, key lines or
// admission record holds it (an extension with only an observer's
// figures is the runtime's), no process of it suspended (a parked
// goroutine held it), and a's policy queue has not misbehaved (it may
// hold stale items). Such a message may serve a later send (tell.recycle,
// askCall.recycle).
func (m *message) finishedAlone(a *core) bool {
	x := m.ext
	return (x == nil || x.observedOnly()) && !m.resumed && a.flags.Load()&fNoReuse == 0
}

// observedOnly reports whether x holds nothing but an observed message's
// figures: no context, keys, admission record or finishing
// deadline, which other goroutines or structures may still refer to.
func (x *msgExt) observedOnly() bool {
	return x.ctx == nil && x.stop == nil && x.keys == nil && x.adm == nil && x.finish.IsZero()
}

func (t *tell[S]) run(p *Proc) {
	t.fn(p, t.a.stateOf(p))
	t.fn = nil
	if a := p.a; a.cfg.grp != nil {
		a.flags.And(^uint32(fHandling)) // as ever for a group; a single actor's runner keeps it (beginHandler)
	}
}

// name is the message's name for errors: its Name option, else its
// handler function's name.
func (m *message) name(j job) string {
	if n := m.itemName(); n != "" {
		return n
	}
	return funcName(j.handler())
}

// funcNames caches funcName by code pointer: a miss reported by the
// watchdog names its handler, and the runtime's symbol lookup costs more
// than the rest of the report. Programs have finitely many handlers.
var funcNames sync.Map // uintptr -> string

// checked reports whether the runner checks m's deadline when it takes
// it (late): a new message with a deadline.
func (m *message) checked() bool { return m.dk != 0 && !m.resumed }

// Deadline keys. A deadline's key is its distance from the system's
// epoch in nanoseconds (System.key), moved one down when not positive so
// that 0 stays free to mean "no deadline": keys keep the deadlines'
// order, and a clock reading's key compares with them as the reading
// with the deadline (a message is due once dlKey(now) >= its key). A
// deadline on the system's clock (a Within, a By made from the clock's
// readings) gives the same instant back from its key, to the
// nanosecond; the key of one with a monotonic reading is measured on
// it, like time.Time's own comparisons. The keys of deadlines more than
// 292 years from the epoch saturate: such messages order among
// themselves by arrival, and keep their exact times for reports
// (msgExt.given).

// dlKey returns the deadline key of t, which is not the zero time.
func (s *System) dlKey(t time.Time) int64 { return keyOf(s.key(t)) }

// keyOf returns the deadline key of the instant k nanoseconds after the
// epoch.
func keyOf(k int64) int64 {
	if k <= 0 && k != math.MinInt64 {
		k--
	}
	return k
}

// dlTime returns the instant of the deadline key k, not 0.
func (s *System) dlTime(k int64) time.Time {
	if k < 0 {
		k++
	}
	return s.atKey(k)
}

// setDeadline gives m the start deadline t (the zero time for none), on
// s's keys, keeping t itself if its key would not give it back.
func (m *message) setDeadline(s *System, t time.Time) {
	m.dk = 0
	if !t.IsZero() {
		m.dk = s.dlKey(t)
	}
	if m.dk != 0 && s.dlTime(m.dk) != t {
		m.extOf().given = t
	} else if m.ext != nil {
		m.ext.given = time.Time{}
	}
}

// deadlineOf returns m's start deadline, the zero time if none: the time
// its sender gave, on s's keys.
func (m *message) deadlineOf(s *System) time.Time {
	if m.dk == 0 {
		return time.Time{}
	}
	if x := m.ext; x != nil && !x.given.IsZero() {
		return x.given
	}
	return s.dlTime(m.dk)
}

// extOf returns m's extension, made if m has none.
func (m *message) extOf() *msgExt {
	if m.ext == nil {
		m.ext = &msgExt{}
	}
	return m.ext
}

// takeState is the state a queued message is taken in: stTaken, or
// stRunning at once for a Tell with nothing to check before it starts
// (checked), which saves runOne a second atomic write to the message
// (an exchange, on amd64) for each message of a flood. Nothing tells
// the two apart for such a Tell: only the runner decides it from here,
// and no future asks whether it runs. A Call stays stTaken until its
// handler starts: its waiter's ResultSoon, reading stRunning a little
// earlier, spun where it had parked, and request-reply took 19.7 ->
// 21.6 ms in bench quick (Intel Xeon, 8 alternations). j is m's job,
// which the taker returns too.
func (m *message) takeState(j job) uint32 {
	if m.checked() || j.answered() {
		return stTaken
	}
	return stRunning
}

// setState sets m's state with a plain store, for a message no other
// goroutine can see: one not given out yet (a lane entry's Tell), or
// finished with no other holder (clearKept). On amd64 an atomic store
// is an exchange, a locked instruction.
func (m *message) setState(st uint32) { *(*uint32)(unsafe.Pointer(&m.state)) = st }

func funcName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	pc := v.Pointer()
	slot := &recentNames[uint64(pc)*0x9e3779b97f4a7c15>>(64-8)]
	if e := slot.Load(); e != nil && e.pc == pc {
		return e.name
	}
	var name string
	if n, ok := funcNames.Load(pc); ok {
		name = n.(string)
	} else {
		f := runtime.FuncForPC(pc)
		if f == nil {
			return ""
		}
		name = f.Name()
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		funcNames.Store(pc, name)
	}
	slot.Store(&pcName{pc, name})
	return name
}

// recentNames is a direct-mapped cache in front of funcNames, indexed by
// a hash of the code pointer: an observer names every message at send
// (observe.go), and a load and a compare cost a tenth of the map's
// lookup. Two handlers that share a slot take turns in it.
var recentNames [256]atomic.Pointer[pcName]

// pcName is one entry of recentNames.
type pcName struct {
	pc   uintptr
	name string
}
