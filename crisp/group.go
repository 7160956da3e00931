package crisp

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// Actor groups and synchronised data.
//
// A group (SpawnGroup) is an actor served by several workers, each with
// a state value of its own, sharing one queue: its messages run in
// parallel, at most one per worker. A message may name the data it
// touches with the Key send option, on a group or a single actor. Two
// messages with a key in common never run at the same time, and start in
// the order they were sent, whatever the policy prefers: each key has a
// line of the queued messages that name it, in arrival order, and the
// running message holding it, if any. A message is eligible when, for
// each of its keys, it heads the line and nobody holds the key; only
// eligible messages (and messages without keys) are in the policy's
// queue, and the policy chooses among them. A message takes its keys when
// it starts and gives them back when its handler returns, which may make
// the next message of each line eligible. A message that leaves without
// starting (missed, cancelled, stopped) gives up its place in its lines
// and releases nothing it never held. No goroutine waits for a key: a
// blocked message is a record in its lines until a key is released.
//
// Per keyed message this costs a map lookup and a few pointer updates per
// key when it is queued, starts and ends; messages without keys pay
// nothing.

// keyLine is the line for one key.
type keyLine struct {
	key        any
	holder     *message // the running message holding the key, or nil
	head, tail *keyRef  // queued messages naming the key, in arrival order
}

// keyRef is a message's place in the line of one of its keys.
type keyRef struct {
	key        any
	m          *message
	line       *keyLine // nil when in no line
	prev, next *keyRef
}

// setKeys records the keys among opts on m. Called by send.
func (m *message) setKeys(opts []SendOption) {
	n := 0
	for i := range opts {
		if opts[i].kind == optKey {
			n++
		}
	}
	if n == 0 {
		return
	}
	keys := m.extOf().key1[:0] // one key, the usual case: no second allocation
	if n > 1 {
		keys = make([]keyRef, 0, n)
	}
next:
	for i := range opts {
		if opts[i].kind != optKey {
			continue
		}
		k := opts[i].v
		if k != nil && !reflect.ValueOf(k).Comparable() { // nil is comparable: a key like any other
			panic(fmt.Sprintf("crisp: Key with a value that is not comparable (%T)", k))
		}
		for _, r := range keys {
			if r.key == k {
				continue next // named twice: one place in one line
			}
		}
		keys = append(keys, keyRef{key: k, m: m})
	}
	m.ext.keys = keys
}

// keyed reports whether m carries keys.
func (m *message) keyed() bool { return m.ext != nil && len(m.ext.keys) > 0 }

// joinLines puts new keyed message m at the end of the line of each of
// its keys and reports whether it is eligible now. Called with a.mu held.
func (a *core) joinLines(m *message) bool {
	x := a.more()
	if x.keys == nil {
		x.keys = make(map[any]*keyLine)
	}
	blocked := 0
	for i := range m.ext.keys {
		r := &m.ext.keys[i]
		l := x.keys[r.key]
		if l == nil {
			l = &keyLine{key: r.key}
			x.keys[r.key] = l
		}
		r.line, r.prev, r.next = l, l.tail, nil
		if l.tail != nil {
			l.tail.next = r
		} else {
			l.head = r
		}
		l.tail = r
		if l.head != r || l.holder != nil {
			blocked++
		}
	}
	m.ext.blocked = blocked
	return blocked == 0
}

// takeKeys makes m, which is eligible and starting, the holder of its
// keys. Called with a.mu held.
func (a *core) takeKeys(m *message) {
	for i := range m.ext.keys {
		r := &m.ext.keys[i]
		l := r.line
		l.holder = m
		unlinkRef(r) // the head of its line: the next one stays blocked, by the holder now
	}
}

// releaseKeys gives back the keys m held: the new head of each line, if
// it waited only for that, becomes eligible. Called with a.mu held.
func (a *core) releaseKeys(m *message) {
	for i := range m.ext.keys {
		l := m.ext.keys[i].line
		if l == nil || l.holder != m {
			continue
		}
		l.holder = nil
		a.unblockHead(l)
		m.ext.keys[i].line = nil
	}
}

// leaveLines takes m, queued and never started, out of its lines. A line
// it headed, free, passes to the next message. Called with a.mu held.
func (a *core) leaveLines(m *message) {
	for i := range m.ext.keys {
		r := &m.ext.keys[i]
		l := r.line
		if l == nil {
			continue
		}
		wasHead := l.head == r
		unlinkRef(r)
		if wasHead && l.holder == nil {
			a.unblockHead(l)
		} else if l.head == nil && l.holder == nil {
			delete(a.cs().keys, l.key)
		}
	}
}

// unblockHead tells the head of free line l that it no longer waits for
// it, queuing it for the policy if that was its last wait; an empty line
// is forgotten. Called with a.mu held.
func (a *core) unblockHead(l *keyLine) {
	if l.head == nil {
		delete(a.cs().keys, l.key)
		return
	}
	f := l.head.m
	if f.ext.blocked--; f.ext.blocked == 0 && f.state.Load() == stQueued {
		a.push(f)
	}
}

func unlinkRef(r *keyRef) {
	l := r.line
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = nil, nil
	if l.holder != r.m {
		r.line = nil
	}
}

// group is the part of an actor that only groups have. Guarded by the
// actor's mu, but for runners and n, which senders read.
type group struct {
	runners atomic.Int32 // goroutines serving the group, at most n
	n       atomic.Int32 // workers
	states  []any        // the workers' states; states[0] is unused (the actor's own state)
	free    []int32      // idle workers
	retire  int          // workers to drop as they become idle
	// procs are the runner goroutines serving the group, and selfWaits
	// counts those of them blocked waiting for a future of the group
	// itself: when every worker would so wait, none is left to produce
	// what they wait for (see checkGroupWait).
	procs     []*Proc
	selfWaits int32
}

// runnerOn returns the group's runner running on goroutine g, or nil.
// Called with a.mu held.
func (g *group) runnerOn(id gid.ID) *Proc {
	for _, p := range g.procs {
		if p.g == id {
			return p
		}
	}
	return nil
}

// dropRunner forgets runner p as it leaves. Called with a.mu held.
func (g *group) dropRunner(p *Proc) {
	for i, q := range g.procs {
		if q == p {
			last := len(g.procs) - 1
			g.procs[i], g.procs[last] = g.procs[last], nil
			g.procs = g.procs[:last]
			return
		}
	}
}

// checkGroupWait is CheckWait for a future of message w of a group: it
// refuses, with ErrDeadlock, to let a worker of the group block waiting
// for it when that wait could never end: when every worker of the group
// would then be waiting for a future of the group itself (a group of one
// waiting for its own Call, say), or when w needs a key that the
// worker's own message holds. A wait it allows is counted until EndWait.
// Waits of goroutines that are not the group's workers are not its
// concern. The check costs a lock and a look over the group's runners,
// only when a Get is about to block.
func (a *core) checkGroupWait(w *message, j job) error {
	me := gid.Current()
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.cfg.grp
	p := g.runnerOn(me)
	if p == nil || p.selfWait {
		return nil
	}
	if c := a.cs(); w.keyed() && p.m != nil && c != nil {
		for _, r := range w.ext.keys {
			if l := c.keys[r.key]; l != nil && l.holder == p.m {
				// w cannot have started: naming it reads nothing its
				// handler's run writes.
				return fmt.Errorf("%w: a worker of group %s waits for message %s of that same group, which needs key %v that the waiting message holds",
					ErrDeadlock, a.displayName(), w.name(j), r.key)
			}
		}
	}
	if g.selfWaits+1 >= g.n.Load() {
		// w is not named: a retiring worker may be running it.
		return fmt.Errorf("%w: every worker of group %s would wait for a message of that same group, and none would be left to run them",
			ErrDeadlock, a.displayName())
	}
	p.selfWait = true
	g.selfWaits++
	return nil
}

// endGroupWait ends a wait that checkGroupWait counted. Called on the
// goroutine that waited.
func (a *core) endGroupWait() {
	me := gid.Current()
	a.mu.Lock()
	if p := a.cfg.grp.runnerOn(me); p != nil && p.selfWait {
		p.selfWait = false
		a.cfg.grp.selfWaits--
	}
	a.mu.Unlock()
}

// Group is an actor served by several workers, each with a state of its
// own, sharing one queue: its messages run in parallel, each on a worker,
// receiving that worker's state; a worker runs one message at a time.
// Send to it with Call and Tell, as to an Actor. Messages that name the
// same data with Key never run at the same time and start in the order
// they were sent; the group's policy orders the messages whose keys are
// free.
//
// Inside a group's handler, Await and AwaitWithin wait holding the
// worker (and the message's keys) while the other workers go on; Then
// continuations run on whichever worker takes them. AwaitCond, Suspend
// and Sleep are not available (they panic): a condition or a resumption
// could not tell the workers' states apart.
//
// All methods are safe for concurrent use.
type Group[S any] struct {
	a Actor[S] // worker 0's state is a.state; the others' are in a.cfg.grp
}

func (g *Group[S]) actor() *Actor[S] {
	if g == nil {
		return nil
	}
	return &g.a
}

// SpawnGroup creates a group on sys served by one worker per state given
// (at least one). Add and remove workers with AddWorker and
// RemoveWorker. It panics if states is empty, and as Spawn does.
func SpawnGroup[S any](sys *System, states []S, opts ...ActorOption) *Group[S] {
	if len(states) == 0 {
		panic("crisp: SpawnGroup with no worker")
	}
	g := new(Group[S])
	a := &g.a
	// A group has a configuration of its own, a copy, which names the
	// group: a sender finds it there, on the line of the actor it reads
	// anyway (core's layout).
	cfg := *configFor[S](opts)
	gr := &group{states: make([]any, len(states))}
	for i, s := range states[1:] {
		gr.states[i+1] = s
	}
	for w := len(states) - 1; w >= 0; w-- {
		gr.free = append(gr.free, int32(w))
	}
	gr.n.Store(int32(len(states)))
	cfg.grp = gr
	a.init(sys, states[0], &cfg, "SpawnGroup")
	return g
}

// Stop stops the group as Actor.Stop stops an actor: queued messages
// fail with ErrStopped, and so does every later message; handlers
// already running finish.
func (g *Group[S]) Stop() { g.a.stop() }

// Name returns the group's name.
func (g *Group[S]) Name() string { return g.a.displayName() }

// System returns the system the group belongs to.
func (g *Group[S]) System() *System { return g.a.sys }

// Workers reports how many workers serve the group.
func (g *Group[S]) Workers() int { return int(g.a.cfg.grp.n.Load()) }

// AddWorker adds a worker with the given state, which is put to work on
// queued messages at once.
func (g *Group[S]) AddWorker(state S) {
	a := &g.a
	gr := a.cfg.grp
	a.mu.Lock()
	if gr.retire > 0 { // a worker due to leave stays instead
		gr.retire--
		a.mu.Unlock()
		return
	}
	gr.states = append(gr.states, state)
	gr.free = append(gr.free, int32(len(gr.states)-1))
	gr.n.Add(1)
	a.mu.Unlock()
	a.startGroup()
}

// RemoveWorker takes a worker out of the group: an idle one at once,
// else the next to finish its message. It reports false, removing
// nothing, if only one worker is left.
func (g *Group[S]) RemoveWorker() bool {
	a := &g.a
	gr := a.cfg.grp
	a.mu.Lock()
	defer a.mu.Unlock()
	if gr.n.Load() <= 1 {
		return false
	}
	gr.n.Add(-1)
	if n := len(gr.free); n > 0 && gr.free[n-1] != 0 {
		gr.dropWorker(gr.free[n-1])
		gr.free = gr.free[:n-1]
	} else {
		gr.retire++
	}
	return true
}

// dropWorker forgets worker w's state. Worker 0 is never dropped: it is
// the actor's own state. Called with a.mu held.
func (g *group) dropWorker(w int32) {
	if w != 0 {
		g.states[w] = nil
	}
}

// stateOf returns the state of the worker p serves.
func (a *Actor[S]) stateOf(p *Proc) S {
	if p.gw == nil || p.gw.w == 0 {
		return a.state
	}
	return p.gw.st.(S)
}

// groupWorker is the worker a group's runner serves. It lives beside the
// runner's Proc (groupProc), not in it: a single actor's runners and
// their suspended processes do without it.
type groupWorker struct {
	w  int32 // the worker (0: the actor's own state)
	st any   // that worker's state, if w > 0
}

// groupProc is a group runner's Proc and worker, in one allocation.
type groupProc struct {
	p  Proc
	gw groupWorker
}

// startGroup makes sure that a runner serves the group if a worker is
// idle, after work was pushed.
func (a *core) startGroup() {
	g := a.cfg.grp
	for {
		r := g.runners.Load()
		if r >= g.n.Load() {
			return
		}
		if g.runners.CompareAndSwap(r, r+1) {
			a.flags.Or(fActive | fHandling)
			a.sys.busy.Add(1)
			a.spawnGroup()
			return
		}
	}
}

// spawnGroup starts a group runner goroutine.
func (a *core) spawnGroup() {
	a.countRunner()
	go a.runGroup()
}

// runGroup is the body of a group's runner goroutine.
func (a *core) runGroup() {
	ready.Done()
	gp := &groupProc{p: Proc{a: a, g: gid.Current()}}
	p := &gp.p
	p.gw = &gp.gw
	defer a.exitGroupRunner(p)
	a.mu.Lock()
	a.cfg.grp.procs = append(a.cfg.grp.procs, p)
	if !a.list() { // the system is shutting down
		a.mu.Unlock()
		a.stop()
		a.mu.Lock()
	}
	seen := a.sys.wd.Expired()
	var last int64 // between's busy yields
	for n := 1; ; n++ {
		m, j := a.scheduleGroup(p)
		if m == nil {
			p.done = true
			return
		}
		a.runOne(p, m, j)
		seen = a.between(n, m.checked(), seen, &last)
		a.mu.Lock()
		if m.keyed() {
			a.releaseKeys(m)
		}
		// A worker restarted with a backoff is benched (supervise.go).
		if a.flags.Load()&fLife == 0 || !a.benchWorker(p) {
			a.cfg.grp.free = append(a.cfg.grp.free, p.gw.w)
			if g := a.cfg.grp; g.retire > 0 && p.gw.w != 0 {
				g.retire--
				g.dropWorker(p.gw.w)
				g.free = g.free[:len(g.free)-1]
			}
		}
		*p.gw = groupWorker{}
		if a.queued > 1 { // more is eligible than this runner will take
			a.mu.Unlock()
			a.startGroup()
			a.mu.Lock()
		}
	}
}

// scheduleGroup returns the next eligible message for a group runner,
// with a worker for it in p and a.mu released, or nil once the runner
// has left. Entered with a.mu held.
//
//go:noinline
func (a *core) scheduleGroup(p *Proc) (*message, job) {
	g := a.cfg.grp
	grace := runnerGrace
	for {
		if a.stopped() {
			a.sys.busy.Add(1) // busy until the watchers are told (endIfOver)
			a.leaveGroup()
			a.endIfOver()
			a.sys.busyDone()
			g.dropRunner(p)
			a.unlock()
			return nil, nil
		}
		var (
			m *message
			j job
		)
		if len(g.free) > 0 && g.runners.Load() <= g.n.Load() {
			a.drain()
			m, j, _ = a.take()
			a.watchQueued()
		}
		a.deliverFailed()
		switch {
		// Linger only while a worker is free: with none (all serving
		// other runners, or benched by a restart's backoff) the work
		// that arrives stays in the intake, linger returns at once with
		// its grace untouched, and the runner went round this loop for
		// good, its group never idle (a test with the only worker
		// benched: 6 of 1,800 runs beside two CPU hogs under -race, none
		// of 1,400 since; a goroutine dump at the hang showed the runner
		// runnable in this loop).
		case m == nil && grace > 0 && len(g.free) > 0 && g.runners.Load() <= g.n.Load():
			a.mu.Unlock()
			grace = a.linger(grace)
			a.mu.Lock()
		case m == nil && a.flags.Load()&fDraining != 0 && g.runners.Load() == 1 && a.empty():
			a.mu.Unlock() // the last runner of a draining group: its work is done
			a.stop()
			a.mu.Lock()
		case m == nil:
			if a.leaveGroup() {
				g.dropRunner(p)
				a.mu.Unlock()
				return nil, nil
			}
			grace = runnerGrace
		default:
			w := g.free[len(g.free)-1]
			g.free = g.free[:len(g.free)-1]
			p.gw.w = w
			if w != 0 {
				p.gw.st = g.states[w]
			}
			a.mu.Unlock()
			return m, j
		}
	}
}

// leaveGroup ends the calling runner's service, unless work arrived and
// a worker is free: then it reports false and the runner goes on. Called
// with a.mu held.
func (a *core) leaveGroup() bool {
	g := a.cfg.grp
	g.runners.Add(-1)
	// A sender that pushed before the decrement saw every runner busy,
	// and a continuation made ready meanwhile went straight to the
	// queue: look once more.
	if !a.stopped() && (a.intake.Load() != nil || a.queued > 0) && len(g.free) > 0 {
		for {
			r := g.runners.Load()
			if r >= g.n.Load() {
				break
			}
			if g.runners.CompareAndSwap(r, r+1) {
				return false
			}
		}
	}
	if g.runners.Load() == 0 {
		a.flags.And(^uint32(fActive | fHandling))
		if a.flags.Load()&fLife != 0 {
			a.benchWatch()
		}
		if !a.listed() {
			a.sys.leave(a)
			if a.qs != nil {
				a.qs.q, a.qs.dl = nil, nil
			}
		}
	}
	a.sys.busyDone()
	return true
}
