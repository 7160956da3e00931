// Package deadline defines start deadlines for crisp messages: how they
// order, when one counts as missed, and the error a caller gets when it is.
//
// A deadline is an absolute instant (a time.Time) by which a message must
// start. The zero time means "no deadline"; it orders after every real
// deadline, so that earliest-deadline-first puts undeadlined work last.
// A deadline d is missed at instant now iff d is set and now >= d: a
// message whose deadline equals the current time has already missed it.
// A caller is told of a miss by a [*MissedError], which matches
// [ErrMissed] and context.DeadlineExceeded with errors.Is.
//
// Everything here is a pure function or an immutable error value, safe
// for use from any goroutine. Comparisons cost a few nanoseconds and never
// allocate.
//
//	_, err := fut.Get()
//	var miss *deadline.MissedError
//	if errors.As(err, &miss) {
//		log.Printf("%s on %s never ran: missed its deadline, noticed %v after it",
//			miss.Message, miss.Actor, miss.Lateness())
//	}
package deadline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrMissed is matched (through errors.Is) by every *MissedError.
var ErrMissed = errors.New("deadline missed")

// MissedError says that a message could not start by its deadline and so
// never ran. It matches ErrMissed and context.DeadlineExceeded with
// errors.Is, and reports Timeout() == true like the context package's own
// deadline error.
type MissedError struct {
	// Actor and Message name the receiver and the message, as far as they
	// are known (an actor's name option, a message's name option, or names
	// derived from the state type and the handler function).
	Actor, Message string
	// Deadline is the instant by which the message had to start.
	Deadline time.Time
	// Detected is the clock reading at which the miss was established. It
	// is never before Deadline.
	Detected time.Time
}

// Error describes the miss in one line.
func (e *MissedError) Error() string {
	who := e.Message
	if who == "" {
		who = "message"
	}
	if e.Actor != "" {
		who = e.Actor + ": " + who
	}
	if late := e.Lateness(); late > 0 {
		return fmt.Sprintf("%s: deadline missed: had to start by %s (noticed %v later)",
			who, e.Deadline.Format(time.RFC3339Nano), late)
	}
	return fmt.Sprintf("%s: deadline missed: had to start by %s",
		who, e.Deadline.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrMissed or context.DeadlineExceeded.
func (e *MissedError) Is(target error) bool {
	return target == ErrMissed || target == context.DeadlineExceeded
}

// Timeout reports true: a missed deadline is a timeout.
func (e *MissedError) Timeout() bool { return true }

// Lateness is how long after the deadline the miss was detected. Under a
// virtual clock it is exactly zero when the watchdog caught the miss; on a
// real clock it measures the notification lag.
func (e *MissedError) Lateness() time.Duration { return e.Detected.Sub(e.Deadline) }

// Compare orders deadlines: it returns -1 if a is earlier than b, +1 if
// later, 0 if equal. The zero time (no deadline) is later than every set
// deadline and equal to itself.
func Compare(a, b time.Time) int {
	switch az, bz := a.IsZero(), b.IsZero(); {
	case az && bz:
		return 0
	case az:
		return 1
	case bz:
		return -1
	}
	return a.Compare(b)
}

// Before reports whether deadline a comes strictly before deadline b,
// with the zero time (no deadline) last.
func Before(a, b time.Time) bool { return Compare(a, b) < 0 }

// Earliest returns the earlier of two deadlines; the zero time (no
// deadline) loses to any set deadline.
func Earliest(a, b time.Time) time.Time {
	if Compare(b, a) < 0 {
		return b
	}
	return a
}

// Missed reports whether deadline d has passed at instant now: d is set
// and now is at or after it.
func Missed(d, now time.Time) bool { return !d.IsZero() && !now.Before(d) }
