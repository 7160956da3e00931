package timeliness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// LatenessConfig sizes the lateness section.
type LatenessConfig struct {
	Utilisations []float64
	Variants     []Variant // EDF, FIFO, Priority (EDF+Cost changes the deadlines, so it is left out by default)
	Dist         Dist
	Seeds        int // traces per point, pooled
	Jobs         int // messages per trace
	Seed         uint64
}

// DefaultLateness is the full run's configuration; quick shrinks it.
func DefaultLateness(quick bool) LatenessConfig {
	c := LatenessConfig{
		Utilisations: []float64{0.5, 0.9, 1.2},
		Variants:     []Variant{EDF, FIFO, Priority},
		Dist:         Exponential,
		Seeds:        20,
		Jobs:         2000,
		Seed:         1,
	}
	if quick {
		c.Seeds, c.Jobs = 2, 300
	}
	return c
}

// Quantiles are a distribution's summary, in nanoseconds.
type Quantiles struct {
	Count int64         `json:"count"`
	Min   time.Duration `json:"min_ns"`
	P1    time.Duration `json:"p1_ns"`
	P10   time.Duration `json:"p10_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// newHist makes a histogram of durations from 1ns to an hour, to three
// significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(time.Hour), 3) }

func quantiles(h *hdrhistogram.Histogram) Quantiles {
	if h.TotalCount() == 0 {
		return Quantiles{}
	}
	q := func(p float64) time.Duration { return time.Duration(h.ValueAtQuantile(p)) }
	return Quantiles{
		Count: h.TotalCount(), Min: time.Duration(h.Min()),
		P1: q(1), P10: q(10), P50: q(50), P99: q(99), P999: q(99.9),
		Max: time.Duration(h.Max()),
	}
}

// LatenessPoint is one policy at one utilisation.
type LatenessPoint struct {
	Utilisation float64 `json:"utilisation"`
	Variant     string  `json:"variant"`
	Jobs        int     `json:"jobs"`
	Started     int     `json:"started"`
	// Slack is deadline − start of the messages that started: how long
	// before its deadline each one started.
	Slack Quantiles `json:"slack"`
	// Wait is start − arrival of the messages that started.
	Wait Quantiles `json:"wait"`
	// Behind is, for the messages that arrived while another message
	// ran, the time from arrival to the end of that message: the wait
	// that not preempting it costs.
	Behind Quantiles `json:"behind_running"`
	// Blocking is Behind restricted to the messages that the policy
	// ranks before the running one (an earlier deadline under EDF, a
	// higher priority under Priority; never under FIFO): the priority
	// inversion that non-preemptive scheduling allows, as real-time
	// theory counts blocking.
	Blocking Quantiles `json:"blocking"`

	slack, blocking []time.Duration // for the chart
}

// LatenessResult is the lateness section's outcome.
type LatenessResult struct {
	Config LatenessConfig  `json:"config"`
	Points []LatenessPoint `json:"points"`
}

// Lateness runs c's traces on a single actor per variant and measures,
// for the messages that start, their slack and their waiting, on
// virtual time.
func Lateness(ctx context.Context, c LatenessConfig) (*LatenessResult, error) {
	res := &LatenessResult{Config: c}
	type task struct{ point, seed int }
	var tasks []task
	for _, u := range c.Utilisations {
		for _, v := range c.Variants {
			res.Points = append(res.Points, LatenessPoint{Utilisation: u, Variant: v.String()})
			for k := range c.Seeds {
				tasks = append(tasks, task{len(res.Points) - 1, k})
			}
		}
	}
	type traceRun struct {
		jobs []Job
		out  []Outcome
	}
	runs := make([]traceRun, len(tasks))
	err := parallel(ctx, len(tasks), func(i int) error {
		t := tasks[i]
		p := res.Points[t.point]
		w := Workload{Dist: c.Dist, Utilisation: p.Utilisation, Workers: 1, Jobs: c.Jobs}
		jobs := w.Trace(c.Seed + uint64(t.seed))
		out, err := Simulate(ctx, jobs, variantNamed(p.Variant), 1)
		runs[i] = traceRun{jobs, out}
		return err
	})
	if err != nil {
		return nil, err
	}
	for pi := range res.Points {
		p := &res.Points[pi]
		v := variantNamed(p.Variant)
		slack, wait, behind, blocking := newHist(), newHist(), newHist(), newHist()
		for i, t := range tasks {
			if t.point != pi {
				continue
			}
			jobs, out := runs[i].jobs, runs[i].out
			p.Jobs += len(jobs)
			// The started messages in the order they ran (one worker:
			// their runs do not overlap).
			var ran []int
			for k, o := range out {
				if o.Started {
					ran = append(ran, k)
				}
			}
			slices.SortFunc(ran, func(a, b int) int { return int(out[a].Start - out[b].Start) })
			for _, k := range ran {
				j, o := jobs[k], out[k]
				p.Started++
				s := j.Arrival + j.Deadline - o.Start
				_ = slack.RecordValue(int64(s))
				p.slack = append(p.slack, s)
				_ = wait.RecordValue(int64(o.Start - j.Arrival))
				// The message running when k arrived, if any: the last
				// to start at or before k's arrival, if it had not ended.
				n, _ := slices.BinarySearchFunc(ran, j.Arrival, func(x int, at time.Duration) int {
					if out[x].Start <= at {
						return -1
					}
					return 1
				})
				if n == 0 {
					continue
				}
				r := ran[n-1]
				if r == k || out[r].End <= j.Arrival {
					continue
				}
				res := out[r].End - j.Arrival
				_ = behind.RecordValue(int64(res))
				if ranksBefore(v, j, jobs[r]) {
					_ = blocking.RecordValue(int64(res))
					p.blocking = append(p.blocking, res)
				}
			}
		}
		p.Slack, p.Wait, p.Behind, p.Blocking = quantiles(slack), quantiles(wait), quantiles(behind), quantiles(blocking)
	}
	return res, nil
}

// ranksBefore reports whether v would run m before r, r having arrived
// first, were both queued.
func ranksBefore(v Variant, m, r Job) bool {
	md, rd := m.Arrival+m.Deadline, r.Arrival+r.Deadline
	switch v {
	case EDF:
		return md < rd
	case EDFCost:
		return md-m.Cost < rd-r.Cost
	case Priority:
		return m.Priority > r.Priority || m.Priority == r.Priority && md < rd
	}
	return false
}

func variantNamed(name string) Variant {
	for _, v := range Variants {
		if v.String() == name {
			return v
		}
	}
	panic("timeliness: no variant " + name)
}

// Tables renders the result: slack and waiting per utilisation and
// policy.
func (r *LatenessResult) Tables() []Table {
	note := fmt.Sprintf("One actor, %s costs (mean %v), relative deadlines cost × U(%g, %g); %d traces of %d messages pooled per row; virtual time, deterministic.",
		r.Config.Dist, MeanCost, MinFactor, MaxFactor, r.Config.Seeds, r.Config.Jobs)
	slack := Table{
		Title:  "start slack: deadline − start, of the messages that started",
		Note:   note,
		Header: []string{"U", "policy", "started", "min", "p1", "p10", "p50", "wait p50", "wait p99"},
	}
	block := Table{
		Title: "waiting behind a running message (non-preemptive blocking)",
		Note: "\"behind running\": messages that arrived while another message ran, and how long until it ended. " +
			"\"blocking\": those of them that the policy ranks before the running message (priority inversion).",
		Header: []string{"U", "policy", "behind running", "p50", "p99", "blocking", "p50", "p99", "max"},
	}
	share := func(n int64, of int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(max(of, 1))) }
	for _, p := range r.Points {
		u := fmt.Sprintf("%.1f", p.Utilisation)
		slack.Rows = append(slack.Rows, []string{u, p.Variant, share(int64(p.Started), p.Jobs),
			fmtDur(p.Slack.Min), fmtDur(p.Slack.P1), fmtDur(p.Slack.P10), fmtDur(p.Slack.P50),
			fmtDur(p.Wait.P50), fmtDur(p.Wait.P99)})
		block.Rows = append(block.Rows, []string{u, p.Variant,
			share(p.Behind.Count, p.Started), fmtDur(p.Behind.P50), fmtDur(p.Behind.P99),
			share(p.Blocking.Count, p.Started), fmtDur(p.Blocking.P50), fmtDur(p.Blocking.P99), fmtDur(p.Blocking.Max)})
	}
	return []Table{slack, block}
}
