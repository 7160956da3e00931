package crisp

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/policy"
)

// Send sends v to an actor (or a group) for fn, without a future: a Tell
// whose handler takes a value. It obeys the same options and order as
// Tell, and fails as a Tell does (the miss hook, the logger, the
// dead-letter hook).
//
// Where a Tell's handler is usually a closure, allocated per message
// for what it captures, Send's fn can be one function for every
// message, and v travels in the message. A Send whose v is a pointer,
// map, channel or function, a bool or number of at most 64 bits (of a
// named type too), or of a type of no size (struct{}), allocates nothing once the runtime has finished
// messages of its size to reuse (a Tell's are reused the same way); in
// a flood (its runner finds many messages waiting, see the package
// documentation), with no option or with one Within, it queues 48 bytes.
// A Send of a value of any other type allocates its message, as a Call
// does.
//
// Send blocks only as Tell does, on a full mailbox with WaitWhenFull. It
// panics if to or fn is nil.
func Send[S, V any](to Ref[S], fn func(p *Proc, s S, v V), v V, opts ...SendOption) {
	a := actorOf(to, "Send")
	if fn == nil {
		panic("crisp: Send with a nil handler")
	}
	plain := a.plainSend(opts)
	// The lane's tests written out, as in Tell; laneSend's arguments
	// few, and the value's way not yet asked for: their room is in this
	// frame, under every handler that sends (see sendOther).
	if l := a.lane.Load(); l != nil || a.flags.Load()&fFlood != 0 {
		var d time.Duration // none
		if !plain && a.withinOnly(opts) {
			d = time.Duration(opts[0].n)
		}
		if (plain || d > 0) && laneSend(a, fn, v, d) {
			return
		}
	}
	way := wayOf[V]()
	if way == wayNone {
		sendOther(a, fn, v, opts)
		return
	}
	t := newSend(a, fn, opts)
	if way == wayPointer { // written in place: a pair of results is a pair of temporaries in this frame
		t.p = *(*unsafe.Pointer)(unsafe.Pointer(&v))
	} else {
		*(*V)(unsafe.Pointer(&t.w)) = v
	}
	switch {
	case plain:
		a.send(&t.message)
	case a.withinOnly(opts):
		a.sendWithin(&t.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&t.message, opts)
	}
}

// sendOther is Send for a value that neither a pointer nor a word holds
// (wayNone): its message is its own (sendAny). Apart from Send, whose
// frame is under every handler that sends: a handler's sends run on its
// runner's small stack (see stack_internal_test.go).
//
//go:noinline
func sendOther[S, V any](a *Actor[S], fn func(*Proc, S, V), v V, opts []SendOption) {
	var t *sendAny[S, V]
	if a.itemized(opts) {
		t = newWithItem[sendAny[S, V]]()
		t.a, t.fn, t.v = a, fn, v
	} else {
		t = &sendAny[S, V]{a: a, fn: fn, v: v}
	}
	t.job = t
	switch {
	case a.plainSend(opts):
		a.send(&t.message)
	case a.withinOnly(opts):
		a.sendWithin(&t.message, time.Duration(opts[0].n))
	default:
		a.sendWith(&t.message, opts)
	}
}

// laneSend sends fn and v, a Send with no option (d == 0) or one
// Within(d) (withinOnly, d > 0), through a's lane, or through a lane it makes if a has none (its
// runner has found a flood), and reports whether it did: not if the
// lane cannot hold the deadline (withinKey) or refuses it (lane.push:
// for its order, or held by another sender),
// or a has stopped, nor if v's type rides in no lane (wayNone); the
// caller then sends it as a message.
func laneSend[S, V any](a *Actor[S], fn func(*Proc, S, V), v V, d time.Duration) bool {
	way := wayOf[V]()
	if way == wayNone {
		return false
	}
	c := &a.core
	var k, since int64
	if d > 0 {
		var ok bool
		since = c.sys.since()
		if k, ok = withinKey(since, d); !ok {
			return false
		}
	}
	l := c.lane.Load()
	if l == nil {
		l = c.makeLane(laneMaker(a), unsafe.Pointer(a))
	}
	lv := laneVal{k: valueKind[S, V]{}}
	lv.p, lv.w = encode(way, v)
	if k == 0 {
		return c.lanePush(l, valueSlot(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), 0), &lv)
	}
	k, since, ok := c.lanePushKeyed(l, valueSlot(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), k), &lv, since)
	if ok {
		c.needWatchKey(k, since)
	}
	return ok
}

// How a Send's value of a type is held in its message (sendTell) and a
// lane (laneVal): in a pointer, in a word, or neither (sendAny holds
// it as it is).
const (
	wayNone = iota
	wayPointer
	wayWord
)

// laneWay returns how a Send's value of type V is held: a pointer, map,
// channel or function in a pointer; a bool or number of at most 64 bits,
// or a value of no size (struct{}), in a word; anything else in
// neither.
func laneWay[V any]() int {
	t := reflect.TypeFor[V]()
	if t.Size() == 0 {
		return wayWord
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		return wayPointer
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64:
		return wayWord
	}
	return wayNone
}

// ways caches laneWay for the value types Sends carry, each entry a
// type's table (of valKind for valueKind[struct{}, V]: static, and
// aligned, so its low bits are free) with its way in the low bits,
// found at a hash of the table. Reflection's look at the type was 7%
// of a flood of Sends' CPU profile (throughput-4x100); a program sends
// few value types.
var ways [64]atomic.Uintptr

// wayOf returns laneWay[V]() from the cache (ways), computing and
// caching it if V's entry is not there.
func wayOf[V any]() int {
	var k valKind = valueKind[struct{}, V]{}
	tab := uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&k)))
	e := &ways[(tab>>3)*0x9e3779b97f4a7c15>>58]
	if c := e.Load(); c&^3 == tab {
		return int(c & 3)
	}
	w := laneWay[V]()
	e.Store(tab | uintptr(w))
	return w
}

// encode returns v, whose type's way is way (not wayNone), as a
// pointer or a word.
func encode[V any](way int, v V) (p unsafe.Pointer, w uint64) {
	if way == wayPointer {
		return *(*unsafe.Pointer)(unsafe.Pointer(&v)), 0
	}
	*(*V)(unsafe.Pointer(&w)) = v
	return nil, w
}

// decode returns the value encode gave as p and w.
func decode[V any](p unsafe.Pointer, w uint64) V {
	if p != nil {
		return *(*V)(unsafe.Pointer(&p))
	}
	return *(*V)(unsafe.Pointer(&w)) // a word, or a nil pointer
}

// valKind makes the message of a Send's lane entry: one implementation
// (valueKind) per actor state type and value type, held in the entry's
// laneVal.
type valKind interface {
	// make returns the Send made of handler fn and value v for l's
	// actor, in x if x is not nil, else from the stash or new, and the
	// message as a job.
	make(l *lane, fn unsafe.Pointer, v laneVal, x *sendMem) (*message, job)
}

// valueKind is the valKind of Sends to an *Actor[S] of values of type V.
// It has no fields: as an interface value it is two constant words.
type valueKind[S, V any] struct{}

func (valueKind[S, V]) make(l *lane, fn unsafe.Pointer, v laneVal, x *sendMem) (*message, job) {
	var t *sendTell[S, V]
	if x != nil {
		t = (*sendTell[S, V])(unsafe.Pointer(x))
		t.job = t // x may have served a Send of another value type
	} else {
		t = newSend((*Actor[S])(l.act), *(*func(*Proc, S, V))(unsafe.Pointer(&fn)), nil)
	}
	t.fn = *(*func(*Proc, S, V))(unsafe.Pointer(&fn))
	t.p, t.w = v.p, v.w
	return &t.message, t
}

// sendMem is the memory of a sendTell[S, V] for every S and V: the
// message, then three pointers (the actor, the handler, the value if a
// pointer) and a word (the value if not). The stash of finished Sends
// holds them as *sendMem, one for all actors, state and value types.
type sendMem struct {
	message
	a, fn, p unsafe.Pointer
	w        uint64
}

// sendTell is a message sent with Send, of a value held in p or w
// (wayPointer, wayWord).
type sendTell[S, V any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S, V)
	p  unsafe.Pointer
	w  uint64
}

// newSend returns a Send of fn to a with opts, its job set: a finished
// one from the stash (takeSend) if there is one, else a new one, with
// its policy item beside it if the message will need one (as newTell).
//
//go:noinline
func newSend[S, V any](a *Actor[S], fn func(*Proc, S, V), opts []SendOption) *sendTell[S, V] {
	var t *sendTell[S, V]
	switch x := takeSend(); {
	case x != nil:
		t = (*sendTell[S, V])(unsafe.Pointer(x))
		t.a, t.fn = a, fn
	case a.itemized(opts):
		t = newWithItem[sendTell[S, V]]()
		t.a, t.fn = a, fn
	default:
		t = &sendTell[S, V]{a: a, fn: fn} // set in the literal: see newTell
	}
	t.job = t
	return t
}

func (t *sendTell[S, V]) hdr() *message  { return &t.message }
func (t *sendTell[S, V]) actor() *core   { return &t.a.core }
func (t *sendTell[S, V]) actorAny() any  { return t.a }
func (t *sendTell[S, V]) handler() any   { return t.fn }
func (t *sendTell[S, V]) answered() bool { return false }
func (t *sendTell[S, V]) fail(error)     {}

func (t *sendTell[S, V]) run(p *Proc) {
	t.fn(p, t.a.stateOf(p), decode[V](t.p, t.w))
	t.fn, t.p = nil, nil
	if a := p.a; a.cfg.grp != nil {
		a.flags.And(^uint32(fHandling)) // as tell.run
	}
}

// recycle clears the finished message and keeps it for its actor's
// lane's next Send entry (lane.vkeep) or puts it in the stash
// (putSend), as tell.recycle does for a Tell, if nothing else holds it
// (finishedAlone). Called by the runner, with the actor's mu held.
func (t *sendTell[S, V]) recycle() {
	if !t.finishedAlone(&t.a.core) {
		return
	}
	freeExt(&t.message)
	if l := t.a.lane.Load(); l != nil && l.vkeep == nil {
		t.message.clearKept()
		if t.fn != nil || t.p != nil { // a handler that panicked: see run
			t.fn, t.p = nil, nil
		}
		t.w = 0
		l.vkeep = (*sendMem)(unsafe.Pointer(t))
		return
	}
	it := t.pi.Load()
	t.message = message{}
	t.a, t.fn, t.p, t.w = nil, nil, nil, 0
	if it != nil { // kept, cleared, as a Tell's
		*it = policy.Item{}
		t.pi.Store(it)
	}
	putSend((*sendMem)(unsafe.Pointer(t)))
}

// sendAny is a message sent with Send of a value that neither a pointer
// nor a word holds (wayNone): it holds it as it is, in memory of its
// own, which the collector takes back.
type sendAny[S, V any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S, V)
	v  V
}

func (t *sendAny[S, V]) hdr() *message  { return &t.message }
func (t *sendAny[S, V]) actor() *core   { return &t.a.core }
func (t *sendAny[S, V]) actorAny() any  { return t.a }
func (t *sendAny[S, V]) handler() any   { return t.fn }
func (t *sendAny[S, V]) answered() bool { return false }
func (t *sendAny[S, V]) fail(error)     {}
func (t *sendAny[S, V]) recycle() {
	if t.finishedAlone(&t.a.core) {
		freeExt(&t.message) // an observed message's figures go back to the system
	}
}

func (t *sendAny[S, V]) run(p *Proc) {
	t.fn(p, t.a.stateOf(p), t.v)
	if a := p.a; a.cfg.grp != nil {
		a.flags.And(^uint32(fHandling)) // as tell.run
	}
}
