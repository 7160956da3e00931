package future

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/benbjohnson/clock"
	"github.com/crisprt/crisp/internal/ready"
)

func TestBubbledTellsABubblesFakeClockFromTheRealOne(t *testing.T) {
	if bubbled(sinceInit()) {
		t.Fatal("outside any bubble, bubbled reports true")
	}
	synctest.Test(t, func(t *testing.T) {
		if !bubbled(sinceInit()) {
			t.Fatal("in a bubble, bubbled reports false")
		}
		<-time.After(100 * 365 * 24 * time.Hour) // a century on the fake clock: still told apart
		if !bubbled(sinceInit()) {
			t.Fatal("a century into a bubble, bubbled reports false")
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

// watched reads what an alarm is set for: its waiter and when its timer
// fires (0: not set).
func watched(al *alarm) (w *timedWaiter, fires int64) {
	al.mu.Lock()
	defer al.mu.Unlock()
	return al.w, al.fires
}

// A timed wait the resolution ends keeps its alarm, its timer still set;
// the next timed wait takes it, and a wait that timed out keeps it too:
// its callback has run for that wait and reaches no later one. Under the
// race detector, whose sync.Pool drops a quarter of what it is given at
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
// for a waiter fails the test.
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
	if set, fires := watched(al); set != nil || fires == 0 {
		t.Fatalf("the kept alarm is set for a waiter (%v), or its timer was stopped (fires %d)", set != nil, fires)
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
	if got != al {
		t.Fatalf("the next wait did not take the kept alarm, or kept another (got %p, want %p)", got, al)
	}
	if set, fires := watched(got); set != nil || fires != 0 {
		t.Fatalf("after its wait timed out, the alarm is set for a waiter (%v), or its timer is (fires %d)", set != nil, fires)
	}
	return true
}

// A kept alarm whose timer fires no later than the next wait's end is
// not set again for it; one whose timer fires later is, and ends that
// wait at its end.
func TestAKeptAlarmIsSetAgainOnlyForAnEarlierEnd(t *testing.T) {
	alarms = sync.Pool{}
	w := newWaiter()
	al, reuse := setAlarm(w, time.Hour)
	if !reuse {
		t.Fatal("outside a bubble, setAlarm made an alarm not to be kept")
	}
	defer al.t.Stop()
	if !al.drop(w) {
		t.Fatal("the callback took the waiter of an hour-long wait")
	}
	_, first := watched(al)

	w2 := newWaiter()
	al.set(w2, sinceInit()+int64(2*time.Hour), 2*time.Hour)
	if _, fires := watched(al); fires != first {
		t.Fatalf("a wait ending later set the timer again: it fires at %d, was %d", fires, first)
	}
	al.drop(w2)

	w3 := newWaiter()
	const d = 2 * time.Millisecond
	due := sinceInit() + int64(d)
	al.set(w3, due, d)
	if _, fires := watched(al); fires != due {
		t.Fatalf("a wait ending sooner did not set the timer for its end: it fires at %d, want %d", fires, due)
	}
	w3.spot.Wait()
	if now := sinceInit(); w3.state.Load() != twTimedOut || now < due {
		t.Fatalf("the wait ended in state %d, %v before its end", w3.state.Load(), time.Duration(due-now))
	}
}

// A callback that comes before its wait's end (the timer was set for an
// earlier wait) sets the timer again for the rest of the wait and leaves
// the wait alone.
func TestAnEarlyCallbackSetsTheTimerAgain(t *testing.T) {
	alarms = sync.Pool{}
	w := newWaiter()
	al, _ := setAlarm(w, time.Hour)
	defer al.t.Stop()
	al.ring() // as the timer would, had it been set for an earlier wait
	set, fires := watched(al)
	if w.state.Load() != twWaiting || set != w {
		t.Fatalf("an early callback ended the wait (state %d) or let go of its waiter (%v)", w.state.Load(), set != w)
	}
	if al.mu.Lock(); fires != al.due {
		t.Fatalf("an early callback set the timer to fire at %d; the wait ends at %d", fires, al.due)
	}
	al.mu.Unlock()
}

// A wait that takes a kept alarm whose timer fires before the wait's end
// (set by a wait the resolution ended) ends no sooner than its own
// length: the callback sets the timer again.
func TestAWaitOnAKeptAlarmLastsItsLength(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for try := 1; ; try++ {
		alarms = sync.Pool{}
		w := newWaiter()
		w.Wake()
		w.waitTimed(2*time.Millisecond, nil) // leaves its alarm set to fire in 2 ms
		al := keptAlarm()
		if al == nil { // dropped by Put under the race detector
			if !raceEnabled || try == 30 {
				t.Fatal("a woken wait kept no alarm")
			}
			continue
		}
		alarms.Put(al)
		const d = 20 * time.Millisecond
		start := sinceInit()
		if newWaiter().waitTimed(d, nil) {
			t.Fatal("a wait nobody woke reported the resolution")
		}
		if took := time.Duration(sinceInit() - start); took < d {
			t.Fatalf("a wait of %v on a kept alarm set to fire sooner ended after %v", d, took)
		}
		return
	}
}

// The resolution ending a wait whose timer has fired keeps the waiter's
// node (drop reports true) if the callback has not yet taken the waiter:
// the callback then leaves it alone, though it be waiting again.
func TestAWaiterTheCallbackHasNotTakenIsKept(t *testing.T) {
	rang, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func() {
		once.Do(func() { close(rang) })
		<-release
	}
	ringHook.Store(&hold)
	defer ringHook.Store(nil)
	alarms = sync.Pool{}
	w := newWaiter()
	al, _ := setAlarm(w, time.Microsecond)
	<-rang // the timer has fired; its callback waits before looking at w
	w.Wake()
	w.spot.Wait()
	ready.Done() // as waitTimed does after a Wake
	if !al.drop(w) {
		t.Fatal("drop reported the waiter taken by a callback that had not looked at it")
	}
	w.state.Store(twWaiting) // waiting again, as a kept node would
	w.spot.Expect()
	close(release)
	for _, fires := watched(al); fires != 0; _, fires = watched(al) {
		runtime.Gosched() // until the callback has run
	}
	if w.state.Load() != twWaiting {
		t.Fatal("the callback of an earlier wait ended the waiter's new wait")
	}
}

// A waiter whose callback has taken it is not kept: the callback will
// still end its wait.
func TestAWaiterTheCallbackTookIsNotKept(t *testing.T) {
	took, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func() {
		once.Do(func() { close(took) })
		<-release
	}
	tookHook.Store(&hold)
	defer tookHook.Store(nil)
	alarms = sync.Pool{}
	w := newWaiter()
	al, _ := setAlarm(w, time.Microsecond)
	<-took // the callback has taken w, and not yet ended its wait
	w.Wake()
	w.spot.Wait()
	ready.Done() // as waitTimed does after a Wake
	dropped := al.drop(w)
	close(release)
	if dropped {
		t.Fatal("drop reported a waiter the callback had taken as its own")
	}
}

// An alarm the pool lets go of, its timer still set for an hour, is
// collected and its timer stopped: the timer does not keep it.
func TestALostAlarmIsCollectedAndItsTimerStopped(t *testing.T) {
	stopped := make(chan *time.Timer, 1)
	defer func(f func(*time.Timer)) { stopTimer = f }(stopTimer)
	stopTimer = func(t *time.Timer) {
		t.Stop()
		stopped <- t
	}
	alarms = sync.Pool{}
	w := newWaiter()
	al, _ := setAlarm(w, time.Hour)
	al.drop(w)
	held, timer := weak.Make(al), al.t
	al = nil
	for range 100 {
		runtime.GC()
		select {
		case got := <-stopped:
			if got != timer {
				t.Fatal("the cleanup stopped another timer")
			}
			if held.Value() != nil {
				t.Fatal("the cleanup ran on an alarm still reachable")
			}
			return
		default:
			runtime.Gosched() // the cleanups' goroutine
		}
	}
	t.Fatal("after 100 collections, the lost alarm's timer was not stopped")
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
