// Package joblog reads and writes crispbench job logs: the record of
// which jobs customers submitted to the Controller, when, how long each
// occupied its data-service node and how it originally ended.
//
// A log is CSV with a header line or JSON Lines (one object per line);
// docs/joblog.md in the repository describes both, field by field. A
// Reader streams a log one job at a time, so memory does not grow with
// the log: reading a 1,000,000-job log holds one line at a time (the
// tests measure it). Jobs must come in order of submission; a job
// submitted before the one on the line above it is an error, as is a log
// with no jobs at all. Every error in the content of a log is a
// *LineError naming the line and, where there is one, the field.
//
//	r := joblog.NewReader(file)
//	for job, err := range r.All() {
//		if err != nil {
//			return err // e.g. line 12, field "submitted": ...
//		}
//		use(job)
//	}
//
// Readers and Writers are not safe for use by several goroutines at
// once. Reading costs about one microsecond per CSV line (a little more
// for JSON Lines) and a few small allocations for the job's strings.
package joblog

import (
	"errors"
	"fmt"
	"time"
)

// Job is one line of a job log.
type Job struct {
	ID        string        // unique within the log by convention; not checked
	Customer  string        // who submitted it
	Submitted time.Time     // when the Controller received it
	Duration  time.Duration // how long it occupied its node (see Outcome)
	Node      string        // the data-service node it was originally sent to
	Outcome   Outcome       // how it originally ended
	Agreement Agreement     // the customer's terms for this job; zero if none given
}

// Agreement is the part of a customer's service agreement that a
// controller with deadlines can act on. A zero field means the log does
// not give that term.
type Agreement struct {
	// StartDeadline is how long after submission the job must have
	// started on a node.
	StartDeadline time.Duration
	// ResultTimeout is how long after the job started the customer is
	// willing to wait for its result.
	ResultTimeout time.Duration
	// Priority is the customer's priority class; larger is more urgent,
	// as in crisp's policy.ByPriority. Zero is the ordinary class.
	Priority int
}

// Outcome is how a job originally ended. It describes the job itself,
// not what any controller made of it: a completed job would complete
// after Duration on a free node, a failed one would fail after Duration
// (bad data or wrong parameters), and a hung one never produces a result
// and holds its node for Duration, until it is cleared.
type Outcome uint8

// The outcomes, in the words the log uses.
const (
	Completed Outcome = iota + 1 // "completed"
	Failed                       // "failed"
	Hung                         // "hung"
)

var outcomeNames = [...]string{Completed: "completed", Failed: "failed", Hung: "hung"}

// String returns the outcome's word in the log, or "Outcome(n)" for an
// invalid value.
func (o Outcome) String() string {
	if o >= Completed && o <= Hung {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

func parseOutcome(s string) (Outcome, bool) {
	for o := Completed; o <= Hung; o++ {
		if outcomeNames[o] == s {
			return o, true
		}
	}
	return 0, false
}

// Format is a job log's encoding.
type Format uint8

// The formats. A Reader recognises them by the first character of the
// input: '{' is JSON Lines, anything else CSV.
const (
	CSV   Format = iota + 1 // comma-separated, header line first
	JSONL                   // one JSON object per line
)

// String returns "csv" or "jsonl".
func (f Format) String() string {
	switch f {
	case CSV:
		return "csv"
	case JSONL:
		return "jsonl"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ErrEmpty is returned by a Reader for a log that holds no jobs: an
// empty input, a CSV header alone, or (when skipping bad rows) a log in
// which every row was bad.
var ErrEmpty = errors.New("joblog: the log holds no jobs")

// ErrOutOfOrder is wrapped by the *LineError for a job submitted
// earlier than the job before it. Sort the log by submission time first.
var ErrOutOfOrder = errors.New("out of order")

// LineError is an error in the content of a log.
type LineError struct {
	Line  int    // 1-based line number in the input
	Field string // the column or key at fault; empty if the whole line is
	Err   error  // what is wrong
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d, field %q: %v", e.Line, e.Field, e.Err)
}

// Unwrap returns e.Err, so errors.Is(err, ErrOutOfOrder) works.
func (e *LineError) Unwrap() error { return e.Err }
