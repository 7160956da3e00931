package timeliness

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// QualityConfig sizes the quality section.
type QualityConfig struct {
	Utilisations []float64 // offered load per worker
	Workers      []int     // 1: a single actor; more: a group of that many workers
	Dists        []Dist
	Variants     []Variant
	Seeds        int    // random traces per point
	Jobs         int    // messages per trace
	Seed         uint64 // first seed; trace k uses Seed+k
}

// DefaultQuality is the full run's configuration; quick shrinks it for
// tests and CI.
func DefaultQuality(quick bool) QualityConfig {
	c := QualityConfig{
		Utilisations: []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3},
		Workers:      []int{1, 4},
		Dists:        Dists,
		Variants:     Variants,
		Seeds:        30,
		Jobs:         2000,
		Seed:         1,
	}
	if quick {
		c.Utilisations = []float64{0.5, 0.8, 1.1, 1.3}
		c.Seeds, c.Jobs = 2, 150
	}
	return c
}

// Stat is a mean over random traces with its spread.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation over traces
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func statOf(xs []float64) Stat {
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		for _, x := range xs {
			s.SD += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(s.SD / float64(len(xs)-1))
	}
	return s
}

// QualityPoint is one point of a curve: a workload and a variant,
// averaged over the random traces.
type QualityPoint struct {
	Workers     int     `json:"workers"`
	Dist        string  `json:"dist"`
	Utilisation float64 `json:"utilisation"`
	Variant     string  `json:"variant"`
	// MissRatio is the share of messages that did not start by their
	// start deadline (for EDF+Cost, the earlier one: deadline − cost).
	MissRatio Stat `json:"miss_ratio"`
	// UsefulWork is the share of offered work (sum of costs) done by
	// messages that finished by arrival + relative deadline.
	UsefulWork Stat `json:"useful_work"`
}

// QualityResult is the quality section's outcome.
type QualityResult struct {
	Config QualityConfig  `json:"config"`
	Points []QualityPoint `json:"points"`
}

// TraceScore is one trace's figures.
type TraceScore struct {
	MissRatio, UsefulWork float64
}

// Score computes a trace's miss ratio and useful work from its outcomes.
func Score(jobs []Job, out []Outcome) TraceScore {
	var missed int
	var offered, useful float64
	for i, j := range jobs {
		offered += float64(j.Cost)
		o := out[i]
		if !o.Started {
			missed++
			continue
		}
		if o.End <= j.Arrival+j.Deadline {
			useful += float64(j.Cost)
		}
	}
	s := TraceScore{MissRatio: float64(missed) / float64(len(jobs))}
	if offered > 0 {
		s.UsefulWork = useful / offered
	}
	return s
}

// Quality runs c's random traces on every variant and reports miss
// ratios and useful work. Traces run in parallel, one crisp system on a
// virtual clock each; the result depends only on c.
func Quality(ctx context.Context, c QualityConfig) (*QualityResult, error) {
	res := &QualityResult{Config: c}
	scores, err := sweep(ctx, c.Workers, c.Dists, c.Utilisations, c.Variants, c.Seeds, c.Jobs, c.Seed,
		func(w Workload, v Variant) {
			res.Points = append(res.Points, QualityPoint{Workers: w.Workers, Dist: w.Dist.String(), Utilisation: w.Utilisation, Variant: v.String()})
		},
		func(jobs []Job, w Workload, v Variant) (TraceScore, error) {
			out, err := Simulate(ctx, jobs, v, w.Workers)
			if err != nil {
				return TraceScore{}, err
			}
			return Score(jobs, out), nil
		})
	if err != nil {
		return nil, err
	}
	for i := range res.Points {
		miss, useful := make([]float64, c.Seeds), make([]float64, c.Seeds)
		for k, s := range scores[i] {
			miss[k], useful[k] = s.MissRatio, s.UsefulWork
		}
		res.Points[i].MissRatio, res.Points[i].UsefulWork = statOf(miss), statOf(useful)
	}
	return res, nil
}

// sweep runs every seed's trace of every workload (workers x dists x
// utilisations) under every one of cells, in parallel, and returns the
// scores by point and seed. Points are numbered in that order, workload
// then cell, and point is called for each as it is numbered.
func sweep[C, S any](ctx context.Context, workers []int, dists []Dist, utils []float64, cells []C, seeds, jobs int, seed uint64,
	point func(w Workload, c C), run func(jobs []Job, w Workload, c C) (S, error)) ([][]S, error) {
	type task struct {
		w           Workload
		c           C
		point, seed int
	}
	var tasks []task
	points := 0
	for _, nw := range workers {
		for _, d := range dists {
			for _, u := range utils {
				w := Workload{Dist: d, Utilisation: u, Workers: nw, Jobs: jobs}
				for _, c := range cells {
					point(w, c)
					for k := range seeds {
						tasks = append(tasks, task{w: w, c: c, point: points, seed: k})
					}
					points++
				}
			}
		}
	}
	scores := make([][]S, points)
	for i := range scores {
		scores[i] = make([]S, seeds)
	}
	err := parallel(ctx, len(tasks), func(i int) error {
		t := tasks[i]
		s, err := run(t.w.Trace(seed+uint64(t.seed)), t.w, t.c)
		if err != nil {
			return err
		}
		scores[t.point][t.seed] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return scores, nil
}

// parallel calls f(0) ... f(n-1) on GOMAXPROCS goroutines and returns
// the first error, or ctx's error if it ends first.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// Tables renders the result: one table of miss ratios and one of useful
// work per workload shape (workers and cost distribution), a row per
// utilisation and a column per variant, each cell the mean over traces
// ± its standard deviation.
func (r *QualityResult) Tables() []Table {
	var ts []Table
	for _, metric := range []string{"miss ratio", "useful work"} {
		for _, workers := range r.Config.Workers {
			for _, d := range r.Config.Dists {
				t := Table{
					Title: fmt.Sprintf("%s, %s, %s costs", metric, shape(workers), d),
					Note: fmt.Sprintf("Mean ± standard deviation over %d traces of %d messages; virtual time, deterministic.",
						r.Config.Seeds, r.Config.Jobs),
					Header: []string{"utilisation"},
				}
				for _, v := range r.Config.Variants {
					t.Header = append(t.Header, v.String())
				}
				for _, u := range r.Config.Utilisations {
					row := []string{fmt.Sprintf("%.1f", u)}
					for _, v := range r.Config.Variants {
						p := r.point(workers, d.String(), u, v.String())
						s := p.MissRatio
						if metric == "useful work" {
							s = p.UsefulWork
						}
						row = append(row, fmt.Sprintf("%.3f ±%.3f", s.Mean, s.SD))
					}
					t.Rows = append(t.Rows, row)
				}
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func shape(workers int) string {
	if workers == 1 {
		return "one actor"
	}
	return fmt.Sprintf("group of %d workers", workers)
}

// point finds a point of the result; it panics if there is none, which
// would be a bug in Tables or Chart.
func (r *QualityResult) point(workers int, dist string, u float64, variant string) *QualityPoint {
	for i := range r.Points {
		p := &r.Points[i]
		if p.Workers == workers && p.Dist == dist && p.Utilisation == u && p.Variant == variant {
			return p
		}
	}
	panic("timeliness: no quality point for " + variant)
}
