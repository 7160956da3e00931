package crisp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/crisprt/crisp/policy"
)

// Admission control.
//
// An actor spawned with WithAdmission refuses at send a message with a
// start deadline that, by its estimate, could not start in time: the
// sender learns of it at once, with an *InfeasibleError, instead of at
// the deadline with a *deadline.MissedError.
//
// The estimate. Each message admitted has an estimated run time: its
// Cost hint if it has one, else the actor's measured run time so far, an
// exponentially weighted moving average (weight 1/8 for each new
// measurement) of the time its handlers ran, from start to return, on
// the system's clock; zero until a handler has run. A new message with
// start deadline D would wait for
//
//   - under EDF: the estimated run times of the queued messages whose
//     start deadline is at or before D (they go first; messages without
//     a deadline go after every deadlined one);
//   - under any other policy: the estimated run times of all queued
//     messages (a conservative bound: the policy may put the new one
//     ahead of some);
//
// plus, for each handler running, what is left of its estimate (nothing
// if it has run longer). The wait is nothing if the handlers running and
// the messages ahead are fewer than the workers (one will be free for
// it). Under EDF with at most 64 messages ahead, it is worked out as the
// actor (the group) would go if nothing more urgent arrived: each
// message ahead, in EDF order, takes the worker free first, and takes no
// time if it would start at or after its start deadline (it will miss).
// Otherwise it is the sum divided by the number of workers (1 for a
// single actor), which overestimates: it counts work that will miss. The message is refused if the clock's reading at send
// plus that wait is at or after D. The queued messages are kept in a
// balanced search tree (a treap) ordered by start deadline with the sum
// of estimates in each subtree: a send costs O(log n) under its own
// mutex, a few hundred nanoseconds, and the start and end of each
// handler a clock read each.
//
// The estimate can be wrong both ways: a handler that runs longer than
// its Cost hint makes later messages miss anyway (they are then failed
// at their deadline, as without admission control), and one that runs
// shorter makes the actor refuse work it could have done. Suspended
// processes (Await) count as running with their estimate until it runs
// out.

// ErrInfeasible is the sentinel of an *InfeasibleError:
// errors.Is(err, ErrInfeasible) reports a message refused at send by
// admission control.
var ErrInfeasible = errors.New("crisp: deadline infeasible")

// InfeasibleError is the outcome of a message refused at send by
// admission control (WithAdmission): by the estimate, it could not have
// started by its start deadline. It never ran, and it is not a miss:
// errors.Is(err, deadline.ErrMissed) is false.
type InfeasibleError struct {
	// Actor and Message name the actor and the message refused.
	Actor, Message string
	// Deadline is the message's start deadline; At is the clock's
	// reading when it was refused.
	Deadline, At time.Time
	// Wait is the estimated time before the message could have started:
	// At+Wait is at or after Deadline.
	Wait time.Duration
	// Cost is the message's own estimated run time: its Cost hint, or
	// the actor's measured average.
	Cost time.Duration
}

func (e *InfeasibleError) Error() string {
	return fmt.Sprintf("crisp: message %s to actor %s refused: estimated to start in %v, after its start deadline %v away",
		e.Message, e.Actor, e.Wait, e.Deadline.Sub(e.At))
}

// Is makes errors.Is(err, ErrInfeasible) true.
func (e *InfeasibleError) Is(target error) bool { return target == ErrInfeasible }

// WithAdmission turns on admission control for the actor (the group): a
// message with a start deadline that, by the estimate described in the
// package's design notes (admission.go), could not start by it is
// refused at send with an *InfeasibleError (a Tell's goes to the
// dead-letter hook). Messages without a deadline are always admitted.
// It costs each send to the actor a few hundred nanoseconds and each
// handler two clock reads.
func WithAdmission() ActorOption {
	return ActorOption{func(c *actorConfig) { c.admit = true }}
}

// admission is an actor's admission control. Its mutex guards
// everything.
type admission struct {
	edf     bool // the actor's policy is EDF
	mu      sync.Mutex
	root    *admEntry // queued messages with a deadline (EDF only), by deadline then seq
	total   time.Duration
	count   int // entries, in the tree or not
	seq     uint64
	running map[*Proc]runEstimate
	avg     time.Duration // the measured run time, an EWMA; 0 until measured
	n       int           // measurements taken
}

type runEstimate struct {
	start time.Time
	cost  time.Duration
}

// admEntry is one admitted message, queued; a node of the treap when it
// has a deadline and the policy is EDF.
type admEntry struct {
	dl     time.Time
	seq    uint64
	cost   time.Duration
	inTree bool

	prio uint32
	sum  time.Duration // of cost over the subtree
	n    int           // entries in the subtree
	l, r *admEntry
}

func newAdmission(cfg *actorConfig) *admission {
	s, ok := cfg.pol.(fmt.Stringer)
	return &admission{
		edf:     ok && s.String() == policy.EDF().(fmt.Stringer).String(),
		running: make(map[*Proc]runEstimate),
	}
}

// admitWork decides whether m may be queued, by the estimate, and
// records it if so. Called by pass.
func (a *core) admitWork(m *message, j job, o *sendOpts) error {
	ad := a.bound.adm
	e := &admEntry{dl: o.dl, cost: o.cost}
	workers := 1
	if a.cfg.grp != nil {
		workers = int(a.cfg.grp.n.Load())
	}
	ad.mu.Lock()
	if e.cost == 0 {
		e.cost = ad.avg
	}
	if !o.dl.IsZero() {
		if wait := ad.wait(o.now, o.dl, workers); !o.now.Add(wait).Before(o.dl) {
			ad.mu.Unlock()
			return &InfeasibleError{Actor: a.displayName(), Message: m.name(j), Deadline: o.dl, At: o.now, Wait: wait, Cost: e.cost}
		}
	}
	ad.seq++
	e.seq = ad.seq
	ad.total += e.cost
	ad.count++
	if ad.edf && !o.dl.IsZero() {
		e.inTree, e.prio = true, rand.Uint32()
		e.sum, e.n = e.cost, 1
		l, r := split(ad.root, e)
		ad.root = merge(merge(l, e), r)
	}
	ad.mu.Unlock()
	m.extOf().adm = e
	return nil
}

// wait is the estimated time before a message with start deadline dl,
// sent at now, starts. Called with ad.mu held.
func (ad *admission) wait(now, dl time.Time, workers int) time.Duration {
	ahead, n := ad.total, ad.count
	if ad.edf {
		ahead, n = sumUpTo(ad.root, dl)
	}
	if len(ad.running)+n < workers {
		return 0 // a worker will be free for it
	}
	if ad.edf && n <= listLimit {
		return ad.listWait(now, dl, workers)
	}
	for _, r := range ad.running {
		if left := r.cost - now.Sub(r.start); left > 0 {
			ahead += left
		}
	}
	return ahead / time.Duration(max(workers, 1))
}

// listLimit is the most messages ahead for which the wait is worked
// out message by message (listWait); beyond it, the sum (over the
// workers) stands in.
const listLimit = 64

// listWait is the wait of a message with start deadline dl on an actor
// or a group of workers under EDF, worked out as it would go if nothing
// more urgent arrived: each worker is free when what is left of its
// running handler's estimate has passed (at once if it runs nothing),
// each message ahead, in EDF order, takes the worker free first (and no
// time at all if that is at or after its start deadline: it will miss),
// and the new message the worker free first after them. Called with
// ad.mu held.
func (ad *admission) listWait(now, dl time.Time, workers int) time.Duration {
	free := make([]time.Duration, 0, workers)
	for _, r := range ad.running {
		free = append(free, max(r.cost-now.Sub(r.start), 0))
	}
	slices.Sort(free)
	if len(free) > workers { // suspended processes holding workers: the longest count
		free = free[len(free)-workers:]
	}
	for len(free) < workers {
		free = append(free, 0)
	}
	eachUpTo(ad.root, dl, func(e *admEntry) {
		i := slices.Index(free, slices.Min(free))
		if now.Add(free[i]).Before(e.dl) { // else it will miss, taking no time
			free[i] += e.cost
		}
	})
	return slices.Min(free)
}

// leave forgets e: its message has started or been decided.
func (ad *admission) leave(e *admEntry) {
	ad.mu.Lock()
	ad.forget(e)
	ad.mu.Unlock()
}

// forget takes e out of the queued work. Called with ad.mu held.
func (ad *admission) forget(e *admEntry) {
	ad.total -= e.cost
	ad.count--
	if e.inTree {
		l, r := split(ad.root, e)
		ad.root = merge(l, removeMin(r)) // e is the least of r
		e.inTree = false
	}
}

// started uncounts m, which is starting on p, and records its estimate
// as running. Under admission control both happen in one hold of the
// mutex, and before the place in the mailbox is given back: a sender
// woken by that place (WaitWhenFull) estimates at once, and must find
// m's cost as running, not gone from the queue and not yet running.
//
//go:noinline
func (a *core) started(p *Proc, m *message) {
	ad := a.bound.adm
	if ad == nil {
		a.uncount(m)
		return
	}
	var e *admEntry
	if m.ext != nil {
		e = m.ext.adm
	}
	var cost time.Duration
	if e != nil {
		cost = e.cost
	}
	now := a.sys.now()
	ad.mu.Lock()
	if e != nil {
		ad.forget(e)
	}
	ad.running[p] = runEstimate{start: now, cost: cost}
	ad.mu.Unlock()
	m.counted = false
	a.bound.unreserve()
}

// finished measures the handler p has just returned from, if it was
// recorded as running.
//
//go:noinline
func (a *core) finished(p *Proc) {
	ad := a.bound.adm
	if ad == nil {
		return
	}
	now := a.sys.now()
	ad.mu.Lock()
	if r, ok := ad.running[p]; ok {
		delete(ad.running, p)
		ran := now.Sub(r.start)
		if ad.n == 0 {
			ad.avg = ran
		} else {
			ad.avg += (ran - ad.avg) / 8
		}
		ad.n++
	}
	ad.mu.Unlock()
}

// The treap: a binary search tree by (dl, seq) that is a heap by prio,
// so balanced in expectation; each node keeps the sum of its subtree's
// costs for sumUpTo.

func entryLess(x, y *admEntry) bool {
	if c := x.dl.Compare(y.dl); c != 0 {
		return c < 0
	}
	return x.seq < y.seq
}

func sumOf(t *admEntry) time.Duration {
	if t == nil {
		return 0
	}
	return t.sum
}

func countOf(t *admEntry) int {
	if t == nil {
		return 0
	}
	return t.n
}

func (t *admEntry) fix() {
	t.sum = t.cost + sumOf(t.l) + sumOf(t.r)
	t.n = 1 + countOf(t.l) + countOf(t.r)
}

// split returns the entries of t before k, and those at or after it.
func split(t, k *admEntry) (l, r *admEntry) {
	if t == nil {
		return nil, nil
	}
	if entryLess(t, k) {
		t.r, r = split(t.r, k)
		t.fix()
		return t, r
	}
	l, t.l = split(t.l, k)
	t.fix()
	return l, t
}

// merge joins l and r, every entry of l being before every entry of r.
func merge(l, r *admEntry) *admEntry {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.r = merge(l.r, r)
		l.fix()
		return l
	default:
		r.l = merge(l, r.l)
		r.fix()
		return r
	}
}

func removeMin(t *admEntry) *admEntry {
	if t.l == nil {
		r := t.r
		t.r = nil
		return r
	}
	t.l = removeMin(t.l)
	t.fix()
	return t
}

// eachUpTo calls f on the entries with deadline at or before dl, in
// order.
func eachUpTo(t *admEntry, dl time.Time, f func(*admEntry)) {
	if t == nil {
		return
	}
	eachUpTo(t.l, dl, f)
	if t.dl.After(dl) {
		return
	}
	f(t)
	eachUpTo(t.r, dl, f)
}

// sumUpTo returns the sum of the costs of the entries with deadline at
// or before dl, and their number.
func sumUpTo(t *admEntry, dl time.Time) (time.Duration, int) {
	var s time.Duration
	n := 0
	for t != nil {
		if t.dl.After(dl) {
			t = t.l
		} else {
			s += t.cost + sumOf(t.l)
			n += 1 + countOf(t.l)
			t = t.r
		}
	}
	return s, n
}
