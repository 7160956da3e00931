package model

import (
	"math/rand/v2"
	"time"
)

// Unit is the grain of the generator's instants and durations. The model
// and the runtime work in nanoseconds; programs use whole units, except
// where Boundary puts a deadline a nanosecond after a start.
const Unit = time.Millisecond

// Generate returns the random program of seed: one to four actors with
// random policies, a quarter of them groups of two or three workers, a few messages sent from outside at random instants,
// handlers that sleep, send further messages, await their futures,
// promises and conditions, suspend, panic, stop actors and hand their
// result to Then continuations, and sometimes promises resolved or
// actors stopped from outside. The same seed gives the same program.
func Generate(seed uint64) *Program {
	return GenerateFrom(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// GenerateFrom returns the program the generator makes when it draws its
// choices from src, in the same way as Generate does from a seed. A
// fuzzer gives it a source that reads the fuzz input (see Choices), so
// that its mutations of the input steer the program's shape.
func GenerateFrom(src rand.Source) *Program {
	g := &gen{r: rand.New(src)}
	return Normalize(g.program())
}

// Choices is a rand.Source that yields b, eight bytes at a time, and
// then a PCG stream seeded from b, so that any b, short or long, gives
// every choice the generator may ask for.
type Choices struct {
	b    []byte
	rest *rand.PCG
}

// NewChoices returns the source of b's choices.
func NewChoices(b []byte) *Choices {
	var h uint64 = 14695981039346656037 // FNV-1a over b seeds the rest
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return &Choices{b: b, rest: rand.NewPCG(h, uint64(len(b)))}
}

// Uint64 returns the next choice.
func (c *Choices) Uint64() uint64 {
	if len(c.b) == 0 {
		return c.rest.Uint64()
	}
	var v uint64
	n := min(8, len(c.b))
	for i := range n {
		v |= uint64(c.b[i]) << (8 * i)
	}
	c.b = c.b[n:]
	if n < 8 { // a short tail still varies the high bits, which IntN reads
		v |= c.rest.Uint64() << (8 * n)
	}
	return v
}

type gen struct {
	r      *rand.Rand
	p      *Program
	budget int // messages left to make
}

func (g *gen) chance(percent int) bool { return g.r.IntN(100) < percent }

func (g *gen) units(lo, hi int) time.Duration { return time.Duration(lo+g.r.IntN(hi-lo+1)) * Unit }

func (g *gen) program() *Program {
	g.p = &Program{}
	p := g.p
	for range 1 + g.r.IntN(4) {
		pol := EDF
		switch n := g.r.IntN(20); {
		case n < 4:
			pol = FIFO
		case n < 7:
			pol = Priority
		case n < 10:
			pol = ByTag
		}
		p.Actors = append(p.Actors, pol)
	}
	for a := range p.Actors {
		if g.chance(25) { // a group of two or three workers
			if p.Workers == nil {
				p.Workers = make([]int, len(p.Actors))
			}
			p.Workers[a] = 2 + g.r.IntN(2)
		}
	}
	p.Promises = g.r.IntN(3)
	g.budget = 4 + g.r.IntN(12)
	const horizon = 20

	var evs []Event
	for range 1 + g.r.IntN(5) {
		if g.budget == 0 {
			break
		}
		evs = append(evs, Event{At: g.units(0, horizon), Kind: ESend, Msg: g.msg(0, nil)})
	}
	for k := range p.Promises {
		if g.chance(15) {
			continue // never resolved: its waiters end at Shutdown
		}
		e := Event{At: g.units(0, horizon+10), Kind: EResolve, Promise: k, Value: "r" + string(rune('0'+k))}
		if g.chance(30) {
			e.Kind = EFail
		}
		evs = append(evs, e)
	}
	if g.chance(20) {
		evs = append(evs, Event{At: g.units(0, horizon+10), Kind: EStop, Actor: g.r.IntN(len(p.Actors))})
	}
	if g.chance(15) { // stop everything while work may still be under way
		at := g.units(horizon/2, horizon+20)
		for a := range p.Actors {
			evs = append(evs, Event{At: at, Kind: EStop, Actor: a})
		}
	}
	// Events are set in time order; ties keep the order above, which
	// the shuffle varies.
	g.r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	sortEvents(evs)
	p.Events = evs
	g.overload()
	// Supervision last, so that the draws above, and the programs of
	// earlier seeds, stay as they were.
	for a := range p.Actors {
		if g.chance(35) {
			if p.Sups == nil {
				p.Sups = make([]Sup, len(p.Actors))
			}
			p.Sups[a] = Sup{Restart: true, Limit: g.r.IntN(3)}
			if p.Group(a) == 0 && g.chance(50) {
				first := g.units(1, 4)
				p.Sups[a].Backoff, p.Sups[a].MaxBackoff = first, first*time.Duration(1+g.r.IntN(4))
			}
		}
	}
	return p
}

// overload makes about a third of the programs bounded: capacities of 1
// or 2, admission control, and Cost hints (on every message to an
// actor with admission control, on some others), which also gives their
// handlers' sends a finishing deadline to inherit. Its choices are drawn
// after all the others, so that the rest of a seed's program is what it
// was before bounds existed.
func (g *gen) overload() {
	p := g.p
	if !g.chance(35) {
		return
	}
	p.Bounds = make([]Bound, len(p.Actors))
	for a := range p.Bounds {
		if g.chance(60) {
			p.Bounds[a].Capacity = 1 + g.r.IntN(2)
		}
		p.Bounds[a].Admission = g.chance(50)
	}
	for i := range p.Msgs {
		if m := &p.Msgs[i]; p.BoundOf(m.To).Admission || g.chance(20) {
			m.Cost = g.units(1, 8)
		}
	}
}

func sortEvents(evs []Event) {
	for i := 1; i < len(evs); i++ { // insertion sort: stable, and lists are short
		for j := i; j > 0 && evs[j].At < evs[j-1].At; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// msg makes a message and its handler and returns its ID. visible are
// the Calls the sender has sent so far (for nothing: a new handler sees
// only its own).
func (g *gen) msg(depth int, _ []int) int {
	g.budget--
	p := g.p
	id := len(p.Msgs)
	p.Msgs = append(p.Msgs, Msg{})
	m := Msg{To: g.r.IntN(len(p.Actors)), Tell: g.chance(20)}
	switch n := g.r.IntN(100); {
	case n < 30:
	case n < 85:
		m.DL = Deadline{Kind: Within, D: g.units(0, 30)}
		if g.chance(5) {
			m.DL.D = -m.DL.D - Unit // already passed
		}
	default:
		m.DL = Deadline{Kind: By, D: g.units(0, 40)}
	}
	m.Priority = g.r.IntN(3)
	m.Tag = g.r.IntN(3)
	switch n := g.r.IntN(100); {
	case n < 25:
		m.Keys = []int{g.r.IntN(2)}
	case n < 30:
		m.Keys = []int{0, 1}
	}
	m.Body = g.body(depth, m.To, nil)
	p.Msgs[id] = m
	return id
}

// body makes a handler for actor self. visible are the Calls whose
// futures it can reach.
func (g *gen) body(depth, self int, visible []int) []Op {
	var ops []Op
	visible = append([]int(nil), visible...)
	ref := func(own bool) (int, bool) {
		var cands []int
		for _, id := range visible {
			if !own || g.p.Msgs[id].To == self {
				cands = append(cands, id)
			}
		}
		if !own {
			for k := range g.p.Promises {
				cands = append(cands, PromiseRef(k))
			}
		}
		if len(cands) == 0 {
			return 0, false
		}
		return cands[g.r.IntN(len(cands))], true
	}
	n := g.r.IntN(7)
	group := g.p.Group(self) > 0
	for len(ops) < n {
		k := g.r.IntN(100)
		if group && (k >= 50 && k < 84 || k >= 86 && k < 89) {
			continue // steps a group's handler may not take (see InGroup)
		}
		switch {
		case k < 30:
			ops = append(ops, Op{Kind: OSleep, D: g.units(1, 8)})
		case k < 50:
			if g.budget == 0 || depth >= 3 {
				continue
			}
			id := g.msg(depth+1, visible)
			ops = append(ops, Op{Kind: OSend, Msg: id})
			if !g.p.Msgs[id].Tell {
				visible = append(visible, id)
			}
		case k < 60:
			if r, ok := ref(false); ok {
				ops = append(ops, Op{Kind: OAwait, Ref: r})
			}
		case k < 65:
			if r, ok := ref(false); ok {
				ops = append(ops, Op{Kind: OAwaitWithin, Ref: r, D: g.units(0, 10)})
			}
		case k < 70:
			ops = append(ops, Op{Kind: OAwaitCond, N: 1 + g.r.IntN(3)})
		case k < 79:
			ops = append(ops, Op{Kind: OIncr})
		case k < 84:
			ops = append(ops, Op{Kind: OSuspend})
		case k < 86:
			ops = append(ops, Op{Kind: OStop, Actor: g.r.IntN(len(g.p.Actors))})
		case k < 89:
			if r, ok := ref(true); ok {
				ops = append(ops, Op{Kind: OGet, Ref: r})
			}
		case k < 92:
			return append(ops, Op{Kind: OPanic})
		default:
			if depth >= 3 {
				continue
			}
			if r, ok := ref(false); ok {
				return append(ops, Op{Kind: OThen, Ref: r, Body: g.body(depth+1, self, visible)})
			}
		}
	}
	return ops
}

// Boundary returns p with the deadline of one message that started in
// res moved onto the instant of that start (so that it now misses there,
// at "now >= deadline") or one nanosecond after it (so that it still
// runs), or nil if no message started. It is how the tests reach the
// boundary of the miss rule on purpose.
func Boundary(p *Program, res *Result, seed uint64) *Program {
	r := rand.New(rand.NewPCG(seed, 0xb0b))
	type start struct {
		msg int
		at  time.Duration
	}
	var starts []start
	for _, steps := range res.Steps {
		for _, s := range steps {
			var id int
			if s.What == "start" && parseMsg(s.Proc, &id) {
				starts = append(starts, start{id, s.At})
			}
		}
	}
	if len(starts) == 0 {
		return nil
	}
	// Half the time, prefer a start at the instant of an external event
	// other than the message's own send: such a message was usually sent
	// in that event's round by a handler it set off, and the new
	// deadline makes it miss at the send.
	if r.IntN(2) == 0 {
		var atEvents []start
		for _, st := range starts {
			for _, e := range p.Events {
				if e.At == st.at && !(e.Kind == ESend && e.Msg == st.msg) {
					atEvents = append(atEvents, st)
					break
				}
			}
		}
		if len(atEvents) > 0 {
			starts = atEvents
		}
	}
	st := starts[r.IntN(len(starts))]
	q := p.Clone()
	d := st.at
	if r.IntN(2) == 0 {
		d++
	}
	q.Msgs[st.msg].DL = Deadline{Kind: By, D: d}
	return q
}

// parseMsg reads "m<id>" (not a continuation's name).
func parseMsg(name string, id *int) bool {
	if len(name) < 2 || name[0] != 'm' {
		return false
	}
	n := 0
	for _, c := range name[1:] {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	*id = n
	return true
}
