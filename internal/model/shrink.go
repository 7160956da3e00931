package model

// Shrink returns a program no larger than p for which keep still
// reports true, found by trying one simplification at a time and keeping
// each that keep accepts, until none is accepted: dropping an event, a
// step or an actor, inlining a continuation, removing deadlines,
// priorities and tags, shortening durations, moving events earlier,
// making policies EDF. keep is called only with valid programs; it
// normally checks that the model accepts the program and that the
// runtime still disagrees with it.
func Shrink(p *Program, keep func(*Program) bool) *Program {
	for changed := true; changed; {
		changed = false
		for _, c := range candidates(p) {
			c = Normalize(c)
			if Valid(c) != nil || !smaller(c, p) {
				continue
			}
			if keep(c) {
				p, changed = c, true
				break
			}
		}
	}
	return p
}

// size counts a program's parts, for Shrink's progress.
func size(p *Program) int {
	n := len(p.Actors) + len(p.Events) + len(p.Msgs)
	var ops func([]Op)
	ops = func(os []Op) {
		for _, op := range os {
			n++
			ops(op.Body)
		}
	}
	for _, m := range p.Msgs {
		ops(m.Body)
	}
	return n
}

// smaller orders programs by size, then by the weight of their values,
// so that every accepted step makes progress and Shrink ends.
func smaller(c, p *Program) bool {
	sc, sp := size(c), size(p)
	return sc < sp || sc == sp && weight(c) < weight(p)
}

func weight(p *Program) int64 {
	var w int64
	for _, pol := range p.Actors {
		w += int64(pol)
	}
	for _, n := range p.Workers {
		w += int64(n)
	}
	for _, e := range p.Events {
		w += int64(e.At / Unit)
	}
	var ops func([]Op)
	ops = func(os []Op) {
		for _, op := range os {
			w += int64(op.D/Unit) + int64(op.N)
			ops(op.Body)
		}
	}
	for _, m := range p.Msgs {
		w += int64(m.Priority + m.Tag)
		if m.DL.Kind != NoDL {
			w += 1 + int64(m.DL.D/Unit)
			if m.DL.D%Unit != 0 {
				w++
			}
		}
		ops(m.Body)
	}
	return w
}

// candidates lists the one-step simplifications of p, biggest first.
func candidates(p *Program) []*Program {
	var out []*Program
	edit := func(f func(q *Program) bool) {
		q := p.Clone()
		if f(q) {
			out = append(out, q)
		}
	}
	for i := range p.Events {
		edit(func(q *Program) bool {
			q.Events = append(q.Events[:i], q.Events[i+1:]...)
			return true
		})
	}
	// Steps, anywhere: dropped, or a Then replaced by its continuation.
	type site struct {
		msg  int
		path []int // indexes through Then bodies
	}
	var sites []site
	var walk func(msg int, ops []Op, path []int)
	walk = func(msg int, ops []Op, path []int) {
		for i, op := range ops {
			sp := append(append([]int(nil), path...), i)
			sites = append(sites, site{msg, sp})
			if op.Kind == OThen {
				walk(msg, op.Body, sp)
			}
		}
	}
	for id, m := range p.Msgs {
		walk(id, m.Body, nil)
	}
	at := func(q *Program, s site) (*[]Op, int) {
		ops := &q.Msgs[s.msg].Body
		for _, i := range s.path[:len(s.path)-1] {
			ops = &(*ops)[i].Body
		}
		return ops, s.path[len(s.path)-1]
	}
	for _, s := range sites {
		edit(func(q *Program) bool {
			ops, i := at(q, s)
			*ops = append((*ops)[:i], (*ops)[i+1:]...)
			return true
		})
		edit(func(q *Program) bool {
			ops, i := at(q, s)
			if (*ops)[i].Kind != OThen {
				return false
			}
			body := (*ops)[i].Body
			*ops = append((*ops)[:i:i], body...)
			return true
		})
		edit(func(q *Program) bool {
			ops, i := at(q, s)
			op := &(*ops)[i]
			switch {
			case op.D > Unit:
				op.D = Unit
			case op.D > 0 && op.Kind == OAwaitWithin:
				op.D = 0
			case op.N > 1:
				op.N = 1
			default:
				return false
			}
			return true
		})
	}
	// The last actor, if nothing names it.
	if n := len(p.Actors); n > 1 {
		edit(func(q *Program) bool {
			last := n - 1
			for _, m := range q.Msgs {
				if m.To == last {
					return false
				}
			}
			q.Actors = q.Actors[:last]
			if len(q.Bounds) > last {
				q.Bounds = q.Bounds[:last]
			}
			if len(q.Workers) > last {
				q.Workers = q.Workers[:last]
			}
			if len(q.Sups) > last {
				q.Sups = q.Sups[:last]
			}
			return true
		})
	}
	for a, w := range p.Workers {
		if w > 1 { // fewer workers, down to a group of one
			edit(func(q *Program) bool { q.Workers[a] = 1; return true })
		}
		if w > 0 { // a single actor: its handlers may do more, not less
			edit(func(q *Program) bool { q.Workers[a] = 0; return true })
		}
	}
	for a, sup := range p.Sups {
		if sup.Backoff > 0 {
			edit(func(q *Program) bool { q.Sups[a].Backoff, q.Sups[a].MaxBackoff = 0, 0; return true })
		}
		if sup.Limit > 0 {
			edit(func(q *Program) bool { q.Sups[a].Limit = 0; return true })
		}
		if sup.Restart {
			edit(func(q *Program) bool { q.Sups[a] = Sup{}; return true })
		}
	}
	for a, pol := range p.Actors {
		if pol != EDF {
			edit(func(q *Program) bool { q.Actors[a] = EDF; return true })
		}
	}
	for id, m := range p.Msgs {
		if m.DL.Kind != NoDL {
			edit(func(q *Program) bool { q.Msgs[id].DL = Deadline{}; return true })
			if m.DL.D%Unit != 0 {
				edit(func(q *Program) bool { q.Msgs[id].DL.D -= m.DL.D % Unit; return true })
			}
		}
		if m.Priority != 0 || m.Tag != 0 {
			edit(func(q *Program) bool { q.Msgs[id].Priority, q.Msgs[id].Tag = 0, 0; return true })
		}
	}
	for i, e := range p.Events {
		if e.At > 0 {
			edit(func(q *Program) bool {
				q.Events[i].At = 0
				if i > 0 {
					q.Events[i].At = q.Events[i-1].At
				}
				return q.Events[i].At < e.At
			})
		}
	}
	return out
}
