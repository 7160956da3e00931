package joblog

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Writer writes jobs as a log in one format. It writes every column,
// leaving an agreement term empty (CSV) or out (JSON Lines) when it is
// zero; times keep their offset from UTC. Output is buffered: call Flush
// at the end.
type Writer struct {
	format Format
	buf    *bufio.Writer
	csv    *csv.Writer // CSV only
	json   *json.Encoder
	row    []string
	header bool // written
	jobs   int  // written
	err    error
}

// NewWriter returns a Writer of format f to w.
func NewWriter(w io.Writer, f Format) *Writer {
	wr := &Writer{format: f, buf: bufio.NewWriterSize(w, 64<<10)}
	switch f {
	case CSV:
		wr.csv = csv.NewWriter(wr.buf)
		wr.row = make([]string, nFields)
	case JSONL:
		wr.json = json.NewEncoder(wr.buf)
		wr.json.SetEscapeHTML(false)
	default:
		wr.err = fmt.Errorf("joblog: unknown format %v", f)
	}
	return wr
}

// jsonJob is a job as one JSON Lines object.
type jsonJob struct {
	Job           string `json:"job"`
	Customer      string `json:"customer"`
	Submitted     string `json:"submitted"`
	Duration      string `json:"duration"`
	Node          string `json:"node"`
	Outcome       string `json:"outcome"`
	StartDeadline string `json:"start_deadline,omitempty"`
	ResultTimeout string `json:"result_timeout,omitempty"`
	Priority      int    `json:"priority,omitempty"`
}

// Write writes one job. A job that a Reader would not accept back (an
// empty id, customer or node, a time outside the years 0001 to 9999, a
// negative duration, an
// invalid outcome) is refused with an error naming the field, and
// nothing is written. Write does not check the order of jobs.
func (w *Writer) Write(j Job) error {
	if w.err != nil {
		return w.err
	}
	if fe := check(&j); fe != nil {
		return fmt.Errorf("joblog: cannot write job %d (id %q): field %q: %w", w.jobs+1, j.ID, fe.field, fe.err)
	}
	a := j.Agreement
	switch w.format {
	case CSV:
		if err := w.writeHeader(); err != nil {
			return err
		}
		w.row[fJob] = j.ID
		w.row[fCustomer] = j.Customer
		w.row[fSubmitted] = j.Submitted.Format(time.RFC3339Nano)
		w.row[fDuration] = formatDuration(j.Duration, false)
		w.row[fNode] = j.Node
		w.row[fOutcome] = j.Outcome.String()
		w.row[fStartDeadline] = formatDuration(a.StartDeadline, true)
		w.row[fResultTimeout] = formatDuration(a.ResultTimeout, true)
		w.row[fPriority] = formatPriority(a.Priority)
		w.err = w.csv.Write(w.row)
	case JSONL:
		w.err = w.json.Encode(jsonJob{
			Job:           j.ID,
			Customer:      j.Customer,
			Submitted:     j.Submitted.Format(time.RFC3339Nano),
			Duration:      formatDuration(j.Duration, false),
			Node:          j.Node,
			Outcome:       j.Outcome.String(),
			StartDeadline: formatDuration(a.StartDeadline, true),
			ResultTimeout: formatDuration(a.ResultTimeout, true),
			Priority:      a.Priority,
		})
	}
	if w.err == nil {
		w.jobs++
	}
	return w.err
}

func (w *Writer) writeHeader() error {
	if w.header {
		return nil
	}
	w.header = true
	w.err = w.csv.Write(fieldNames[:])
	return w.err
}

// Flush writes any buffered data to the underlying writer (for CSV, the
// header too if no job was written) and returns the first error met.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.format == CSV {
		if err := w.writeHeader(); err != nil {
			return err
		}
		w.csv.Flush()
		if w.err = w.csv.Error(); w.err != nil {
			return w.err
		}
	}
	w.err = w.buf.Flush()
	return w.err
}
