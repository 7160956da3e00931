package replay

import (
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

	waits []time.Duration // every first answer's wait, sorted
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

// Waits returns the time to first answer of every job answered, in
// increasing order. The slice is shared: do not change it.
func (s *Stats) Waits() []time.Duration { return s.waits }

// finish sorts the waits and computes the quantiles.
func (s *Stats) finish() {
	slices.Sort(s.waits)
	s.FirstP50 = quantile(s.waits, s.Requested, 50)
	s.FirstP99 = quantile(s.waits, s.Requested, 99)
}

// quantile returns the pct-th percentile, by nearest rank, of n waits
// of which those in sorted are known and the rest are infinite.
func quantile(sorted []time.Duration, n, pct int) time.Duration {
	if n == 0 {
		return 0
	}
	rank := (n*pct + 99) / 100 // ceil(n·pct/100), in integers
	if rank > len(sorted) {
		return NoAnswer
	}
	return sorted[max(rank, 1)-1]
}

// total adds up the customers' statistics.
func total(cs []Stats) Stats {
	var t Stats
	n := 0
	for i := range cs {
		n += len(cs[i].waits)
	}
	t.waits = make([]time.Duration, 0, n)
	for i := range cs {
		c := &cs[i]
		t.Requested += c.Requested
		t.Completed += c.Completed
		t.Failed += c.Failed
		t.Retried += c.Retried
		t.Missed += c.Missed
		t.Unknown += c.Unknown
		t.Never += c.Never
		t.waits = append(t.waits, c.waits...)
	}
	t.finish()
	return t
}
