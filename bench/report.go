package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	rpt "github.com/crisprt/crisp/bench/internal/report"
)

func writeJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// writeMarkdown writes the three tables (time, crisp's ratios, memory)
// and the notes and failures that go with them.
func writeMarkdown(w io.Writer, rep *report) error {
	var b strings.Builder
	systems := systemsOf(rep)
	fmt.Fprintf(&b, "## crisp side by side: %s suite\n\n", rep.Suite)
	fmt.Fprintf(&b, "%s %s, %d CPUs, %s; %d repetitions per cell, the systems in alternation; %v in all.\n\n",
		rep.GoVersion, rep.OSArch, rep.CPUs, rep.Started.UTC().Format("2006-01-02 15:04 MST"), rep.Reps, rep.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Hogs: %d (goroutines spinning beside the runs without ever yielding; -hogs).\n\n", rep.Hogs)
	b.WriteString("Time: median of the successful runs, from after the system is built (spawning included) to the answer; " +
		"rows marked \"per ...\" give the time per operation. In brackets, the ratio to the fastest system of the row. " +
		"A star marks a cell with failed runs (see Failures).\n\n")

	header(&b, "workload", "size", systems)
	for _, r := range rep.Rows {
		fastest := fastestMedian(r)
		name := r.Workload
		if r.Unit != "" {
			name += " (per " + r.Unit + ")"
		}
		fmt.Fprintf(&b, "| %s | %s |", name, r.Size)
		for _, s := range systems {
			c := r.Cell(s)
			switch {
			case c == nil:
				b.WriteString(" |")
			case c.Median == 0:
				fmt.Fprintf(&b, " %s |", rpt.FailedCell(c))
			default:
				t := c.Median
				if r.Unit != "" {
					t = c.PerOp
				}
				fmt.Fprintf(&b, " %s (%.2fx)%s |", rpt.Duration(t), float64(c.Median)/float64(fastest), star(c))
			}
		}
		b.WriteString("\n")
	}

	peers := make([]string, 0, len(systems))
	for _, s := range systems {
		if s != "crisp" {
			peers = append(peers, s)
		}
	}
	b.WriteString("\ncrisp's time divided by each system's (below 1: crisp is faster). " +
		"The columns of crisp's variants are instead the variant's time over crisp's: crisp+dl / crisp is the cost of deadlines.\n\n")
	cols := make([]string, len(peers))
	for i, p := range peers {
		cols[i] = "crisp / " + p
		if rpt.IsVariant(p) {
			cols[i] = p + " / crisp"
		}
	}
	header(&b, "workload", "", cols)
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "| %s |", r.Workload)
		cr := r.Cell("crisp")
		for _, p := range peers {
			pc := r.Cell(p)
			switch {
			case cr == nil || pc == nil || cr.Median == 0 || pc.Median == 0:
				b.WriteString(" |")
			case rpt.IsVariant(p):
				fmt.Fprintf(&b, " %.2f |", float64(pc.Median)/float64(cr.Median))
			default:
				fmt.Fprintf(&b, " %.2f |", float64(cr.Median)/float64(pc.Median))
			}
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\nPeak memory: the highest, over the runs, of the Go heap's objects (live or not yet swept) plus goroutine stacks, "+
		"above their level at the run's start (just after a collection), read from runtime/metrics every %v. "+
		"Goroutine descriptors (about 0.4 KiB each) are never freed by the Go runtime and are reused by later runs of the process, "+
		"so a run can show fewer of them than it uses; the highest run is reported for that reason.\n\n", sampleEvery)
	header(&b, "workload", "", systems)
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "| %s |", r.Workload)
		for _, s := range systems {
			if c := r.Cell(s); c == nil || len(c.Times) == 0 && len(c.Failures) == 0 {
				b.WriteString(" |")
			} else {
				fmt.Fprintf(&b, " %s |", fmtBytes(c.PeakBytes))
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\nAllocated per operation and collections per run: the bytes the Go heap allocated during a run, " +
		"setup and teardown included, divided by the row's operations, and the garbage collections that ran during it; " +
		"medians over the runs. Beside goroutines that never yield (-hogs), each collection costs the others about one of their time slices.\n\n")
	header(&b, "workload", "", systems)
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "| %s |", r.Workload)
		for _, s := range systems {
			c := r.Cell(s)
			if c == nil || len(c.Allocs) == 0 || r.Ops <= 0 {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(&b, " %d B, %d GC |", medianUint(c.Allocs)/uint64(r.Ops), medianUint(c.GCs))
		}
		b.WriteString("\n")
	}

	// Each distinct note once, after the workloads it concerns.
	var notes []string
	noted := map[string][]string{}
	for _, r := range rep.Rows {
		if r.Note != "" {
			if noted[r.Note] == nil {
				notes = append(notes, r.Note)
			}
			noted[r.Note] = append(noted[r.Note], r.Workload)
		}
	}
	for i, n := range notes {
		notes[i] = fmt.Sprintf("- %s: %s", strings.Join(noted[n], ", "), n)
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	fails := rpt.FailureLines(rep.Rows, " (the failure would repeat)")
	b.WriteString("\nFailures:")
	if len(fails) == 0 {
		b.WriteString(" none.\n")
	} else {
		b.WriteString("\n\n" + strings.Join(fails, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func header(b *strings.Builder, first, second string, cols []string) {
	fmt.Fprintf(b, "| %s |", first)
	align := "|---|"
	if second != "" {
		fmt.Fprintf(b, " %s |", second)
		align += "---|"
	}
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c)
		align += "---:|"
	}
	b.WriteString("\n" + align + "\n")
}

// systemsOf returns the systems that have a cell in some row, in the
// order of the first row that has each.
func systemsOf(rep *report) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		for _, c := range r.Cells {
			if !seen[c.System] {
				seen[c.System] = true
				out = append(out, c.System)
			}
		}
	}
	return out
}

func fastestMedian(r *row) time.Duration {
	var best time.Duration
	for _, c := range r.Cells {
		if c.Median > 0 && (best == 0 || c.Median < best) {
			best = c.Median
		}
	}
	return best
}

func star(c *cell) string {
	if len(c.Failures) > 0 {
		return " *"
	}
	return ""
}

func fmtBytes(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
}

// medianUint is the median of xs (the lower middle of an even count).
func medianUint(xs []uint64) uint64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
