package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

func init() {
	register(subcommand{
		name: "gen",
		help: "Write a synthetic job log shaped after the paper's Controller logs.",
		vars: genDefaults(),
		new:  func() runner { return new(genCmd) },
	})
}

// genCmd is `crispbench gen`. Its defaults come from gen.Defaults, so
// that `crispbench gen` with no flags writes the embedded default log.
type genCmd struct {
	Output string `short:"o" placeholder:"FILE" help:"Write to FILE instead of standard output."`
	Format string `enum:"auto,csv,jsonl" default:"auto" help:"Output format: csv, jsonl, or auto (jsonl if FILE ends in .jsonl, else csv)."`
	Seed   uint64 `default:"${gen_seed}" help:"Seed of the random streams; the same seed and flags give the same bytes."`

	Jobs      int    `default:"${gen_jobs}" help:"Expected number of jobs; the count varies around it (by about ±1.5% at 25,000)."`
	Customers int    `default:"${gen_customers}" help:"Number of customers."`
	Nodes     int    `default:"${gen_nodes}" help:"Number of data-service nodes; each customer's jobs go to one node."`
	From      string `default:"${gen_from}" help:"Start of the period: a day (UTC) or an RFC 3339 time."`
	To        string `default:"${gen_to}" help:"End of the period, exclusive: a day (UTC) or an RFC 3339 time."`

	Skew         float64 `default:"${gen_skew}" help:"Zipf exponent of customers' volumes (0 = all equal)."`
	WeekendShare float64 `default:"${gen_weekend_share}" help:"A weekend day's volume relative to a working day's."`

	BurstShare float64       `default:"${gen_burst_share}" help:"Share of jobs that arrive in bursts."`
	BurstSize  float64       `default:"${gen_burst_size}" help:"Mean number of jobs in a burst."`
	BurstSpan  time.Duration `default:"${gen_burst_span}" help:"Time over which a burst's jobs arrive."`

	MedianDuration time.Duration `default:"${gen_median_duration}" help:"Median processing time of a typical customer's jobs."`
	CustomerSpread float64       `default:"${gen_customer_spread}" help:"Log-normal spread of customers' median durations."`
	JobSpread      float64       `default:"${gen_job_spread}" help:"Log-normal spread of durations within one customer."`

	FailRate float64       `default:"${gen_fail_rate}" help:"Share of jobs that fail for bad data."`
	HangRate float64       `default:"${gen_hang_rate}" help:"Share of jobs that hang."`
	HangHold time.Duration `default:"${gen_hang_hold}" help:"Median time a hung job holds its node before it is cleared."`

	PriorityCustomers int  `default:"${gen_priority_customers}" help:"Customers in the higher priority class."`
	NoAgreements      bool `help:"Leave the agreement columns empty."`

	params gen.Params // set by Validate
}

func (c *genCmd) Help() string {
	return `Writes a job log in which customers submit data-processing jobs to the
Controller: volumes skewed across customers, office hours and quieter
weekends, bursts, heavy-tailed durations, a few jobs failing for bad
data and about one in a hundred hanging. With no flags it writes the
embedded default log (seed 1). docs/joblog.md explains the format and
every parameter.

Examples:

    crispbench gen > jobs.csv
    crispbench gen --seed 7 --jobs 1000000 -o big.jsonl
`
}

// genDefaults renders gen.Defaults for the ${...} in genCmd's tags.
func genDefaults() kong.Vars {
	d := gen.Defaults()
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return kong.Vars{
		"gen_seed":               strconv.FormatUint(d.Seed, 10),
		"gen_jobs":               strconv.Itoa(d.Jobs),
		"gen_customers":          strconv.Itoa(d.Customers),
		"gen_nodes":              strconv.Itoa(d.Nodes),
		"gen_from":               d.From.Format(time.DateOnly),
		"gen_to":                 d.To.Format(time.DateOnly),
		"gen_skew":               f(d.Skew),
		"gen_weekend_share":      f(d.WeekendShare),
		"gen_burst_share":        f(d.BurstShare),
		"gen_burst_size":         f(d.BurstSize),
		"gen_burst_span":         d.BurstSpan.String(),
		"gen_median_duration":    d.MedianDuration.String(),
		"gen_customer_spread":    f(d.CustomerSpread),
		"gen_job_spread":         f(d.JobSpread),
		"gen_fail_rate":          f(d.FailRate),
		"gen_hang_rate":          f(d.HangRate),
		"gen_hang_hold":          d.HangHold.String(),
		"gen_priority_customers": strconv.Itoa(d.PriorityCustomers),
	}
}

// Validate is called by kong after parsing; its error is a usage error.
func (c *genCmd) Validate() error {
	p := gen.Defaults()
	var err error
	if p.From, err = parseDay(c.From); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if p.To, err = parseDay(c.To); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	p.Seed, p.Jobs, p.Customers, p.Nodes = c.Seed, c.Jobs, c.Customers, c.Nodes
	p.Skew, p.WeekendShare = c.Skew, c.WeekendShare
	p.BurstShare, p.BurstSize, p.BurstSpan = c.BurstShare, c.BurstSize, c.BurstSpan
	p.MedianDuration, p.CustomerSpread, p.JobSpread = c.MedianDuration, c.CustomerSpread, c.JobSpread
	p.FailRate, p.HangRate, p.HangHold = c.FailRate, c.HangRate, c.HangHold
	p.PriorityCustomers, p.Agreements = c.PriorityCustomers, !c.NoAgreements
	if err := p.Validate(); err != nil {
		return err
	}
	c.params = p
	return nil
}

func parseDay(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a day (2013-02-01) nor an RFC 3339 time", s)
}

func (c *genCmd) Run(e *env) (err error) {
	g, err := gen.New(c.params)
	if err != nil {
		return err
	}
	format := joblog.CSV
	switch {
	case c.Format == "jsonl":
		format = joblog.JSONL
	case c.Format == "auto" && strings.EqualFold(filepath.Ext(c.Output), ".jsonl"):
		format = joblog.JSONL
	}

	out := e.stdout
	if c.Output != "" {
		f, cerr := os.Create(c.Output)
		if cerr != nil {
			return cerr
		}
		defer func() {
			if closeErr := f.Close(); err == nil {
				err = closeErr
			}
			if err != nil {
				_ = os.Remove(c.Output) // leave no half-written log behind
			}
		}()
		out = f
	}
	n, err := writeJobs(e, g, joblog.NewWriter(out, format))
	if err != nil {
		return err
	}
	if c.Output != "" {
		fmt.Fprintf(e.stderr, "wrote %d jobs to %s\n", n, c.Output)
	}
	return nil
}

func writeJobs(e *env, g *gen.Generator, w *joblog.Writer) (int, error) {
	n := 0
	for j := range g.Jobs() {
		if n%4096 == 0 {
			if err := e.ctx.Err(); err != nil {
				return n, err
			}
		}
		if err := w.Write(j); err != nil {
			return n, err
		}
		n++
	}
	if err := w.Flush(); err != nil {
		return n, fmt.Errorf("writing the log: %w", err)
	}
	return n, nil
}
