package joblog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// An Option configures a Reader.
type Option interface{ apply(*Reader) }

type optionFunc func(*Reader)

func (f optionFunc) apply(r *Reader) { f(r) }

// SkipBad makes the Reader pass over malformed and out-of-order rows
// instead of stopping at the first one. Skipped reports how many it
// passed over and what was wrong with the first few. Errors reading the
// input itself still stop the Reader.
func SkipBad() Option { return optionFunc(func(r *Reader) { r.skipBad = true }) }

// WithFormat fixes the format instead of recognising it from the input.
func WithFormat(f Format) Option { return optionFunc(func(r *Reader) { r.format = f }) }

// keptSkips bounds how many skipped rows' errors a Reader keeps, so that
// a log of bad rows does not make memory grow.
const keptSkips = 10

// Reader streams jobs from a log. It holds one line at a time, the
// time of the job before it (to check the order) and at most ten
// errors of skipped rows.
type Reader struct {
	in      *bufio.Reader
	format  Format
	skipBad bool

	dec     decoder // nil until the first Next
	jobs    int     // jobs returned so far
	prev    time.Time
	prevAt  int   // line of prev
	err     error // sticky: io.EOF, ErrEmpty or the error that stopped reading
	skipped int
	kept    []*LineError
}

// decoder yields one record per call: its line number, or an error.
// A *LineError leaves the decoder able to go on with the next line; any
// other error ends the input (io.EOF at its end).
type decoder interface {
	next(*record) (line int, err error)
}

// NewReader returns a Reader of the log in r, which it buffers.
func NewReader(r io.Reader, opts ...Option) *Reader {
	rd := &Reader{in: bufio.NewReaderSize(r, 64<<10)}
	for _, o := range opts {
		o.apply(rd)
	}
	return rd
}

// Next returns the next job. At the end of a log that held at least one
// job it returns io.EOF; at the end of one that held none, an error
// matching ErrEmpty. A content error is a *LineError (unless SkipBad is
// in force). Once Next has returned an error it returns the same error
// on every later call.
func (r *Reader) Next() (Job, error) {
	if r.err != nil {
		return Job{}, r.err
	}
	if r.dec == nil {
		if err := r.start(); err != nil {
			r.err = err
			return Job{}, err
		}
	}
	for {
		var rec record
		line, err := r.dec.next(&rec)
		if err == nil {
			var j Job
			j, err = r.accept(&rec, line)
			if err == nil {
				r.jobs++
				return j, nil
			}
		}
		var le *LineError
		if r.skipBad && errors.As(err, &le) {
			r.skip(le)
			continue
		}
		if err == io.EOF && r.jobs == 0 {
			err = ErrEmpty
			if r.skipped > 0 {
				err = fmt.Errorf("%w (%d bad rows skipped)", ErrEmpty, r.skipped)
			}
		}
		r.err = err
		return Job{}, err
	}
}

// accept converts a record and checks its order.
func (r *Reader) accept(rec *record, line int) (Job, error) {
	j, fe := rec.job()
	if fe != nil {
		return Job{}, fe.at(line)
	}
	if j.Submitted.Before(r.prev) {
		return Job{}, &LineError{Line: line, Field: fieldNames[fSubmitted], Err: fmt.Errorf(
			"%w: %s is earlier than %s on line %d; the log must be sorted by submission time",
			ErrOutOfOrder, j.Submitted.Format(time.RFC3339Nano), r.prev.Format(time.RFC3339Nano), r.prevAt)}
	}
	r.prev, r.prevAt = j.Submitted, line
	return j, nil
}

func (r *Reader) skip(le *LineError) {
	r.skipped++
	if len(r.kept) < keptSkips {
		r.kept = append(r.kept, le)
	}
}

// All returns an iterator over the remaining jobs. It yields each job
// with a nil error, and at an error other than the log's normal end it
// yields the zero Job with that error and stops.
func (r *Reader) All() iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			j, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(j, err) || err != nil {
				return
			}
		}
	}
}

// Skipped returns how many rows SkipBad passed over so far, and the
// errors of the first ten of them.
func (r *Reader) Skipped() (n int, first []*LineError) { return r.skipped, r.kept }

// Format returns the log's format, once the first Next has recognised
// it (zero before, or for an empty input).
func (r *Reader) Format() Format {
	if r.dec == nil {
		return 0
	}
	return r.format
}

// start recognises the format and reads the CSV header.
func (r *Reader) start() error {
	// A UTF-8 byte order mark, as spreadsheets write, is not content.
	if b, err := r.in.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = r.in.Discard(3)
	}
	if r.format == 0 {
		first, err := firstByte(r.in)
		if err == io.EOF {
			return ErrEmpty
		}
		if err != nil {
			return err
		}
		r.format = CSV
		if first == '{' {
			r.format = JSONL
		}
	}
	switch r.format {
	case CSV:
		d, err := newCSVDecoder(r.in)
		if err != nil {
			return err
		}
		r.dec = d
	case JSONL:
		r.dec = &jsonDecoder{in: r.in}
	default:
		return fmt.Errorf("joblog: unknown format %v", r.format)
	}
	return nil
}

// firstByte peeks at the first byte that is not white space, without
// consuming anything.
func firstByte(in *bufio.Reader) (byte, error) {
	for n := 1; ; n++ {
		b, err := in.Peek(n)
		if len(b) < n {
			if err == nil {
				err = io.EOF
			}
			if err == bufio.ErrBufferFull { // all white space so far
				return ' ', nil
			}
			return 0, err
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
}
