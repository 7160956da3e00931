package replay

import (
	"cmp"
	"slices"
	"time"
)

// Report is the outcome of a replay.
type Report struct {
	Log      string    // the log's name
	Jobs     int       // jobs replayed
	From, To time.Time // first and last submission
	// Skipped counts the rows passed over (Config.SkipBad); SkipErrors
	// gives what was wrong with the first few.
	Skipped    int
	SkipErrors []string
	// LogNodes counts the distinct nodes the log names; Config.Nodes
	// were replayed.
	LogNodes int
	Config   Config // as replayed (its functions are left out)

	Results []Result // one per strategy, in Config.Strategies' order
}

// Result is what became of the jobs under one strategy.
type Result struct {
	Strategy  Strategy
	Total     Stats
	Customers []Stats   // by customer name
	End       time.Time // virtual instant of the replay's last event
}

// Stats counts what became of one customer's jobs, or of all jobs
// (Customer is then empty).
//
// Requested = Completed + Failed + Missed + Unknown + Never: each job
// ends in exactly one of those. Retried counts jobs that missed a start
// deadline and were sent to another node; they also end in one of the
// others.
type Stats struct {
	Customer  string
	Requested int // jobs submitted
	Completed int // answered with a result
	Failed    int // answered with a failure (bad data)
	Retried   int // missed a start deadline and were sent elsewhere
	Missed    int // missed their start deadline on every attempt: told they could not start
	Unknown   int // started, but no result within the result timeout: told the state is unknown
	Never     int // never answered

	// FirstP50 and FirstP99 are quantiles of the time from a job's
	// submission to its first answer, over all jobs requested: a job
	// never answered counts as waiting longer than any other, and a
	// quantile that falls among those is NoAnswer. They are exact (the
	// nearest-rank definition: the smallest wait that at least half, or
	// 99%, of the jobs do not exceed).
	FirstP50, FirstP99 time.Duration

	waits []WaitCount // the distinct waits of first answers, increasing
}

// WaitCount is how many jobs got their first answer after one wait.
type WaitCount struct {
	Wait time.Duration // from submission to first answer
	Jobs int
}

// waitCounts counts first answers by their wait, exactly. Its size is
// the number of distinct waits, not of jobs: every answer comes at an
// instant of the log's resolution (a second in generated logs), and
// most come at a few instants after submission (the polling Controller
// answers only at whole poll intervals; the deadline Controller's
// misses and timeouts at the terms of the agreement). docs/replay.md
// ("Costs") gives the figures.
type waitCounts map[time.Duration]int

// sorted returns the counts in increasing order of wait.
func (w waitCounts) sorted() []WaitCount {
	out := make([]WaitCount, 0, len(w))
	for d, n := range w {
		out = append(out, WaitCount{d, n})
	}
	slices.SortFunc(out, func(a, b WaitCount) int { return cmp.Compare(a.Wait, b.Wait) })
	return out
}

// NoAnswer is a quantile of the time to first answer that falls among
// the jobs never answered.
const NoAnswer time.Duration = -1

// Satisfaction is the paper's measure: the share of jobs requested that
// completed.
func (s *Stats) Satisfaction() float64 {
	if s.Requested == 0 {
		return 0
	}
	return float64(s.Completed) / float64(s.Requested)
}

// Waits returns the distinct times to first answer, in increasing
// order, each with how many jobs were answered after it. The slice is
// shared: do not change it.
func (s *Stats) Waits() []WaitCount { return s.waits }

// finish computes the quantiles of the sorted waits.
func (s *Stats) finish() {
	s.FirstP50 = quantile(s.waits, s.Requested, 50)
	s.FirstP99 = quantile(s.waits, s.Requested, 99)
}

// quantile returns the pct-th percentile, by nearest rank, of n waits
// of which those counted in sorted are known and the rest are infinite.
func quantile(sorted []WaitCount, n, pct int) time.Duration {
	if n == 0 {
		return 0
	}
	rank := max((n*pct+99)/100, 1) // ceil(n·pct/100), in integers
	seen := 0
	for _, w := range sorted {
		if seen += w.Jobs; seen >= rank {
			return w.Wait
		}
	}
	return NoAnswer
}

// total adds up the customers' statistics.
func total(cs []Stats) Stats {
	var t Stats
	all := waitCounts{}
	for i := range cs {
		c := &cs[i]
		t.Requested += c.Requested
		t.Completed += c.Completed
		t.Failed += c.Failed
		t.Retried += c.Retried
		t.Missed += c.Missed
		t.Unknown += c.Unknown
		t.Never += c.Never
		for _, w := range c.waits {
			all[w.Wait] += w.Jobs
		}
	}
	t.waits = all.sorted()
	t.finish()
	return t
}
