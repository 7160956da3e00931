package timeliness

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Dist is a distribution of handler costs. Every Dist has a mean of
// MeanCost, so that a utilisation means the same arrival rate whatever
// the distribution.
type Dist int

// The cost distributions.
const (
	// Exponential costs, floored at one microsecond: most messages are
	// short, a few long.
	Exponential Dist = iota
	// Uniform costs between half and one and a half times the mean.
	Uniform
	// Bimodal costs: 90% of messages cost half the mean, 10% cost 5.5
	// times the mean (short requests and occasional long ones).
	Bimodal
)

// MeanCost is the mean handler cost of every Dist.
const MeanCost = time.Millisecond

// Dists lists the cost distributions in the order reports show them.
var Dists = []Dist{Exponential, Uniform, Bimodal}

// MarshalText writes the distribution's name, for JSON.
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a distribution's name.
func (d *Dist) UnmarshalText(b []byte) error { return unmarshalName(d, b, Dists) }

// String returns the distribution's name.
func (d Dist) String() string {
	switch d {
	case Exponential:
		return "exponential"
	case Uniform:
		return "uniform"
	case Bimodal:
		return "bimodal"
	}
	return fmt.Sprintf("Dist(%d)", int(d))
}

// draw returns one cost.
func (d Dist) draw(r *rand.Rand) time.Duration {
	m := float64(MeanCost)
	switch d {
	case Exponential:
		return max(time.Microsecond, time.Duration(r.ExpFloat64()*m))
	case Uniform:
		return time.Duration(m * (0.5 + r.Float64()))
	case Bimodal:
		if r.Float64() < 0.1 {
			return time.Duration(5.5 * m)
		}
		return time.Duration(0.5 * m)
	}
	panic("timeliness: unknown cost distribution")
}

// Deadline factors: a message's relative deadline is its cost times a
// factor drawn uniformly from [MinFactor, MaxFactor].
const (
	MinFactor = 2.0
	MaxFactor = 10.0
)

// Job is one message of a synthetic trace, its times relative to the
// trace's start.
type Job struct {
	Arrival  time.Duration // when it is sent
	Cost     time.Duration // how long its handler holds the worker
	Deadline time.Duration // relative deadline: it is due by Arrival+Deadline
	// Priority is for policy.ByPriority: deadline-monotonic, so a shorter
	// relative deadline has a larger priority.
	Priority int
}

// Workload describes a family of random sporadic traces.
type Workload struct {
	Dist        Dist
	Utilisation float64 // offered work per worker per unit of time
	Workers     int     // workers serving the actor (1 for a single actor)
	Jobs        int     // messages per trace
}

// Trace draws one trace of w from seed: Poisson arrivals at the rate that
// offers Utilisation×Workers of work per unit of time, costs from Dist,
// relative deadlines of cost×U(MinFactor, MaxFactor). The same seed gives
// the same trace.
func (w Workload) Trace(seed uint64) []Job {
	r := rand.New(rand.NewPCG(seed, uint64(w.Dist)<<32|uint64(w.Workers)))
	mean := float64(MeanCost) / (w.Utilisation * float64(w.Workers)) // mean interarrival
	jobs := make([]Job, w.Jobs)
	at := time.Duration(0)
	for i := range jobs {
		at += time.Duration(r.ExpFloat64() * mean)
		c := w.Dist.draw(r)
		d := time.Duration(float64(c) * (MinFactor + (MaxFactor-MinFactor)*r.Float64()))
		jobs[i] = Job{Arrival: at, Cost: c, Deadline: d, Priority: -int(d / time.Microsecond)}
	}
	return jobs
}
