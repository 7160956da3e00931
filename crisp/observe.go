package crisp

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/crisprt/crisp/policy"
)

// How a system tells an observer what happens to its messages.
//
// A message sent while the system has an observer is marked (message.obs)
// and numbered at send; every later hook tests that mark on the message
// it already holds, so a system without an observer pays one nil check
// per send and one byte test per start and finish. The observer is fixed
// at NewSystem, so a message is observed throughout its life or not at
// all. Continuations made by Then are part of their CallNext's message
// and have no events of their own.
//
// Each event is emitted by the goroutine that made its transition, after
// the transition (and, for an outcome, after the future was resolved),
// outside the actor's lock: the runtime's compare-and-swap decides the
// outcome, so the observer hears of it exactly once and cannot change
// it. The events of one message are therefore emitted in the order they
// happened (each transition happens after the one before it), while
// events of different messages may come concurrently from several
// goroutines.

// Observer is told of the life of every message sent on a system made
// with WithObserver, and of its actors' restarts. Observe is called
// synchronously on the goroutine that made the transition (the sender,
// the actor's runner, the watchdog), outside every lock of the runtime,
// and concurrently for different messages: it must be safe for
// concurrent use, quick, and must not block; anything slow belongs on a
// goroutine of the observer's own. It cannot change an outcome: the
// future is resolved before its terminal event is observed. A panic in
// Observe is logged (Error, "observer panicked") and otherwise ignored.
type Observer interface {
	Observe(e Event)
}

// ObserverFunc makes an ordinary function an Observer.
type ObserverFunc func(e Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// EventKind says what happened to a message. Every message sent gets
// Sent first and then exactly one terminal event (Finished, Panicked,
// Missed, Refused, Cancelled, Stopped or Failed); between them, if it
// starts, Started once and any number of Suspended, Resumed pairs.
type EventKind uint8

const (
	// EventSent: Call, CallNext or Tell accepted the message's options;
	// Deadline is its start deadline. Emitted on the sender's goroutine.
	EventSent EventKind = iota + 1
	// EventStarted: the handler is about to run. Wait is the time since
	// Sent; Slack is Deadline minus Time (zero without a deadline).
	// Emitted on the goroutine that runs the handler.
	EventStarted
	// EventSuspended: the handler released its actor to wait (Await,
	// AwaitCond, AwaitWithin, Sleep, Suspend).
	EventSuspended
	// EventResumed: a suspended handler holds its actor again and goes
	// on. Wait is the time since it suspended.
	EventResumed
	// EventFinished (terminal): the handler returned. Run is the time
	// since Started, suspensions included. For CallNext it marks the
	// handler's return, not its continuations'.
	EventFinished
	// EventPanicked (terminal): the handler panicked, or called
	// runtime.Goexit; Err is the *PanicError (or the Goexit error) its
	// future got, Run the time since Started.
	EventPanicked
	// EventMissed (terminal): the message could not start by its
	// deadline; Err is its *deadline.MissedError and Lag how long after
	// the deadline the miss was detected.
	EventMissed
	// EventRefused (terminal): the actor refused the message at send and
	// never queued it: it had stopped or was draining (Err is
	// ErrStopped), its mailbox was full (a *FullError, WithCapacity), or
	// admission control judged it could not start in time (an
	// *InfeasibleError, WithAdmission). A refusal is never a miss.
	EventRefused
	// EventCancelled (terminal): the message's context ended before it
	// started; Err is the context's error.
	EventCancelled
	// EventStopped (terminal): the actor stopped (or its system shut
	// down) before the message started, or while its process was
	// suspended (then Started is true); Err is ErrStopped.
	EventStopped
	// EventFailed (terminal): the actor's policy panicked while ordering
	// the message; Err is the *PolicyError.
	EventFailed
	// EventRestarted: the actor (in a group, one worker) was restarted
	// with a fresh state after a handler's panic (Restart). Not a
	// message's event: ID is 0 and Message empty; Err is the
	// *PanicError restarted from. It is emitted once the fresh state is
	// in place, before the panicking message's EventPanicked; queued
	// work is kept.
	EventRestarted
)

var eventNames = [...]string{
	EventSent:      "sent",
	EventStarted:   "started",
	EventSuspended: "suspended",
	EventResumed:   "resumed",
	EventFinished:  "finished",
	EventPanicked:  "panicked",
	EventMissed:    "missed",
	EventRefused:   "refused",
	EventCancelled: "cancelled",
	EventStopped:   "stopped",
	EventFailed:    "failed",
	EventRestarted: "restarted",
}

// String returns the kind's name in lower case ("missed").
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Terminal reports whether k ends a message's life: exactly one terminal
// event follows each Sent.
func (k EventKind) Terminal() bool { return k >= EventFinished && k <= EventFailed }

// Event is one transition of one message (see EventKind for which fields
// each kind sets; the others are zero).
type Event struct {
	Kind EventKind
	// ID numbers the message within its system, from 1, in send order.
	ID uint64
	// Actor is the actor's (group's) name, Message the message's.
	Actor, Message string
	// Time is when the transition happened, on the system's clock.
	Time time.Time
	// Deadline is the message's start deadline; zero if it has none.
	Deadline time.Time
	// Priority is the message's Priority option.
	Priority int
	// Policy, for Sent only, is the actor's scheduling policy.
	Policy policy.Policy
	// Wait: for Started, how long the message was queued; for Resumed,
	// how long the process was suspended.
	Wait time.Duration
	// Slack: for Started, the time left to the deadline as it started.
	Slack time.Duration
	// Run: for Finished and Panicked, the time since Started.
	Run time.Duration
	// Lag: for Missed, how long after the deadline the miss was seen.
	Lag time.Duration
	// Started: for Stopped, whether the message had started (its
	// process was suspended or about to suspend).
	Started bool
	// Err is a terminal event's outcome as its future got it; nil for
	// Finished (a Call's own result goes to its caller only).
	Err error
	// Context is the context the message was sent with (the Context
	// option), or nil: the sender's trace span, request values.
	Context context.Context
}

// WithObserver makes the system tell o of every message sent on it
// (see Observer and EventKind). Given several times, every observer is
// told, in the order given. Without one a system pays nothing for
// observation but a nil check per send.
func WithObserver(o Observer) Option {
	return Option{func(s *System) {
		switch {
		case o == nil:
		case s.obs == nil:
			s.obs = o
		default:
			s.obs = observers{s.obs, o}
		}
	}}
}

// observers tells several observers in turn.
type observers []Observer

func (os observers) Observe(e Event) {
	for _, o := range os {
		o.Observe(e)
	}
}

// Bits of message.obs.
const (
	obsOn      = 1 << iota // the message was sent with an observer: every transition is observed
	obsStarted             // Started was observed: the next terminal event is from the running process
	obsEnded               // a terminal event was observed by the running process (a panic): no Finished
	obsRefused             // the terminal failure is a refusal
	obsRead                // ext.startKey holds the start's reading of the real clock (keepStartReading)
)

// sent marks m as observed and emits Sent. o holds the message's
// context (m.ext is not set yet) and, if the send read the clock for a
// deadline, that reading. Called on the sender's goroutine, without a
// lock, before m is queued.
//
//go:noinline
func (a *core) sent(m *message, j job, o *sendOpts) {
	s := a.sys
	var now time.Time
	var k int64
	if o.haveNow {
		now, k = o.now, s.key(o.now)
	} else {
		now, k = s.reading()
	}
	ctx := o.ctx
	m.obs = obsOn
	x := m.ext
	if x == nil {
		x = newExt() // an observed message's figures live there
		m.ext = x
	}
	// The context here already, not only in watchContext: a message
	// that fails at send must have it in its terminal event too.
	if ctx != nil {
		x.ctx = ctx
	}
	x.oid = s.obsSeq.Add(1)
	x.ostamp = k
	x.oname = m.name(j) // once: each later event reuses it
	a.emit(&Event{Kind: EventSent, ID: x.oid, Actor: a.displayName(), Message: x.oname,
		Time: now, Deadline: m.deadlineOf(s), Priority: m.priority(), Policy: a.cfg.pol, Context: ctx})
}

// reading returns the system's clock's reading (see System.now) and its
// key (System.key): one read of the clock for both.
func (s *System) reading() (time.Time, int64) {
	now := s.now()
	return now, s.key(now)
}

// exts recycles the extensions of observed messages that held nothing
// but the observer's figures (see freeExt); unused without an observer.
// One for all systems: an extension is the same for every system.
var exts sync.Pool

// newExt returns a cleared extension for an observed message, recycled
// if one is at hand (see freeExt).
func newExt() *msgExt {
	if x, _ := exts.Get().(*msgExt); x != nil {
		return x
	}
	return &msgExt{}
}

// freeExt takes the extension of m, an observed message whose handler
// has returned and which nothing will read again, for a later observed
// message, if it held only the observer's figures: a context, keys or a
// process have other holders. Called with the actor's mu held, after the
// message's last use (a Call's future keeps the message, not its
// extension, which only the runtime reads: see recycle).
func freeExt(m *message) {
	x := m.ext
	if x == nil || !x.observedOnly() {
		return
	}
	m.ext = nil
	*x = msgExt{}
	exts.Put(x)
}

// observeStart emits Started for m, whose handler is about to run on the
// calling goroutine.
//
//go:noinline
func (a *core) observeStart(m *message) {
	s, x := a.sys, m.ext
	var now time.Time
	var k int64
	if m.obs&obsRead != 0 {
		k = x.startKey
		now = s.epoch.Add(time.Duration(k)) // as reading would have made it
	} else {
		now, k = s.reading()
	}
	var e Event
	a.eventOf(&e, EventStarted, m, now)
	e.Wait = time.Duration(k - x.ostamp)
	if m.dk != 0 {
		e.Slack = m.deadlineOf(s).Sub(now)
	}
	m.obs |= obsStarted
	x.ostamp = k
	a.emit(&e)
}

// keepStartReading keeps now, the reading of the real clock with which
// the runner has just checked m's deadline, for m's Started: the
// instant the handler starts, within the few instructions in between,
// and one read of the clock fewer per message with a deadline. A
// virtual clock is read again, as before, so that its events' figures
// are exactly what they were (tests compare them).
func keepStartReading(s *System, m *message, now time.Time) {
	if s.realClock {
		m.ext.startKey = s.key(now)
		m.obs |= obsRead
	}
}

// observeFinish emits Finished for m, whose handler has returned, unless
// it panicked (Panicked was emitted then).
//
//go:noinline
func (a *core) observeFinish(m *message) {
	if m.obs&obsEnded != 0 {
		return
	}
	now, k := a.sys.reading()
	var e Event
	a.eventOf(&e, EventFinished, m, now)
	e.Run = time.Duration(k - m.ext.ostamp)
	a.emit(&e)
}

// observeSuspend emits Suspended for the process running m, which is
// about to release its actor, and notes when.
//
//go:noinline
func (a *core) observeSuspend(m *message) {
	now, k := a.sys.reading()
	m.ext.suspendedAt = k
	var e Event
	a.eventOf(&e, EventSuspended, m, now)
	a.emit(&e)
}

// observeResume emits Resumed for the process running m, which holds its
// actor again.
//
//go:noinline
func (a *core) observeResume(m *message) {
	now, k := a.sys.reading()
	var e Event
	a.eventOf(&e, EventResumed, m, now)
	e.Wait = time.Duration(k - m.ext.suspendedAt)
	a.emit(&e)
}

// observeEnd emits m's terminal event, err being the outcome its future
// got (a *deadline.MissedError for a miss, detected at now; now is zero
// otherwise).
//
//go:noinline
func (a *core) observeEnd(m *message, err error, missed bool, now time.Time) {
	if now.IsZero() {
		now = a.sys.now()
	}
	var e Event
	switch err.(type) {
	case nil:
		return // not an outcome
	case *PanicError:
		a.eventOf(&e, EventPanicked, m, now)
	case *PolicyError:
		a.eventOf(&e, EventFailed, m, now)
	default:
		switch {
		case missed:
			a.eventOf(&e, EventMissed, m, now)
			e.Lag = now.Sub(m.deadlineOf(a.sys))
		case m.obs&obsRefused != 0:
			a.eventOf(&e, EventRefused, m, now)
		case err == ErrStopped:
			a.eventOf(&e, EventStopped, m, now)
		case err == errGoexit:
			a.eventOf(&e, EventPanicked, m, now)
		default:
			a.eventOf(&e, EventCancelled, m, now)
		}
	}
	e.Err = err
	if m.obs&obsStarted != 0 {
		e.Started = e.Kind == EventStopped
		if e.Kind == EventPanicked {
			e.Run = time.Duration(a.sys.key(now) - m.ext.ostamp)
			m.obs |= obsEnded // the running goroutine's own write: see observeFinish
		}
	}
	a.emit(&e)
}

// eventOf sets the part of e every kind shares.
func (a *core) eventOf(e *Event, k EventKind, m *message, now time.Time) {
	x := m.ext // set by sent, as for every observed message
	*e = Event{Kind: k, ID: x.oid, Actor: a.displayName(), Message: x.oname, Time: now,
		Deadline: m.deadlineOf(a.sys), Priority: m.priority(), Context: x.ctx}
}

// emit tells the observer of e; a panic in the observer is logged and
// goes no further. It takes e by pointer, and the callers keep their
// event in one local, so that on a runner's small stack the event is
// copied once, into the observer's frame. The deferred check calls
// recover only when Observe did not return: a recover on every event
// costs more than the rest of emit.
//
//go:noinline
func (a *core) emit(e *Event) {
	returned := false
	defer func() {
		if !returned {
			a.observerPanicked(e, recover())
		}
	}()
	if f, ok := a.sys.obs.(ObserverFunc); ok {
		f(*e) // one copy of the event fewer than through Observe
	} else {
		a.sys.obs.Observe(*e)
	}
	returned = true
}

// observerPanicked logs panic r of the observer told of e; r is nil if
// the observer called runtime.Goexit, which goes on.
func (a *core) observerPanicked(e *Event, r any) {
	if r == nil {
		return
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	a.sys.log.LogAttrs(ctx, slog.LevelError, "observer panicked",
		slog.String("actor", e.Actor), slog.String("message", e.Message),
		slog.String("event", e.Kind.String()), slog.Any("panic", r))
}

// refuse fails m, which its actor will not queue, with err: a refusal,
// never a miss. It is logged at Debug ("message refused") with the
// message's context, since the caller's future says it too.
func (a *core) refuse(m *message, j job, err error) {
	if m.obs != 0 {
		m.obs |= obsRefused
	}
	if ctx := m.logContext(); a.sys.log.Enabled(ctx, slog.LevelDebug) {
		a.sys.log.LogAttrs(ctx, slog.LevelDebug, "message refused",
			slog.String("actor", a.displayName()), slog.String("message", m.name(j)), m.deadlineAttr(a.sys),
			slog.Any("error", err))
	}
	a.fail(j, err)
}

// observeRestart emits Restarted for the actor, restarted from pe at now.
//
//go:noinline
func (a *core) observeRestart(pe *PanicError, now time.Time) {
	e := Event{Kind: EventRestarted, Actor: a.displayName(), Time: now, Err: pe}
	a.emit(&e)
}
