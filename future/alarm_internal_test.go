package future

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
)

func TestInBubbleTellsABubblesFakeClockFromTheRealOne(t *testing.T) {
	if inBubble() {
		t.Fatal("outside any bubble, inBubble reports true")
	}
	synctest.Test(t, func(t *testing.T) {
		if !inBubble() {
			t.Fatal("in a bubble, inBubble reports false")
		}
		<-time.After(100 * 365 * 24 * time.Hour) // a century on the fake clock: still told apart
		if !inBubble() {
			t.Fatal("a century into a bubble, inBubble reports false")
		}
	})
}

// newWaiter returns a timedWaiter ready to wait, as timedWaiter lists
// one (unlisted: these tests end its waits themselves).
func newWaiter() *timedWaiter {
	w := &timedWaiter{}
	w.n.w = w
	w.spot.Expect()
	return w
}

// keptAlarm takes an alarm from the pool, or returns nil.
func keptAlarm() *alarm {
	al, _ := alarms.Get().(*alarm)
	return al
}

// A timed wait the resolution ends keeps its alarm, stopped; the next
// timed wait takes it, and a wait that timed out keeps it too: its
// callback has run for that wait and reaches no later one. Under the race
// detector, whose sync.Pool drops a quarter of what it is given at
// random, it takes a few tries to see the alarm kept three times in a
// row.
func TestATimedWaitKeepsItsAlarmForTheNext(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one processor: the pool's Get finds what Put left
	for try := 1; !keptForTheNext(t); try++ {
		if !raceEnabled || try == 30 {
			t.Fatalf("in %d tries, the alarm of a woken wait was never kept and taken by the next wait, which timed out and kept it", try)
		}
	}
}

// keptForTheNext runs the two waits of TestATimedWaitKeepsItsAlarmForTheNext
// and reports whether the pool kept the alarm each time; a kept alarm set
// for another waiter fails the test.
func keptForTheNext(t *testing.T) bool {
	alarms = sync.Pool{}
	w := newWaiter()
	w.Wake() // resolved before it waits
	if !w.waitTimed(time.Hour, nil) {
		t.Fatal("a woken wait reported a timeout")
	}
	al := keptAlarm()
	if al == nil {
		return false
	}
	if al.w.Load() != w {
		t.Fatal("the kept alarm is set for another waiter")
	}
	alarms.Put(al)

	w2 := newWaiter()
	if w2.waitTimed(time.Millisecond, nil) {
		t.Fatal("a wait nobody woke reported the resolution")
	}
	got := keptAlarm()
	if got == nil || got != al && raceEnabled { // dropped by Put: ours, or the wait's
		return false
	}
	if got != al || got.w.Load() != w2 {
		t.Fatalf("the next wait did not take the kept alarm, or kept another (got %p, want %p)", got, al)
	}
	return true
}

// In a synctest bubble a timed wait takes no alarm and keeps none: its
// timer belongs to the bubble and runs on its fake clock.
func TestATimedWaitInABubbleKeepsNoAlarm(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	alarms = sync.Pool{}
	outside := &alarm{t: time.AfterFunc(time.Hour, func() {})}
	outside.t.Stop()
	alarms.Put(outside)
	synctest.Test(t, func(t *testing.T) {
		w := newWaiter()
		start := time.Now()
		if w.waitTimed(time.Hour, nil) {
			t.Fatal("a wait nobody woke reported the resolution")
		}
		if d := time.Since(start); d != time.Hour {
			t.Fatalf("the wait took %v on the bubble's clock; want an hour", d)
		}
		w2 := newWaiter()
		w2.Wake()
		w2.waitTimed(time.Hour, nil)
	})
	// The pool holds the alarm made outside, and nothing else (under the
	// race detector its Put may have dropped even that one).
	found := false
	for al := keptAlarm(); al != nil; al = keptAlarm() {
		if al != outside {
			t.Fatal("a wait in a bubble kept an alarm of its own")
		}
		found = true
	}
	if !found && !raceEnabled {
		t.Fatal("a wait in a bubble took the alarm made outside")
	}
}

// An alarm whose timer fired as the resolution ended its wait is not
// kept: its callback, still to run, would end the wait of whoever took
// the alarm next, long before that wait's own timeout.
func TestAnAlarmThatMayStillRingIsNotKept(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	alarms = sync.Pool{}
	rang, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func() {
		once.Do(func() { close(rang) })
		<-release
	}
	ringHook.Store(&hold)
	defer ringHook.Store(nil)
	w := newWaiter()
	woken := make(chan bool)
	go func() { woken <- w.waitTimed(time.Microsecond, nil) }()
	<-rang // the timer has fired; its callback waits before looking at w
	w.Wake()
	if !<-woken {
		t.Fatal("the wait the resolution ended reported a timeout")
	}
	kept := keptAlarm()
	close(release)
	if kept != nil {
		t.Fatal("the alarm was kept while its callback had still to run")
	}
}

// parked is a source whose waiters park at once (its result is never
// soon).
type parked struct{}

func (parked) Clock() clock.Clock { return nil }
func (parked) CheckWait() error   { return nil }
func (parked) ResultSoon() bool   { return false }

// Parked waits of a few microseconds race their resolutions, which end
// some and not others, and each is followed by a wait of an hour on
// another future, which must get its result: no alarm of an earlier
// wait ends it.
func TestTimedWaitsRacingTheirResolutionsEndNoLaterWait(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		p := NewPromise[int](nil)
		var cell any = parked{}
		p.setSourceAt(&cell)
		go p.Resolve(i, nil)
		if _, err := p.Future().GetWithin(time.Duration(i%20) * time.Microsecond); err != nil && !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
		q := NewPromise[int](nil)
		cell2 := any(parked{})
		q.setSourceAt(&cell2)
		go q.Resolve(i, nil)
		if v, err := q.Future().GetWithin(time.Hour); err != nil || v != i {
			t.Fatalf("round %d: an hour-long wait returned %d, %v", i, v, err)
		}
	}
}
