package crisp

import (
	"reflect"
	"time"
	"unsafe"
)

// Send sends v to an actor (or a group) for fn, without a future: a Tell
// whose handler takes a value. It obeys the same options and order as
// Tell, and fails as a Tell does (the miss hook, the logger, the
// dead-letter hook).
//
// Where a Tell's handler is usually a closure, allocated per message
// for what it captures, Send's fn can be one function for every
// message, and v travels in the message: once the actor has a flood's
// backlog (its runner finds many messages waiting, see the package
// documentation), a Send whose v is a pointer, map, channel or
// function, or a bool or number of at most 64 bits (of a named type
// too), with no option or with one Within, allocates nothing while the
// flood's Sends are of one value type. Other Sends allocate their
// message, as a Call does.
//
// Send blocks only as Tell does, on a full mailbox with WaitWhenFull. It
// panics if to or fn is nil.
func Send[S, V any](to Ref[S], fn func(p *Proc, s S, v V), v V, opts ...SendOption) {
	a := actorOf(to, "Send")
	if fn == nil {
		panic("crisp: Send with a nil handler")
	}
	plain := a.plainSend(opts)
	if l := a.lane.Load(); l != nil || a.flags.Load()&fFlood != 0 {
		if (plain || a.withinOnly(opts)) && laneSend(a, l, fn, v, opts) {
			return
		}
	}
	var t *sendTell[S, V]
	if a.itemized(opts) {
		t = newWithItem[sendTell[S, V]]()
		t.a, t.fn, t.v = a, fn, v
	} else {
		t = &sendTell[S, V]{a: a, fn: fn, v: v} // set in the literal: see newTell
	}
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

// laneSend sends fn and v, a Send with no option or one Within
// (withinOnly), through a's lane l, or through a lane it makes if l is
// nil and a's runner has found a flood (fFlood), and reports whether
// it did: not if v's type cannot ride in a lane (laneWay), the lane
// cannot hold the deadline (withinKey) or refuses it (lane.push), or a
// has stopped; the caller then sends it as a message.
func laneSend[S, V any](a *Actor[S], l *lane, fn func(*Proc, S, V), v V, opts []SendOption) bool {
	c := &a.core
	if l == nil {
		if laneWay[V]() == wayNone {
			return false
		}
		l = c.makeLane(laneMaker(a), unsafe.Pointer(a))
	}
	var kind valKind = valueKind[S, V]{}
	way := l.wayOf(kind, laneWay[V])
	if way == wayNone {
		return false
	}
	var k, since int64
	if len(opts) == 1 {
		var ok bool
		since = c.sys.since()
		if k, ok = withinKey(since, time.Duration(opts[0].n)); !ok {
			return false
		}
	}
	lv := laneVal{k: kind}
	if way == wayPointer {
		lv.p = *(*unsafe.Pointer)(unsafe.Pointer(&v))
	} else {
		*(*V)(unsafe.Pointer(&lv.w)) = v
	}
	if !c.lanePush(l, valueSlot(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), k), &lv) {
		return false
	}
	if k != 0 {
		c.needWatchKey(k, since)
	}
	return true
}

// How a Send's value of a type rides in a lane (laneVal): in its
// pointer, in its word, or not at all.
const (
	wayNone = iota
	wayPointer
	wayWord
)

// laneWay returns how a value of type V rides in a lane: a pointer, map,
// channel or function in laneVal.p; a bool or number of at most one word
// (no pointers) in laneVal.w; anything else not at all.
func laneWay[V any]() int {
	switch reflect.TypeFor[V]().Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		return wayPointer
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64:
		return wayWord
	}
	return wayNone
}

// wayOf returns how a value of kind k rides in l (laneWay, which way
// computes): from l's cache if k is the kind it holds, else computed
// and cached. Reflection's look at the type was 7% of a flood of Sends'
// CPU profile (throughput-4x100); a flood's Sends are mostly of one kind.
func (l *lane) wayOf(k valKind, way func() int) int {
	tab := uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&k))) // its type table: static, aligned
	if c := l.ways.Load(); c&^3 == tab {
		return int(c & 3)
	}
	w := way()
	l.ways.Store(tab | uintptr(w))
	return w
}

// valKind makes the message of a Send's lane entry: one implementation
// (valueKind) per actor state type and value type, held in the entry's
// laneVal.
type valKind interface {
	// make returns the Send made of handler fn and value v for l's
	// actor, in the lane's kept one (lane.vkeep) if keep and it is of
	// this kind, and the message as a job. Called with the actor's mu
	// held if keep.
	make(l *lane, fn unsafe.Pointer, v laneVal, keep bool) (*message, job)
}

// sameKind reports whether x and y are the same kind: x == y, less the
// runtime's call comparing their values, which have no fields (each
// interface's first word, its type's table, names its type).
func sameKind(x, y valKind) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&x)) == *(*unsafe.Pointer)(unsafe.Pointer(&y))
}

// valueKind is the valKind of Sends to an *Actor[S] of values of type V.
// It has no fields: as an interface value it is two constant words.
type valueKind[S, V any] struct{}

func (valueKind[S, V]) make(l *lane, fn unsafe.Pointer, v laneVal, keep bool) (*message, job) {
	var t *sendTell[S, V]
	if x := l.vkeep; keep && x != nil && sameKind(l.vkind, valueKind[S, V]{}) {
		t = (*sendTell[S, V])(unsafe.Pointer(x))
		l.vkeep, x.next = x.next, nil
		l.vkept--
	} else {
		t = &sendTell[S, V]{a: (*Actor[S])(l.act)}
		t.job = t
	}
	t.fn = *(*func(*Proc, S, V))(unsafe.Pointer(&fn))
	if v.p != nil {
		t.v = *(*V)(unsafe.Pointer(&v.p))
	} else {
		t.v = *(*V)(unsafe.Pointer(&v.w))
	}
	return &t.message, t
}

// sendTell is a message sent with Send.
type sendTell[S, V any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S, V)
	v  V
}

func (t *sendTell[S, V]) hdr() *message  { return &t.message }
func (t *sendTell[S, V]) actor() *core   { return &t.a.core }
func (t *sendTell[S, V]) actorAny() any  { return t.a }
func (t *sendTell[S, V]) handler() any   { return t.fn }
func (t *sendTell[S, V]) answered() bool { return false }
func (t *sendTell[S, V]) fail(error)     {}

func (t *sendTell[S, V]) run(p *Proc) {
	t.fn(p, t.a.stateOf(p), t.v)
	t.fn = nil
	if a := p.a; a.grp != nil {
		a.flags.And(^uint32(fHandling)) // as tell.run
	}
}

// vkeepMax is the most Send messages a lane keeps (lane.vkeep).
const vkeepMax = 8

// recycle keeps the finished message for its actor's lane's next Send
// entries of its kind (lane.vkeep), if nothing else holds it
// (finishedAlone) and the lane keeps fewer than vkeepMax; else it is
// left to the collector. The lane keeps one kind, the last finished: a
// flood of Sends of one kind allocates nothing, one that alternates
// between kinds may allocate each message. Called by the runner, with
// the actor's mu held.
func (t *sendTell[S, V]) recycle() {
	if !t.finishedAlone(&t.a.core) {
		return
	}
	freeExt(&t.message) // an observed message's figures go back to the system
	l := t.a.lane.Load()
	if l == nil {
		return
	}
	if kind := valKind(valueKind[S, V]{}); !sameKind(l.vkind, kind) {
		// The flood's Sends are of another kind now: the kept ones of
		// the last kind go to the collector.
		l.vkeep, l.vkept, l.vkind = nil, 0, kind
	} else if l.vkept >= vkeepMax {
		return
	}
	t.message.clearKept()
	var zero V
	t.fn, t.v = nil, zero
	t.next = l.vkeep
	l.vkeep = &t.message
	l.vkept++
}
