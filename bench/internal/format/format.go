// Package format holds how the bench command and cmd/sidebyside write a
// cell of the side-by-side table, so that both print the same words for
// the same figures.
package format

import (
	"fmt"
	"strings"
	"time"
)

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
