package crisp

import (
	"time"

	"github.com/crisprt/crisp/internal/ready"
)

// The bounded start check: a deadline checked without reading the clock.
//
// A message with a deadline is checked as it starts (late): it runs only
// if the clock reads less than its deadline. Reading the real clock
// there took 38 ns and building the time.Time 10 more, on an AMD EPYC VM
// where the whole of a message of a flood takes about 170 ns: with the
// reading at send, the two were nearly all of what deadlines cost
// (counting with a deadline on every message took 1.7x the time, the
// clock 36% of its profile).
//
// The check needs only to know that the clock has not reached the
// deadline. The last reading of the clock in a start check (anchor),
// taken just after a reading of the processor's counter, plus an upper
// bound of the time the counter says has passed since (ready.Elapsed: a
// reading of 13 ns, at a rate a hundredth above the one measured), plus
// boundSlack, is a time the clock cannot yet have reached. A deadline
// after it has not come: the message runs, with nothing to Nudge the
// watchdog for if its earliest deadline is after the bound too.
// Otherwise the check reads the clock as before, and renews the anchor
// if it is anchorAge old or older: the bound's margin (a hundredth of
// the anchor's age) grows while only far deadlines are checked, and
// shrinks again at the first check it leaves to the clock.
//
// Only on the real clock, outside testing/synctest bubbles (fakeNow):
// a mock clock or a bubble's moves without the counter. Each reading
// checks the bound it replaces: if the clock ever reads past it (a
// counter that changed rate or jumped), the system stops using it.

// clockAnchor is a reading of the counter (t) and the clock's key (k)
// taken just after it: the clock read at most k at t.
type clockAnchor struct {
	t, k int64
}

// boundSlack is added to every bound: counters of different cores that
// differ by up to this much still give an upper bound.
const boundSlack = 50 * int64(time.Microsecond)

// anchorAge is the age at which a start check that reads the clock
// renews the anchor: its bound's margin is then at most 10 µs.
const anchorAge = int64(time.Millisecond)

// fakeNow reports whether t, the real clock's reading at NewSystem, is
// a testing/synctest bubble's: its clock starts at midnight UTC,
// 2000-01-01, and moves only while every goroutine of the bubble waits.
// A real clock in the last century (a machine that lost its time) is
// taken for one too: only the bound is forgone.
func fakeNow(t time.Time) bool { return t.Year() < 2001 }

// startBound reports whether the clock surely reads less than the
// deadline whose key is dk (System.dlKey), and the watchdog has nothing
// due by then: the start check of a message with that deadline, without
// a reading of the clock.
func (s *System) startBound(dk int64) bool {
	an := s.anchor.Load()
	if an == nil {
		return false
	}
	el, ok := ready.Elapsed(an.t)
	if !ok {
		return false
	}
	k := an.k + el + boundSlack
	return k < dk && s.wd.NotDueBy(k+s.wdOff)
}

// nowAnchored is now for a start check, which keeps the anchor of the
// bounded ones (startBound): it checks the bound against the clock's
// reading, and renews the anchor once it is anchorAge old.
//
//go:noinline
func (s *System) nowAnchored() time.Time {
	t := ready.Stamp()
	now := s.now()
	k := int64(now.Sub(s.epoch))
	an := s.anchor.Load()
	if an == nil {
		s.anchor.Store(&clockAnchor{t: t, k: k})
		ready.Elapsed(t) // starts measuring the counter's rate
		return now
	}
	if el, ok := ready.Elapsed(an.t); ok {
		if an.k+el+boundSlack < k {
			s.bounded.Store(false) // the bound failed: never used again
		} else if el >= anchorAge {
			s.anchor.Store(&clockAnchor{t: t, k: k})
		}
	}
	return now
}
