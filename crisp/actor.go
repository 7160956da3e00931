package crisp

import (
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/runq"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/watchdog"
)

// Actor is an actor with state of type S. Its handlers, sent with Call
// and Tell, run one at a time, each receiving the state; only handlers
// touch the state, so it needs no lock. S is usually a pointer to a
// struct, so that handlers can change it.
//
// An idle actor holds no goroutine: a runner starts when work arrives
// and exits shortly after none is ready. All methods are safe for
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
	// Set at Spawn, then read-only.
	sys      *System
	cfg      *actorConfig
	typeName func() string
	shard    uint8

	live bool // in the system's live list; guarded by mu

	flags  atomic.Uint32           // fActive, fHandling, fStopped
	holder atomic.Uintptr          // gid of the goroutine holding the actor, or 0
	intake atomic.Pointer[message] // sent, not yet queued; newest first, linked by next
	// wdKey is a lower bound the watchdog will call the actor at, in the
	// system's deadline keys, or noWatch. Written under mu.
	wdKey atomic.Int64

	mu     sync.Mutex            // guards everything below, and queued messages' prev, next, linked, dli
	q      policy.Queue          // ready work in policy order; nil when none
	dl     *runq.Queue[*message] // queued messages with a deadline, earliest first; nil when none
	qhead  *message              // queued work in the order it was queued
	qtail  *message
	queued int
	seq    uint64     // last arrival number given out
	failed *[]failure // outcomes to deliver after unlocking; nil when none
	coop   *coopState // nil until a process awaits a condition
	spare  *Proc      // a runner parked for the next process to suspend, or nil

	sleepers []*Proc          // processes in Sleep (at most one runs, but it may be any)
	keys     map[any]*keyLine // lines of the keys named by queued or running messages
	grp      *group           // nil for a single actor
	wd       watchdog.Entry
	sprev    *core // live-list links, guarded by the shard's mu
	snext    *core
}

// Bits of core.flags.
const (
	fActive   = 1 << iota // a goroutine holds the actor (runs its work or looks for more)
	fHandling             // the holder is running a handler
	fStopped
)

func (a *core) active() bool   { return a.flags.Load()&fActive != 0 }
func (a *core) handling() bool { return a.flags.Load()&fHandling != 0 }
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

// actorConfig is what the options of Spawn set. Actors spawned without
// options share defaultConfig.
type actorConfig struct {
	pol    policy.Policy
	name   string
	onMiss func(*deadline.MissedError)
}

var defaultConfig = &actorConfig{pol: policy.EDF()}

// ActorOption configures an actor at Spawn.
type ActorOption interface{ applyActor(*actorConfig) }

type actorOptionFunc func(*actorConfig)

func (f actorOptionFunc) applyActor(c *actorConfig) { f(c) }

// WithPolicy sets the order in which the actor takes its ready work; the
// default is policy.EDF().
func WithPolicy(p policy.Policy) ActorOption {
	return actorOptionFunc(func(c *actorConfig) {
		if p != nil {
			c.pol = p
		}
	})
}

// WithName names the actor in errors and logs. By default an actor is
// named after its state type.
func WithName(name string) ActorOption {
	return actorOptionFunc(func(c *actorConfig) { c.name = name })
}

// WithMissHook sets a function told of every message of the actor that
// misses its deadline, after its future has been failed: the actor's own
// extension of the watchdog. It runs on whichever goroutine noticed the
// miss (usually the watchdog's) and must be quick; a panic in it is
// logged and otherwise ignored.
func WithMissHook(f func(*deadline.MissedError)) ActorOption {
	return actorOptionFunc(func(c *actorConfig) { c.onMiss = f })
}

var shardSeq atomic.Uint32

// Spawn creates an actor with the given initial state on sys. The actor
// costs a couple of hundred bytes and no goroutine until it has work.
// Spawn panics if sys is nil; on a system that has shut down it returns
// an actor whose messages all fail with ErrStopped.
func Spawn[S any](sys *System, state S, opts ...ActorOption) *Actor[S] {
	if sys == nil {
		panic("crisp: Spawn on a nil system")
	}
	a := &Actor[S]{state: state}
	a.sys = sys
	a.cfg = defaultConfig
	if len(opts) > 0 {
		cfg := *defaultConfig
		for _, o := range opts {
			o.applyActor(&cfg)
		}
		a.cfg = &cfg
	}
	a.typeName = typeName[S]
	a.shard = uint8(shardSeq.Add(1) % nShards)
	a.wdKey.Store(noWatch)
	if sys.closed.Load() {
		a.flags.Store(fStopped)
	}
	return a
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
	return a.typeName()
}

// stop stops the actor: everything queued fails with ErrStopped.
func (a *core) stop() {
	a.mu.Lock()
	if a.stopped() {
		a.mu.Unlock()
		return
	}
	a.flags.Or(fStopped)
	stray := a.intake.Swap(nil)
	for m := a.qhead; m != nil; {
		next := m.next
		m.prev, m.next, m.linked = nil, nil, false
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
	if a.coop != nil {
		a.coop.conds = nil
	}
	a.keys = nil
	a.dismissSpare()
	a.wakeSleepers()
	a.qhead, a.qtail, a.queued, a.q, a.dl = nil, nil, 0, nil, nil
	a.sys.wd.Cancel(&a.wd)
	a.wdKey.Store(noWatch)
	if !a.active() && a.live {
		a.live = false
		a.sys.leave(a)
	}
	failed := a.takeFailed()
	a.mu.Unlock()
	a.failAll(failed)
	a.failStrays(stray)
}

// failStrays fails messages pushed to a stopped actor's intake: a list
// linked by next, newest first.
func (a *core) failStrays(m *message) {
	for m != nil {
		next := m.next
		m.next = nil
		if m.state.CompareAndSwap(stQueued, stStopped) {
			a.fail(m.item.Payload.(job), ErrStopped)
		}
		m = next
	}
}
