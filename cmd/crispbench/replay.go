package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/crisprt/crisp/cmd/crispbench/internal/chart"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
	"github.com/crisprt/crisp/cmd/crispbench/internal/sample"
)

func init() {
	register(subcommand{
		name: "replay",
		help: "Replay a job log under the polling and the deadline Controller, and compare.",
		new:  func() runner { return new(replayCmd) },
	})
}

// replayCmd is `crispbench replay`. Its defaults are replay.Defaults'.
type replayCmd struct {
	Log string `arg:"" optional:"" placeholder:"LOG" help:"Job log to replay (CSV or JSON Lines; - for standard input). Default: the embedded log, seed 1 of crispbench gen."`

	Strategy string        `enum:"polling,deadline,both" default:"both" help:"Controller to replay: polling, deadline or both (${enum})."`
	Policy   string        `enum:"edf,fifo,priority,customer" default:"edf" help:"Order in which nodes take waiting jobs: edf (earliest deadline first), fifo, priority (the log's class first), customer (--first's customers first, whatever the deadlines)."`
	First    []string      `placeholder:"CUSTOMER,..." help:"Customers that --policy customer puts first (default: those of the log's priority class)."`
	Nodes    int           `default:"8" help:"Data-service nodes; the log's nodes are mapped onto them in order of appearance."`
	Start    time.Duration `name:"start-deadline" placeholder:"DURATION" help:"Start deadline for every job, replacing the log's agreements (default: each job's own, 1h if none)."`
	Timeout  time.Duration `name:"result-timeout" placeholder:"DURATION" help:"Result timeout for every job, replacing the log's agreements (default: each job's own, 2h if none)."`
	Retries  int           `default:"2" help:"How often the deadline Controller sends a job that missed its start deadline to another node."`
	Poll     time.Duration `name:"poll-interval" default:"1m" help:"How often the polling Controller checks a job's status."`
	SkipBad  bool          `help:"Pass over malformed and out-of-order rows of the log, and count them, instead of stopping at the first."`

	Format string `enum:"table,json,csv" default:"table" help:"Report format: table, json or csv."`
	Top    int    `default:"10" help:"Customers to show in the table besides the totals."`
	Chart  string `placeholder:"FILE.svg" help:"Also draw the satisfaction per customer and the time to first answer in an SVG file."`

	cfg replay.Config // set by Validate
}

func (c *replayCmd) Help() string {
	return `Runs the Controller of the paper's case study, the data-service nodes and
the customers as crisp actors on virtual time, and replays the log once
with the old Controller, which polls for each job's status for as long as
it takes, and once with the Controller that gives each job a start
deadline, retries elsewhere after a miss and waits for a result for a
bounded time. Both see the same jobs on the same nodes: some take hours,
some fail for bad data, and some hang, holding their node until it is
restarted, which loses the jobs waiting there. The report gives, per
customer and in total, what became of the jobs and how long customers
waited for a first answer. docs/replay.md explains the model.

Examples:

    crispbench replay
    crispbench replay --policy customer --first C001 --format csv > report.csv
    crispbench gen --seed 7 -o jobs.csv && crispbench replay jobs.csv --chart replay.svg
`
}

// Validate is called by kong after parsing; its error is a usage error.
func (c *replayCmd) Validate() error {
	cfg := replay.Defaults()
	switch c.Strategy {
	case "polling":
		cfg.Strategies = []replay.Strategy{replay.Polling}
	case "deadline":
		cfg.Strategies = []replay.Strategy{replay.Deadline}
	}
	pol, err := replay.ParsePolicy(c.Policy)
	if err != nil {
		return err
	}
	if len(c.First) > 0 && pol != replay.CustomerFirst {
		return errors.New("--first applies only with --policy customer")
	}
	if c.Top < 0 {
		return fmt.Errorf("--top must not be negative, not %d", c.Top)
	}
	cfg.Policy, cfg.First, cfg.Nodes = pol, c.First, c.Nodes
	cfg.StartDeadline, cfg.ResultTimeout = c.Start, c.Timeout
	cfg.Retries, cfg.PollInterval, cfg.SkipBad = c.Retries, c.Poll, c.SkipBad
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

func (c *replayCmd) Run(e *env) error {
	in, size, done, err := c.open(e)
	if err != nil {
		return err
	}
	defer done()

	bar := newProgress(e.stderr, size)
	cfg := c.cfg
	cfg.Progress = bar.show
	rep, err := replay.Run(e.ctx, in, cfg)
	bar.finish()
	if err != nil {
		if c.Log != "" && c.Log != "-" {
			return fmt.Errorf("%s: %w", c.Log, err)
		}
		return err
	}

	switch c.Format {
	case "json":
		err = rep.WriteJSON(e.stdout)
	case "csv":
		err = rep.WriteCSV(e.stdout)
	default:
		err = rep.WriteTable(e.stdout, c.Top)
	}
	if err != nil {
		return err
	}
	if c.Chart != "" {
		return writeChart(c.Chart, rep)
	}
	return nil
}

// open opens the log and names it in the config; size is its length
// in bytes, or -1 if unknown.
func (c *replayCmd) open(e *env) (in io.Reader, size int64, done func(), err error) {
	switch c.Log {
	case "":
		c.cfg.Name = sample.Name + " (embedded)"
		return sample.Open(), int64(sample.Size()), func() {}, nil
	case "-":
		c.cfg.Name = "standard input"
		return os.Stdin, -1, func() {}, nil
	}
	f, err := os.Open(c.Log)
	if err != nil {
		return nil, 0, nil, err
	}
	size = -1
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	c.cfg.Name = c.Log
	return f, size, func() { _ = f.Close() }, nil
}

func writeChart(path string, rep *replay.Report) error {
	return writeFile(path, func(w io.Writer) error { return chart.Write(w, rep) })
}

// writeFile creates path and fills it with write; on any error it
// removes the file, leaving no half-drawn chart behind.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	return write(f)
}

// progress is a progress bar over the bytes of the log read, drawn on
// stderr only when it is a terminal; otherwise it does nothing.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(stderr io.Writer, size int64) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription("replaying"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetSpinnerChangeInterval(0), // no goroutine of its own
		progressbar.OptionClearOnFinish(),
	)}
}

// show is replay.Config.Progress: bytes read so far.
func (p *progress) show(read int64) {
	if p.bar != nil {
		_ = p.bar.Set64(read)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
