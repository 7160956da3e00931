package crisp

import (
	"context"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/park"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/internal/watchdog"
)

// Proc is a handler's view of the process it runs in: the message's
// deadline and other properties, the system's clock, and (for
// cooperative scheduling) the actor it may release while waiting.
//
// A Proc is valid only inside the handler it was passed to, on that
// handler's goroutine; keep it no longer than the handler runs. Once the
// handler has returned, the runtime may pass the same Proc to a later
// handler, of any actor of the system.
type Proc struct {
	a  *core
	m  *message     // the process this goroutine runs (or keeps, suspended)
	g  gid.ID       // this goroutine
	gw *groupWorker // the worker a group's runner serves (group.go); nil on a single actor's

	// wake parks the goroutine until the actor is handed back (or
	// x.stopErr is set, or a Sleep ends), made ready by expectSignal
	// before anyone may signal. One word, where a channel took a
	// suspended Await past 3 KB (3,127 bytes), and no record per waiter,
	// which a channel or WaitGroup allocates (package park).
	wake     park.Spot
	x        *procExtra // rarer state; nil until used
	epoch    uint32     // number of the current (or last) suspension. Guarded by a.mu.
	batch    uint8      // messages the runner has run since it last ran out of work, up to parkBatch+1 (convo.go)
	serve    bool       // a spare runner is woken to serve, not dismissed. Set under a.mu.
	done     bool       // the runner returned normally (not through runtime.Goexit)
	selfWait bool       // a group runner blocked on a future of its group (checkGroupWait). Guarded by a.mu.
	hslot    uint8      // 1 + the processor slot where the runner's handler held back a runner (handoff.go); 0 if none
	kept     uint8      // its actor's messages run since its handler held a runner back, which waits meanwhile (afterHanded)
	nslot    uint8      // 1 + the processor slot that names this runner (noteRunner); 0 if none
	answered bool       // the last message the runner ran was answered (a Call's): its caller may be waiting for the answer (convo.go)
	xfer     bool       // the runner let its actor go keeping its busy unit, for the runner it held back (core.exit)
}

// procSize is the size of a Proc, which every runner goroutine has, and
// every suspended process keeps: 64 bytes is one of Go's size classes
// (suspend_internal_test.go checks it). A group's runner has the rest
// of what it needs beside it (groupProc).
const procSize = 64

// expectSignal makes the next signal the one waitSignal waits for. It
// comes before anyone can signal: under a.mu, before the goroutine is
// published as suspended, sleeping or spare.
func (p *Proc) expectSignal() { p.wake.Expect() }

// signal wakes p's goroutine, parked in waitSignal (or about to park).
// Until it runs, it counts as ready: runners with a backlog yield to it.
func (p *Proc) signal() {
	ready.Add(1)
	p.wake.Signal()
}

// waitSignal parks p's goroutine until signal.
func (p *Proc) waitSignal() {
	p.wake.Wait()
	ready.Done()
}

// procExtra is the state only some suspensions need.
type procExtra struct {
	stopErr    error       // the actor stopped: the goroutine must end. Set under a.mu.
	cond       func() bool // the condition of AwaitCond
	condPanic  any         // what cond panicked with, to raise in the process
	timed      bool        // wd is watched for AwaitWithin or Sleep. Guarded by a.mu.
	sleeping   bool        // in Sleep, which wd ends. Guarded by a.mu.
	timedOut   bool        // AwaitWithin's timeout came first. Guarded by a.mu.
	timedMsg   *message    // the message and suspension wd times out. Guarded by a.mu.
	timedEpoch uint32
	wd         watchdog.Entry // AwaitWithin's timeout, Sleep's end

	// thens lists the continuations the current process made (Then), so
	// that the runtime recognises one of them among the handler's
	// results (and not one it was handed). Keeping the list here, not a
	// pointer to the maker in each continuation, lets a finished maker be
	// collected while its continuations wait.
	thens []continuation
}

// stopping returns why the suspended process must end, or nil.
func (p *Proc) stopping() error {
	if p.x == nil {
		return nil
	}
	return p.x.stopErr
}

// madeHere reports whether the current process made continuation k.
func (p *Proc) madeHere(k continuation) bool {
	if p.x == nil {
		return false
	}
	for _, t := range p.x.thens {
		if t == k {
			return true
		}
	}
	return false
}

func (p *Proc) extra() *procExtra {
	if p.x == nil {
		p.x = new(procExtra)
	}
	return p.x
}

// Deadline returns the start deadline of the running message (the zero
// time if it has none). The message has already started, so it can no
// longer miss it; handlers use it to pass a deadline on.
func (p *Proc) Deadline() time.Time { return p.m.deadlineOf(p.actor().sys) }

// Now reads the system's clock.
func (p *Proc) Now() time.Time { return p.actor().sys.clk.Now() }

// setActor and actor write and read p.a where a goroutine that kept p
// past its handler may read it (Now, Deadline, System) while the
// runtime keeps p or hands it to a later runner (keepProc, newProc):
// atomically, so that a misused Proc reads an actor of its system, never
// a torn or racing word. Everywhere else the runner that owns p reads
// p.a plainly.
func (p *Proc) setActor(a *core) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&p.a)), unsafe.Pointer(a))
}

func (p *Proc) actor() *core {
	return (*core)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&p.a))))
}

// reuse makes a kept p as new for a runner of a on goroutine g. Field by
// field, not a whole-struct write, which would write p.a plainly.
// TestAKeptProcIsReusedClean sets every field first and counts them.
func (p *Proc) reuse(a *core, g gid.ID) {
	p.m, p.g, p.gw, p.x = nil, g, nil, nil
	p.wake = park.Spot{}
	p.epoch, p.batch, p.hslot, p.nslot, p.kept = 0, 0, 0, 0, 0
	p.serve, p.done, p.selfWait, p.answered, p.xfer = false, false, false, false, false
	p.setActor(a)
}

// Priority returns the running message's priority.
func (p *Proc) Priority() int { return p.m.priority() }

// Tag returns the value the sender attached with Tag, or nil.
func (p *Proc) Tag() any { return p.m.tag() }

// Name returns the running message's name: its Name option, or its
// handler function's name.
func (p *Proc) Name() string { return p.m.name(p.m.work()) }

// Context returns the context the message was sent with, or
// context.Background().
func (p *Proc) Context() context.Context {
	if x := p.m.ext; x != nil && x.ctx != nil {
		return x.ctx
	}
	return context.Background()
}

// System returns the system of the running actor.
func (p *Proc) System() *System { return p.actor().sys }
