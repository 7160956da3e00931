package observe

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/crisp"
)

// Stats is an observer (crisp.WithObserver) that keeps, for each actor
// name, counts by outcome, gauges of queued, running and suspended
// messages, and histograms of queue wait, run time and miss detection
// lag. Snapshot reads them at any time without stopping anything. Actors
// that share a name share their figures.
//
// Observe costs a map lookup and a few atomic adds per event; a system
// without a Stats pays nothing for it. The histograms take about 12 KiB
// per actor name. All methods are safe for concurrent use.
type Stats struct {
	actors sync.Map // actor name -> *actorStats
}

// NewStats returns an empty Stats.
func NewStats() *Stats { return &Stats{} }

type actorStats struct {
	queued, running, suspended atomic.Int64
	byKind                     [crisp.EventRestarted + 1]atomic.Uint64
	wait, run, lag             histogram
	lastMiss                   atomic.Pointer[Miss]
}

// Miss describes a missed message.
type Miss struct {
	Message  string        `json:"message"`
	Deadline time.Time     `json:"deadline"`
	Detected time.Time     `json:"detected"`
	Lag      time.Duration `json:"lag_ns"`
}

func (s *Stats) of(actor string) *actorStats {
	if a, ok := s.actors.Load(actor); ok {
		return a.(*actorStats)
	}
	a, _ := s.actors.LoadOrStore(actor, new(actorStats))
	return a.(*actorStats)
}

// Observe counts e.
func (s *Stats) Observe(e crisp.Event) {
	a := s.of(e.Actor)
	if int(e.Kind) < len(a.byKind) {
		a.byKind[e.Kind].Add(1)
	}
	switch e.Kind {
	case crisp.EventSent:
		a.queued.Add(1)
	case crisp.EventStarted:
		a.queued.Add(-1)
		a.running.Add(1)
		a.wait.record(e.Wait)
	case crisp.EventSuspended:
		a.running.Add(-1)
		a.suspended.Add(1)
	case crisp.EventResumed:
		a.suspended.Add(-1)
		a.running.Add(1)
	case crisp.EventFinished, crisp.EventPanicked:
		a.running.Add(-1)
		a.run.record(e.Run)
	case crisp.EventMissed:
		a.queued.Add(-1)
		a.lag.record(e.Lag)
		a.lastMiss.Store(&Miss{Message: e.Message, Deadline: e.Deadline, Detected: e.Time, Lag: e.Lag})
	case crisp.EventRefused, crisp.EventCancelled, crisp.EventFailed:
		a.queued.Add(-1)
	case crisp.EventStopped:
		if e.Started {
			a.suspended.Add(-1)
		} else {
			a.queued.Add(-1)
		}
	}
}

// ActorStats are the figures of the actors of one name, or of a whole
// system (Snapshot.Total, whose Name is empty).
type ActorStats struct {
	Name string `json:"name"`
	// Queued counts messages sent and not yet started or ended; Running,
	// handlers running; Suspended, processes waiting with their actor
	// released.
	Queued    int64 `json:"queued"`
	Running   int64 `json:"running"`
	Suspended int64 `json:"suspended"`
	// Counts of events.
	Sent      uint64 `json:"sent"`
	Finished  uint64 `json:"finished"`
	Panicked  uint64 `json:"panicked"`
	Missed    uint64 `json:"missed"`
	Refused   uint64 `json:"refused"`
	Cancelled uint64 `json:"cancelled"`
	Stopped   uint64 `json:"stopped"`
	Failed    uint64 `json:"failed"`
	Restarted uint64 `json:"restarted"`
	// Wait is the time from send to start; Run from start to finish;
	// Lag from a missed deadline to its detection.
	Wait Durations `json:"wait"`
	Run  Durations `json:"run"`
	Lag  Durations `json:"lag"`
	// LastMiss is the most recent miss, or nil.
	LastMiss *Miss `json:"last_miss,omitempty"`
}

// Snapshot is what Stats.Snapshot reads.
type Snapshot struct {
	Total  ActorStats   `json:"total"`
	Actors []ActorStats `json:"actors"` // by name
}

// Snapshot reads the figures now. Writers are not stopped, so figures
// read at slightly different instants may disagree by the events that
// came in between.
func (s *Stats) Snapshot() Snapshot {
	var snap Snapshot
	var total struct{ wait, run, lag counts }
	s.actors.Range(func(k, v any) bool {
		a := v.(*actorStats)
		var wait, run, lag counts
		a.wait.read(&wait)
		a.run.read(&run)
		a.lag.read(&lag)
		a.wait.read(&total.wait)
		a.run.read(&total.run)
		a.lag.read(&total.lag)
		st := ActorStats{
			Name:      k.(string),
			Queued:    a.queued.Load(),
			Running:   a.running.Load(),
			Suspended: a.suspended.Load(),
			Sent:      a.byKind[crisp.EventSent].Load(),
			Finished:  a.byKind[crisp.EventFinished].Load(),
			Panicked:  a.byKind[crisp.EventPanicked].Load(),
			Missed:    a.byKind[crisp.EventMissed].Load(),
			Refused:   a.byKind[crisp.EventRefused].Load(),
			Cancelled: a.byKind[crisp.EventCancelled].Load(),
			Stopped:   a.byKind[crisp.EventStopped].Load(),
			Failed:    a.byKind[crisp.EventFailed].Load(),
			Restarted: a.byKind[crisp.EventRestarted].Load(),
			Wait:      wait.durations(),
			Run:       run.durations(),
			Lag:       lag.durations(),
			LastMiss:  a.lastMiss.Load(),
		}
		snap.Actors = append(snap.Actors, st)
		t := &snap.Total
		t.Queued += st.Queued
		t.Running += st.Running
		t.Suspended += st.Suspended
		t.Sent += st.Sent
		t.Finished += st.Finished
		t.Panicked += st.Panicked
		t.Missed += st.Missed
		t.Refused += st.Refused
		t.Cancelled += st.Cancelled
		t.Stopped += st.Stopped
		t.Failed += st.Failed
		t.Restarted += st.Restarted
		if st.LastMiss != nil && (t.LastMiss == nil || st.LastMiss.Detected.After(t.LastMiss.Detected)) {
			t.LastMiss = st.LastMiss
		}
		return true
	})
	snap.Total.Wait = total.wait.durations()
	snap.Total.Run = total.run.durations()
	snap.Total.Lag = total.lag.durations()
	slices.SortFunc(snap.Actors, func(x, y ActorStats) int { return cmp.Compare(x.Name, y.Name) })
	return snap
}
