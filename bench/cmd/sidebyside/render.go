package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	rpt "github.com/crisprt/crisp/bench/internal/report"
)

// baseline is the system that is no actor library: crisp's time is also
// given over its time, and it is never "the fastest actor library".
const baseline = "chan"

// worseBy is how much higher crisp's ratio to a peer may be in the
// second set than in the first before it is flagged (issue 13: "Under
// -hogs 2, no crisp/peer ratio worse than quiet by more than 20%").
const worseBy = 1.20

// writeTable writes s's header and its one table, then its failures.
func writeTable(b *strings.Builder, s *set, cpu string) {
	systems := s.systems()
	fmt.Fprintf(b, "### %s suite, %s\n\n", s.Suite, label(s))
	fmt.Fprintf(b, "Run on %s; %s, GOMAXPROCS %d; %s %s. Suite %s, %d repetitions per cell (systems in alternation), %d hogs. ",
		s.Started.UTC().Format("2006-01-02"), cpu, s.CPUs, s.GoVersion, s.OSArch, s.Suite, s.Reps, s.Hogs)
	m, lo, hi := s.margin()
	if m > 0 {
		fmt.Fprintf(b, "Run-to-run margin: crisp's slowest repetition over its fastest is %.2f in the median row (%.2f to %.2f over rows).\n\n", m, lo, hi)
	} else {
		b.WriteString("Run-to-run margin: unknown (crisp has fewer than two successful repetitions in every row).\n\n")
	}
	b.WriteString("Medians, per operation on the \"per ...\" rows. In brackets, the ratio to the fastest actor library of the row " +
		"(all but " + baseline + "); for crisp, then its ratio to " + baseline + ". A star marks a cell with failed runs.\n\n")

	fmt.Fprintf(b, "| workload | size |")
	align := "|---|---|"
	for _, sys := range systems {
		fmt.Fprintf(b, " %s |", sys)
		align += "---:|"
	}
	b.WriteString(" crisp max/min |\n" + align + "---:|\n")
	for _, r := range s.Rows {
		name := r.Workload
		if r.Unit != "" {
			name += " (per " + r.Unit + ")"
		}
		fmt.Fprintf(b, "| %s | %s |", name, r.Size)
		for _, sys := range systems {
			fmt.Fprintf(b, " %s |", cellText(r, sys))
		}
		if sp := spread(r.Cell("crisp")); sp > 0 {
			fmt.Fprintf(b, " %.2f |\n", sp)
		} else {
			b.WriteString(" — |\n")
		}
	}

	fails := rpt.FailureLines(s.Rows, "")
	if len(fails) == 0 {
		b.WriteString("\nFailures: none.\n\n")
	} else {
		b.WriteString("\nFailures:\n\n" + strings.Join(fails, "\n") + "\n\n")
	}
}

// cellText is one cell of the table: "561 ns (1.17x)", crisp's
// "561 ns (1.17x, 1.68x chan)".
func cellText(r *row, system string) string {
	c := r.Cell(system)
	switch {
	case c == nil:
		return "—"
	case c.Median == 0:
		return rpt.FailedCell(c)
	}
	t := c.Median
	if r.Unit != "" && c.PerOp > 0 {
		t = c.PerOp
	}
	var ratios []string
	if f := fastestActors(r); f > 0 {
		ratios = append(ratios, fmt.Sprintf("%.2fx", float64(c.Median)/float64(f)))
	}
	if ch := r.Cell(baseline); system == "crisp" && ch != nil && ch.Median > 0 {
		ratios = append(ratios, fmt.Sprintf("%.2fx %s", float64(c.Median)/float64(ch.Median), baseline))
	}
	text := rpt.Duration(t)
	if len(ratios) > 0 {
		text += " (" + strings.Join(ratios, ", ") + ")"
	}
	if len(c.Failures) > 0 {
		text += " *"
	}
	return text
}

// fastestActors returns the lowest median of the row's actor libraries
// (crisp and its variants included), or zero.
func fastestActors(r *row) time.Duration {
	var best time.Duration
	for _, c := range r.Cells {
		if c.System != baseline && c.Median > 0 && (best == 0 || c.Median < best) {
			best = c.Median
		}
	}
	return best
}

// spread is c's slowest successful run over its fastest, or zero with
// fewer than two.
func spread(c *cell) float64 {
	if c == nil || len(c.Times) < 2 {
		return 0
	}
	lo, hi := slices.Min(c.Times), slices.Max(c.Times)
	if lo <= 0 {
		return 0
	}
	return float64(hi) / float64(lo)
}

// margin is the median over rows of crisp's spread, with its least and
// greatest; zeros when no row has a spread.
func (s *set) margin() (median, lo, hi float64) {
	var sp []float64
	for _, r := range s.Rows {
		if x := spread(r.Cell("crisp")); x > 0 {
			sp = append(sp, x)
		}
	}
	if len(sp) == 0 {
		return 0, 0, 0
	}
	slices.Sort(sp)
	n := len(sp)
	median = sp[n/2]
	if n%2 == 0 {
		median = (sp[n/2-1] + sp[n/2]) / 2
	}
	return median, sp[0], sp[n-1]
}

// writeComparison writes crisp's ratio to each peer in a against b, per
// workload, flagging those worse in b by more than worseBy.
func writeComparison(w *strings.Builder, a, b *set) {
	var peers []string
	for _, sys := range slices.Concat(a.systems(), b.systems()) {
		if sys != "crisp" && !rpt.IsVariant(sys) && !slices.Contains(peers, sys) {
			peers = append(peers, sys)
		}
	}
	fmt.Fprintf(w, "### crisp / peer: %s against %s\n\n", label(a), label(b))
	fmt.Fprintf(w, "crisp's median time over each peer's (below 1: crisp is faster), %s → %s, and the change. "+
		"In bold, a ratio more than %.0f%% above its %s value.\n\n", label(a), label(b), (worseBy-1)*100, label(a))
	fmt.Fprintf(w, "| workload |")
	align := "|---|"
	for _, p := range peers {
		fmt.Fprintf(w, " crisp / %s |", p)
		align += "---:|"
	}
	w.WriteString("\n" + align + "\n")
	var worse []string
	compared := 0
	for _, ra := range a.Rows {
		rb := b.row(ra.Workload)
		if rb == nil {
			continue
		}
		fmt.Fprintf(w, "| %s |", ra.Workload)
		for _, p := range peers {
			qa, okA := ratio(ra, p)
			qb, okB := ratio(rb, p)
			if !okA || !okB {
				w.WriteString(" — |")
				continue
			}
			compared++
			change := qb/qa - 1
			text := fmt.Sprintf("%.2f → %.2f (%+.0f%%)", qa, qb, change*100)
			if qb > qa*worseBy {
				text = "**" + text + "**"
				worse = append(worse, fmt.Sprintf("%s / %s (%+.0f%%)", ra.Workload, p, change*100))
			}
			fmt.Fprintf(w, " %s |", text)
		}
		w.WriteString("\n")
	}
	ma, _, _ := a.margin()
	mb, _, _ := b.margin()
	fmt.Fprintf(w, "\nWorse by more than %.0f%% under %s: %d of %d ratios", (worseBy-1)*100, label(b), len(worse), compared)
	if len(worse) > 0 {
		w.WriteString(": " + strings.Join(worse, ", "))
	}
	fmt.Fprintf(w, ". Run-to-run margins (crisp's max/min, median row): %s %.2f, %s %.2f.\n", label(a), ma, label(b), mb)
}

// ratio is crisp's median over system's in r, if both have one.
func ratio(r *row, system string) (float64, bool) {
	cr, c := r.Cell("crisp"), r.Cell(system)
	if cr == nil || c == nil || cr.Median == 0 || c.Median == 0 {
		return 0, false
	}
	return float64(cr.Median) / float64(c.Median), true
}

// label names a set by its load: "quiet", or "2 hogs".
func label(s *set) string {
	switch s.Hogs {
	case 0:
		return "quiet"
	case 1:
		return "1 hog"
	}
	return fmt.Sprintf("%d hogs", s.Hogs)
}
