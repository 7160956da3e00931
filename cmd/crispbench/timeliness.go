package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crisprt/crisp/cmd/crispbench/internal/timeliness"
	"github.com/crisprt/crisp/observe"
)

func init() {
	register(subcommand{
		name: "timeliness",
		help: "Measure how well crisp meets deadlines and how promptly it reports misses.",
		new:  func() runner { return new(timelinessCmd) },
	})
}

// timelinessCmd is `crispbench timeliness`.
type timelinessCmd struct {
	Section  string        `arg:"" optional:"" enum:"lag,lateness,quality,overload,overhead,all" default:"all" help:"Section to run: lag, lateness, quality, overload, overhead or all."`
	Format   string        `enum:"md,json" default:"md" help:"Output format: md (markdown tables) or json."`
	Chart    string        `placeholder:"FILE.svg" help:"Write the section's chart to FILE.svg (a single section only)."`
	ChartDir string        `placeholder:"DIR" help:"Write each section's chart to DIR/SECTION.svg."`
	Quick    bool          `help:"Small sizes, for tests and CI: seconds instead of about half an hour."`
	Seed     uint64        `default:"1" help:"Seed of the random workloads and deadline schedules (at least 1)."`
	Repeat   int           `default:"1" help:"Runs of each lag scenario, to show the spread of real-clock figures."`
	Window   time.Duration `default:"0s" help:"Span of deadlines measured per lag run (0: 2s, or 30ms with --quick)."`
	Pending  []int         `placeholder:"N,..." help:"Lag section: pending deadline counts to measure (default 1,1000,100000)."`
	Actors   []int         `placeholder:"N,..." help:"Lag section: actor counts to measure (default 10,10000)."`
	Load     []string      `enum:"idle,busy,long" placeholder:"LOAD,..." help:"Lag section: loads to measure: idle, busy, long (default all three)."`
	Hogs     int           `default:"2" help:"Goroutines that never yield, run beside the actors in the lag section's contention cells; every cell is also measured without them (0: no contention cells)."`
	HTTP     string        `name:"http" placeholder:"ADDR" help:"While the lag section runs, serve the live page of its actors at http://ADDR/debug/crisp (the observer costs time: figures are not comparable with runs without it)."`
	Trace    string        `placeholder:"DIR" help:"Lag section: write a Go runtime trace (go tool trace) of each crisp run to DIR, named after its cell, run and lag p99, to see why a run stalled (the tracer costs time: figures are not comparable with runs without it)."`
}

func (c *timelinessCmd) Help() string {
	return `Runs crisp's timeliness measurements and prints each section as markdown
tables (or JSON), optionally with an SVG chart:

  lag       real clock: deadline to the return of the caller's Get, against
            time.AfterFunc, context.WithDeadline and a bare time.Timer
            (the floor for any Go code); also on virtual time.
            Actors idle (held by a blocked handler), busy (20-50µs
            CPU-bound handlers) or long (250-350µs handlers, every probe on
            one stuck actor); each cell also beside --hogs goroutines that
            never yield
  lateness  virtual time: start slack and non-preemptive blocking per policy
  quality   virtual time: miss ratio and useful work against utilisation
  overload  virtual time: admission control against EDF+Cost and plain EDF
            at utilisation 1.3 and 2.0: useful work, refusals, misses,
            and how soon senders learn of work not done
  overhead  real clock: throughput with deadlines on and off, watchdog CPU

docs/timeliness.md explains every figure.

Examples:

    crispbench timeliness quality --chart quality.svg
    crispbench timeliness overload --quick
    crispbench timeliness all --repeat 3 --chart-dir docs/timeliness
    crispbench timeliness lag --quick --format json
    crispbench timeliness lag --hogs 4 --repeat 2
    crispbench timeliness lag --pending 1000 --actors 10 --load busy,long
    crispbench timeliness lag --http localhost:6060
`
}

// Validate is called by kong after parsing; its error is a usage error.
func (c *timelinessCmd) Validate() error {
	switch {
	case c.Chart != "" && c.Section == "all":
		return errors.New("--chart takes a single section; use --chart-dir with all")
	case c.Chart != "" && c.ChartDir != "":
		return errors.New("--chart and --chart-dir exclude each other")
	case c.Chart != "" && !strings.EqualFold(filepath.Ext(c.Chart), ".svg"):
		return fmt.Errorf("--chart %s: the chart is SVG, name it FILE.svg", c.Chart)
	case c.Seed == 0:
		return errors.New("--seed must be at least 1")
	case c.Repeat < 1:
		return fmt.Errorf("--repeat must be at least 1, not %d", c.Repeat)
	case c.Window < 0:
		return fmt.Errorf("--window must not be negative, not %v", c.Window)
	case c.Hogs < 0:
		return fmt.Errorf("--hogs must not be negative, not %d", c.Hogs)
	case slices.ContainsFunc(c.Pending, func(n int) bool { return n < 1 }):
		return fmt.Errorf("--pending counts must be at least 1, not %v", c.Pending)
	case slices.ContainsFunc(c.Actors, func(n int) bool { return n < 1 }):
		return fmt.Errorf("--actors counts must be at least 1, not %v", c.Actors)
	case c.Trace != "" && c.Section != "lag" && c.Section != "all":
		return fmt.Errorf("--trace is for the lag section, not %s", c.Section)
	}
	return nil
}

func (c *timelinessCmd) Run(e *env) error {
	sections := []string{c.Section}
	if c.Section == "all" {
		sections = timeliness.Sections
	}
	if c.Hogs == 0 {
		c.Hogs = -1 // no contention cells
	}
	if c.Trace != "" {
		if err := os.MkdirAll(c.Trace, 0o755); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	opts := timeliness.Options{
		Quick: c.Quick, Seed: c.Seed, Repeat: c.Repeat, Window: c.Window, Hogs: c.Hogs,
		Pending: c.Pending, Actors: c.Actors, TraceDir: c.Trace,
		Progress: func(s string) { fmt.Fprintln(e.stderr, s) },
	}
	for _, l := range c.Load {
		var load timeliness.Load
		if err := load.UnmarshalText([]byte(l)); err != nil {
			return err // kong has checked the names
		}
		opts.Loads = append(opts.Loads, load)
	}
	if c.HTTP != "" {
		stop, err := servePage(c.HTTP, &opts, e.stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	before := timeliness.ThisMachine()
	results := map[string]timeliness.Result{}
	for _, s := range sections {
		fmt.Fprintf(e.stderr, "timeliness: running %s\n", s)
		r, err := timeliness.Run(e.ctx, s, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		results[s] = r
		chart := c.Chart
		if c.ChartDir != "" {
			chart = filepath.Join(c.ChartDir, s+".svg")
		}
		if chart != "" {
			if err := writeTimelinessChart(chart, r); err != nil {
				return fmt.Errorf("%s chart: %w", s, err)
			}
			fmt.Fprintf(e.stderr, "wrote %s\n", chart)
		}
	}
	after := timeliness.ThisMachine()

	if c.Format == "json" {
		out := map[string]any{"machine": map[string]any{"before": before, "after": after}}
		for s, r := range results {
			out[s] = r
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(e.stdout, "## crispbench timeliness %s\n\nBefore the run:\n\n", c.Section)
	if err := before.Markdown(e.stdout); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Load average after the run: %s\n\n", after.Load)
	for _, s := range sections {
		fmt.Fprintf(e.stdout, "## %s\n\n", s)
		for _, t := range results[s].Tables() {
			if err := t.Markdown(e.stdout); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeTimelinessChart(path string, r timeliness.Result) error {
	return writeFile(path, func(w io.Writer) error { return r.Chart(w) })
}

// servePage serves the live page (package observe) of the systems the
// run makes at addr, until stop is called.
func servePage(addr string, opts *timeliness.Options, stderr io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	stats := observe.NewStats()
	opts.Observer = stats
	mux := http.NewServeMux()
	mux.Handle("/debug/crisp", observe.Handler(stats))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "serving http://%s/debug/crisp\n", ln.Addr())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ErrServerClosed once stopped
	}()
	return func() { srv.Close(); <-done }, nil
}
