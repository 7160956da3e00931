package crisp

import (
	"log/slog"
	"time"
)

// DeadLetter is a Tell that was not delivered or did not run to its end:
// what the system's dead-letter hook (WithDeadLetters) receives.
type DeadLetter struct {
	// Actor and Message name the actor and the message.
	Actor, Message string
	// Deadline is the message's start deadline (zero if none); Tag its
	// Tag.
	Deadline time.Time
	Tag      any
	// Reason says why: a *deadline.MissedError (not started by its
	// deadline), ErrStopped (its actor stopped first), a *FullError (its
	// mailbox was full), an *InfeasibleError (refused by admission
	// control), a *PanicError (its handler panicked), a *PolicyError,
	// or the error of its context (cancelled before it started).
	Reason error
}

// WithDeadLetters sets a function told of every Tell of the system that
// could not be delivered or started, or whose handler panicked, with the
// reason (the failures a Call's future would have received). A detached
// Then continuation (one whose result nobody waits for) that fails counts
// as a Tell. It runs on
// whichever goroutine decided the outcome (a sender, a runner, the
// watchdog) and must be quick; it must not block; a panic in it is
// logged and otherwise ignored. A nil f keeps the default: no hook.
func WithDeadLetters(f func(DeadLetter)) Option {
	return Option{func(s *System) {
		if f != nil {
			s.onDead = f
		}
	}}
}

// deadLetter tells the system's hook of Tell m's failure.
//
//go:noinline
func (a *core) deadLetter(m *message, j job, err error) {
	d := DeadLetter{Actor: a.displayName(), Message: m.name(j), Deadline: m.deadlineOf(a.sys), Tag: m.tag(), Reason: err}
	defer func() {
		if r := recover(); r != nil {
			a.sys.log.LogAttrs(m.logContext(), slog.LevelError, "dead-letter hook panicked",
				slog.String("actor", d.Actor), slog.String("message", d.Message), slog.Any("panic", r))
		}
	}()
	a.sys.onDead(d)
}
