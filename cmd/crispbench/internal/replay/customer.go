package replay

import (
	"github.com/crisprt/crisp/crisp"
)

// customer is the state of a customer's actor: who it is, and the
// tally of what it was told. Only its handlers touch the tally.
type customer struct {
	id    string
	actor *crisp.Actor[*customer]

	requested, completed, failed, retried, missed, unknown int
	// waits counts the jobs answered by the time from their submission
	// to their first answer: exact quantiles, in memory that grows with
	// the distinct waits, not the jobs.
	waits waitCounts
}

// submit is the customer's side of a job's arrival: it counts the job
// and hands it to the Controller.
func (s *customer) submit(c *controller, j *job) {
	s.requested++
	crisp.Tell(c.actor, func(p *crisp.Proc, c *controller) { c.handle(p, j) })
}

// answer is a message from the Controller about one of the customer's
// jobs.
type answer struct {
	j            *job
	kind         Kind
	first, final bool
}

// hear is the customer's handler for an answer.
func (s *customer) hear(p *crisp.Proc, a answer, observe func(Answer)) {
	now := p.Now()
	if a.first {
		if s.waits == nil {
			s.waits = waitCounts{}
		}
		s.waits[now.Sub(a.j.submitted)]++
	}
	if observe != nil {
		observe(Answer{
			Job: a.j.id, Customer: s.id, Submitted: a.j.submitted, At: now,
			Kind: a.kind, First: a.first, Final: a.final,
			StartDeadline: a.j.startDeadline, ResultTimeout: a.j.resultTimeout,
		})
	}
	if !a.final {
		if a.first { // a miss, retried: count the job once
			s.retried++
		}
		return
	}
	switch a.kind {
	case Completed:
		s.completed++
	case Failed:
		s.failed++
	case Missed:
		s.missed++
	case Unknown:
		s.unknown++
	}
}

// tally returns the customer's statistics. It runs on the actor.
func (s *customer) tally() Stats {
	st := Stats{
		Customer:  s.id,
		Requested: s.requested, Completed: s.completed, Failed: s.failed,
		Retried: s.retried, Missed: s.missed, Unknown: s.unknown,
		waits: s.waits.sorted(),
	}
	st.Never = st.Requested - st.Completed - st.Failed - st.Missed - st.Unknown
	st.finish()
	return st
}
