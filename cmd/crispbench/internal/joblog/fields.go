package joblog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// field indexes a column (CSV) or key (JSON Lines).
type field int

const (
	fJob field = iota
	fCustomer
	fSubmitted
	fDuration
	fNode
	fOutcome
	fStartDeadline
	fResultTimeout
	fPriority
	nFields

	nRequired = fStartDeadline // the fields before it must be present
)

// fieldNames are the column names of the CSV header and the keys of the
// JSON objects, in the order the Writer writes them.
var fieldNames = [nFields]string{
	fJob:           "job",
	fCustomer:      "customer",
	fSubmitted:     "submitted",
	fDuration:      "duration",
	fNode:          "node",
	fOutcome:       "outcome",
	fStartDeadline: "start_deadline",
	fResultTimeout: "result_timeout",
	fPriority:      "priority",
}

func (f field) String() string { return fieldNames[f] }

func lookupField(name string) (field, bool) {
	for f, n := range fieldNames {
		if n == name {
			return field(f), true
		}
	}
	return 0, false
}

// record is one row's field texts before conversion; set tells which
// fields the row gave at all (a CSV row sets every column of its header;
// a JSON object sets the keys it has).
type record struct {
	text [nFields]string
	set  [nFields]bool
}

// fieldError is a LineError before the line is known.
type fieldError struct {
	field field
	err   error
}

func (e *fieldError) at(line int) *LineError {
	return &LineError{Line: line, Field: e.field.String(), Err: e.err}
}

func bad(f field, format string, args ...any) *fieldError {
	return &fieldError{field: f, err: fmt.Errorf(format, args...)}
}

// job converts a record, checking every field.
func (r *record) job() (Job, *fieldError) {
	var j Job
	for f := range nRequired {
		if !r.set[f] {
			return j, bad(f, "missing")
		}
	}
	for _, f := range []field{fJob, fCustomer, fNode} {
		if fe := checkText(f, r.text[f]); fe != nil {
			return j, fe // what a Writer could not write back
		}
	}
	j.ID, j.Customer, j.Node = r.text[fJob], r.text[fCustomer], r.text[fNode]

	var err error
	if j.Submitted, err = time.Parse(time.RFC3339, r.text[fSubmitted]); err != nil {
		return j, bad(fSubmitted, "%q is not an RFC 3339 time (like 2013-02-01T09:30:00Z)", r.text[fSubmitted])
	}
	if j.Duration, err = parseDuration(r.text[fDuration]); err != nil {
		return j, &fieldError{fDuration, err}
	}
	o, ok := parseOutcome(r.text[fOutcome])
	if !ok {
		return j, bad(fOutcome, "%q is not one of completed, failed, hung", r.text[fOutcome])
	}
	j.Outcome = o

	// Agreement terms: absent or empty means not given.
	a := &j.Agreement
	for _, f := range []field{fStartDeadline, fResultTimeout} {
		if r.text[f] == "" {
			continue
		}
		d, err := parseDuration(r.text[f])
		switch {
		case err != nil:
			return j, &fieldError{f, err}
		case d == 0:
			return j, bad(f, "zero; leave it empty when the agreement does not say")
		}
		if f == fStartDeadline {
			a.StartDeadline = d
		} else {
			a.ResultTimeout = d
		}
	}
	if s := r.text[fPriority]; s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			return j, bad(fPriority, "%q is not a whole number", s)
		}
		a.Priority = p
	}
	if fe := check(&j); fe != nil {
		return j, fe // what a Writer could not write back (a time before year 1 UTC, say)
	}
	return j, nil
}

// parseDuration reads Go's duration syntax ("1h2m3.5s") or a plain
// number of seconds ("3723.5"); negative values are refused.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP_") {
		sec := f * float64(time.Second)
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(sec) >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is not a duration in seconds", s)
		}
		d = time.Duration(math.Round(sec))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (like 4m30s, or 270 for seconds)", s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// check is what a Writer requires of a job: exactly what a Reader would
// accept back.
func check(j *Job) *fieldError {
	for _, f := range []struct {
		field
		s string
	}{{fJob, j.ID}, {fCustomer, j.Customer}, {fNode, j.Node}} {
		if fe := checkText(f.field, f.s); fe != nil {
			return fe
		}
	}
	_, offset := j.Submitted.Zone()
	switch {
	// The zero time.Time is 0001-01-01T00:00:00Z, the first instant
	// RFC 3339 writes: a time like any other here.
	case j.Submitted.Year() < 1 || j.Submitted.Year() > 9999 || j.Submitted.Before(time.Time{}):
		return bad(fSubmitted, "%s is outside the years 0001 to 9999 that RFC 3339 writes", j.Submitted.Format(time.RFC3339))
	case offset%60 != 0:
		return bad(fSubmitted, "zone offset %ds is not whole minutes, which RFC 3339 cannot write", offset)
	case j.Duration < 0:
		return bad(fDuration, "negative (%v)", j.Duration)
	case j.Outcome < Completed || j.Outcome > Hung:
		return bad(fOutcome, "invalid %v", j.Outcome)
	case j.Agreement.StartDeadline < 0:
		return bad(fStartDeadline, "negative (%v)", j.Agreement.StartDeadline)
	case j.Agreement.ResultTimeout < 0:
		return bad(fResultTimeout, "negative (%v)", j.Agreement.ResultTimeout)
	}
	return nil
}

// checkText refuses a name that would not read back the same: empty,
// with spaces at either end (CSV trims them), with a carriage return
// (CSV reads \r\n as \n), or not UTF-8 (JSON replaces bad bytes).
func checkText(f field, s string) *fieldError {
	switch {
	case s == "":
		return bad(f, "empty")
	case s != strings.TrimSpace(s):
		return bad(f, "%q has spaces at an end", s)
	case strings.ContainsRune(s, '\r'):
		return bad(f, "%q holds a carriage return", s)
	case !utf8.ValidString(s):
		return bad(f, "%q is not UTF-8", s)
	}
	return nil
}

// formatDuration writes d in Go's syntax, or "" for zero when the term
// is optional.
func formatDuration(d time.Duration, optional bool) string {
	if d == 0 && optional {
		return ""
	}
	return d.String()
}

func formatPriority(p int) string {
	if p == 0 {
		return ""
	}
	return strconv.Itoa(p)
}
