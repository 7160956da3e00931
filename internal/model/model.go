// Package model is a reference interpreter of crisp's semantics, for
// differential testing of the runtime: a sequential, discrete-event
// reading of DESIGN.md's "Semantics" and of the operational semantics of
// Crisp (Nobakht, de Boer, Jaghoori, §3), with a generator of small
// random programs and a shrinker. Only tests import it.
//
// # What it models
//
// An actor is an active process, a policy-ordered queue of ready work
// (new messages and resumed processes) and a set of suspended processes,
// as in the paper's <p, q>. The transitions are the paper's and the
// design's: a send with a start deadline (missed at once if the deadline
// is not after the send); a start (the policy's first ready item; a new
// message whose deadline is at or before the clock's reading is missed
// then, never started); return and uncaught panic (the future gets the
// value or a PanicError, the actor takes its next work); a deadline
// missed exactly when the clock reaches it while the message is queued;
// await on a future (Await, AwaitWithin with its timeout, a Then
// continuation) or on a condition over the actor's state (AwaitCond,
// re-checked whenever the actor chooses its next work); suspend; time
// advancing (handlers take time only by Proc.Sleep, which keeps the
// actor); stop (queued work fails with ErrStopped, suspended processes
// end with ErrStopped, a running handler finishes, its sleeps cut short).
// A resumed process keeps its message's deadline, arrival number,
// priority and tag, and is never failed for its deadline. Get on a
// future of one's own actor is ErrDeadlock. Keys (crisp.Key) on messages
// to single actors: a message starts only when, for each of its keys, no
// started message holds it and no message queued before it names it; it
// holds its keys from its start until its handler returns, through its
// suspensions; the policy chooses among the messages that may start, and
// a message waiting for a key is missed at its deadline like any other.
// Actor groups (crisp.SpawnGroup) of W workers: up to W messages run at
// once, each on a free worker; a runner serves each busy worker and
// takes the policy's first eligible message when its own ends; a new
// runner starts when work arrives (or a miss unblocks a key) while fewer
// than W serve, or when a runner ending its message leaves more than one
// message eligible. Keys work as on single actors. A group's handlers
// only sleep, send, panic, stop and hand their result to a Then
// continuation (see InGroup), which any free worker may run: its workers
// wait for futures holding their goroutines, and have states of their
// own. Cost hints: a message's start deadline is its deadline less its
// Cost, and its handler's sends (and its Then continuations' sends)
// inherit that deadline as a finishing deadline (crisp's propagate.go).
// Bounded actors (Program.Bounds): a send to an actor whose queued, not
// yet started messages number its capacity fails at once (FailWhenFull);
// with admission control, a send with a deadline fails at once when the
// Cost hints of the messages ahead of it (under EDF those with a
// deadline at or before its own; under other policies all) and what is
// left of its running handlers' hints, divided by its workers, would
// take it to its deadline. On a bounded actor a deadline passing
// concurrently with a send is an interleaving like the others: the miss
// frees a place the send may count.
// own. Supervision (crisp.Restart, crisp.RestartLimit with no window): a
// panic of a supervised actor's handler gives the actor a fresh state
// before the panicking message's future resolves, or, after Limit
// restarts, stops the actor (queued work fails with ErrStopped); queued
// work is untouched by a restart; a suspended process keeps the state it
// started with, and a Then continuation gets the state current when it
// starts. A single actor's backoff: the runner lets the actor go, still
// active, when it next chooses its work; work arriving or made ready
// meanwhile queues, queued deadlines miss at their instant as always,
// and at the backoff's end (part of the watchdog's batch) a new runner
// takes the actor; a stop ends the backoff.
//
// # Determinism
//
// The runtime runs actors in parallel: at one virtual instant, several
// goroutines may act at once (the driver's event, the watchdog's batch,
// the runners and processes they set off), and where two of them touch
// the same actor or the same future, the outcome may depend on which
// goes first. Two messages arriving at one actor from two goroutines, a
// message arriving while its actor chooses its next work, a future
// resolved while another process checks it, a stop racing a process:
// these are the paper's interleavings, and each order is correct. Two
// workers of a group taking work at one instant are another: which
// message each takes may differ. The
// model does not guess: it follows the runtime's happens-before order.
//
// Time moves, in the runtime as in the model, only when the system is
// idle, one timer at a time: the external events at an instant in the
// order they were set, then the watchdog's batch (deadlines passing,
// sleeps ending, AwaitWithin timeouts), each a round that settles before
// the next. Within a round the model runs the goroutines ("branches")
// one after another, and keeps a vector clock per branch: a branch
// spawned by another (a runner started by a send to an idle actor, a
// process handed its actor by a resolution, a sleeper woken) knows what
// its parent did before spawning it, and nothing after. Every access to
// an actor's scheduling state (arrival, choosing the next work, making a
// process ready, stopping) or to a future (resolving, checking) is
// recorded; two accesses that conflict and that neither branch ordered
// make the program nondeterministic, and Run rejects it with a
// *SkipError instead of predicting one interleaving. The watchdog's
// batch is treated as concurrent items, since the runtime expires them
// in an order the model does not track. Some pairs are known to commute
// and are not conflicts: a deadline passing at the very instant its
// actor chooses its next work (the message misses either way, at that
// instant), checks of one future by several processes.
//
// So every program the model accepts has one observable behaviour, which
// it returns; the generator simply draws programs and the tests keep
// those the model accepts (about four in five; the tests log the rate
// and the reasons). External events at one instant, and the watchdog
// after them, are ordered by the driver, so they need no care: the
// executor sets every event on the virtual clock before it drives it,
// so at any instant they precede the watchdog's timer.
//
// Stopping follows the runtime's two phases: first every queued,
// suspended and pending item of the actor is decided (under its lock, in
// the runtime), then the outcomes are delivered in the order the items
// were linked, so that callbacks the deliveries run see the actor
// stopped.
//
// # Not modeled
//
// Contexts (the runtime learns of a context's end on a goroutine that
// context.AfterFunc starts, which nothing under a virtual clock waits
// for), Get on another actor's future (it holds the actor while time
// must pass, which stalls a virtual clock), awaits, conditions,
// suspensions and Gets in groups' handlers, AddWorker and
// RemoveWorker, WaitWhenFull (a sender waiting for room), admission
// control's measured estimator (actors with admission control get
// only messages with a Cost hint), dead letters,
// the logging of a Tell's panic. The chaos test in package crisp covers
// contexts on the real clock. The final Shutdown is not modeled either:
// the tests compare the outcomes reached when the driver runs out of
// timers, and check only that Shutdown resolves the rest.
//
// # Results
//
// A Result holds, for every message, whether and when it was sent, how
// its future was resolved and at which instant, and whether the actor's
// miss hook heard of it; and for every actor, the processes it ran in
// order, with the instant each started, went on after a wait, and ended.
// Handlers return a string made of what they observed (the outcomes of
// the futures they awaited, the counter an AwaitCond saw), so that a
// wrong value anywhere in a chain shows in the result.
package model

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Options says which known runtime faults the model steers around: a
// program that would meet one is skipped with a *SkipError whose Bug is
// set.
type Options struct {
	// AbortAsync: when Stop ends a suspended process, the runtime
	// resolves the process's future on the process's own goroutine,
	// which WaitIdle does not wait for, so what follows from it happens
	// at a later virtual instant. Set when the executor drives the
	// clock with WaitIdle alone.
	AbortAsync bool
	// SuspendAfterStop: a process that suspends after its actor was
	// stopped leaves the actor busy for ever (WaitIdle never returns).
	SuspendAfterStop bool
}

// SkipError says why the model declines a program.
type SkipError struct {
	Kind   string // the class of reason, for statistics: "arrival/take on an actor", "suspend after stop"...
	Reason string
	Bug    bool // a known runtime bug, rather than an order the semantics leaves open
}

func (e *SkipError) Error() string {
	if e.Bug {
		return "skipped (known runtime bug): " + e.Reason
	}
	return "skipped (nondeterministic): " + e.Reason
}

const never = time.Duration(math.MaxInt64)

// Run interprets p and returns what the runtime must show, or a
// *SkipError if the runtime may show several things (or would meet a
// known bug). p must be valid (see Valid).
func Run(p *Program, opt Options) (*Result, error) {
	if err := Valid(p); err != nil {
		return nil, err
	}
	s := &sim{p: p, opt: opt, futs: map[int]*fut{}}
	s.res.Msgs = make([]MsgResult, len(p.Msgs))
	s.res.Steps = make([][]Step, len(p.Actors))
	for i, pol := range p.Actors {
		bd := p.BoundOf(i)
		s.actors = append(s.actors, &actor{id: i, pol: pol, workers: p.Group(i), st: &astate{}, pauseUntil: never,
			capacity: bd.Capacity, admits: bd.Admission, running: map[*proc]runEst{}})
	}
	for k := range p.Promises {
		s.futs[PromiseRef(k)] = &fut{}
	}
	s.run()
	if s.skip != nil {
		return nil, s.skip
	}
	return &s.res, nil
}

type sim struct {
	p     *Program
	opt   Options
	now   time.Duration
	res   Result
	futs  map[int]*fut // by Ref
	procs []*proc      // every process made, in order

	actors []*actor

	// The current round.
	tasks    []task
	branches int
	touches  map[resource][]touch
	skip     *SkipError
}

type actor struct {
	id       int
	pol      Policy
	stopped  bool
	active   bool    // a runner or a process holds the actor (fActive)
	holder   *proc   // the process running or sleeping on it
	queue    []*item // ready work
	list     []*item // work accepted and not finished, in the order it was linked: the order Stop fails it in
	conds    []*proc // processes in AwaitCond
	st       *astate // the state: a restart makes a fresh one (for a group, of the failed worker, which no handler reads)
	restarts int
	// A backoff: pauseFor is due when the runner next chooses (it then
	// lets the actor go, still active), pauseUntil is when it ends
	// (never: not paused).
	pauseFor, pauseUntil time.Duration
	seq                  uint64 // last arrival number
	// held maps each key named by a started message to its process,
	// from the start until the handler returns (suspensions included).
	held map[int]*proc

	// A group: its workers, the runners serving it (each a branch that
	// takes work, or a process sleeping on its worker), and the
	// processes running or sleeping on its workers. holder and active
	// are for single actors only.
	workers int // 0: not a group
	runners int
	busy    []*proc

	// A bounded actor (Program.Bounds): its capacity (0: none), whether
	// it has admission control, and the estimates of its running
	// processes, from their start to their handler's return.
	capacity int
	admits   bool
	running  map[*proc]runEst
}

type runEst struct{ start, cost time.Duration }

func (x *actor) bounded() bool { return x.capacity > 0 || x.admits }

func (x *actor) group() bool { return x.workers > 0 }

// astate is an actor's state: the counter AwaitCond reads. A process
// keeps the state it started with (its handler's argument), through a
// restart; a Then continuation gets the state current when it starts.
type astate struct{ counter int }

// startGroup is the runtime's startGroup: a new runner, if fewer serve
// the group than it has workers.
func (s *sim) startGroup(b *branch, x *actor) {
	if x.runners < x.workers {
		x.runners++
		s.spawn(b, func(c *branch) { s.schedule(c, x) })
	}
}

// eligibleCount is how many items of x's queue the policy may choose.
func (s *sim) eligibleCount(x *actor) int {
	n := 0
	for _, it := range x.queue {
		if s.eligible(x, it) {
			n++
		}
	}
	return n
}

// item is a unit of ready work as the policy sees it.
type item struct {
	msg     int
	seq     uint64
	dl      time.Duration
	hasDL   bool
	prio    int
	tag     int
	resumed bool
	proc    *proc // nil for a message not started yet
	keys    []int // a new message's keys
	cost    time.Duration
	// finish is the finishing deadline the handler's sends inherit, if
	// hasFinish (crisp's propagate.go).
	finish    time.Duration
	hasFinish bool
}

type pstate uint8

const (
	pNew       pstate = iota // a continuation waiting for its future
	pRunning                 // holds its actor and runs
	pSleeping                // holds its actor, in Sleep
	pSuspended               // waits, its actor released
	pReady                   // queued to go on
	pDone
)

type proc struct {
	id       int
	name     string
	msg      int
	actor    *actor
	ops      []Op
	pc       int
	obs      []string
	sent     map[int]bool // Calls this process can reach the futures of
	it       *item
	resultTo int // the Call whose future gets this process's result; -1 for none
	state    pstate
	aborted  bool // ended by a stop while it waited

	cont    bool // a Then continuation
	contRef int  // its future
	started bool

	st         *astate       // the state its handler was given
	inflight   bool          // ops[pc] suspended or slept and has not returned yet
	epoch      int           // suspensions so far: names the current one
	sleeps     int           // sleeps so far: names the current one
	sleepUntil time.Duration // while sleeping
	timeout    time.Duration // AwaitWithin's, while suspended in it; never otherwise
	timedOut   bool
	finish     time.Duration // the finishing deadline its sends inherit, if hasFinish
	hasFinish  bool
}

type fut struct {
	resolved bool
	out      string
	waiters  []func(*branch)
}

// Branches and the accesses they make, for the race check.

type branch struct {
	id int
	vc []int // vc[i]: accesses of branch i that happen before this branch's next
}

func (b *branch) knows(i int) int {
	if i < len(b.vc) {
		return b.vc[i]
	}
	return 0
}

type task struct {
	b *branch
	f func(*branch)
}

type resource struct {
	kind byte // 'a' actor, 'f' future, 'w' a wait (process id, suspension), 's' a sleep
	id   int
	n    int
}

type tkind uint8

const (
	tArrive  tkind = iota + 1 // a message joins the actor's intake
	tTake                     // the actor chooses its next work, or releases itself
	tReady                    // a suspended process or continuation becomes ready
	tStop                     // the actor is stopped
	tExpire                   // the watchdog misses the actor's due messages
	tOp                       // a process of the actor takes a step (reads whether it is stopped)
	tResolve                  // a future is resolved
	tObserve                  // a future is checked or waited on
	tWake                     // a wait ends
)

type touch struct {
	br, clock int
	kind      tkind
}

var tnames = map[tkind]string{tArrive: "arrival", tTake: "take", tReady: "ready", tStop: "stop",
	tExpire: "expire", tOp: "step", tResolve: "resolve", tObserve: "check", tWake: "wake"}

// conflicts reports whether two accesses to one resource may give
// different outcomes in different orders.
func conflicts(r resource, a, b tkind, bounded bool) bool {
	switch r.kind {
	case 'a':
		if a == tStop || b == tStop {
			return !(a == tStop && b == tStop)
		}
		// On a bounded actor an expiry frees places that a send counts.
		if bounded && (a == tExpire && b == tArrive || a == tArrive && b == tExpire) {
			return true
		}
		// A deadline passing as the actor chooses: the message misses
		// either way, at this instant. Steps of the actor's processes
		// only read whether it is stopped.
		if a == tExpire || b == tExpire || a == tOp || b == tOp {
			return false
		}
		return true // arrivals, takes and readies decide order
	case 'f':
		return a == tResolve || b == tResolve
	default:
		return true
	}
}

func (s *sim) touch(b *branch, r resource, k tkind) {
	if s.skip != nil {
		return
	}
	for _, t := range s.touches[r] {
		if t.br == b.id || b.knows(t.br) >= t.clock {
			continue
		}
		if conflicts(r, t.kind, k, r.kind == 'a' && s.actors[r.id].bounded()) {
			a, b := tnames[t.kind], tnames[k]
			if a > b {
				a, b = b, a
			}
			s.fail(false, fmt.Sprintf("%s/%s on %s", a, b, resKinds[r.kind]),
				"at %v, a %s and a %s of %s in parallel", s.now, tnames[t.kind], tnames[k], s.resName(r))
			return
		}
	}
	b.vc[b.id]++
	s.touches[r] = append(s.touches[r], touch{b.id, b.vc[b.id], k})
}

func (s *sim) resName(r resource) string {
	switch r.kind {
	case 'a':
		return fmt.Sprintf("actor a%d", r.id)
	case 'f':
		return "the future of " + refName(r.id)
	case 'w':
		return fmt.Sprintf("a wait of %s", s.procs[r.id].name)
	default:
		return fmt.Sprintf("a sleep of %s", s.procs[r.id].name)
	}
}

var resKinds = map[byte]string{'a': "an actor", 'f': "a future", 'w': "a wait", 's': "a sleep"}

func actorRes(x *actor) resource { return resource{kind: 'a', id: x.id} }
func futRes(ref int) resource    { return resource{kind: 'f', id: ref} }

func (s *sim) fail(bug bool, kind, format string, args ...any) {
	if s.skip == nil {
		s.skip = &SkipError{Kind: kind, Reason: fmt.Sprintf(format, args...), Bug: bug}
	}
}

func (s *sim) newBranch(parent *branch) *branch {
	b := &branch{id: s.branches}
	s.branches++
	b.vc = make([]int, s.branches)
	if parent != nil {
		copy(b.vc, parent.vc)
	}
	return b
}

// spawn starts a goroutine's work, which knows everything parent did so
// far and nothing parent does next.
func (s *sim) spawn(parent *branch, f func(*branch)) {
	s.tasks = append(s.tasks, task{s.newBranch(parent), f})
}

// round runs roots, which the runtime runs in parallel, and everything
// they set off, until all is settled.
func (s *sim) round(roots ...func(*branch)) {
	s.tasks = s.tasks[:0]
	s.branches = 0
	s.touches = map[resource][]touch{}
	for _, f := range roots {
		s.tasks = append(s.tasks, task{s.newBranch(nil), f})
	}
	for len(s.tasks) > 0 && s.skip == nil {
		t := s.tasks[0]
		s.tasks = s.tasks[1:]
		t.f(t.b)
	}
}

// The run.

func (s *sim) run() {
	ev := s.p.Events
	ei := 0
	for s.skip == nil {
		next := s.nextWatch()
		if ei < len(ev) && ev[ei].At < next {
			next = ev[ei].At
		}
		if next == never {
			break
		}
		s.now = next
		for ei < len(ev) && ev[ei].At == s.now && s.skip == nil {
			e := ev[ei]
			ei++
			s.round(func(b *branch) { s.event(b, e) })
		}
		if s.skip == nil && s.nextWatch() == s.now {
			s.watchdogRound()
		}
		if s.skip == nil {
			s.checkQuiet()
		}
	}
}

// checkQuiet checks the model's own invariants between rounds.
func (s *sim) checkQuiet() {
	for _, x := range s.actors {
		if x.group() {
			if x.runners != len(x.busy) {
				panic(fmt.Sprintf("model: at %v group a%d has %d runners and %d busy workers", s.now, x.id, x.runners, len(x.busy)))
			}
			for _, p := range x.busy {
				if p.state != pSleeping {
					panic(fmt.Sprintf("model: at %v group a%d runs %s, which does not sleep", s.now, x.id, p.name))
				}
			}
			if s.anyReady(x) && x.runners < x.workers && !x.stopped {
				panic(fmt.Sprintf("model: at %v group a%d has ready work and an idle worker", s.now, x.id))
			}
			continue
		}
		if x.pauseUntil != never { // in a backoff: active, held by nobody
			continue
		}
		if s.anyReady(x) && (x.holder == nil || x.holder.state != pSleeping) {
			panic(fmt.Sprintf("model: at %v actor a%d has ready work and no sleeping holder", s.now, x.id))
		}
		if x.holder != nil && x.holder.state != pSleeping {
			panic(fmt.Sprintf("model: at %v actor a%d is held by %s, which does not sleep", s.now, x.id, x.holder.name))
		}
		if x.active != (x.holder != nil) && !x.stopped {
			panic(fmt.Sprintf("model: at %v actor a%d active=%v with holder %v", s.now, x.id, x.active, x.holder))
		}
	}
}

// nextWatch is the next instant the watchdog acts at: a queued deadline,
// a sleep's end, an AwaitWithin's timeout.
func (s *sim) nextWatch() time.Duration {
	t := never
	for _, x := range s.actors {
		for _, it := range x.queue {
			if it.proc == nil && it.hasDL && it.dl < t {
				t = it.dl
			}
		}
		t = min(t, x.pauseUntil)
	}
	for _, p := range s.procs {
		switch {
		case p.state == pSleeping && p.sleepUntil < t:
			t = p.sleepUntil
		case p.state == pSuspended && p.timeout < t:
			t = p.timeout
		}
	}
	return t
}

func (s *sim) watchdogRound() {
	var roots []func(*branch)
	for _, x := range s.actors {
		for _, it := range x.queue {
			if it.proc == nil && it.hasDL && it.dl <= s.now {
				roots = append(roots, func(b *branch) { s.expire(b, x) })
				break
			}
		}
		if x.pauseUntil == s.now {
			roots = append(roots, func(b *branch) { s.pauseEnds(b, x) })
		}
	}
	for _, p := range s.procs {
		switch {
		case p.state == pSleeping && p.sleepUntil == s.now:
			n := p.sleeps
			roots = append(roots, func(b *branch) { s.sleepEnds(b, p, n) })
		case p.state == pSuspended && p.timeout == s.now:
			e := p.epoch
			roots = append(roots, func(b *branch) { s.wake(b, p, e, true) })
		}
	}
	s.round(roots...)
}

func (s *sim) event(b *branch, e Event) {
	switch e.Kind {
	case ESend:
		s.send(b, nil, e.Msg)
	case EResolve:
		s.resolve(b, PromiseRef(e.Promise), OutValue(e.Value))
	case EFail:
		s.resolve(b, PromiseRef(e.Promise), OutErr(PromiseError(e.Promise)))
	case EStop:
		s.stop(b, s.actors[e.Actor])
	}
}

// Sending, missing and resolving.

func (s *sim) send(b *branch, from *proc, id int) {
	m := &s.p.Msgs[id]
	r := &s.res.Msgs[id]
	r.Sent, r.SentAt = true, s.now
	if !m.Tell {
		s.futs[id] = &fut{}
		if from != nil {
			from.sent[id] = true
		}
	}
	var dl time.Duration
	switch m.DL.Kind {
	case Within:
		dl = s.now + m.DL.D
	case By:
		dl = m.DL.D
	}
	hasDL := m.DL.Kind != NoDL
	// Propagation: a send from a handler with a finishing deadline is
	// bound by it; its own Cost is taken off after.
	var finish time.Duration
	hasFinish := false
	if from != nil && from.hasFinish {
		if !hasDL || from.finish < dl {
			dl, hasDL = from.finish, true
		}
		if m.Cost == 0 {
			finish, hasFinish = from.finish, true
		}
	}
	if m.Cost > 0 && hasDL {
		finish, hasFinish = dl, true
		dl -= m.Cost
	}
	if hasDL && dl <= s.now {
		s.missed(b, id, dl) // never queued
		return
	}
	x := s.actors[m.To]
	s.touch(b, actorRes(x), tArrive)
	if x.stopped {
		if !m.Tell {
			s.resolve(b, id, OutStopped)
		}
		return
	}
	if out := s.refuse(x, m, dl, hasDL); out != "" {
		if !m.Tell {
			s.resolve(b, id, out)
		}
		return
	}
	x.seq++
	it := &item{msg: id, seq: x.seq, dl: dl, hasDL: hasDL, prio: m.Priority, tag: m.Tag, keys: m.Keys,
		cost: m.Cost, finish: finish, hasFinish: hasFinish}
	x.list = append(x.list, it)
	x.queue = append(x.queue, it)
	if x.group() {
		s.startGroup(b, x)
		return
	}
	if !x.active {
		x.active = true
		s.spawn(b, func(c *branch) { s.schedule(c, x) })
	}
}

// refuse is the bound of actor x at the send of m (start deadline dl, if
// hasDL): the outcome of its refusal, or "". A full mailbox counts the
// messages queued and not started; admission control estimates the wait
// as crisp's admission.go documents, from the Cost hints.
func (s *sim) refuse(x *actor, m *Msg, dl time.Duration, hasDL bool) string {
	if x.capacity > 0 {
		n := 0
		for _, it := range x.list {
			if it.proc == nil {
				n++
			}
		}
		if n >= x.capacity {
			return OutFull
		}
	}
	if !x.admits || !hasDL {
		return ""
	}
	var ahead time.Duration
	var aheadItems []*item
	for _, it := range x.list {
		if it.proc != nil {
			continue
		}
		if x.pol != EDF || it.hasDL && it.dl <= dl {
			ahead += it.cost
			aheadItems = append(aheadItems, it)
		}
	}
	w := max(x.workers, 1)
	if len(x.running)+len(aheadItems) < w {
		return "" // a worker will be free for it
	}
	var wait time.Duration
	if x.pol == EDF && len(aheadItems) <= 64 {
		// As the group would go: each message ahead, in EDF order,
		// takes the worker free first.
		var free []time.Duration
		for _, r := range x.running {
			free = append(free, max(r.cost-(s.now-r.start), 0))
		}
		slices.Sort(free)
		if len(free) > w {
			free = free[len(free)-w:]
		}
		for len(free) < w {
			free = append(free, 0)
		}
		slices.SortFunc(aheadItems, func(a, b *item) int {
			if a.dl != b.dl {
				return cmpDur(a.dl, b.dl)
			}
			return cmpU(a.seq, b.seq)
		})
		for _, it := range aheadItems {
			i := slices.Index(free, slices.Min(free))
			if s.now+free[i] < it.dl { // else it will miss, taking no time
				free[i] += it.cost
			}
		}
		wait = slices.Min(free)
	} else {
		for _, r := range x.running {
			if left := r.cost - (s.now - r.start); left > 0 {
				ahead += left
			}
		}
		wait = ahead / time.Duration(w)
	}
	if s.now+wait >= dl {
		return OutInfeasible(wait)
	}
	return ""
}

// missed fails message id, whose deadline dl has come: now, as the
// runtime detects every miss at the deadline itself (or at the send).
func (s *sim) missed(b *branch, id int, dl time.Duration) {
	r := &s.res.Msgs[id]
	r.Missed, r.MissedAt = true, s.now
	if !s.p.Msgs[id].Tell {
		s.resolve(b, id, OutMissed(dl, s.now))
	}
}

func (s *sim) resolve(b *branch, ref int, out string) {
	s.touch(b, futRes(ref), tResolve)
	f := s.futs[ref]
	if f.resolved {
		return
	}
	f.resolved, f.out = true, out
	if ref >= 0 {
		r := &s.res.Msgs[ref]
		r.Outcome, r.ResolvedAt = out, s.now
	}
	ws := f.waiters
	f.waiters = nil
	for _, w := range ws { // in the order they were registered, as future.wake calls them
		w(b)
	}
}

// Stopping and the watchdog.

func (s *sim) stop(b *branch, x *actor) {
	s.touch(b, actorRes(x), tStop)
	if x.stopped {
		return
	}
	x.stopped = true
	if x.pauseUntil != never { // a backoff ends with the actor
		x.pauseUntil, x.active = never, false
	}
	// As the runtime does under the actor's lock: decide everything,
	// wake the goroutines that must end or go on, and only then deliver
	// the outcomes (whose callbacks may come back to the actor).
	var fails []int
	for _, it := range x.list {
		p := it.proc
		switch {
		case p == nil: // a queued message
			if !s.p.Msgs[it.msg].Tell {
				fails = append(fails, it.msg)
			}
		case p.cont && !p.started: // a pending continuation: dropped
			p.state, p.aborted = pDone, true
			if p.resultTo >= 0 {
				fails = append(fails, p.resultTo)
			}
		default: // a suspended or ready process: its goroutine ends
			if s.opt.AbortAsync {
				s.fail(true, "stop ends a suspended process", "stop of a%d ends suspended process %s, whose future the runtime resolves after WaitIdle", x.id, p.name)
				return
			}
			p.state, p.aborted = pDone, true
			s.spawn(b, func(c *branch) {
				if p.resultTo >= 0 {
					s.resolve(c, p.resultTo, OutStopped)
				}
			})
		}
	}
	x.list, x.queue, x.conds = nil, nil, nil
	for _, h := range append([]*proc{x.holder}, x.busy...) {
		if h != nil && h.state == pSleeping {
			n := h.sleeps
			s.spawn(b, func(c *branch) { s.sleepEnds(c, h, n) }) // Sleep returns at once
		}
	}
	for _, id := range fails {
		s.resolve(b, id, OutStopped)
	}
}

// expire is the watchdog's visit to x: every queued message whose
// deadline has come misses, in deadline order.
func (s *sim) expire(b *branch, x *actor) {
	s.touch(b, actorRes(x), tExpire)
	var due []*item
	x.queue = slices.DeleteFunc(x.queue, func(it *item) bool {
		if it.proc == nil && it.hasDL && it.dl <= s.now {
			due = append(due, it)
			return true
		}
		return false
	})
	slices.SortFunc(due, func(a, b *item) int {
		if a.dl != b.dl {
			return cmpDur(a.dl, b.dl)
		}
		return cmpU(a.seq, b.seq)
	})
	for _, it := range due {
		s.unlink(x, it)
		s.missed(b, it.msg, it.dl)
	}
	if x.group() && !x.stopped && s.anyReady(x) {
		s.startGroup(b, x)
	} else if !x.group() && !x.active && !x.stopped && s.anyReady(x) {
		// A message that waited for a key behind one just missed may
		// start now: a runner takes the actor.
		x.active = true
		s.spawn(b, func(c *branch) { s.schedule(c, x) })
	}
}

// sleepEnds continues p after its n-th sleep, at its end or cut short by
// a stop, whichever comes first.
func (s *sim) sleepEnds(b *branch, p *proc, n int) {
	s.touch(b, resource{kind: 's', id: p.id, n: n}, tWake)
	if p.state != pSleeping || p.sleeps != n {
		return
	}
	s.proceed(b, p)
}

// The actor's runner.

// schedule runs x's ready work on branch b, which holds x, until x is
// released, handed to a process, or held by a sleeping one.
//
// On a group, b is one of its runners: it takes work while there is
// work it may start, and leaves when there is none or the group stops.
func (s *sim) schedule(b *branch, x *actor) {
	for s.skip == nil {
		s.touch(b, actorRes(x), tTake)
		if x.group() {
			var it *item
			if !x.stopped {
				it = s.pick(x)
			}
			if it == nil {
				x.runners--
				return
			}
			if it.proc != nil { // a Then continuation
				s.unlink(x, it)
			} else if !s.startItem(b, x, it) {
				continue
			}
			if !s.exec(b, it.proc) {
				return
			}
			s.groupEnded(b, x)
			continue
		}
		if x.stopped {
			x.active = false
			return
		}
		if x.pauseFor > 0 { // a restart's backoff: the runner lets the actor go, still active
			x.pauseUntil, x.pauseFor = s.now+x.pauseFor, 0
			return
		}
		s.checkConds(b, x)
		it := s.pick(x)
		if it == nil {
			x.active = false
			return
		}
		if it.proc != nil { // a resumed process
			s.unlink(x, it)
		} else if !s.startItem(b, x, it) {
			continue
		}
		if !s.exec(b, it.proc) {
			return
		}
	}
}

// startItem starts it, a new message just picked from x's queue (on a
// group, onto a worker): it reports false if it missed instead.
func (s *sim) startItem(b *branch, x *actor, it *item) bool {
	s.unlink(x, it)
	if it.hasDL && it.dl <= s.now {
		s.missed(b, it.msg, it.dl)
		return false
	}
	p := s.newProc(fmt.Sprintf("m%d", it.msg), it.msg, x, s.p.Msgs[it.msg].Body, it)
	if !s.p.Msgs[it.msg].Tell {
		p.resultTo = it.msg
	}
	if x.admits {
		x.running[p] = runEst{start: s.now, cost: it.cost}
	}
	for _, k := range it.keys {
		if x.held == nil {
			x.held = map[int]*proc{}
		}
		x.held[k] = p
	}
	s.step(p, "start")
	return true
}

// groupEnded is a group's runner after its message ended, its keys and
// worker given back: if more than one item may start, another runner
// is started for the others (the runtime's "queued > 1").
func (s *sim) groupEnded(b *branch, x *actor) {
	s.touch(b, actorRes(x), tTake)
	if !x.stopped && s.eligibleCount(x) > 1 {
		s.startGroup(b, x)
	}
}

// proceed lets p, which holds its actor (or its worker) again, go on,
// and the actor take its next work if p ends.
func (s *sim) proceed(b *branch, p *proc) {
	if s.exec(b, p) {
		if p.actor.group() {
			s.groupEnded(b, p.actor)
		}
		s.schedule(b, p.actor)
	}
}

func (s *sim) newProc(name string, msg int, x *actor, ops []Op, it *item) *proc {
	p := &proc{id: len(s.procs), name: name, msg: msg, actor: x, ops: ops, it: it, resultTo: -1,
		sent: map[int]bool{}, timeout: never, finish: it.finish, hasFinish: it.hasFinish, st: x.st}
	it.proc = p
	s.procs = append(s.procs, p)
	return p
}

func (s *sim) pick(x *actor) *item {
	best := -1
	for i := 0; i < len(x.queue); i++ {
		if !s.eligible(x, x.queue[i]) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		c := order(x.pol, x.queue[i], x.queue[best])
		if c == 0 {
			s.fail(false, "tie in the policy", "two items of a%d the policy cannot order", x.id)
			return nil
		}
		if c < 0 {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	it := x.queue[best]
	x.queue = slices.Delete(x.queue, best, best+1)
	return it
}

// eligible reports whether ready item it may start: a new message with
// keys only if, for each key, no started message holds it and no message
// queued before it names it (keys keep send order against the policy).
func (s *sim) eligible(x *actor, it *item) bool {
	if it.resumed || it.proc != nil || len(it.keys) == 0 {
		return true
	}
	for _, k := range it.keys {
		if x.held[k] != nil {
			return false
		}
		for _, o := range x.queue {
			if o.seq < it.seq && !o.resumed && o.proc == nil && slices.Contains(o.keys, k) {
				return false
			}
		}
	}
	return true
}

// anyReady reports whether any queued item is eligible: what the
// runtime's policy queue holds (a message waiting for a key is listed,
// and watched for its deadline, but not ready).
func (s *sim) anyReady(x *actor) bool {
	for _, it := range x.queue {
		if s.eligible(x, it) {
			return true
		}
	}
	return false
}

// releaseKeys gives back the keys p's message took when it started, as
// its handler returns.
func (s *sim) releaseKeys(p *proc) {
	x := p.actor
	for k, h := range x.held {
		if h == p {
			delete(x.held, k)
		}
	}
}

// order is the policies of DESIGN.md: EDF by deadline, no deadline last,
// ties by arrival; FIFO by arrival; Priority by priority, larger first,
// then as EDF; ByTag by tag, then arrival.
func order(pol Policy, a, b *item) int {
	switch pol {
	case FIFO:
		return cmpU(a.seq, b.seq)
	case Priority:
		if a.prio != b.prio {
			return b.prio - a.prio
		}
	case ByTag:
		if a.tag != b.tag {
			return a.tag - b.tag
		}
		return cmpU(a.seq, b.seq)
	}
	if a.hasDL != b.hasDL {
		if a.hasDL {
			return -1
		}
		return 1
	}
	if a.hasDL && a.dl != b.dl {
		return cmpDur(a.dl, b.dl)
	}
	return cmpU(a.seq, b.seq)
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpDur(a, b time.Duration) int { return cmpU(uint64(a-math.MinInt64), uint64(b-math.MinInt64)) }

func (s *sim) unlink(x *actor, it *item) {
	if i := slices.Index(x.list, it); i >= 0 {
		x.list = slices.Delete(x.list, i, i+1)
	}
}

func (s *sim) step(p *proc, what string) {
	a := p.actor.id
	s.res.Steps[a] = append(s.res.Steps[a], Step{Proc: p.name, What: what, At: s.now})
}

// checkConds makes ready the processes in AwaitCond whose condition now
// holds. Only the actor's holder calls it; the runtime checks whenever a
// process finished or released the actor since the last check, which,
// conditions reading only the actor's state, is the same.
func (s *sim) checkConds(b *branch, x *actor) {
	for _, p := range slices.Clone(x.conds) {
		if p.st.counter >= p.ops[p.pc].N {
			s.wake(b, p, p.epoch, false)
		}
	}
}

// Processes.

// exec runs p, which holds its actor, until it sleeps, suspends or ends.
// It reports whether it ended, leaving the actor to its next work.
func (s *sim) exec(b *branch, p *proc) bool {
	x := p.actor
	p.state = pRunning
	if x.group() {
		if !slices.Contains(x.busy, p) {
			x.busy = append(x.busy, p)
		}
	} else {
		x.holder = p
	}
	switch {
	case p.inflight:
		s.complete(b, p)
	case p.cont && !p.started:
		p.started = true
		p.st = x.st
		s.touch(b, futRes(p.contRef), tObserve)
		p.obs = append(p.obs, ObsFuture('k', p.contRef, s.futs[p.contRef].out))
		s.step(p, "start")
	}
	for p.pc < len(p.ops) && s.skip == nil {
		op := p.ops[p.pc]
		s.touch(b, actorRes(x), tOp)
		switch op.Kind {
		case OSleep:
			if !x.stopped && op.D > 0 {
				p.state, p.inflight = pSleeping, true
				p.sleepUntil = s.now + op.D
				p.sleeps++
				return false
			}
		case OSend:
			s.send(b, p, op.Msg)
		case OAwait, OAwaitWithin:
			s.touch(b, futRes(op.Ref), tObserve)
			f := s.futs[op.Ref]
			switch {
			case f.resolved:
				p.obs = append(p.obs, ObsFuture(waitKind(op.Kind), op.Ref, f.out))
			case op.Kind == OAwaitWithin && op.D <= 0:
				p.obs = append(p.obs, ObsFuture('w', op.Ref, OutTimeout))
			default:
				return s.suspend(b, p)
			}
		case OAwaitCond:
			if p.st.counter < op.N {
				return s.suspend(b, p)
			}
			p.obs = append(p.obs, ObsCond(p.st.counter))
		case OSuspend:
			return s.suspend(b, p)
		case OIncr:
			p.st.counter++
		case OPanic:
			s.step(p, "panic")
			s.supervise(b, x)
			s.end(b, p, OutPanic(PanicValue(p.msg)))
			return true
		case OStop:
			s.stop(b, s.actors[op.Actor])
		case OGet:
			s.touch(b, futRes(op.Ref), tObserve)
			out := OutDeadlock
			if f := s.futs[op.Ref]; f.resolved {
				out = f.out
			}
			p.obs = append(p.obs, ObsFuture('g', op.Ref, out))
		case OThen:
			s.step(p, "end")
			s.then(b, p, op)
			return true
		}
		if waits(op.Kind) {
			s.step(p, fmt.Sprintf("op%d", p.pc))
		}
		p.pc++
	}
	if s.skip != nil {
		return false
	}
	s.step(p, "end")
	s.end(b, p, OutValue(ProcValue(p.name, p.obs)))
	return true
}

func waitKind(k OpKind) byte {
	if k == OAwaitWithin {
		return 'w'
	}
	return 'a'
}

// waits reports whether a step may take time or release the actor: the
// runtime's handlers record when each such step returns.
func waits(k OpKind) bool {
	switch k {
	case OSleep, OAwait, OAwaitWithin, OAwaitCond, OSuspend:
		return true
	}
	return false
}

// complete finishes the step p waited in, now that it has its actor
// back.
func (s *sim) complete(b *branch, p *proc) {
	op := p.ops[p.pc]
	switch op.Kind {
	case OAwait:
		p.obs = append(p.obs, ObsFuture('a', op.Ref, s.futs[op.Ref].out))
	case OAwaitWithin:
		s.touch(b, futRes(op.Ref), tObserve)
		out := OutTimeout
		if f := s.futs[op.Ref]; f.resolved { // even when the timeout won: resolved at that instant
			out = f.out
		}
		p.obs = append(p.obs, ObsFuture('w', op.Ref, out))
	case OAwaitCond:
		p.obs = append(p.obs, ObsCond(p.st.counter))
	}
	p.inflight, p.timedOut = false, false
	p.timeout = never
	s.step(p, fmt.Sprintf("op%d", p.pc))
	p.pc++
}

// end finishes p with out as its result.
func (s *sim) end(b *branch, p *proc, out string) {
	delete(p.actor.running, p) // its handler returned
	p.state = pDone
	s.release(p)
	s.releaseKeys(p)
	if p.resultTo >= 0 {
		s.resolve(b, p.resultTo, out)
	}
}

// release gives back the actor, or the group's worker, that p held.
func (s *sim) release(p *proc) {
	x := p.actor
	if x.group() {
		if i := slices.Index(x.busy, p); i >= 0 {
			x.busy = slices.Delete(x.busy, i, i+1)
		}
		return
	}
	x.holder = nil
}

// suspend releases p's actor while p waits in ops[pc]. It reports
// whether p ended instead (its actor stopped).
func (s *sim) suspend(b *branch, p *proc) bool {
	x := p.actor
	op := p.ops[p.pc]
	s.checkConds(b, x)
	if x.stopped {
		if s.opt.SuspendAfterStop {
			s.fail(true, "suspend after stop", "%s suspends after a%d was stopped, which leaves the actor busy", p.name, x.id)
			return false
		}
		s.end(b, p, OutStopped) // the goroutine ends; the actor is released
		return true
	}
	p.inflight = true
	p.epoch++
	epoch := p.epoch
	x.holder = nil
	x.list = append(x.list, p.it)
	if op.Kind == OSuspend {
		p.state = pReady
		p.it.resumed = true
		x.queue = append(x.queue, p.it)
	} else {
		p.state = pSuspended
	}
	if op.Kind == OAwaitCond {
		x.conds = append(x.conds, p)
	}
	// The actor passes to a new runner if work is ready, and the
	// waiting goroutine registers its wake-up after that.
	s.touch(b, actorRes(x), tTake)
	if !s.anyReady(x) {
		x.active = false
	} else {
		s.spawn(b, func(c *branch) { s.schedule(c, x) })
	}
	if op.Kind == OAwaitWithin {
		p.timeout = s.now + op.D
	}
	if op.Kind == OAwait || op.Kind == OAwaitWithin {
		s.touch(b, futRes(op.Ref), tObserve)
		f := s.futs[op.Ref]
		if f.resolved {
			s.wake(b, p, epoch, false)
		} else {
			f.waiters = append(f.waiters, func(c *branch) { s.wake(c, p, epoch, false) })
		}
	}
	return false
}

// wake ends p's epoch-th suspension, if it is still on: p becomes ready,
// or takes its idle actor at once.
func (s *sim) wake(b *branch, p *proc, epoch int, timedOut bool) {
	if p.epoch != epoch {
		return // a wake-up for an earlier wait
	}
	s.touch(b, resource{kind: 'w', id: p.id, n: epoch}, tWake)
	if p.state != pSuspended && !p.aborted {
		return // woken already
	}
	// A wake-up racing a stop matters even if the stop came first here:
	// the other way round, the process might have taken its actor.
	x := p.actor
	s.touch(b, actorRes(x), tReady)
	if p.state != pSuspended {
		return
	}
	p.timedOut = timedOut
	p.timeout = never
	if i := slices.Index(x.conds, p); i >= 0 {
		x.conds = slices.Delete(x.conds, i, i+1)
	}
	s.ready(b, p)
}

// ready queues p, or hands it its actor if the actor is idle.
func (s *sim) ready(b *branch, p *proc) {
	x := p.actor
	p.state = pReady
	p.it.resumed = true
	if x.group() { // a continuation: queued, and a runner started if a worker is free
		x.queue = append(x.queue, p.it)
		s.startGroup(b, x)
		return
	}
	if !x.active && !s.anyReady(x) {
		x.active = true
		s.unlink(x, p.it)
		if p.cont {
			// A continuation has no goroutine: a new runner takes the
			// actor for it, and checks first whether it is stopped.
			s.spawn(b, func(c *branch) {
				s.touch(c, actorRes(x), tTake)
				if x.stopped {
					p.state, p.aborted = pDone, true
					x.active = false
					if p.resultTo >= 0 {
						s.resolve(c, p.resultTo, OutStopped)
					}
					return
				}
				s.proceed(c, p)
			})
			return
		}
		s.spawn(b, func(c *branch) { s.proceed(c, p) }) // handed over: it runs
		return
	}
	x.queue = append(x.queue, p.it)
	if !x.active {
		x.active = true
		s.spawn(b, func(c *branch) { s.schedule(c, x) })
	}
}

// then is crisp.Then, returned by p's handler: a continuation that runs
// op.Body once op.Ref is resolved, as part of p's message, and answers
// for it.
func (s *sim) then(b *branch, p *proc, op Op) {
	x := p.actor
	delete(x.running, p) // its handler returned
	p.state = pDone
	s.release(p)
	s.releaseKeys(p)
	if x.stopped {
		if p.resultTo >= 0 {
			s.resolve(b, p.resultTo, OutStopped)
		}
		return
	}
	it := *p.it
	it.resumed = true
	k := s.newProc(p.name+".k", p.msg, x, op.Body, &it)
	k.cont, k.contRef, k.resultTo = true, op.Ref, p.resultTo
	for id := range p.sent {
		k.sent[id] = true
	}
	k.state = pSuspended
	x.list = append(x.list, k.it)
	s.touch(b, futRes(op.Ref), tObserve)
	if f := s.futs[op.Ref]; f.resolved {
		s.wake(b, k, 0, false)
	} else {
		f.waiters = append(f.waiters, func(c *branch) { s.wake(c, k, 0, false) })
	}
}

// supervise is the runtime's answer to a panic of a handler of x, made
// before the panicking message's future resolves: a supervised actor
// restarts with a fresh state, or, past its limit, stops (its queued work
// fails with ErrStopped first). An actor already stopped does neither.
func (s *sim) supervise(b *branch, x *actor) {
	sup := s.p.SupOf(x.id)
	if !sup.Restart || x.stopped {
		return
	}
	if sup.Limit > 0 && x.restarts >= sup.Limit {
		s.stop(b, x)
		return
	}
	k := x.restarts
	x.restarts++
	if !x.group() {
		x.st = &astate{}
		x.pauseFor = backoffAfter(sup, k)
	}
}

// backoffAfter is the backoff of a restart after k others: the
// runtime's supConfig.backoffAfter.
func backoffAfter(sup Sup, k int) time.Duration {
	d := sup.Backoff
	for i := 0; i < k && d > 0 && d < sup.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, sup.MaxBackoff)
}

// pauseEnds is the watchdog ending x's backoff: a new runner takes the
// actor, which stayed active meanwhile.
func (s *sim) pauseEnds(b *branch, x *actor) {
	s.touch(b, actorRes(x), tReady)
	if x.pauseUntil != s.now {
		return // stopped meanwhile
	}
	x.pauseUntil = never
	s.spawn(b, func(c *branch) { s.schedule(c, x) })
}
