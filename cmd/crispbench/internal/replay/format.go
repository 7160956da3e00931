package replay

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
)

// WriteTable writes the report as aligned text: what was replayed, the
// totals of each strategy, and the top customers: with two strategies,
// those whose satisfaction differs most between them; with one, the
// least satisfied.
func (r *Report) WriteTable(w io.Writer, top int) error {
	ew := &errWriter{w: w}
	ew.printf("Replay of %s: %s jobs from %d customers, submitted %s to %s.\n",
		r.Log, thousands(r.Jobs), r.customers(), r.From.Format(time.DateOnly), r.To.Format(time.DateOnly))
	if r.Skipped > 0 {
		ew.printf("Skipped %s bad rows; the first: %s.\n", thousands(r.Skipped), strings.Join(r.SkipErrors, "; "))
	}
	ew.printf("%s\n", r.Config.describe(r.LogNodes))
	ew.printf("\n")

	var t table
	t.row("customer", "strategy", "requested", "completed", "failed", "retried", "missed", "unknown", "never",
		"satisfaction", "first answer p50", "p99")
	for _, res := range r.Results {
		t.stats("total", res.Strategy, &res.Total)
	}
	if picked, title := r.top(top); len(picked) > 0 {
		t.line("")
		t.line(title + ":")
		for _, i := range picked {
			for k, res := range r.Results {
				name := res.Customers[i].Customer
				if k > 0 {
					name = ""
				}
				t.stats(name, res.Strategy, &res.Customers[i])
			}
		}
	}
	t.write(ew)
	ew.printf("\nsatisfaction = completed / requested. Every job is completed, failed, missed (on every\n" +
		"attempt), unknown (no result within its timeout) or never answered; retried jobs missed a\n" +
		"start deadline and were sent to another node. p50/p99: time from submission to the first\n" +
		"answer, counting jobs never answered as longest.\n")
	return ew.err
}

// table lays out rows of cells in aligned columns: the first two
// left-aligned, the others (numbers) right-aligned. A line is text
// outside the columns.
type table struct {
	rows  [][]string // nil cells for a line
	lines []string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells); t.lines = append(t.lines, "") }

func (t *table) line(s string) { t.rows = append(t.rows, nil); t.lines = append(t.lines, s) }

func (t *table) stats(name string, s Strategy, st *Stats) {
	t.row(name, s.String(), strconv.Itoa(st.Requested), strconv.Itoa(st.Completed), strconv.Itoa(st.Failed),
		strconv.Itoa(st.Retried), strconv.Itoa(st.Missed), strconv.Itoa(st.Unknown), strconv.Itoa(st.Never),
		percent(st.Satisfaction()), short(st.FirstP50), short(st.FirstP99))
}

func (t *table) write(w io.Writer) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			r[i] = printable(c)
			width[i] = max(width[i], cells.StringWidth(r[i]))
		}
	}
	var b strings.Builder
	for k, r := range t.rows {
		if r == nil {
			b.WriteString(t.lines[k])
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-cells.StringWidth(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case i == 1:
				b.WriteString("  " + c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

// cells measures text in terminal cells: a CJK ideograph takes two, a
// combining accent none, a letter with its accent one. The width of
// "ambiguous" characters is fixed at one, whatever the locale, so that
// the same report gives the same bytes everywhere.
var cells = &runewidth.Condition{EastAsianWidth: false}

// printable returns s with every character that is not graphic (a tab,
// a newline, other control and format characters) written as its Go
// escape, \t, \n or \u200b: a customer name from a log may hold any of
// them, and printed raw they would break the row.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsGraphic(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strconv.IsGraphic(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToGraphic(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// top picks the indexes of at most n customers to show, and the title
// of the list.
func (r *Report) top(n int) ([]int, string) {
	if len(r.Results) == 0 || n <= 0 {
		return nil, ""
	}
	cs := r.Results[0].Customers
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	var key func(i int) float64 // larger first
	title := fmt.Sprintf("the %d customers with the largest difference in satisfaction", min(n, len(cs)))
	if len(r.Results) == 1 {
		key = func(i int) float64 { return -cs[i].Satisfaction() }
		title = fmt.Sprintf("the %d least satisfied customers", min(n, len(cs)))
	} else {
		a, b := r.Results[0].Customers, r.Results[len(r.Results)-1].Customers
		key = func(i int) float64 { return math.Abs(b[i].Satisfaction() - a[i].Satisfaction()) }
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(key(j), key(i)) })
	return idx[:min(n, len(idx))], title
}

func (r *Report) customers() int {
	if len(r.Results) == 0 {
		return 0
	}
	return len(r.Results[0].Customers)
}

// describe says in words how the log was replayed.
func (c *Config) describe(logNodes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes", c.Nodes)
	if logNodes != c.Nodes {
		fmt.Fprintf(&b, " (the log names %d)", logNodes)
	}
	fmt.Fprintf(&b, " take jobs %s", c.Policy)
	if c.Policy == CustomerFirst {
		if len(c.First) > 0 {
			fmt.Fprintf(&b, " (first: %s)", strings.Join(c.First, ", "))
		} else {
			b.WriteString(" (first: the log's priority class)")
		}
	}
	b.WriteString(". ")
	for i, s := range c.Strategies {
		if i > 0 {
			b.WriteString("; ")
		}
		switch s {
		case Polling:
			fmt.Fprintf(&b, "polling checks every %s", short(c.PollInterval))
		case Deadline:
			fmt.Fprintf(&b, "deadlines: start within %s, result within %s more, %d retries",
				c.termWords(c.StartDeadline, c.DefaultStartDeadline), c.termWords(c.ResultTimeout, c.DefaultResultTimeout), c.Retries)
		}
	}
	b.WriteString(".")
	return b.String()
}

func (c *Config) termWords(override, dflt time.Duration) string {
	if override > 0 {
		return short(override)
	}
	return "the log's term (" + short(dflt) + " if none)"
}

// percent formats a share as a percentage with two decimals.
func percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

// short formats a duration briefly, to the second: 4m19s, 2h, 1d3h.
func short(d time.Duration) string {
	if d == NoAnswer {
		return "never"
	}
	d = d.Round(time.Second)
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// jsonReport is the report's JSON form.
type jsonReport struct {
	Log        string       `json:"log"`
	Jobs       int          `json:"jobs"`
	Customers  int          `json:"customers"`
	From       time.Time    `json:"from"`
	To         time.Time    `json:"to"`
	Skipped    int          `json:"skipped"`
	SkipErrors []string     `json:"skip_errors"`
	Config     jsonConfig   `json:"config"`
	Results    []jsonResult `json:"strategies"`
}

type jsonConfig struct {
	Nodes                int      `json:"nodes"`
	LogNodes             int      `json:"log_nodes"`
	Policy               string   `json:"policy"`
	First                []string `json:"first,omitempty"`
	StartDeadline        *float64 `json:"start_deadline_s"` // null: the log's
	ResultTimeout        *float64 `json:"result_timeout_s"`
	DefaultStartDeadline float64  `json:"default_start_deadline_s"`
	DefaultResultTimeout float64  `json:"default_result_timeout_s"`
	Retries              int      `json:"retries"`
	PollInterval         float64  `json:"poll_interval_s"`
}

type jsonResult struct {
	Strategy  string      `json:"strategy"`
	End       time.Time   `json:"end"`
	Total     jsonStats   `json:"total"`
	Customers []jsonStats `json:"customers"`
}

type jsonStats struct {
	Customer     string   `json:"customer,omitempty"`
	Requested    int      `json:"requested"`
	Completed    int      `json:"completed"`
	Failed       int      `json:"failed"`
	Retried      int      `json:"retried"`
	Missed       int      `json:"missed"`
	Unknown      int      `json:"unknown"`
	Never        int      `json:"never"`
	Satisfaction float64  `json:"satisfaction"`
	FirstP50     *float64 `json:"first_answer_p50_s"` // null: never answered
	FirstP99     *float64 `json:"first_answer_p99_s"`
}

func toJSON(s *Stats) jsonStats {
	return jsonStats{
		Customer: s.Customer, Requested: s.Requested, Completed: s.Completed, Failed: s.Failed,
		Retried: s.Retried, Missed: s.Missed, Unknown: s.Unknown, Never: s.Never,
		Satisfaction: s.Satisfaction(), FirstP50: seconds(s.FirstP50), FirstP99: seconds(s.FirstP99),
	}
}

func seconds(d time.Duration) *float64 {
	if d == NoAnswer {
		return nil
	}
	s := d.Seconds()
	return &s
}

func optional(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	return seconds(d)
}

// WriteJSON writes the report as one indented JSON object: what was
// replayed, and each strategy's totals and customers. Durations are in
// seconds; a quantile of jobs never answered is null.
func (r *Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Log: r.Log, Jobs: r.Jobs, Customers: r.customers(), From: r.From, To: r.To,
		Skipped: r.Skipped, SkipErrors: r.SkipErrors,
		Config: jsonConfig{
			Nodes: r.Config.Nodes, LogNodes: r.LogNodes, Policy: r.Config.Policy.String(), First: r.Config.First,
			StartDeadline: optional(r.Config.StartDeadline), ResultTimeout: optional(r.Config.ResultTimeout),
			DefaultStartDeadline: r.Config.DefaultStartDeadline.Seconds(), DefaultResultTimeout: r.Config.DefaultResultTimeout.Seconds(),
			Retries: r.Config.Retries, PollInterval: r.Config.PollInterval.Seconds(),
		},
	}
	if out.SkipErrors == nil {
		out.SkipErrors = []string{}
	}
	for _, res := range r.Results {
		jr := jsonResult{Strategy: res.Strategy.String(), End: res.End, Total: toJSON(&res.Total)}
		for i := range res.Customers {
			jr.Customers = append(jr.Customers, toJSON(&res.Customers[i]))
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// CSVHeader is the first line of WriteCSV's output.
var CSVHeader = []string{"strategy", "customer", "requested", "completed", "failed", "retried", "missed",
	"unknown", "never", "satisfaction", "first_answer_p50_s", "first_answer_p99_s"}

// WriteCSV writes the report as CSV: a header, then for each strategy
// a row of totals (with an empty customer) and a row per customer.
// Durations are in seconds; a quantile of jobs never answered is
// "never".
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	row := func(s Strategy, st *Stats) {
		q := func(d time.Duration) string {
			if d == NoAnswer {
				return "never"
			}
			return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
		}
		_ = cw.Write([]string{s.String(), st.Customer,
			strconv.Itoa(st.Requested), strconv.Itoa(st.Completed), strconv.Itoa(st.Failed),
			strconv.Itoa(st.Retried), strconv.Itoa(st.Missed), strconv.Itoa(st.Unknown), strconv.Itoa(st.Never),
			strconv.FormatFloat(st.Satisfaction(), 'f', -1, 64), q(st.FirstP50), q(st.FirstP99)})
	}
	for _, res := range r.Results {
		row(res.Strategy, &res.Total)
		for i := range res.Customers {
			row(res.Strategy, &res.Customers[i])
		}
	}
	cw.Flush()
	return cw.Error()
}

// errWriter keeps the first error of a series of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
