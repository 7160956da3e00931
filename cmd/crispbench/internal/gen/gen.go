// Package gen generates synthetic job logs shaped after the Controller
// logs of "The Future of a Missed Deadline" (§4): about 25,000
// data-processing jobs from 180 customers over February and March 2013.
//
// A log says only what customers submitted and what became of each job
// when it originally ran: its processing time and whether it completed,
// failed for bad data or hung. Nothing in it depends on how a polling or
// a deadline-driven controller would fare; replaying the same log under
// both is what compares them.
//
// Generation is deterministic: the same Params (Seed included) give the
// same jobs, so the same bytes once written. It streams: jobs come out
// in order of submission while memory holds only the jobs of the
// current hour (and the tail of a burst running into the next), so a
// log of millions of jobs costs no more memory than one of thousands.
// Generating costs about 0.4 µs per job. A Generator is safe for
// use by several goroutines; each call of Jobs starts afresh.
//
// docs/joblog.md in the repository gives every parameter with its
// default and the reasoning behind it.
package gen

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// Params describe the customers and their habits. Start from Defaults
// and change what you need.
type Params struct {
	Seed uint64 // the whole log follows from it

	// Volume and period.
	Jobs      int       // expected number of jobs (the count varies by about ±1.5%)
	Customers int       // how many customers submit jobs
	Nodes     int       // data-service nodes; each customer's jobs go to one
	From, To  time.Time // jobs are submitted in [From, To)

	// Skew is the Zipf exponent of customers' volumes: the customer of
	// rank k submits a share proportional to 1/k^Skew. Customer C001 is
	// the largest.
	Skew float64

	// Rhythm. Zone is where the office hours are (default UTC+1, the
	// Netherlands in winter); WeekendShare is a weekend day's volume
	// relative to a working day's.
	Zone         *time.Location
	WeekendShare float64

	// Bursts: a customer submitting many jobs at once (a catalogue
	// re-import). BurstShare of all jobs come in bursts of BurstSize
	// jobs on average, spread over BurstSpan.
	BurstShare float64
	BurstSize  float64
	BurstSpan  time.Duration

	// Durations are log-normal: each customer has a median drawn around
	// MedianDuration (log-spread CustomerSpread), and each of its jobs
	// takes its median times a log-normal factor (log-spread JobSpread).
	MedianDuration time.Duration
	CustomerSpread float64
	JobSpread      float64

	// Outcomes. FailRate is the share of jobs that fail for bad data
	// (customers differ; the volume-weighted mean is FailRate). HangRate
	// is the share that hang, whoever submitted them; a hung job holds
	// its node for a log-normal time of median HangHold before it is
	// cleared.
	FailRate float64
	HangRate float64
	HangHold time.Duration

	// Agreements: whether jobs carry their customer's agreement, and how
	// many customers are in the higher priority class.
	Agreements        bool
	PriorityCustomers int
}

// Defaults returns the parameters of the embedded default log with seed 1.
func Defaults() Params {
	return Params{
		Seed:              1,
		Jobs:              25000,
		Customers:         180,
		Nodes:             8,
		From:              time.Date(2013, time.February, 1, 0, 0, 0, 0, time.UTC),
		To:                time.Date(2013, time.April, 1, 0, 0, 0, 0, time.UTC),
		Skew:              1.0,
		Zone:              time.FixedZone("UTC+1", 3600),
		WeekendShare:      0.3,
		BurstShare:        0.1,
		BurstSize:         25,
		BurstSpan:         30 * time.Minute,
		MedianDuration:    4 * time.Minute,
		CustomerSpread:    0.7,
		JobSpread:         1.0,
		FailRate:          0.03,
		HangRate:          0.01,
		HangHold:          4 * time.Hour,
		Agreements:        true,
		PriorityCustomers: 3,
	}
}

// Limits that keep a single job sane; they cut only the far tail.
const (
	maxDuration = 24 * time.Hour
	maxHold     = 72 * time.Hour
)

// Validate reports the first parameter out of range.
func (p Params) Validate() error {
	var errs []error
	need := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	need(p.Jobs >= 1, "jobs must be at least 1, not %d", p.Jobs)
	need(p.Customers >= 1, "customers must be at least 1, not %d", p.Customers)
	need(p.Nodes >= 1, "nodes must be at least 1, not %d", p.Nodes)
	need(p.To.After(p.From), "the period must end after it starts (%v to %v)", p.From, p.To)
	need(p.Skew >= 0 && p.Skew <= 10, "skew must be in [0, 10], not %v", p.Skew)
	need(p.WeekendShare >= 0 && p.WeekendShare <= 10, "weekend share must be in [0, 10], not %v", p.WeekendShare)
	need(p.BurstShare >= 0 && p.BurstShare < 1, "burst share must be in [0, 1), not %v", p.BurstShare)
	need(p.BurstSize >= 1, "burst size must be at least 1, not %v", p.BurstSize)
	need(p.BurstSpan >= 0, "burst span must not be negative, not %v", p.BurstSpan)
	need(p.MedianDuration >= time.Second && p.MedianDuration <= maxDuration,
		"median duration must be in [1s, %v], not %v", maxDuration, p.MedianDuration)
	need(p.CustomerSpread >= 0 && p.CustomerSpread <= 3, "customer spread must be in [0, 3], not %v", p.CustomerSpread)
	need(p.JobSpread >= 0 && p.JobSpread <= 3, "job spread must be in [0, 3], not %v", p.JobSpread)
	need(p.FailRate >= 0 && p.FailRate <= 0.5, "fail rate must be in [0, 0.5], not %v", p.FailRate)
	need(p.HangRate >= 0 && p.HangRate <= 0.5, "hang rate must be in [0, 0.5], not %v", p.HangRate)
	need(p.HangHold >= time.Second && p.HangHold <= maxHold, "hang hold must be in [1s, %v], not %v", maxHold, p.HangHold)
	need(p.PriorityCustomers >= 0 && p.PriorityCustomers <= p.Customers,
		"priority customers must be in [0, customers], not %d", p.PriorityCustomers)
	if len(errs) > 0 {
		return errs[0]
	}
	if p.Zone == nil {
		return errors.New("zone must be set")
	}
	return nil
}

// Customer is one customer's profile, fixed for the whole log.
type Customer struct {
	ID             string
	Share          float64       // expected share of all jobs
	Node           string        // where its jobs are sent
	MedianDuration time.Duration // of its jobs
	FailRate       float64       // share of its jobs that fail for bad data
	Agreement      joblog.Agreement
}

// Generator makes logs for one set of Params.
type Generator struct {
	p         Params
	customers []Customer
	cum       []float64 // cum[i] = share of customers 0..i
	weights   []float64 // arrival weight of each hour slot of the period
	total     float64   // sum of weights
}

// New checks p and draws the customers' profiles.
func New(p Params) (*Generator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{p: p}
	g.drawCustomers()
	for start := p.From; start.Before(p.To); start = start.Add(time.Hour) {
		w := rhythm(start.In(p.Zone), p.WeekendShare)
		if end := start.Add(time.Hour); end.After(p.To) {
			w *= float64(p.To.Sub(start)) / float64(time.Hour)
		}
		g.weights = append(g.weights, w)
		g.total += w
	}
	if g.total == 0 {
		return nil, errors.New("the period has no hour in which customers submit jobs (weekend only, with weekend share 0)")
	}
	return g, nil
}

// Customers returns the customers' profiles, largest first.
func (g *Generator) Customers() []Customer { return slices.Clone(g.customers) }

// dayShape is the relative volume of each hour of a working day, local
// time: quiet nights with a small bump of scheduled nightly feeds at
// 02:00-04:00, the bulk in office hours, a dip at lunch, a tail in the
// evening.
var dayShape = [24]float64{
	0.15, 0.15, 0.35, 0.35, 0.15, 0.15, 0.30, 0.60, // 00-07
	1.00, 1.30, 1.30, 1.30, 1.00, 1.30, 1.30, 1.30, // 08-15
	1.30, 1.00, 0.70, 0.45, 0.45, 0.45, 0.30, 0.20, // 16-23
}

func rhythm(local time.Time, weekend float64) float64 {
	w := dayShape[local.Hour()]
	if d := local.Weekday(); d == time.Saturday || d == time.Sunday {
		w *= weekend
	}
	return w
}

// Independent random streams, so that changing how one aspect is drawn
// leaves the others as they were (the seed's second word picks one).
const (
	streamCustomers = 0x637573746f6d6572 // "customer"
	streamArrivals  = 0x6172726976616c73 // "arrivals"
	streamJobs      = 0x6a6f627374756666 // "jobstuff"
)

func (g *Generator) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.p.Seed, stream))
}

func (g *Generator) drawCustomers() {
	p, r := g.p, g.rng(streamCustomers)
	n := p.Customers
	cs := make([]Customer, n)
	width := len(fmt.Sprint(n))
	var sum float64
	for i := range cs {
		cs[i].ID = fmt.Sprintf("C%0*d", width, i+1)
		cs[i].Share = 1 / math.Pow(float64(i+1), p.Skew)
		sum += cs[i].Share
	}
	g.cum = make([]float64, n)
	var acc, failMean float64
	bad := make([]float64, n) // how prone each customer's data is to be bad
	for i := range cs {
		c := &cs[i]
		c.Share /= sum
		acc += c.Share
		g.cum[i] = acc
		c.MedianDuration = roundSecond(float64(p.MedianDuration)*math.Exp(p.CustomerSpread*r.NormFloat64()), maxDuration)
		bad[i] = math.Exp(0.8 * r.NormFloat64())
		failMean += c.Share * bad[i]
	}
	g.cum[n-1] = 1 // no customer past the end through rounding
	for i := range cs {
		cs[i].FailRate = min(p.FailRate*bad[i]/failMean, 0.5)
	}

	// Each customer's installation lives on one node (the Controller
	// manages "service installations for each customer"). Spread them
	// so that nodes get about equal expected work: largest work first,
	// each to the least loaded node.
	width = len(fmt.Sprint(p.Nodes))
	work := func(i int) float64 { return cs[i].Share * float64(cs[i].MedianDuration) }
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work(b), work(a)) })
	load := make([]float64, p.Nodes)
	for _, i := range order {
		k := 0
		for j := range load {
			if load[j] < load[k] {
				k = j
			}
		}
		load[k] += work(i)
		cs[i].Node = fmt.Sprintf("node-%0*d", width, k+1)
	}

	// Agreements. Start deadlines come from a short menu, the few
	// priority customers (the paper's customer "A") having the shortest;
	// the result timeout covers a customer's own jobs up to about 20
	// times their median (1 in 700 jobs runs longer), at least an hour,
	// in quarter hours.
	menu := []struct {
		d time.Duration
		w float64
	}{{30 * time.Minute, 0.3}, {time.Hour, 0.4}, {2 * time.Hour, 0.2}, {4 * time.Hour, 0.1}}
	prio := r.Perm(n)[:p.PriorityCustomers]
	for i := range cs {
		c := &cs[i]
		u := r.Float64()
		for _, m := range menu {
			c.Agreement.StartDeadline = m.d
			if u -= m.w; u < 0 {
				break
			}
		}
		t := max(time.Hour, 20*c.MedianDuration)
		c.Agreement.ResultTimeout = (t + 15*time.Minute - 1).Truncate(15 * time.Minute)
	}
	for _, i := range prio {
		cs[i].Agreement.Priority = 1
		cs[i].Agreement.StartDeadline = 15 * time.Minute
	}
	g.customers = cs
}

// arrival is a job before its attributes are drawn.
type arrival struct {
	at       time.Time
	seq      int // generation order, to break ties
	customer int
}

// Jobs returns the jobs in order of submission. Each call yields the
// same jobs.
func (g *Generator) Jobs() iter.Seq[joblog.Job] {
	return func(yield func(joblog.Job) bool) {
		p := g.p
		arr, attr := g.rng(streamArrivals), g.rng(streamJobs)
		bgRate := float64(p.Jobs) * (1 - p.BurstShare) / g.total
		burstRate := float64(p.Jobs) * p.BurstShare / p.BurstSize / g.total
		var pending []arrival // sorted after each slot; only jobs of later slots remain
		seq, id := 0, 0
		add := func(at time.Time, c int) {
			at = at.Truncate(time.Second) // logs have whole seconds; stays in its slot
			if at.Before(p.To) {
				pending = append(pending, arrival{at, seq, c})
				seq++
			}
		}
		for i, w := range g.weights {
			start := p.From.Add(time.Duration(i) * time.Hour)
			end := start.Add(time.Hour)
			if end.After(p.To) {
				end = p.To
			}
			span := float64(end.Sub(start))
			for range poisson(arr, bgRate*w) {
				add(start.Add(time.Duration(arr.Float64()*span)), g.pick(arr))
			}
			for range poisson(arr, burstRate*w) {
				at, c := start.Add(time.Duration(arr.Float64()*span)), g.pick(arr)
				for range 1 + geometric(arr, p.BurstSize-1) {
					add(at.Add(time.Duration(arr.Float64()*float64(p.BurstSpan))), c)
				}
			}
			slices.SortFunc(pending, func(a, b arrival) int {
				return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
			})
			n := 0
			for n < len(pending) && pending[n].at.Before(end) {
				id++
				if !yield(g.job(attr, id, pending[n])) {
					return
				}
				n++
			}
			pending = append(pending[:0], pending[n:]...)
		}
	}
}

// job draws a job's duration and outcome. It draws the same random
// numbers whatever the outcome, so one job's fate does not shift the
// next one's.
func (g *Generator) job(r *rand.Rand, id int, a arrival) joblog.Job {
	p, c := g.p, &g.customers[a.customer]
	u, partial := r.Float64(), 0.05+0.95*r.Float64()
	run := float64(c.MedianDuration) * math.Exp(p.JobSpread*r.NormFloat64())
	hold := float64(p.HangHold) * math.Exp(r.NormFloat64())
	j := joblog.Job{
		ID:        fmt.Sprintf("J%06d", id),
		Customer:  c.ID,
		Submitted: a.at,
		Node:      c.Node,
		Outcome:   joblog.Completed,
		Duration:  roundSecond(run, maxDuration),
	}
	switch {
	case u < p.HangRate:
		j.Outcome, j.Duration = joblog.Hung, roundSecond(hold, maxHold)
	case u < p.HangRate+(1-p.HangRate)*c.FailRate:
		// Bad data shows part way through the job.
		j.Outcome, j.Duration = joblog.Failed, roundSecond(run*partial, maxDuration)
	}
	if p.Agreements {
		j.Agreement = c.Agreement
	}
	return j
}

// pick draws a customer by share.
func (g *Generator) pick(r *rand.Rand) int {
	i, _ := slices.BinarySearch(g.cum, r.Float64())
	return min(i, len(g.cum)-1)
}

// roundSecond rounds nanoseconds to a whole number of seconds in
// [1s, limit].
func roundSecond(ns float64, limit time.Duration) time.Duration {
	s := min(math.Round(ns/1e9), limit.Seconds())
	return max(time.Second, time.Duration(s)*time.Second)
}

// poisson draws from a Poisson distribution of mean lambda, as a sum of
// draws of mean at most 30 by Knuth's method (exact, and linear in
// lambda, which is the number of jobs it stands for anyway).
func poisson(r *rand.Rand, lambda float64) int {
	n := 0
	for lambda > 0 {
		l := min(lambda, 30)
		lambda -= l
		limit, prod := math.Exp(-l), r.Float64()
		for prod > limit {
			n++
			prod *= r.Float64()
		}
	}
	return n
}

// geometric draws the number of failures before the first success, with
// the given mean.
func geometric(r *rand.Rand, mean float64) int {
	if mean <= 0 {
		return 0
	}
	q := mean / (1 + mean) // failure probability
	return int(math.Floor(math.Log(1-r.Float64()) / math.Log(q)))
}
