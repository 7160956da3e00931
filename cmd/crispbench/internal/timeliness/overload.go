package timeliness

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/vclock"
)

// Mode is how the overload section schedules a trace: a variant of EDF
// with or without Cost hints and admission control.
type Mode int

// The modes.
const (
	// PlainEDF is policy.EDF, start deadline = arrival + relative
	// deadline; a late message still runs if it starts in time.
	PlainEDF Mode = iota
	// CostMode is EDF with crisp.Cost(cost): a message that could no
	// longer finish in time is failed at its (earlier) start deadline.
	CostMode
	// Admission is CostMode with crisp.WithAdmission: a message that by
	// the Cost hints could not start in time is refused at send.
	Admission
	// AdmissionWrong is Admission with wrong hints: every handler runs
	// twice as long as its Cost hint says.
	AdmissionWrong
	// AdmissionMeasured is crisp.WithAdmission without hints: the
	// estimate is the actor's measured average run time, and the
	// deadlines are start deadlines, as in PlainEDF.
	AdmissionMeasured
)

// Modes lists the modes in the order reports show them.
var Modes = []Mode{PlainEDF, CostMode, Admission, AdmissionWrong, AdmissionMeasured}

// MarshalText writes the mode's name, for JSON.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// String returns the mode's name, as reports show it.
func (m Mode) String() string {
	switch m {
	case PlainEDF:
		return "EDF"
	case CostMode:
		return "EDF+Cost"
	case Admission:
		return "admission"
	case AdmissionWrong:
		return "admission, costs 2x hints"
	case AdmissionMeasured:
		return "admission, measured"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// OverloadConfig sizes the overload section.
type OverloadConfig struct {
	Utilisations []float64 // offered load per worker: above 1, overload
	Workers      []int     // 1: a single actor; more: a group of that many workers
	Dists        []Dist
	Modes        []Mode
	Seeds        int    // random traces per point
	Jobs         int    // messages per trace
	Seed         uint64 // first seed; trace k uses Seed+k
}

// DefaultOverload is the full run's configuration; quick shrinks it for
// tests and CI.
func DefaultOverload(quick bool) OverloadConfig {
	c := OverloadConfig{
		Utilisations: []float64{1.3, 2.0},
		Workers:      []int{1, 4},
		Dists:        []Dist{Exponential, Bimodal},
		Modes:        Modes,
		Seeds:        20,
		Jobs:         2000,
		Seed:         1,
	}
	if quick {
		c.Seeds, c.Jobs = 2, 150
	}
	return c
}

// OverloadPoint is one cell: a workload and a mode, over the random
// traces.
type OverloadPoint struct {
	Workers     int     `json:"workers"`
	Dist        string  `json:"dist"`
	Utilisation float64 `json:"utilisation"`
	Mode        string  `json:"mode"`
	// UsefulWork is the share of offered work (sum of costs) done by
	// messages that finished by arrival + relative deadline.
	UsefulWork Stat `json:"useful_work"`
	// Refused and Missed are the shares of messages refused at send
	// (full or infeasible) and failed for their deadline.
	Refused Stat `json:"refused"`
	Missed  Stat `json:"missed"`
	// Late is the share of messages that ran but finished after their
	// deadline: work done for nothing, and answered late.
	Late Stat `json:"late"`
	// AnswerP50 is the median, over every message that did no useful
	// work (refused, missed or late) in every trace, of the time from its
	// send to its sender learning so: the refusal, the miss, or the late
	// end. Virtual time.
	AnswerP50 time.Duration `json:"answer_p50_ns"`
	// RefusedP50 and FailedLaterP50 split AnswerP50: the median answer
	// of the refused messages, and of those missed or finished late (the
	// answer without admission control). Zero when there are none.
	RefusedP50     time.Duration `json:"refused_answer_p50_ns"`
	FailedLaterP50 time.Duration `json:"failed_later_answer_p50_ns"`
	// Lost counts messages that got no outcome at all: always 0.
	Lost int `json:"lost"`
}

// OverloadResult is the overload section's outcome.
type OverloadResult struct {
	Config OverloadConfig  `json:"config"`
	Points []OverloadPoint `json:"points"`
}

// overloadOutcome is what happened to one job.
type overloadOutcome struct {
	started, refused, missed bool
	end, answer              time.Duration // from the trace's start
}

// SimulateOverload runs jobs as Simulate does, under mode m, and records
// when each sender learnt of each outcome: a message that fails is a
// Tell, so the system's dead-letter hook hears of it at that instant.
func simulateOverload(ctx context.Context, jobs []Job, m Mode, workers int) ([]overloadOutcome, error) {
	vc := vclock.New(epoch)
	out := make([]overloadOutcome, len(jobs))
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(discard), crisp.WithDeadLetters(func(d crisp.DeadLetter) {
		o := &out[d.Tag.(int)]
		o.answer = vc.Now().Sub(epoch)
		if _, ok := d.Reason.(interface{ Timeout() bool }); ok {
			o.missed = true // a *deadline.MissedError
		} else {
			o.refused = true
		}
	}))
	type worker struct{}
	states := make([]*worker, max(workers, 1))
	opts := []crisp.ActorOption{}
	if m >= Admission {
		opts = append(opts, crisp.WithAdmission())
	}
	var a crisp.Ref[*worker]
	if len(states) == 1 {
		a = crisp.Spawn(sys, states[0], opts...)
	} else {
		a = crisp.SpawnGroup(sys, states, opts...)
	}
	for i := range jobs {
		j := &jobs[i]
		vc.At(epoch.Add(j.Arrival), func() {
			send := make([]crisp.SendOption, 2, 3)
			send[0], send[1] = crisp.By(epoch.Add(j.Arrival+j.Deadline)), crisp.Tag(i)
			switch m {
			case CostMode, Admission:
				send = append(send, crisp.Cost(j.Cost))
			case AdmissionWrong:
				send = append(send, crisp.Cost(max(j.Cost/2, 1)))
			}
			crisp.Tell(a, func(p *crisp.Proc, _ *worker) {
				o := &out[i]
				o.started = true
				p.Sleep(j.Cost)
				o.end = p.Now().Sub(epoch)
			}, send...)
		})
	}
	err := vc.Run(ctx, sys.WaitIdle)
	if serr := sys.Shutdown(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Overload runs c's random traces in every mode and reports useful work,
// refusals, misses and how soon senders learn of work not done.
func Overload(ctx context.Context, c OverloadConfig) (*OverloadResult, error) {
	res := &OverloadResult{Config: c}
	scores, err := sweep(ctx, c.Workers, c.Dists, c.Utilisations, c.Modes, c.Seeds, c.Jobs, c.Seed,
		func(w Workload, m Mode) {
			res.Points = append(res.Points, OverloadPoint{Workers: w.Workers, Dist: w.Dist.String(), Utilisation: w.Utilisation, Mode: m.String()})
		},
		func(jobs []Job, w Workload, m Mode) (overloadScore, error) {
			out, err := simulateOverload(ctx, jobs, m, w.Workers)
			if err != nil {
				return overloadScore{}, err
			}
			return scoreOverload(jobs, out), nil
		})
	if err != nil {
		return nil, err
	}
	for i := range res.Points {
		var useful, refused, missed, late []float64
		var answers, refusedAns, laterAns []time.Duration
		for _, s := range scores[i] {
			useful, refused, missed, late = append(useful, s.useful), append(refused, s.refused), append(missed, s.missed), append(late, s.late)
			answers = append(answers, s.answers...)
			refusedAns, laterAns = append(refusedAns, s.refusedAns...), append(laterAns, s.laterAns...)
			res.Points[i].Lost += s.lost
		}
		p := &res.Points[i]
		p.UsefulWork, p.Refused, p.Missed, p.Late = statOf(useful), statOf(refused), statOf(missed), statOf(late)
		p.AnswerP50, p.RefusedP50, p.FailedLaterP50 = medianDur(answers), medianDur(refusedAns), medianDur(laterAns)
	}
	return res, nil
}

// medianDur returns the median of ds, sorting them; 0 if there are none.
func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// overloadScore is what one trace did under one mode: shares of the
// messages, the answers of those that failed, and the lost.
type overloadScore struct {
	useful, refused, missed, late float64
	answers, refusedAns, laterAns []time.Duration
	lost                          int
}

// scoreOverload scores one trace's outcomes.
func scoreOverload(jobs []Job, out []overloadOutcome) overloadScore {
	var s overloadScore
	var offered, useful float64
	for k, j := range jobs {
		o := out[k]
		offered += float64(j.Cost)
		switch {
		case o.refused:
			s.refused++
			s.answers = append(s.answers, o.answer-j.Arrival)
			s.refusedAns = append(s.refusedAns, o.answer-j.Arrival)
		case o.missed:
			s.missed++
			s.answers = append(s.answers, o.answer-j.Arrival)
			s.laterAns = append(s.laterAns, o.answer-j.Arrival)
		case !o.started:
			s.lost++
		case o.end <= j.Arrival+j.Deadline:
			useful += float64(j.Cost)
		default:
			s.late++
			s.answers = append(s.answers, o.end-j.Arrival)
			s.laterAns = append(s.laterAns, o.end-j.Arrival)
		}
	}
	n := float64(len(jobs))
	s.refused, s.missed, s.late = s.refused/n, s.missed/n, s.late/n
	if offered > 0 {
		s.useful = useful / offered
	}

	return s
}

// Tables renders the result: a table per workload shape and cost
// distribution, a row per utilisation and mode.
func (r *OverloadResult) Tables() []Table {
	var ts []Table
	for _, workers := range r.Config.Workers {
		for _, d := range r.Config.Dists {
			t := Table{
				Title: fmt.Sprintf("overload, %s, %s costs", shape(workers), d),
				Note: fmt.Sprintf("Mean ± standard deviation over %d traces of %d messages (the median over all their failed messages, then over the refused ones and the others); virtual time, deterministic, so a refusal's answer, at its send's instant, is 0 (on the real clock it is the send's own time: BenchmarkAdmissionRefusal). "+
					"Failed: refused at send, missed, or finished after its deadline; answer: from its send to its sender learning so.", r.Config.Seeds, r.Config.Jobs),
				Header: []string{"utilisation", "mode", "useful work", "refused", "missed", "late", "median answer, failed", "refused", "missed or late", "lost"},
			}
			for _, u := range r.Config.Utilisations {
				for _, m := range r.Config.Modes {
					p := r.point(workers, d.String(), u, m.String())
					st := func(s Stat) string { return fmt.Sprintf("%.3f ±%.3f", s.Mean, s.SD) }
					t.Rows = append(t.Rows, []string{fmt.Sprintf("%.1f", u), m.String(), st(p.UsefulWork), st(p.Refused), st(p.Missed), st(p.Late),
						fmtDur(p.AnswerP50), answerOf(p.RefusedP50, p.Refused), answerOf(p.FailedLaterP50, Stat{Mean: p.Missed.Mean + p.Late.Mean}), fmt.Sprint(p.Lost)})
				}
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// answerOf renders a median answer, or "-" when no message was counted
// (share s is zero).
func answerOf(d time.Duration, s Stat) string {
	if s.Mean == 0 {
		return "-"
	}
	return fmtDur(d)
}

func (r *OverloadResult) point(workers int, dist string, u float64, mode string) *OverloadPoint {
	for i := range r.Points {
		p := &r.Points[i]
		if p.Workers == workers && p.Dist == dist && p.Utilisation == u && p.Mode == mode {
			return p
		}
	}
	panic("timeliness: no overload point for " + mode)
}

// Chart draws useful work against utilisation, a panel per workload
// shape and cost distribution, a line per mode.
func (r *OverloadResult) Chart(w io.Writer) error {
	var plots [][]*plot.Plot
	for _, workers := range r.Config.Workers {
		var row []*plot.Plot
		for _, d := range r.Config.Dists {
			p := newPlot(fmt.Sprintf("%s, %s costs", shape(workers), d), "utilisation", "useful work")
			p.Y.Min, p.Y.Max = 0, 1
			p.Legend.Top = false
			var args []any
			for _, m := range r.Config.Modes {
				pts := make(plotter.XYs, len(r.Config.Utilisations))
				for k, u := range r.Config.Utilisations {
					pts[k].X, pts[k].Y = u, r.point(workers, d.String(), u, m.String()).UsefulWork.Mean
				}
				args = append(args, m.String(), pts)
			}
			if err := plotutil.AddLinePoints(p, args...); err != nil {
				return err
			}
			row = append(row, p)
		}
		plots = append(plots, row)
	}
	return writeTiles(w, plots, 10*vg.Centimeter, 8*vg.Centimeter)
}
