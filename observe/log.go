package observe

import (
	"context"
	"errors"
	"log/slog"

	"github.com/crisprt/crisp/crisp"
)

// Log returns an observer (crisp.WithObserver) that writes to l a record
// for every message that did not finish well, Calls and Tells alike,
// with the message's context (so a handler of l sees its trace and
// values) and the attributes actor, message, deadline (if any) and
// error:
//
//   - "deadline missed", Warn; also detected, lag.
//   - "handler panicked", Error; also panic, stack (a *crisp.PanicError's).
//   - "policy failed the message", Error (a *crisp.PolicyError).
//   - "message refused", Warn.
//   - "actor restarted", Warn (actor and error only).
//   - "message cancelled" and "message stopped", Debug.
//
// The system's own logger (crisp.WithLogger) reports only what no caller
// can be told; Log reports everything, at levels an operator can
// filter. Records of a level l does not enable cost a call to Enabled.
func Log(l *slog.Logger) crisp.Observer { return logObserver{l} }

type logObserver struct{ l *slog.Logger }

func (o logObserver) Observe(e crisp.Event) {
	var level slog.Level
	var msg string
	switch e.Kind {
	case crisp.EventMissed:
		level, msg = slog.LevelWarn, "deadline missed"
	case crisp.EventPanicked:
		level, msg = slog.LevelError, "handler panicked"
	case crisp.EventFailed:
		level, msg = slog.LevelError, "policy failed the message"
	case crisp.EventRefused:
		level, msg = slog.LevelWarn, "message refused"
	case crisp.EventRestarted:
		level, msg = slog.LevelWarn, "actor restarted"
	case crisp.EventCancelled:
		level, msg = slog.LevelDebug, "message cancelled"
	case crisp.EventStopped:
		level, msg = slog.LevelDebug, "message stopped"
	default:
		return
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("actor", e.Actor)}
	if e.Kind != crisp.EventRestarted {
		attrs = append(attrs, slog.String("message", e.Message))
	}
	if !e.Deadline.IsZero() {
		attrs = append(attrs, slog.Time("deadline", e.Deadline))
	}
	if e.Kind == crisp.EventMissed {
		attrs = append(attrs, slog.Time("detected", e.Time), slog.Duration("lag", e.Lag))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("error", e.Err))
	}
	var pe *crisp.PanicError
	if errors.As(e.Err, &pe) {
		attrs = append(attrs, slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
	o.l.LogAttrs(ctx, level, msg, attrs...)
}
