package model

import (
	"errors"
	"fmt"
	"slices"
)

// Valid checks that p is a program the model and the executor can run:
// indexes in range, events in time order, every message sent by exactly
// one event or Send step, every Ref naming a promise or a Call sent
// earlier by the same handler (or by the handler whose Then the
// continuation is), Get only on Calls to the handler's own actor, Then
// and Panic only as last steps, in groups' handlers only the steps
// InGroup allows.
func Valid(p *Program) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(p.Actors) == 0 {
		bad("no actors")
	}
	if len(p.Workers) > len(p.Actors) {
		bad("workers given for %d actors of %d", len(p.Workers), len(p.Actors))
	}
	for a, w := range p.Workers {
		if w < 0 {
			bad("a%d: %d workers", a, w)
		}
	}
	if len(p.Bounds) > len(p.Actors) {
		bad("bounds given for %d actors of %d", len(p.Bounds), len(p.Actors))
	}
	for a, bd := range p.Bounds {
		if bd.Capacity < 0 {
			bad("a%d: capacity %d", a, bd.Capacity)
		}
	}
	for i, m := range p.Msgs {
		if m.Cost < 0 {
			bad("m%d: a negative cost", i)
		}
		if m.To >= 0 && m.To < len(p.Actors) && p.BoundOf(m.To).Admission && m.Cost <= 0 {
			bad("m%d: to a%d, which has admission control, without a cost", i, m.To)
		}
	}
	if len(p.Sups) > len(p.Actors) {
		bad("supervision given for %d actors of %d", len(p.Sups), len(p.Actors))
	}
	for a, sup := range p.Sups {
		if sup.Limit < 0 || sup.Limit > 0 && !sup.Restart || sup.Backoff < 0 || sup.MaxBackoff < sup.Backoff ||
			sup.Backoff > 0 && (!sup.Restart || p.Group(a) > 0) {
			bad("a%d: supervision %+v", a, sup)
		}
	}
	sentBy := make([]int, len(p.Msgs))
	for i, e := range p.Events {
		if i > 0 && e.At < p.Events[i-1].At {
			bad("event %d at %v before event %d at %v", i, e.At, i-1, p.Events[i-1].At)
		}
		if e.At < 0 {
			bad("event %d at a negative instant", i)
		}
		switch e.Kind {
		case ESend:
			if e.Msg < 0 || e.Msg >= len(p.Msgs) {
				bad("event %d sends m%d, which does not exist", i, e.Msg)
				continue
			}
			sentBy[e.Msg]++
		case EResolve, EFail:
			if e.Promise < 0 || e.Promise >= p.Promises {
				bad("event %d resolves promise%d, which does not exist", i, e.Promise)
			}
		case EStop:
			if e.Actor < 0 || e.Actor >= len(p.Actors) {
				bad("event %d stops a%d, which does not exist", i, e.Actor)
			}
		default:
			bad("event %d of kind %d", i, e.Kind)
		}
	}
	var body func(ops []Op, self int, visible []int, where string)
	body = func(ops []Op, self int, visible []int, where string) {
		visible = slices.Clone(visible)
		for i, op := range ops {
			at := fmt.Sprintf("%s step %d", where, i)
			if p.Group(self) > 0 && !InGroup(op.Kind) {
				bad("%s: a %d step in a handler of group a%d", at, op.Kind, self)
			}
			refOK := func(ownActor bool) {
				if op.Ref < 0 {
					if ownActor || -1-op.Ref >= p.Promises {
						bad("%s: bad ref %s", at, refName(op.Ref))
					}
					return
				}
				if !slices.Contains(visible, op.Ref) {
					bad("%s: %s is not a Call this handler sent before", at, refName(op.Ref))
				} else if ownActor && p.Msgs[op.Ref].To != self {
					bad("%s: get of %s, which is not for the handler's own actor", at, refName(op.Ref))
				}
			}
			switch op.Kind {
			case OSleep, OIncr, OSuspend, OAwaitCond:
			case OSend:
				if op.Msg < 0 || op.Msg >= len(p.Msgs) {
					bad("%s: sends m%d, which does not exist", at, op.Msg)
					continue
				}
				sentBy[op.Msg]++
				m := &p.Msgs[op.Msg]
				if m.To < 0 || m.To >= len(p.Actors) {
					bad("m%d: to a%d, which does not exist", op.Msg, m.To)
					continue
				}
				if !m.Tell {
					visible = append(visible, op.Msg)
				}
				body(m.Body, m.To, nil, fmt.Sprintf("m%d", op.Msg))
			case OAwait, OAwaitWithin:
				refOK(false)
			case OGet:
				refOK(true)
			case OStop:
				if op.Actor < 0 || op.Actor >= len(p.Actors) {
					bad("%s: stops a%d, which does not exist", at, op.Actor)
				}
			case OPanic, OThen:
				if i != len(ops)-1 {
					bad("%s: a %d step that is not the last", at, op.Kind)
				}
				if op.Kind == OThen {
					refOK(false)
					body(op.Body, self, visible, where+".k")
				}
			default:
				bad("%s: step of kind %d", at, op.Kind)
			}
		}
	}
	for _, e := range p.Events {
		if e.Kind == ESend && e.Msg >= 0 && e.Msg < len(p.Msgs) {
			m := &p.Msgs[e.Msg]
			if m.To < 0 || m.To >= len(p.Actors) {
				bad("m%d: to a%d, which does not exist", e.Msg, m.To)
				continue
			}
			body(m.Body, m.To, nil, fmt.Sprintf("m%d", e.Msg))
		}
	}
	for id, n := range sentBy {
		if n > 1 {
			bad("m%d is sent %d times", id, n)
		}
	}
	return errors.Join(errs...)
}

// Normalize drops what a program does not use after an edit: steps whose
// Ref no longer names a Call sent before (with what depends on them),
// messages nobody sends, promises nobody uses past the last one; and it
// renumbers messages in the order they appear. The result is valid if
// the edit left indexes in range.
func Normalize(p *Program) *Program {
	q := p.Clone()
	// Drop steps with dangling refs, walking sends in program order.
	var prune func(ops []Op, self int, visible []int) []Op
	prune = func(ops []Op, self int, visible []int) []Op {
		visible = slices.Clone(visible)
		var out []Op
		for _, op := range ops {
			refOK := func(own bool) bool {
				if op.Ref < 0 {
					return !own && -1-op.Ref < q.Promises
				}
				return slices.Contains(visible, op.Ref) && (!own || q.Msgs[op.Ref].To == self)
			}
			switch op.Kind {
			case OSend:
				if op.Msg < 0 || op.Msg >= len(q.Msgs) {
					continue
				}
				m := &q.Msgs[op.Msg]
				m.Body = prune(m.Body, m.To, nil)
				if !m.Tell {
					visible = append(visible, op.Msg)
				}
			case OAwait, OAwaitWithin:
				if !refOK(false) {
					continue
				}
			case OGet:
				if !refOK(true) {
					continue
				}
			case OThen:
				if !refOK(false) {
					continue
				}
				op.Body = prune(op.Body, self, visible)
			case OStop:
				if op.Actor >= len(q.Actors) {
					continue
				}
			}
			out = append(out, op)
			if op.Kind == OThen || op.Kind == OPanic {
				break
			}
		}
		return out
	}
	var evs []Event
	for _, e := range q.Events {
		switch e.Kind {
		case ESend:
			if e.Msg < 0 || e.Msg >= len(q.Msgs) {
				continue
			}
			m := &q.Msgs[e.Msg]
			m.Body = prune(m.Body, m.To, nil)
		case EResolve, EFail:
			if e.Promise >= q.Promises {
				continue
			}
		case EStop:
			if e.Actor >= len(q.Actors) {
				continue
			}
		}
		evs = append(evs, e)
	}
	q.Events = evs

	// Renumber the messages that are sent, in order of appearance.
	newID := map[int]int{}
	var order []int
	var visit func(ops []Op)
	visit = func(ops []Op) {
		for _, op := range ops {
			switch op.Kind {
			case OSend:
				if _, ok := newID[op.Msg]; !ok {
					newID[op.Msg] = len(order)
					order = append(order, op.Msg)
					visit(q.Msgs[op.Msg].Body)
				}
			case OThen:
				visit(op.Body)
			}
		}
	}
	for _, e := range q.Events {
		if e.Kind == ESend {
			if _, ok := newID[e.Msg]; !ok {
				newID[e.Msg] = len(order)
				order = append(order, e.Msg)
				visit(q.Msgs[e.Msg].Body)
			}
		}
	}
	var fix func(ops []Op)
	fix = func(ops []Op) {
		for i := range ops {
			op := &ops[i]
			switch op.Kind {
			case OSend:
				op.Msg = newID[op.Msg]
			case OAwait, OAwaitWithin, OGet:
				if op.Ref >= 0 {
					op.Ref = newID[op.Ref]
				}
			case OThen:
				if op.Ref >= 0 {
					op.Ref = newID[op.Ref]
				}
				fix(op.Body)
			}
		}
	}
	msgs := make([]Msg, len(order))
	for n, old := range order {
		msgs[n] = q.Msgs[old]
		fix(msgs[n].Body)
	}
	q.Msgs = msgs
	for i := range q.Events {
		if q.Events[i].Kind == ESend {
			q.Events[i].Msg = newID[q.Events[i].Msg]
		}
	}
	return q
}
