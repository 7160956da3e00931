package crisp

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/internal/runq"
	"github.com/crisprt/crisp/internal/watchdog"
	"github.com/crisprt/crisp/policy"
)

// Actor is an actor with state of type S. Its handlers, sent with Call
// and Tell, run one at a time, each receiving the state; only handlers
// touch the state, so it needs no lock. S is usually a pointer to a
// struct, so that handlers can change it.
//
// An idle actor holds no goroutine: a runner starts when work arrives
// and exits shortly after none is ready: after a few scheduler yields,
// or, for an actor in a conversation while other actors stay busy, once
// they are idle and at most 2 ms after (real time; it waits parked for
// its partner's next message meanwhile). All methods are safe for
// concurrent use.
type Actor[S any] struct {
	core
	state S
}

// core is the part of an actor that does not depend on its state type.
//
// Senders never take mu: they push onto intake, a lock-free stack, and
// start a runner if none holds the actor. Whoever holds mu (the runner,
// the watchdog, Stop) moves the intake into the policy's queue, in the
// order it was pushed, which gives each message its arrival number.
type core struct {
	// The first cache line holds what a sender reads on every send, and
	// what changes only as the actor is taken up or let go: the runner's
	// lock and the queues it guards, written for every message, are on
	// the line after it (a sender that read flags on the line the
	// runner's lock was on took that line from the runner's cache for
	// every message, and the runner took it back). An Actor[S] whose size
	// is a multiple of 64 bytes, such as Actor[*T] (128), starts on a
	// line of its own. What only some actors use (the list and the
	// policy's queue, the deadline index, the cooperative state) is in
	// queues, made as it is first needed: an actor of a flood, a chain or
	// a tree, whose messages all queue plain, is two lines (see queues).

	// Set at Spawn, then read-only.
	sys   *System
	cfg   *actorConfig // a group's is its own, and names the group (cfg.grp)
	bound *bound       // capacity and admission control (mailbox.go); nil without

	lane   atomic.Pointer[lane]    // an EDF actor's messages without a deadline once it has flooded (lane.go); nil until then
	intake atomic.Pointer[message] // sent, not yet queued; newest first, linked by next
	holder atomic.Uintptr          // gid of the goroutine holding the actor, or 0
	// wdKey is a lower bound the watchdog will call the actor at, in the
	// system's deadline keys, or noWatch. Written under mu, seldom (as
	// the watched deadline changes); read without by every sender of a
	// deadline while a handler runs (needWatchKey), so on a line the
	// runner does not write for every message: on the lock's line, each
	// such send took the line from the runner's cache (counting with
	// deadlines: 6% of its time in needWatchKey's one load, and as much
	// again in the runner's next Lock).
	wdKey atomic.Int64
	// flags holds fActive, fHandling, fStopped, fNoReuse, fLive and fFIFO,
	// and in its top byte two shards of the system (four bits each): the
	// one whose list its parked runner waits in, chosen at Spawn, and the
	// one whose live list it is in (or was last), set as it joins.
	flags atomic.Uint32
	// sidx is the actor's index in its shard's live list while it is
	// live; guarded by the shard's mu. Written as the actor joins and
	// leaves, as flags are.
	sidx int32

	mu sync.Mutex // guards everything below, and queued messages' prev, next, linked, inQ, dli
	// queued counts the entries of the policy's queue.
	queued int32
	// Plain messages (see placePlain) in arrival order, linked by next,
	// while nothing else is queued but the few spilled into dl: they skip
	// the list, the policy's queue and the deadline index. pn counts
	// both, the plain messages and those spilled.
	pn           int32
	phead, ptail *message
	seq          uint64         // last arrival number given out
	qs           *queues        // nil until first needed (queues); then kept
	wd           watchdog.Entry // the watchdog's, for the earliest deadline queued
}

// queues is what only some actors use, made the first time one does
// (core.queues) and kept for the actor's life: the list and the policy's
// queue, the deadline index, outcomes to deliver, the cooperative
// state. Guarded by the actor's mu.
//
// Out of core, an actor of a pointer state is 128 bytes, not 192 (with
// the watchdog's entry one word: watchdog.Entry). Spawning many is
// mostly the writing of fresh memory (ring-1m: a first store to each
// actor took 0.89 s of 2.79 s in the profile), and bench's fib, a tree
// of 150,049 actors spawned by their parents' handlers, took 1.27x the
// time with 64 bytes more to each actor. With 64 fewer, whole-process
// pairs against 192 bytes: ring-1m 0.79x the time (0.62-0.94; 6), 0.75x
// beside two CPU-bound goroutines; ring-100k 0.88x beside them; the
// rest within their spread (BENCHMARKS.md, forty-first session).
type queues struct {
	q      policy.Queue          // ready work in policy order; nil when none
	qhead  *message              // queued work in the order it was queued
	qtail  *message              // the list's last
	dl     *runq.Queue[*message] // queued messages with a deadline, earliest first; nil when none
	failed *failures             // outcomes to deliver after unlocking; nil when none
	coop   *coopState            // nil until the actor awaits a condition, sleeps, suspends or sees keys
}

// cs returns the actor's cooperative state, or nil if it has none.
// Called with a.mu held, or by the actor's holder.
func (a *core) cs() *coopState {
	if a.qs == nil {
		return nil
	}
	return a.qs.coop
}

// queues returns the actor's queues, made if it has none yet. Called
// with a.mu held.
func (a *core) queues() *queues {
	if a.qs == nil {
		a.qs = new(queues)
	}
	return a.qs
}

// listed reports whether the actor's list (queues.qhead) holds work.
// Called with a.mu held.
func (a *core) listed() bool { return a.qs != nil && a.qs.qhead != nil }

// Bits of core.flags.
const (
	fActive   = 1 << iota // a goroutine holds the actor (runs its work or looks for more)
	fHandling             // the holder is running a handler, or is between two it runs in a row (beginHandler)
	fStopped
	fNoReuse // the policy queue misbehaved: it may hold stale items, so no message is recycled
	fLive    // in the system's live list (only with work beyond its runner's next message, or a suspended process: see enter); changed with the live shard, under that shard's lock (System.join)
	fFIFO    // the policy queue misbehaved again after a rebuild: arrival order from now on; set under mu
	fLife    // lifecycle work is due: a backoff, a hook, a graceful stop, a benched worker (lifecycle.go); set under mu
	fDraining
	fIdle   // the actor has an idle timeout: release re-arms it
	fAside  // the holder yielded the processor between messages and waits for one again (stepAside)
	fConvo  // the actor's last linger found work: its runner parks when out of work (convo.go)
	fParked // the holder is parked (convo.go); changed under its shard's parkList lock
	fHanded // its runner is held back for a handler's runner to go on as (handoff.go)
	fFlood  // laneFlood messages waited at once: the next Tell without options, or with one Within, makes the actor's lane (lane.go); cleared as the actor is let go, but for a flood's runner's let-go on a busy machine (floodNoLinger)

	vainShift = 16 // flags>>vainShift&vainMax counts the actor's recent lingers in vain (core.linger)
	vainMax   = 7  // the mask of that count, and more than its cap
	vainCap   = 4  // the count's cap: a runner of the actor then lingers once in 16 times
	vainBits  = vainMax << vainShift

	earlyShift = 19 // flags>>earlyShift&earlyMax counts messages sent while the actor's runner had yet to run (core.noteEarly); cleared as the actor is let go
	earlyMax   = 31 // the mask of that count, which stops below laneFlood
	earlyBits  = earlyMax << earlyShift

	shardShift = 24 // flags>>shardShift&shardMask is the parking shard
	liveShift  = 28 // flags>>liveShift is the live shard
	shardMask  = nShards - 1
)

// live reports whether the actor is in the system's live list.
func (a *core) live() bool { return a.flags.Load()&fLive != 0 }

// list puts the actor in its system's live list if it is not there,
// and reports false, listing nothing, if the system is shutting down:
// the caller then stops the actor, without a.mu.
func (a *core) list() bool { return a.live() || a.sys.join(a, false) }

// listWork lists the actor, which keeps work its runner may not see
// before Shutdown does (a suspended process, a pending continuation, a
// process in Sleep, a backoff, queued messages it is let go with), or
// stops it if the system is shutting down. Called with a.mu held.
func (a *core) listWork() {
	if !a.list() {
		a.stopLater()
	}
}

// stopLater stops the actor on a goroutine of the system's, for a caller
// that holds a.mu, or a sender, which never waits for it: the system is
// shutting down, and Shutdown may have walked the live lists without
// the actor. Shutdown counts the stop as outstanding (stopsLeft), as it
// counts those its own goroutine makes.
func (a *core) stopLater() {
	s := a.sys
	s.stopsLeft.Add(1)
	s.gor.Add(1)
	go func() {
		defer s.goroutineDone()
		a.stop()
		s.stopsLeft.Add(-1)
	}()
}

// shard returns the actor's shard of the system's lists of parked
// runners (convo.go), fixed at Spawn.
func (a *core) shard() uint8 { return uint8(a.flags.Load()>>shardShift) & shardMask }

// liveShard returns the shard whose live list the actor is in, or was in
// last.
func (a *core) liveShard() uint8 { return uint8(a.flags.Load() >> liveShift) }

func (a *core) active() bool { return a.flags.Load()&fActive != 0 }

// occupied reports whether the actor's holder will not take its next
// message soon: it runs a handler (or is between two of a backlog, see
// beginHandler), or it stepped aside between two
// messages and waits for a processor again (stepAside), which on a busy
// machine can be as long as other goroutines run. Senders and waiters
// then do themselves what they would otherwise leave to the runner:
// queue and watch new deadlines, park rather than spin.
func (a *core) occupied() bool { return a.flags.Load()&(fHandling|fAside) != 0 }
func (a *core) stopped() bool  { return a.flags.Load()&fStopped != 0 }

// acquire sets fActive, reporting whether this call set it.
func (a *core) acquire() bool {
	for {
		f := a.flags.Load()
		if f&fActive != 0 {
			return false
		}
		if a.flags.CompareAndSwap(f, f|fActive) {
			return true
		}
	}
}

// actorConfig is what the options of Spawn set. Actors of one state type
// spawned without options share one (see configFor).
type actorConfig struct {
	pol      policy.Policy
	plain    bool // pol orders messages without a deadline by arrival (see core.plainOK)
	edf      bool // pol is policy.EDF() (see core.placePlain)
	name     string
	typeName string // the state type's, the name of an actor without WithName
	onMiss   func(*deadline.MissedError)
	capacity int64 // WithCapacity's; 0 if unbounded
	whenFull WhenFull
	admit    bool          // WithAdmission
	sup      *supConfig    // nil: resume after a panic
	idle     time.Duration // IdleTimeout's
	hooks    uint8         // the lifecycle hooks the state type implements (hookBit)
	typ      reflect.Type  // the state type
	grp      *group        // a group's own (SpawnGroup); nil for a single actor
}

// typeConfigs holds, for each state type, the configuration of its
// actors spawned without options: a reflect.Type maps to *actorConfig.
var typeConfigs sync.Map

// lastConfig is the entry of typeConfigs that configFor found last. A
// program that spawns actors of one type from handlers (a tree, a
// pipeline) finds it here, without the map's lookup and hashing on the
// handler's small stack.
var lastConfig atomic.Pointer[actorConfig]

// configFor returns the configuration opts give an actor of state type S.
func configFor[S any](opts []ActorOption) *actorConfig {
	t := reflect.TypeFor[S]()
	if len(opts) == 0 {
		if c := lastConfig.Load(); c != nil && c.typ == t {
			return c
		}
		if c, ok := typeConfigs.Load(t); ok {
			cfg := c.(*actorConfig)
			lastConfig.Store(cfg)
			return cfg
		}
	}
	// Spawn runs in handlers, on a runner's small stack: the rest, with
	// its large frame, is apart.
	return configWith(t, opts)
}

// configWith is configFor for a state type seen for the first time, or
// with options.
//
//go:noinline
func configWith(t reflect.Type, opts []ActorOption) *actorConfig {
	c, ok := typeConfigs.Load(t)
	if !ok {
		c, _ = typeConfigs.LoadOrStore(t, &actorConfig{pol: policy.EDF(), plain: true, edf: true, typeName: t.String(), hooks: hooksOf(t), typ: t})
	}
	cfg := c.(*actorConfig)
	if len(opts) > 0 {
		own := *cfg
		for _, o := range opts {
			if o.apply != nil {
				o.apply(&own)
			}
		}
		own.plain = plumb.PlainInArrivalOrder(own.pol)
		own.edf = plumb.EarliestDeadlineFirst(own.pol)
		cfg = &own
	}
	return cfg
}

// ActorOption configures an actor (or a group) at Spawn (SpawnGroup):
// WithPolicy, WithName, WithMissHook; supervision (Restart, StopOnPanic,
// Backoff, RestartLimit, OnEscalate); IdleTimeout. The zero ActorOption
// changes nothing.
type ActorOption struct{ apply func(*actorConfig) }

// WithPolicy sets the order in which the actor takes its ready work; the
// default is policy.EDF().
func WithPolicy(p policy.Policy) ActorOption {
	return ActorOption{func(c *actorConfig) {
		if p != nil {
			c.pol = p
		}
	}}
}

// WithName names the actor in errors and logs. By default an actor is
// named after its state type.
func WithName(name string) ActorOption {
	return ActorOption{func(c *actorConfig) { c.name = name }}
}

// WithMissHook sets a function told of every message of the actor that
// misses its deadline, after its future has been failed: the actor's own
// extension of the watchdog. It runs on whichever goroutine noticed the
// miss (usually the watchdog's, or its helper when it is behind; so it
// may run for two messages at once) and must be quick; a panic in it is
// logged and otherwise ignored.
func WithMissHook(f func(*deadline.MissedError)) ActorOption {
	return ActorOption{func(c *actorConfig) { c.onMiss = f }}
}

// Spawn creates an actor with the given initial state on sys. The actor
// costs a couple of hundred bytes and no goroutine until it has work.
// Spawn panics if sys is nil or was not made by NewSystem; on a system
// that has shut down it returns an actor whose messages all fail with
// ErrStopped.
func Spawn[S any](sys *System, state S, opts ...ActorOption) *Actor[S] {
	a := new(Actor[S])
	a.init(sys, state, configFor[S](opts), "Spawn")
	if a.cfg.hooks&hookBit(hookStarted) != 0 {
		a.kickStart()
	}
	return a
}

// SpawnEach creates an actor on sys for each of states, in that order,
// as [Spawn] would with opts, and returns them. The options are read
// once and apply to every actor (a [WithName] names them all).
//
// The actors are made in one allocation, not one each, which is most of
// what spawning many costs: 100,000 actors of a pointer state took less
// than half the time that Spawn took for them one by one
// (BenchmarkSpawnMany; BENCHMARKS.md, thirty-eighth session). The price
// is that the block is memory while any of its actors is referenced: one
// actor kept alive keeps them all. Use Spawn for actors that come and go
// one at a time.
//
// SpawnEach panics as Spawn does; on a system that has shut down, every
// actor it returns fails its messages with [ErrStopped].
func SpawnEach[S any](sys *System, states []S, opts ...ActorOption) []*Actor[S] {
	sys.check("SpawnEach")
	all := make([]Actor[S], len(states))
	if len(all) > 0 {
		prefault(unsafe.Pointer(&all[0]), uintptr(len(all))*unsafe.Sizeof(all[0]))
	}
	refs := make([]*Actor[S], len(states))
	if len(refs) > 0 {
		prefault(unsafe.Pointer(&refs[0]), uintptr(len(refs))*unsafe.Sizeof(refs[0]))
	}
	cfg := configFor[S](opts)
	for i := range all {
		a := &all[i]
		a.init(sys, states[i], cfg, "SpawnEach")
		if a.cfg.hooks&hookBit(hookStarted) != 0 {
			a.kickStart()
		}
		refs[i] = a
	}
	return refs
}

// prefault writes a zero byte to every page of the n bytes at p, a
// block just allocated (all zero), if it is large: so that its pages are
// the process's before the collector scans it.
//
// SpawnEach's blocks are large allocations, and one often starts a
// collection as it is made; memory the runtime has given back to the
// system comes back untouched and is not zeroed by the allocator. The
// collector then scanned the block while SpawnEach wrote the actors in,
// and each page was faulted in twice (inferred: the collector's read
// mapped the shared zero page, the first write replaced it). Beside
// CPU-bound goroutines, whose processors each replacement interrupts,
// SpawnEach of a million actors took 577-768 ms against 118-126 ms alone
// (a test program, four rounds after debug.FreeOSMemory each). Touched
// first, one byte a page, as soon as each block is made: 225-615 ms (a
// race with the collector, which still reaches some pages first), and
// 75-97 ms alone. Bench's ring-1m: 0.69x the time beside two such
// goroutines (0.59-0.92; 6 whole-process pairs), 0.78x alone (0.70-0.82;
// 6); ring-100k 0.74x beside them (BENCHMARKS.md, forty-first session).
//
// The byte written is a zero over a zero, in memory no other goroutine
// can reach yet: a nil pointer stays nil, so the collector, which may
// be scanning the block, sees nothing change, and no write barrier is
// due.
func prefault(p unsafe.Pointer, n uintptr) {
	const page, large = 4096, 64 << 10
	if n < large {
		return
	}
	for off := uintptr(0); off < n; off += page {
		*(*byte)(unsafe.Add(p, off)) = 0
	}
}

// init sets up a new actor of configuration cfg (configFor's); op
// names the caller in misuse panics.
func (a *Actor[S]) init(sys *System, state S, cfg *actorConfig, op string) {
	sys.check(op)
	a.state = state
	a.sys = sys
	a.cfg = cfg
	a.bound = newBound(cfg)
	// A random shard for parking, not the next of a shared count: one
	// atomic counter for every Spawn of the process took a cache line
	// from processor to processor where actors spawn actors (fib). The
	// live shard is set as the actor joins (System.join).
	a.flags.Store((ready.Rand() % nShards) << shardShift)
	a.wdKey.Store(noWatch)
	if sys.closed.Load() {
		a.flags.Or(fStopped)
	}
	if c := a.cfg; c.sup != nil || c.idle > 0 || c.hooks != 0 {
		a.initLife(op)
	}
}

func (a *Actor[S]) actor() *Actor[S] { return a }

// Ref is what an actor and a group have in common: where Call and Tell
// send work, and what can be named and stopped. Only *Actor[S] (made by
// Spawn) and *Group[S] (made by SpawnGroup) implement it, so a Ref is
// always one of them (or a struct embedding one).
type Ref[S any] interface {
	// Name returns the actor's (the group's) name.
	Name() string
	// System returns the system it belongs to.
	System() *System
	// Stop stops it: see Actor.Stop.
	Stop()

	actor() *Actor[S]
}

// actorOf returns the actor r stands for; it panics, naming op, if r is
// nil.
func actorOf[S any](r Ref[S], op string) *Actor[S] {
	if r != nil {
		if a := r.actor(); a != nil {
			return a
		}
	}
	panicNilActor(op)
	return nil
}

// panicNilActor is actorOf's misuse panic, apart: building its message
// takes a large call frame, which would be in Call's and Tell's frames
// on a handler's small stack.
//
//go:noinline
func panicNilActor(op string) {
	panic("crisp: " + op + " to a nil actor")
}

func typeName[S any]() string { return reflect.TypeFor[S]().String() }

// Stop stops the actor: messages still queued fail with ErrStopped, and
// so does every later message. A handler already running finishes and
// delivers its own result. Stop does not wait for it. Stop is idempotent.
func (a *Actor[S]) Stop() { a.stop() }

// Name returns the actor's name.
func (a *Actor[S]) Name() string { return a.displayName() }

// System returns the system the actor belongs to.
func (a *Actor[S]) System() *System { return a.sys }

func (a *core) displayName() string {
	if a.cfg.name != "" {
		return a.cfg.name
	}
	return a.cfg.typeName
}

// stop stops the actor: everything queued fails with ErrStopped.
func (a *core) stop() {
	a.mu.Lock()
	if a.stopped() {
		a.mu.Unlock()
		return
	}
	a.flags.Or(fStopped)
	a.sys.wakeParked(a)
	if a.flags.Load()&fHanded != 0 {
		a.sys.releaseHanded(a, false) // its runner fails what it holds
	}
	stray := a.intake.Swap(nil)
	a.fold() // plain messages join the list, and fail with it
	var first *message
	if a.qs != nil {
		first = a.qs.qhead
	}
	for m := first; m != nil; {
		next := m.next
		m.prev, m.next, m.linked, m.inQ = nil, nil, false, false
		switch m.state.Load() {
		case stQueued:
			if m.state.CompareAndSwap(stQueued, stStopped) {
				a.addFailure(failure{m: m, err: ErrStopped})
			}
		case stSuspended, stReady:
			a.abort(m, ErrStopped) // ends the process: its goroutine exits
		}
		m = next
	}
	if c := a.cs(); c != nil {
		c.conds = nil
		c.keys = nil
	}
	a.dismissSpare()
	a.wakeSleepers()
	a.queued = 0
	if qs := a.qs; qs != nil {
		qs.qhead, qs.qtail, qs.q, qs.dl = nil, nil, nil, nil
	}
	a.sys.wd.Cancel(&a.wd)
	a.wdKey.Store(noWatch)
	if c := a.cs(); c != nil && c.life != nil {
		a.stopLife()
	}
	a.sys.leave(a) // unless held: its runner's release takes it out
	a.unlock()
	a.failStrays(stray)
	a.failLane()
	a.stopBound()
}

// failStrays fails messages pushed to a stopped actor's intake: a list
// linked by next, newest first.
func (a *core) failStrays(m *message) {
	for m != nil {
		next := m.next
		m.next = nil
		if m.state.CompareAndSwap(stQueued, stStopped) {
			a.fail(m.work(), ErrStopped)
		}
		m = next
	}
}
