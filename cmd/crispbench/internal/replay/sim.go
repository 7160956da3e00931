package replay

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/vclock"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// sim is the replay of a log under one strategy: its own clock, system
// and actors, fed jobs by Run's reader.
type sim struct {
	cfg      *Config
	strategy Strategy
	ctx      context.Context

	feed <-chan []joblog.Job // batches of jobs, in log order
	cur  []joblog.Job        // the batch being scheduled
	pos  int                 // next job of cur

	vc      *vclock.Clock
	horizon time.Time // the last instant vc reaches: see Horizon
	sys     *crisp.System
	ctl     *controller
	seq     uint64
	cust    map[string]*customer
	nodeOf  map[string]int  // the log's node names, by first appearance
	first   map[string]bool // Config.First
}

func newSim(ctx context.Context, cfg *Config, s Strategy, feed <-chan []joblog.Job) *sim {
	m := &sim{cfg: cfg, strategy: s, ctx: ctx, feed: feed,
		cust: map[string]*customer{}, nodeOf: map[string]int{}}
	if len(cfg.First) > 0 {
		m.first = map[string]bool{}
		for _, c := range cfg.First {
			m.first[c] = true
		}
	}
	return m
}

// run replays the jobs of the feed and returns their tally.
func (m *sim) run() (Result, error) {
	first, ok := m.next()
	if !ok {
		return Result{}, context.Cause(m.ctx) // the reader failed, or ctx ended
	}
	m.vc = vclock.New(first.Submitted)
	m.horizon = first.Submitted.Add(Horizon)
	// Misses are the point of the exercise: the runtime logs them at
	// debug level, which nobody wants a hundred thousand of.
	m.sys = crisp.NewSystem(crisp.WithClock(m.vc), crisp.WithLogger(slog.New(slog.DiscardHandler)))
	// Every handler returns (Shutdown cuts Sleeps short), so Shutdown
	// does not wait long; it ends the continuations polling waits in.
	defer func() { _ = m.sys.Shutdown(context.Background()) }()

	m.ctl = &controller{
		strategy: m.strategy,
		retries:  m.cfg.Retries,
		poll:     m.cfg.PollInterval,
		turns:    &sequencer{clk: m.vc},
		alarms:   m.vc,
		inFlight: make([]int, m.cfg.Nodes),
		literal:  m.cfg.literalPolling,
	}
	if obs := m.cfg.Observe; obs != nil {
		m.ctl.observe = func(a Answer) { obs(m.strategy, a) }
	}
	pol := nodePolicy(m.cfg.Policy)
	for range m.cfg.Nodes {
		st := &node{}
		m.ctl.states = append(m.ctl.states, st)
		m.ctl.nodes = append(m.ctl.nodes, crisp.Spawn(m.sys, st, crisp.WithPolicy(pol), crisp.WithName("node")))
	}
	m.ctl.actor = crisp.Spawn(m.sys, m.ctl, crisp.WithName("controller"))

	m.schedule(first)
	if err := m.vc.Run(m.ctx, m.sys.WaitIdle); err != nil {
		if cause := context.Cause(m.ctx); cause != nil {
			err = cause
		}
		return Result{}, err
	}
	return m.tally(), nil
}

// next returns the next job of the log, waiting for the reader if
// need be; false at the end of the log or when ctx ends.
func (m *sim) next() (joblog.Job, bool) {
	for m.pos == len(m.cur) {
		select {
		case b, ok := <-m.feed:
			if !ok {
				return joblog.Job{}, false
			}
			m.cur, m.pos = b, 0
		case <-m.ctx.Done():
			return joblog.Job{}, false
		}
	}
	j := m.cur[m.pos]
	m.pos++
	return j, true
}

// schedule arranges for job lj to arrive at its submission time, and
// for the job after it to be read then: the clock holds one future
// arrival at a time, however long the log.
func (m *sim) schedule(lj joblog.Job) {
	j := m.job(lj)
	m.vc.At(j.submitted, func() {
		if next, ok := m.next(); ok {
			m.schedule(next)
		}
		ctl := m.ctl
		crisp.Tell(j.cust.actor, func(_ *crisp.Proc, c *customer) { c.submit(ctl, j) })
	})
}

// job turns a row of the log into a job: its customer (spawning the
// customer's actor the first time), its node and its terms.
func (m *sim) job(lj joblog.Job) *job {
	m.seq++
	c := m.cust[lj.Customer]
	if c == nil {
		c = &customer{id: lj.Customer}
		c.actor = crisp.Spawn(m.sys, c, crisp.WithName("customer"))
		m.cust[lj.Customer] = c
	}
	n, ok := m.nodeOf[lj.Node]
	if !ok {
		n = len(m.nodeOf)
		m.nodeOf[lj.Node] = n
	}
	j := &job{
		seq: m.seq, id: lj.ID, cust: c,
		submitted: lj.Submitted, duration: lj.Duration, outcome: lj.Outcome,
		node: n % m.cfg.Nodes, priority: lj.Agreement.Priority,
		// A deadline past the clock's horizon could never be reached:
		// it is moved to the horizon, where every later timer fires.
		startDeadline: min(term(m.cfg.StartDeadline, lj.Agreement.StartDeadline, m.cfg.DefaultStartDeadline),
			m.horizon.Sub(lj.Submitted)),
		resultTimeout: term(m.cfg.ResultTimeout, lj.Agreement.ResultTimeout, m.cfg.DefaultResultTimeout),
	}
	if m.first != nil {
		j.first = m.first[lj.Customer]
	} else {
		j.first = j.priority > 0
	}
	return j
}

// term is the first positive of an override, the log's term and the
// default.
func term[T cmp.Ordered](override, logged, dflt T) T {
	var zero T
	switch {
	case override > zero:
		return override
	case logged > zero:
		return logged
	}
	return dflt
}

// tally collects every customer's statistics, by customer name.
func (m *sim) tally() Result {
	cs := make([]*customer, 0, len(m.cust))
	for _, c := range m.cust {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *customer) int { return cmp.Compare(a.id, b.id) })
	r := Result{Strategy: m.strategy, End: m.vc.Now(), Customers: make([]Stats, len(cs))}
	for i, c := range cs {
		// Asking each actor keeps the tally on the actors' side of the
		// memory model; the system is idle, so each answers at once.
		r.Customers[i], _ = crisp.Call(c.actor, func(_ *crisp.Proc, s *customer) (Stats, error) { return s.tally(), nil }).Get()
	}
	r.Total = total(r.Customers)
	return r
}
