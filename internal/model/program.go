package model

import (
	"fmt"
	"strings"
	"time"
)

// Policy is an actor's scheduling policy, as the model knows it.
type Policy uint8

// The policies: crisp's built-ins, and ByTag, a policy.Func policy
// ordering by the message's tag (an int), smaller first.
const (
	EDF Policy = iota
	FIFO
	Priority
	ByTag
)

func (p Policy) String() string {
	switch p {
	case EDF:
		return "edf"
	case FIFO:
		return "fifo"
	case Priority:
		return "priority"
	case ByTag:
		return "bytag"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Program is a small crisp program: actors, the messages they may be
// sent, and external events at fixed virtual instants. Every message is
// sent at most once, by the one event or the one Send op that names it,
// so a message's ID is its identity in the results.
type Program struct {
	Actors []Policy
	// Workers says, by actor, how many workers serve it: 0 for an actor
	// made by Spawn, n for a group of n workers (SpawnGroup). Nil, or
	// shorter than Actors: the rest are single actors.
	Workers []int
	// Sups says, by actor, what it does when a handler panics. Nil, or
	// shorter than Actors: the rest resume (the default).
	Sups     []Sup
	Msgs     []Msg
	Promises int     // external promises, resolved by events
	Events   []Event // in the order they are set; ties at an instant run in this order

	// Bounds says, by actor, how its mailbox is bounded
	// (crisp.WithCapacity with FailWhenFull, crisp.WithAdmission). Nil,
	// or shorter than Actors: the rest are unbounded.
	Bounds []Bound
}

// Bound is how an actor's mailbox is bounded: at most Capacity queued
// messages (0: no limit), a message to a full one failing at once; and
// with Admission, admission control on the messages' Cost hints (every
// message to such an actor has one: the measured estimator is not
// modeled).
type Bound struct {
	Capacity  int
	Admission bool
}

// Sup is an actor's supervision: Restart with a fresh state
// (crisp.Restart; a group restarts the failed worker only), and, if
// Limit > 0, give up after Limit restarts (crisp.RestartLimit(Limit, 0)):
// the panic after them stops the actor before its future resolves. A
// single actor may wait a Backoff before each restart
// (crisp.Backoff(Backoff, MaxBackoff)): Backoff, doubled for each
// earlier restart, up to MaxBackoff.
type Sup struct {
	Restart             bool
	Limit               int
	Backoff, MaxBackoff time.Duration
}

// SupOf returns actor a's supervision.
func (p *Program) SupOf(a int) Sup {
	if a < len(p.Sups) {
		return p.Sups[a]
	}
	return Sup{}
}

// Msg is a message: where it goes, how, and the handler it runs.
type Msg struct {
	To       int
	Tell     bool // sent with Tell (no future) rather than Call
	DL       Deadline
	Cost     time.Duration // crisp.Cost, if positive
	Priority int
	Tag      int
	Keys     []int // crisp.Key(k) for each: distinct, in the order given
	Body     []Op
}

// DLKind says how a message's deadline is given.
type DLKind uint8

// Deadline kinds.
const (
	NoDL   DLKind = iota
	Within        // crisp.Within(D): D after the send
	By            // crisp.By(t0 + D)
)

// Deadline is a message's start deadline.
type Deadline struct {
	Kind DLKind
	D    time.Duration
}

// EventKind is what an external event does.
type EventKind uint8

// Event kinds.
const (
	ESend    EventKind = iota + 1 // send Msg from outside
	EResolve                      // resolve Promise with Value
	EFail                         // fail Promise with the error "e<Promise>"
	EStop                         // stop Actor
)

// Event runs on the driver at virtual instant t0 + At.
type Event struct {
	At      time.Duration
	Kind    EventKind
	Msg     int
	Promise int
	Value   string
	Actor   int
}

// OpKind is one step of a handler.
type OpKind uint8

// Handler steps.
const (
	OSleep       OpKind = iota + 1 // p.Sleep(D)
	OSend                          // send Msg (Call or Tell, as the message says)
	OAwait                         // crisp.Await(p, Ref)
	OAwaitWithin                   // crisp.AwaitWithin(p, Ref, D)
	OAwaitCond                     // p.AwaitCond(counter >= N)
	OIncr                          // counter++
	OSuspend                       // p.Suspend()
	OPanic                         // panic("p<msg>"); ends the handler
	OStop                          // actor Actor's Stop()
	OGet                           // Ref.Get(), Ref a Call to the handler's own actor
	OThen                          // return crisp.Then(p, Ref, Body); always last
)

// Op is one step of a handler. Ref names a future: a Call sent earlier
// by the same handler (Ref >= 0, a message ID) or an external promise
// (Ref < 0: promise -1-Ref).
type Op struct {
	Kind  OpKind
	D     time.Duration
	Msg   int
	Ref   int
	N     int
	Actor int
	Body  []Op // OThen: the continuation
}

// BoundOf returns actor a's bound: the zero Bound if it has none.
func (p *Program) BoundOf(a int) Bound {
	if a < len(p.Bounds) {
		return p.Bounds[a]
	}
	return Bound{}
}

// Group reports how many workers serve actor a: 0 if it is not a group.
func (p *Program) Group(a int) int {
	if a < len(p.Workers) {
		return p.Workers[a]
	}
	return 0
}

// InGroup reports whether a handler of a group may take a step of kind
// k: a group's worker waits for futures in place, holding its goroutine
// (which a virtual clock cannot move past), and has a state of its own
// (which AwaitCond and the counter would tell apart), so the generator
// gives groups' handlers only steps that neither block nor read state.
func InGroup(k OpKind) bool {
	switch k {
	case OSleep, OSend, OPanic, OStop, OThen:
		return true
	}
	return false
}

// PromiseRef is the Ref of promise k.
func PromiseRef(k int) int { return -1 - k }

// String prints the program in a small language, one event or step a
// line, handlers nested under their sends.
func (p *Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "actors:")
	for i, pol := range p.Actors {
		fmt.Fprintf(&b, " a%d=%s", i, pol)
		if w := p.Group(i); w > 0 {
			fmt.Fprintf(&b, "*%d", w)
		}
		if bd := p.BoundOf(i); bd.Capacity > 0 {
			fmt.Fprintf(&b, "[cap %d]", bd.Capacity)
		}
		if p.BoundOf(i).Admission {
			b.WriteString("[admission]")
		}
		if sup := p.SupOf(i); sup.Restart {
			b.WriteString("+restart")
			if sup.Limit > 0 {
				fmt.Fprintf(&b, "<=%d", sup.Limit)
			}
			if sup.Backoff > 0 {
				fmt.Fprintf(&b, "~%v..%v", sup.Backoff, sup.MaxBackoff)
			}
		}
	}
	if p.Promises > 0 {
		fmt.Fprintf(&b, "; promises: %d", p.Promises)
	}
	b.WriteByte('\n')
	for _, e := range p.Events {
		fmt.Fprintf(&b, "at %v: ", e.At)
		switch e.Kind {
		case ESend:
			p.writeSend(&b, e.Msg, 0)
		case EResolve:
			fmt.Fprintf(&b, "resolve promise%d = %q\n", e.Promise, e.Value)
		case EFail:
			fmt.Fprintf(&b, "fail promise%d\n", e.Promise)
		case EStop:
			fmt.Fprintf(&b, "stop a%d\n", e.Actor)
		}
	}
	return b.String()
}

func (p *Program) writeSend(b *strings.Builder, id, depth int) {
	if id < 0 || id >= len(p.Msgs) {
		fmt.Fprintf(b, "send m%d (no such message)\n", id)
		return
	}
	m := &p.Msgs[id]
	verb := "call"
	if m.Tell {
		verb = "tell"
	}
	fmt.Fprintf(b, "%s m%d -> a%d", verb, id, m.To)
	switch m.DL.Kind {
	case Within:
		fmt.Fprintf(b, " within %v", m.DL.D)
	case By:
		fmt.Fprintf(b, " by %v", m.DL.D)
	}
	if m.Cost > 0 {
		fmt.Fprintf(b, " cost %v", m.Cost)
	}
	if m.Priority != 0 {
		fmt.Fprintf(b, " prio %d", m.Priority)
	}
	if m.Tag != 0 {
		fmt.Fprintf(b, " tag %d", m.Tag)
	}
	if len(m.Keys) > 0 {
		fmt.Fprintf(b, " keys %v", m.Keys)
	}
	b.WriteString(" {\n")
	p.writeBody(b, m.Body, depth+1)
	indent(b, depth)
	b.WriteString("}\n")
}

func (p *Program) writeBody(b *strings.Builder, ops []Op, depth int) {
	for _, op := range ops {
		indent(b, depth)
		switch op.Kind {
		case OSleep:
			fmt.Fprintf(b, "sleep %v\n", op.D)
		case OSend:
			p.writeSend(b, op.Msg, depth)
		case OAwait:
			fmt.Fprintf(b, "await %s\n", refName(op.Ref))
		case OAwaitWithin:
			fmt.Fprintf(b, "await %s within %v\n", refName(op.Ref), op.D)
		case OAwaitCond:
			fmt.Fprintf(b, "await counter >= %d\n", op.N)
		case OIncr:
			b.WriteString("counter++\n")
		case OSuspend:
			b.WriteString("suspend\n")
		case OPanic:
			b.WriteString("panic\n")
		case OStop:
			fmt.Fprintf(b, "stop a%d\n", op.Actor)
		case OGet:
			fmt.Fprintf(b, "get %s\n", refName(op.Ref))
		case OThen:
			fmt.Fprintf(b, "then %s {\n", refName(op.Ref))
			p.writeBody(b, op.Body, depth+1)
			indent(b, depth)
			b.WriteString("}\n")
		default:
			fmt.Fprintf(b, "op%d\n", op.Kind)
		}
	}
}

func refName(r int) string {
	if r < 0 {
		return fmt.Sprintf("promise%d", -1-r)
	}
	return fmt.Sprintf("m%d", r)
}

func indent(b *strings.Builder, depth int) {
	for range depth {
		b.WriteString("    ")
	}
}

// Clone returns a deep copy of p.
func (p *Program) Clone() *Program {
	q := &Program{
		Actors:   append([]Policy(nil), p.Actors...),
		Workers:  append([]int(nil), p.Workers...),
		Bounds:   append([]Bound(nil), p.Bounds...),
		Sups:     append([]Sup(nil), p.Sups...),
		Msgs:     make([]Msg, len(p.Msgs)),
		Promises: p.Promises,
		Events:   append([]Event(nil), p.Events...),
	}
	for i, m := range p.Msgs {
		m.Body = cloneOps(m.Body)
		q.Msgs[i] = m
	}
	return q
}

func cloneOps(ops []Op) []Op {
	if ops == nil {
		return nil
	}
	out := make([]Op, len(ops))
	for i, op := range ops {
		op.Body = cloneOps(op.Body)
		out[i] = op
	}
	return out
}
