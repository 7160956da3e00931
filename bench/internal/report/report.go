// Package report is bench's JSON report, which the bench command writes
// and cmd/sidebyside reads, and what both print of it, so that the two
// tables say the same words for the same figures.
package report

import (
	"fmt"
	"strings"
	"time"
)

// Report is everything a run of the suite measured.
type Report struct {
	Suite     string        `json:"suite"`
	Reps      int           `json:"reps"`
	GoVersion string        `json:"go_version"`
	OSArch    string        `json:"os_arch"`
	CPUs      int           `json:"cpus"`
	Hogs      int           `json:"hogs"` // goroutines spinning beside the runs (-hogs)
	Started   time.Time     `json:"started"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Rows      []*Row        `json:"workloads"`
}

// Row is one workload at one size, on every system.
type Row struct {
	Workload string  `json:"workload"`
	Size     string  `json:"size"`
	Unit     string  `json:"unit,omitempty"` // per-operation rows: what one operation is
	Ops      int     `json:"ops"`
	Note     string  `json:"note,omitempty"`
	Cells    []*Cell `json:"cells"`
}

// Cell is one system's runs of a workload.
type Cell struct {
	System string `json:"system"`
	// Times of the runs that succeeded, in order.
	Times []time.Duration `json:"times_ns"`
	// Median of Times, or zero if none succeeded.
	Median time.Duration `json:"median_ns"`
	// PerOp is Median / Ops for per-operation rows.
	PerOp time.Duration `json:"per_op_ns,omitempty"`
	// PeakBytes is the highest, over all runs, of the Go heap's objects
	// plus goroutine stacks during the run, above their level at its start.
	PeakBytes uint64 `json:"peak_bytes"`
	// Allocs is the bytes the Go heap allocated during each run that
	// succeeded, in order, and GCs the garbage collections that ran
	// during it: the whole run, setup and teardown included, in every
	// goroutine of the process (the hogs allocate nothing). Beside
	// goroutines that never yield each collection costs the others about
	// one of their time slices.
	Allocs []uint64 `json:"alloc_bytes,omitempty"`
	GCs    []uint64 `json:"gc_cycles,omitempty"`
	// Failures lists every run that did not succeed.
	Failures []Failure `json:"failures,omitempty"`
	// Skipped counts the repetitions not run because an earlier run timed
	// out, passed the memory limit or did not return after cancellation
	// (then its goroutines are abandoned), or because the first runs all
	// failed: such failures would only repeat.
	Skipped int `json:"skipped,omitempty"`
	// GaveUp is set once a run has failed in one of those ways.
	GaveUp bool `json:"gave_up,omitempty"`
}

// Failure is one run that did not succeed.
type Failure struct {
	Rep   int    `json:"rep"`
	Error string `json:"error"`
}

// Cell returns the row's cell of system, or nil.
func (r *Row) Cell(system string) *Cell {
	for _, c := range r.Cells {
		if c.System == system {
			return c
		}
	}
	return nil
}

// IsVariant reports whether system s is a variant of crisp (crisp+dl,
// crisp-tell), not a peer.
func IsVariant(s string) bool { return s != "crisp" && strings.HasPrefix(s, "crisp") }

// FailureLines lists, as markdown items, every failed run of rows and
// every cell's skipped runs; skipped ends the latter lines.
func FailureLines(rows []*Row, skipped string) []string {
	var fails []string
	for _, r := range rows {
		for _, c := range r.Cells {
			for _, f := range c.Failures {
				fails = append(fails, fmt.Sprintf("- %s on %s, run %d: %s", r.Workload, c.System, f.Rep, f.Error))
			}
			if c.Skipped > 0 {
				fails = append(fails, fmt.Sprintf("- %s on %s: the remaining %d runs skipped%s", r.Workload, c.System, c.Skipped, skipped))
			}
		}
	}
	return fails
}

// FailedCell says briefly why no run of c succeeded.
func FailedCell(c *Cell) string {
	if len(c.Failures) == 0 {
		return Failed("", false)
	}
	return Failed(c.Failures[0].Error, true)
}

// Duration writes d with three significant digits in the largest unit
// below it: 512 ns, 3.63 µs, 20.7 ms, 2.01 s.
func Duration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3g µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3g s", d.Seconds())
}

// Failed says briefly why no run of a cell succeeded, from the error of
// its first failed run; "" (no run failed) means the cell was not run.
func Failed(firstErr string, anyFailed bool) string {
	if !anyFailed {
		return "not run"
	}
	switch {
	case strings.Contains(firstErr, "maxheap"):
		return "over memory *"
	case strings.HasPrefix(firstErr, "timed out"):
		return "timed out *"
	case strings.HasPrefix(firstErr, "wrong answer"):
		return "wrong answer *"
	}
	return "failed *"
}
