package timeliness

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/crisprt/crisp/crisp"
)

// Sections names the sections, in the order "all" runs them.
var Sections = []string{"lag", "lateness", "quality", "overload", "overhead"}

// Options are the settings every section takes.
type Options struct {
	Quick  bool          // small sizes, for tests and CI
	Seed   uint64        // seed of workloads and deadline schedules
	Repeat int           // runs per lag scenario (0: the default, 1)
	Window time.Duration // measured span per lag run (0: the default)
	// Hogs, if positive, is the number of goroutines that never yield
	// run beside the actors in the lag section's contention cells (each
	// cell is measured without them too); 0 keeps the default, 2; a
	// negative value leaves the contention cells out.
	Hogs int
	// Pending, Actors and Loads, if not empty, replace the lag section's
	// rows of those dimensions (to measure a few cells of the grid).
	Pending, Actors []int
	Loads           []Load
	// Progress, if not nil, hears what long sections are doing.
	Progress func(string)
	// Observer, if not nil, watches the lag section's systems (it costs
	// time: figures taken with it are not comparable with others).
	Observer crisp.Observer
	// TraceDir, if not empty, receives a runtime trace of each of the lag
	// section's crisp runs (LagConfig.TraceDir).
	TraceDir string
}

// Result is a section's outcome: tables, a chart, and (through its
// exported fields) JSON.
type Result interface {
	Tables() []Table
	// Chart writes the section's chart as SVG.
	Chart(w io.Writer) error
}

// Run runs the named section.
func Run(ctx context.Context, section string, o Options) (Result, error) {
	seed := max(o.Seed, 1)
	switch section {
	case "lag":
		c := DefaultLag(o.Quick)
		c.Seed = seed
		if o.Repeat > 0 {
			c.Repeat = o.Repeat
		}
		if o.Window > 0 {
			c.Window = o.Window
		}
		if len(o.Pending) > 0 {
			c.Pending = o.Pending
		}
		if len(o.Actors) > 0 {
			c.Actors = o.Actors
		}
		if len(o.Loads) > 0 {
			c.Loads = o.Loads
		}
		switch {
		case o.Hogs > 0:
			c.Hogs = []int{0, o.Hogs}
		case o.Hogs < 0:
			c.Hogs = []int{0}
		}
		c.Observer = o.Observer
		c.TraceDir = o.TraceDir
		return Lag(ctx, c, o.Progress)
	case "lateness":
		c := DefaultLateness(o.Quick)
		c.Seed = seed
		return Lateness(ctx, c)
	case "quality":
		c := DefaultQuality(o.Quick)
		c.Seed = seed
		return Quality(ctx, c)
	case "overload":
		c := DefaultOverload(o.Quick)
		c.Seed = seed
		return Overload(ctx, c)
	case "overhead":
		return Overhead(ctx, DefaultOverhead(o.Quick))
	}
	return nil, fmt.Errorf("no section %q (want one of %v)", section, Sections)
}
