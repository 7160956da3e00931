// Package watchdog runs the one goroutine that notices passed deadlines
// for every actor of a crisp system.
//
// A Watchdog keeps pending deadlines in a 4-ary min-heap and arms a
// single timer, on its clock, for the earliest. When that timer fires, its
// goroutine reads the clock once, takes every entry whose deadline is at
// or before that reading out of the heap, and calls each entry's target
// with the reading. There is no goroutine or timer per deadline.
//
// Watch and Cancel are safe from any goroutine. Watch costs O(log n) in
// the number of pending deadlines (a random insertion moves O(1) heap
// slots on average). Cancel costs O(1): it only invalidates the entry's
// slot, which leaves the heap when it reaches the top or when more than
// half the heap is invalid and the heap is compacted. Compaction is
// amortised O(1) per Cancel, but the call that triggers it pays O(n) and
// holds the watchdog meanwhile (about 20 ms at a million pending
// deadlines; the Go runtime's own timers make the same trade). Heap moves touch only the heap's own array, never the watched
// values, which keeps a heap of a million deadlines in cache-friendly
// order. Targets are called on the watchdog's goroutine, one after
// another, except when the watchdog falls behind (a large batch found
// well after its deadlines): then one helper goroutine shares the
// batch's calls, so two targets may run at once, each still once. They
// must be quick and must not block. New starts the
// goroutine; Stop ends it and waits for it.
//
// Go fires a timer only when the processor holding it schedules, so on
// a machine whose processors run CPU-bound work the timer is late by as
// long as that work runs without blocking. Nudge lets goroutines that
// run short pieces of work one after another wake the watchdog as soon
// as a deadline has come (crisp's runners call it between messages).
//
// On the real clock on Linux the watchdog also arms a timerfd for the
// earliest deadline (fineTimer): Go's timers fire up to a millisecond
// late while the processors are idle, a timerfd within tens of
// microseconds. While the processors are busy it rests (fineRest).
//
// Under a mock clock or inside a testing/synctest bubble the timer is
// virtual, so targets are called at exactly their deadline in virtual time
// (provided the clock is advanced no further than that deadline at once).
package watchdog

import (
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/ready"
)

// Target is told when the deadline it was watched for has come.
type Target interface {
	// Expire is called once, with the clock reading at which the
	// deadline was found to have passed: on the watchdog's goroutine, or
	// on a helper when the watchdog falls behind (see the package doc).
	Expire(now time.Time)
}

// A Renewer is a Target that is usually watched again as it expires (a
// crisp actor, for the next deadline among its queued messages): the
// watchdog calls Renew in place of Expire, and watches the entry again
// for the instant Renew returns (none if it is the zero time), for the
// same target, once the calls of its share of the batch are over, under
// one lock for them all. A Watch of the entry from the moment the pass
// takes it out of the heap until then wins, and so does a Cancel or a
// Stop: the renewal is dropped.
//
// Watching again from inside Expire took the watchdog's lock once per
// target, and the watchdog's goroutine and its helper (see share) took
// it in turn, each parking on the other's hold and made runnable on the
// processor of the goroutine that let go, which ran on without
// scheduling: a runtime trace of BenchmarkMissLag (crisp) found the
// watchdog so for 12 ms while a collection's mark worker held the other
// processor.
type Renewer interface {
	Target
	// Renew is Expire for a Renewer. It returns when the entry is to
	// be watched next, or the zero time.
	Renew(now time.Time) time.Time
}

// Entry is the watchdog's handle on one watched deadline. Embed it in the
// watched value; its zero value is "not watched". An Entry belongs to one
// Watchdog for its life: watching or cancelling it in another is a misuse
// the watchdog does not detect (crisp's actors, processes and timers
// each use their system's).
//
// It holds no target: the heap slot does. crisp embeds an Entry in every
// actor, and an idle actor's size decides which allocation size class it
// falls into (issue 13), so the Entry is one word; the slot, of which
// there is one per watched deadline rather than one per actor, carries
// the target and the entry's address. (It was two words, the second
// naming the watchdog holding the entry; an actor of a pointer state was
// then 192 bytes, with it out 128.)
type Entry struct {
	// seq is the registration the entry is watched under: 0 when not
	// watched, renewing while its Renewer's renewal is pending. A heap
	// slot whose seq differs is stale (cancelled or moved). Guarded by
	// the watchdog's mu.
	seq uint64
}

// slot orders entries by deadline, then by when they were watched, so
// that deadlines at the same instant expire in a repeatable order.
type slot struct {
	key int64  // nanoseconds from the watchdog's epoch
	seq uint64 // registration number; also tells a live slot from a stale one
	e   *Entry
	t   Target // told when the slot, if live, comes due
}

func (a slot) live() bool { return a.e.seq == a.seq }

// renewing is an Entry's seq from the pass that took it out of the heap
// for a Renewer until its renewal (see Renewer); no registration gets it.
const renewing = math.MaxUint64

// expiry is a target a pass has taken out of the heap, with its entry
// and whether it is a Renewer.
type expiry struct {
	t     Target
	e     *Entry
	renew bool
}

// renewal is an entry to watch again, at key (noDue for none), once the
// goroutine that renewed it is through with its share of a batch.
type renewal struct {
	e   *Entry
	t   Target
	key int64
}

func (a slot) before(b slot) bool { return a.key < b.key || (a.key == b.key && a.seq < b.seq) }

// Option configures a Watchdog.
type Option interface{ apply(*Watchdog) }

type optionFunc func(*Watchdog)

func (f optionFunc) apply(w *Watchdog) { f(w) }

// Precision makes the watchdog wake margin before each deadline and spin,
// reading the clock, until the deadline comes, instead of trusting the
// timer to fire on time: a Go timer fires up to about a millisecond late
// on Linux, where the runtime sleeps with millisecond resolution. It
// costs CPU: up to margin of spinning for each wake-up, so a whole core
// when deadlines come closer together than margin.
//
// It takes effect only on the real clock (clock.New()), since a virtual
// clock does not move while the watchdog spins. Inside a testing/synctest
// bubble, where the real clock is virtual too, the watchdog notices that
// the clock stands still while it spins and turns precision off for good.
func Precision(margin time.Duration) Option {
	return optionFunc(func(w *Watchdog) {
		if margin > 0 {
			w.margin.Store(int64(margin))
		}
	})
}

// AfterBatch sets a function called on the watchdog's goroutine after
// every wake-up, once the entries it expired (perhaps none) have been
// handed to their targets. Systems use it to learn when the watchdog has
// gone quiet. It must not call Stop, which waits for that goroutine.
func AfterBatch(f func()) Option { return optionFunc(func(w *Watchdog) { w.afterBatch = f }) }

// Watchdog detects passed deadlines. Make one with New.
type Watchdog struct {
	clk        clock.Clock
	epoch      time.Time
	afterBatch func()
	margin     atomic.Int64  // Precision's margin, a time.Duration; 0 when off
	spinOff    atomic.Int64  // key until which Precision rests (see spinBusy)
	slowYields int           // spin's late yields in a row, over spins; the loop's goroutine only
	expired    atomic.Uint32 // passes that expired something (Expired)

	// due is the key the timer is armed for (noDue when it is not, and
	// always on a clock other than the real one; during a pass, at most
	// passMark), for
	// Nudge to compare with a clock reading without taking mu. It is
	// written under mu; Nudge swaps it to wokenDue when it claims a
	// firing, so that many goroutines noticing one due deadline wake the
	// goroutine once, and the goroutine swaps wokenDue to noDue when it
	// runs.
	due atomic.Int64

	mu    sync.Mutex // guards heap, seq, stale, timer, armed, isArm, firing, stop, entries' fields
	heap  []slot
	seq   uint64 // last registration number given out
	stale int    // slots in heap whose entry was cancelled
	timer *clock.Timer
	armed int64 // key the timer is set for; valid when isArmed
	isArm bool
	// passMark is the key by which a pass that has started should have
	// ended (see passSlack), noDue outside a pass; on the real clock only.
	passMark int64
	firing   bool // a batch has left the heap and is being expired
	kicks    int  // timer firings not yet handled by expire
	// helping counts helper goroutines still expiring part of a batch
	// the watchdog's goroutine has finished with (see share).
	helping int
	helpers sync.WaitGroup // helper goroutines, which Stop waits for
	stop    bool

	// real is set for clock.New()'s clock, the only one Nudge reads.
	real bool

	// mock is set for a *clock.Mock, whose Add fires AfterFunc callbacks
	// on goroutines of their own: for it, a timer due at the clock's now
	// has fired, and its callback may not have run yet.
	mock bool

	// fine, on the real clock on Linux, is armed beside the clock's timer
	// (see fineTimer): it fires on time when the processors are idle, the
	// clock's timer when they are busy (Go runs due timers whenever a
	// processor schedules, but polls the timerfd only when one runs out
	// of work). Whichever fires first wakes the goroutine, whose pass
	// re-arms both for the next deadline. A goroutine of its own waits on
	// fine and ends, closing fineDone, once Stop closes it.
	fine      *fineTimer
	fineDone  chan struct{}
	fineArmed bool  // fine is set; guarded by mu
	fineOff   int64 // key until which fine rests (see fineRest); guarded by mu

	kick chan struct{} // buffered(1): the timer has fired
	quit chan struct{}
	done chan struct{}

	batch []expiry   // reused by the goroutine
	renew []renewal  // the goroutine's renewals in a pass; reused
	spare [][]expiry // batches helpers have handed back, for reuse; guarded by mu

	helperRenew []renewal // a helper's renewals, kept for the next; guarded by mu
}

// New starts a watchdog on clk (the real clock if nil).
func New(clk clock.Clock, opts ...Option) *Watchdog {
	if clk == nil {
		clk = clock.New()
	}
	w := &Watchdog{
		clk:      clk,
		epoch:    clk.Now(),
		kick:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		passMark: noDue,
	}
	w.due.Store(noDue)
	for _, o := range opts {
		o.apply(w)
	}
	_, w.mock = clk.(*clock.Mock)
	w.real = reflect.TypeOf(clk) == realClockType
	if !w.real {
		w.margin.Store(0) // spinning would not see a virtual clock move
	} else if moves(clk) {
		if ft, err := newFineTimer(); err == nil {
			w.fine, w.fineDone = ft, make(chan struct{})
			go w.fineLoop()
		}
	}
	go w.loop()
	return w
}

// moves reports whether clk's readings move while the goroutine runs, as
// a real clock's do within a few readings. Inside a testing/synctest
// bubble the real clock is virtual: it stands still until every
// goroutine of the bubble blocks, and a goroutine blocked reading a
// timerfd would keep it from ever moving.
func moves(clk clock.Clock) bool {
	t0 := clk.Now()
	for range 1000 {
		if !clk.Now().Equal(t0) {
			return true
		}
	}
	return false
}

// fineLoop hands the fine timer's expirations to the watchdog's
// goroutine, as the clock's timer hands its firings (fired).
func (w *Watchdog) fineLoop() {
	defer close(w.fineDone)
	var buf [8]byte // the expiration count, which fired does not need
	for w.fine.wait(buf[:]) {
		w.mu.Lock()
		w.fineArmed = false // expired, and read
		w.kickLocked()
		w.mu.Unlock()
	}
}

// disarmFine stops the fine timer if it is set. Called with mu held.
func (w *Watchdog) disarmFine() {
	if w.fineArmed {
		w.fine.stop()
		w.fineArmed = false
	}
}

// key maps an instant to the heap's integer order. Sub uses the monotonic
// clock reading when both instants have one and saturates far from the
// epoch, so the order of keys is the order of time.Time.Before.
func (w *Watchdog) key(t time.Time) int64 { return int64(t.Sub(w.epoch)) }

// Watch arranges for t.Expire to be called once the clock reaches when,
// and reports true. If e is already watched, it moves to the new time (in
// O(1) beyond the insertion: its old slot is only invalidated). now is a
// recent reading of the watchdog's clock: if when is not after now,
// nothing is watched (e is left as it was) and Watch reports false, the
// deadline having passed. The clock is read again only if the timer must
// be re-armed. Watch also reports false after Stop.
func (w *Watchdog) Watch(e *Entry, t Target, when, now time.Time) bool {
	if !when.After(now) {
		return false
	}
	k := w.key(when)
	w.mu.Lock()
	if w.stop {
		w.mu.Unlock()
		return false
	}
	if e.seq != 0 && e.seq != renewing { // a pending renewal has no slot
		w.stale++ // its old slot
	}
	w.seq++
	e.seq = w.seq
	w.push(slot{k, w.seq, e, t})
	if !w.isArm || k < w.armed {
		// Timed from a fresh reading: now may be stale (read before the
		// lock, or by a sender racing a virtual clock's driver), and a
		// timer armed from it would fire late by as much.
		w.arm(k, w.clk.Now())
	}
	if w.stale > 64 && w.stale > len(w.heap)/2 {
		w.compact()
	}
	w.mu.Unlock()
	return true
}

// Cancel stops watching e, reporting whether this watchdog was watching
// it. After Cancel returns true, e's target will not be called for it.
// It drops a Renewer's pending renewal (reporting false: its Renew has
// been called).
// The target stays referenced by the heap until its slot reaches the top
// or the heap is compacted.
func (w *Watchdog) Cancel(e *Entry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.seq == 0 {
		return false
	}
	if e.seq == renewing {
		// Its Renew has been called, or is being: not watched, as for
		// any target taken for its deadline, but the renewal is dropped.
		e.seq = 0
		return false
	}
	e.seq = 0
	w.stale++
	// The timer stays armed even if e was the earliest: one spurious
	// wake-up is cheaper than re-arming on every Cancel.
	if w.stale > 64 && w.stale > len(w.heap)/2 {
		w.compact()
	}
	return true
}

// Len reports how many deadlines are being watched.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.heap) - w.stale
}

// next drops stale slots from the top and reports the earliest watched
// deadline's distance from the epoch, and whether there is one. Called
// with mu held.
func (w *Watchdog) next() (int64, bool) {
	for len(w.heap) > 0 && !w.heap[0].live() {
		w.stale--
		w.removeTop()
	}
	if len(w.heap) == 0 {
		return 0, false
	}
	return w.heap[0].key, true
}

// Expired returns the number of passes that have expired something so
// far, wrapping around. A pass is counted as it takes its batch, before
// it calls the targets' Expire (which, in crisp, fail messages and wake
// their callers): a change tells a goroutine that the watchdog has woken
// callers, or is about to, since it last looked.
func (w *Watchdog) Expired() uint32 { return w.expired.Load() }

// Idle reports whether, at clock reading now, the watchdog has nothing to
// do until its clock fires its timer: the timer has not fired unheeded,
// and no batch is being expired. A deadline that has come but whose timer
// the clock has not fired yet does not count: a clock driven from outside
// (package vclock) fires it only once the system is idle. With a
// *clock.Mock, whose Add fires timers but runs their callbacks on
// goroutines of their own, a timer due at now counts as fired.
func (w *Watchdog) Idle(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firing || w.kicks > 0 || w.helping > 0 {
		return false
	}
	return !w.mock || !w.isArm || w.armed > w.key(now)
}

// Stop ends the watchdog's goroutine and waits for it. Entries still
// watched are dropped without being expired. Stop is idempotent; it must
// not be called from a target or the AfterBatch function.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	if w.stop {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.stop, w.isArm, w.kicks = true, false, 0
	w.due.Store(noDue)
	if w.timer != nil {
		w.timer.Stop()
	}
	w.disarmFine() // only ever armed where there is a fine timer
	for _, sl := range w.heap {
		if sl.live() {
			sl.e.seq = 0
		}
	}
	w.heap, w.stale = nil, 0
	w.mu.Unlock()
	if w.fine != nil {
		w.fine.close()
		<-w.fineDone
	}
	close(w.quit)
	<-w.done
}

// noDue is due's value while the timer is not armed.
const noDue = math.MaxInt64

// wokenDue is due's value from a Nudge that woke the watchdog's goroutine
// for a due deadline until that goroutine runs. Meanwhile Nudge reports
// true to every caller, without reading the clock: each yields the
// processor once more. The nudging goroutine's yield nearly always hands
// its processor to the woken one (Go runs the goroutine a wake-up made
// runnable next), but one schedule in 61 takes a goroutine from the
// global run queue first: another runner, which ran its handlers for up
// to 16 messages before its next yield. With ten actors running 20-50 us
// handlers on two processors that was 1.6% of wake-ups 0.5-0.6 ms late,
// the whole p99 of the miss lag.
const wokenDue = math.MinInt64

// Nudge reports whether the earliest watched deadline has come, on the
// real clock, and if it has, wakes the watchdog's goroutine to expire it
// without waiting for the timer. It costs one atomic
// load when no deadline is watched and one monotonic clock reading
// otherwise. On any other clock it reports false at once: virtual timers
// fire exactly.
//
// Go runs a timer only when the processor holding it schedules (see
// golang/go#38860): on a machine whose processors all run CPU-bound
// goroutines, the watchdog's timer fires late by as long as they run
// without blocking. Goroutines that run one short piece of work after
// another (crisp's actor runners, between two messages) call Nudge so
// that a passed deadline is noticed within one piece of work, and then
// yield the processor to the goroutine it woke.
//
// Of many concurrent callers that see one due deadline, only the first
// wakes the goroutine. Until it runs, every caller reports true, so that
// each yields to it (see wokenDue); then they report false until the
// next deadline comes. Nudge never expires anything itself: detection
// stays on the watchdog's goroutine, in deadline order.
func (w *Watchdog) Nudge() bool {
	if w.due.Load() == noDue { // small enough to inline: the usual case costs no call
		return false
	}
	return w.nudge()
}

// Watching reports whether the watchdog, on the real clock, has a
// deadline to report within watchSoon, or has been woken for one:
// runners keep yielding now and then while it does, so that the
// goroutines that learn of misses (and the runtime's own work, such as
// the collector's) get processors promptly. It costs one atomic load
// when no deadline is watched and one monotonic clock reading otherwise.
func (w *Watchdog) Watching() bool {
	d := w.due.Load()
	if d == noDue {
		return false
	}
	return d == wokenDue || d-int64(time.Since(w.epoch)) <= int64(watchSoon) // clock seam: w.clk is the real clock (due is set only then), as in nudge
}

// watchSoon is how close the earliest deadline must be for Watching to
// report it. Further off, nothing is to be reported before the runners'
// nudges (which compare the clock with it between messages) and Go's
// preemption (every 10 ms) get there anyway, and a yield now only costs:
// beside goroutines that never yield, each yield waits behind their time
// slices, and with one deadline an hour off (the bench's crisp+dl) every
// runner yielded every 16 messages for the whole run (fork-join beside
// two such goroutines: 2.0 s against crisp's 43-47 ms without deadlines).
const watchSoon = 20 * time.Millisecond

// NotDueBy reports whether the earliest watched deadline comes after
// the key k (nanoseconds from Epoch), or none is watched, and no Nudge
// has woken the watchdog: a runner whose clock surely reads less than k
// has nothing to Nudge for (crisp's bounded start check).
func (w *Watchdog) NotDueBy(k int64) bool {
	d := w.due.Load()
	return d == noDue || d != wokenDue && k < d
}

// Epoch returns the origin of the watchdog's keys (NotDueBy): its
// clock's reading when New made it.
func (w *Watchdog) Epoch() time.Time { return w.epoch }

// NudgeAt is Nudge with now, a fresh reading of the watchdog's clock
// that the caller has at hand, in place of a reading of its own.
func (w *Watchdog) NudgeAt(now time.Time) bool {
	if w.due.Load() == noDue {
		return false
	}
	return w.nudgeAt(w.key(now))
}

// nudge is Nudge once a deadline is armed.
func (w *Watchdog) nudge() bool {
	if w.due.Load() == wokenDue { // as nudgeAt would say, without reading the clock
		return true
	}
	return w.nudgeAt(int64(time.Since(w.epoch))) // clock seam: w.clk is the real clock (due is set only then); its monotonic reading, without the wall clock
}

// nudgeAt is Nudge at key now.
func (w *Watchdog) nudgeAt(now int64) bool {
	d := w.due.Load()
	if d == wokenDue {
		return true // woken, and not yet running: yield to it again
	}
	if d == noDue || now < d || !w.due.CompareAndSwap(d, wokenDue) {
		return false
	}
	w.mu.Lock()
	w.kicks++
	if w.timer != nil {
		// Due now, the timer would fire in this processor's next
		// schedule, and the goroutine Go starts for its callback would
		// take the run-next slot that the watchdog's goroutine, woken
		// below, needs. expire re-arms it.
		w.timer.Stop()
	}
	if w.fine != nil {
		w.fineOff = now + int64(fineRest)
		w.disarmFine() // as the timer: its reader would take the run-next slot
	}
	if !w.stop {
		w.wake()
	}
	w.mu.Unlock()
	return true
}

// fineRest is how long the fine timer rests after a Nudge found a
// deadline due, or the clock's timer fired more than fineLate after the
// deadline both were set for: the processors are busy, and the runners'
// nudges and the clock's timer, which Go runs whenever a processor
// schedules, notice deadlines sooner than the fine timer, whose
// expirations Go polls for only when a processor runs out of work.
// Measured with ten actors running 20-50 us handlers (crispbench
// timeliness lag, busy, 1,000 pending): with the fine timer armed for
// every deadline the detection p99 went from 50 us to 0.5-0.7 ms, also
// with the timerfd outside Go's poller and nobody reading it, and not
// when it was set an hour late (the same system calls, no expirations):
// the kernel's timer expiring on a processor that runs a handler costs
// that much on this virtual machine, by a mechanism not known. Go's own
// timers cost no interrupt there: a busy processor runs them when it
// schedules.
const (
	fineRest = 100 * time.Millisecond
	fineLate = 2 * time.Millisecond
)

// arm sets the timer for key k. Called with mu held.
func (w *Watchdog) arm(k int64, now time.Time) {
	kn := w.key(now)
	d := time.Duration(k - kn)
	if m := time.Duration(w.margin.Load()); m > 0 && kn >= w.spinOff.Load() {
		d -= m // Precision: wake early, spin the rest
	}
	w.armed, w.isArm = k, true
	if w.real && w.due.Load() != wokenDue { // Nudge reads the real clock only; a pending wake-up stays marked
		w.due.Store(min(k, w.passMark)) // the deadline itself, not the early wake-up Precision asks for
	}
	if w.fine != nil {
		if kn >= w.fineOff {
			w.fine.set(d)
			w.fineArmed = true
		} else {
			w.disarmFine()
		}
	}
	if w.mock {
		w.armMock(k, kn)
		return
	}
	w.setTimer(d)
}

// setTimer sets the clock's timer to fire d from now. Called with mu
// held.
func (w *Watchdog) setTimer(d time.Duration) {
	if w.timer == nil {
		w.timer = w.clk.AfterFunc(d, w.fired)
	} else {
		w.timer.Reset(d)
	}
}

// armMock sets the timer for key k on a *clock.Mock, kn being a reading
// of its clock. A test may advance the Mock at any moment, also while
// the watchdog arms (a pass renewing an entry after its target woke the
// future the test waited on), and the Mock's timers are relative: Reset
// and AfterFunc count d from the clock's reading at their own call, so
// a timer set for k-kn after the clock had moved on from kn would fire
// late by as much, at a time the test may never reach. The clock is
// read again after setting the timer until it has not moved. A deadline
// already due fires at once (fireNow). Each of the two made
// TestInheritanceOnlyNarrows, which advances the clock right after a
// Get returns, hang about once in 20,000 runs beside two CPU-bound
// processes. Called with mu held.
func (w *Watchdog) armMock(k, kn int64) {
	for {
		d := time.Duration(k - kn)
		if d <= 0 {
			w.fireNow()
			return
		}
		if beforeMockTimer != nil {
			beforeMockTimer()
		}
		w.setTimer(d)
		again := w.key(w.clk.Now())
		if again == kn {
			return
		}
		kn = again
	}
}

// beforeMockTimer, if set, runs in armMock just before the Mock's timer
// is set: tests move the clock there.
var beforeMockTimer func()

// fireNow does for a *clock.Mock what its timer would do for a deadline
// already due at the clock's reading: a Mock fires timers only inside
// Add and Set, so a timer due at its now would wait for the next Add,
// which may never come. The timer is stopped: were it pending for later,
// its firing would only make a pass that finds nothing due. Called with
// mu held.
func (w *Watchdog) fireNow() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.kickLocked()
}

// fired runs in the timer's own goroutine. It only kicks the watchdog's
// goroutine, so that the timer never blocks and the clock's locks are
// never held while targets run.
func (w *Watchdog) fired() {
	w.mu.Lock()
	if w.fineArmed {
		// The fine timer was set for the same instant, and its reader
		// would have re-armed both by now on idle processors.
		if now := w.key(w.clk.Now()); now-w.armed > int64(fineLate) {
			w.fineOff = now + int64(fineRest)
		}
	}
	w.kickLocked()
	w.mu.Unlock()
}

// kickLocked records a timer's firing and wakes the goroutine, unless
// the watchdog has stopped. Called with mu held.
func (w *Watchdog) kickLocked() {
	w.kicks++
	if !w.stop {
		w.wake()
	}
}

// wake makes the watchdog's goroutine runnable, unless a wake-up is
// pending already. Until it runs, it counts as ready (package ready):
// runners with a backlog yield to it every few messages, as they do to
// the callers it wakes. Called with mu held, before Stop: after Stop, the
// loop takes a pending wake-up off the count once, and no other comes.
func (w *Watchdog) wake() {
	ready.Add(1)
	select {
	case w.kick <- struct{}{}:
	default: // pending already, and counted then
		ready.Done()
	}
}

func (w *Watchdog) loop() {
	defer close(w.done)
	defer w.helpers.Wait()
	for {
		select {
		case <-w.quit:
			select {
			case <-w.kick: // pending at Stop: counted, never to be run
				ready.Done()
			default:
			}
			return
		case <-w.kick:
			ready.Done()
		}
		if m := time.Duration(w.margin.Load()); m > 0 {
			w.due.CompareAndSwap(wokenDue, noDue) // spinning: Nudge stops yielding to it
			w.spin(m)
		}
		// A wake-up a Nudge asked for stays marked (wokenDue) until expire
		// has the lock: the runners keep yielding to the goroutine while it
		// waits for one of them to let the lock go (see expire).
		w.expire()
	}
}

// realClockType is the type of clock.New()'s clock, on which Precision
// works.
var realClockType = reflect.TypeOf(clock.New())

// spinBusy is how long two yields of spin's in a row must take for spin
// to conclude that other goroutines hold the processors, and spinRest how
// long Precision then rests: the watchdog sleeps until each deadline
// itself, as without Precision. A spinning watchdog that yields goes to
// the back of the run queue, behind every runnable goroutine: beside ten
// actors running 20-50 us handlers on two processors it came back after
// the deadlines it spun for (lag p99 5.2-5.5 ms, against 1.6-3.6 ms
// without Precision), while the runners, which compare the clock with
// the deadline between messages (Nudge), wake it on time (0.45-0.6 ms
// resting). One slow yield is not enough: the first yield after a batch
// runs the callers the watchdog has just woken, and resting on it took,
// with 100,000 callers whose deadlines come 20 us apart, the p99 from
// 0.07 to 1.6 ms (one run, on a machine running other work). A rest of
// a second costs, on a machine that stays busy, one late detection a
// second.
//
// The two yields in a row are counted across spins (slowYields), not
// within one: beside CPU-bound handlers a spin's first yield comes back
// after the deadline it spun for, the spin ends there, and counted per
// spin no second slow yield ever came. Precision then never rested and
// detected later than the runners' nudges alone (crispbench timeliness
// lag, ten actors, one pending deadline, detection p99: 20-50 us
// handlers 0.22-0.27 ms against 0.04-0.05 ms without Precision; 250-350
// us handlers 1.6-1.8 ms against 0.28-0.45 ms). Counted across spins it
// rests after two such deadlines and detects as the nudges do (0.04-0.06
// ms; 0.36-0.63 ms). Beside goroutines that never yield it rests too,
// where spinning had won it a larger share of the processors: with 1,000
// pending deadlines and busy actors its lag p99 went from 57-74 ms to
// 88-105 ms (71-97 ms without Precision).
const (
	spinBusy = 50 * time.Microsecond
	spinRest = time.Second
)

// spinYield is how spin yields the processor; tests stand in for the
// other goroutines that would run meanwhile.
var spinYield = runtime.Gosched

// stillReads is how many consecutive reads of an unmoving clock make spin
// conclude that the clock is virtual: far more than a real clock, even a
// coarse one, allows while spinning.
const stillReads = 100_000

// spin waits, reading the clock, until the earliest deadline comes, if it
// is within margin. It re-reads the earliest deadline as it goes (Watch
// may bring it closer, Cancel take it away), so it ends within margin of
// real time, and yields the processor now and then so other goroutines on
// it still run. A clock that does not move turns precision off.
func (w *Watchdog) spin(margin time.Duration) {
	if w.key(w.clk.Now()) < w.spinOff.Load() {
		return // resting: see spinBusy
	}
	var last int64
	still := 0
	for i := 1; ; i++ {
		w.mu.Lock()
		k, ok := w.next()
		w.mu.Unlock()
		if !ok {
			return
		}
		now := w.key(w.clk.Now())
		if d := time.Duration(k - now); d <= 0 || d > margin {
			return // due, or too far off: the timer takes it
		}
		if now != last {
			last, still = now, 0
		} else if still++; still == stillReads {
			w.margin.Store(0) // expire re-arms for the deadline itself
			return
		}
		if i%16 == 0 {
			spinYield()
			if back := w.key(w.clk.Now()); back-now <= int64(spinBusy) {
				w.slowYields = 0
			} else if w.slowYields++; w.slowYields == 2 {
				w.slowYields = 0
				// Other goroutines hold the processors: spinning cannot
				// keep up with them. Rest, with the timer set for the
				// deadline itself (arm) and the runners nudging at it.
				w.spinOff.Store(back + int64(spinRest))
				return
			}
		}
	}
}

// expire hands every passed deadline to its target and re-arms the timer.
//
// It takes mu with ready.Lock, counted as ready while it waits: runners
// take mu too (Watch, for the deadlines they queue), and one's Unlock
// left the goroutine runnable on that runner's processor, uncounted and
// with due cleared (the loop used to clear a Nudge's wokenDue before
// expire), so no runner yielded to it: a runtime trace of a stalled run
// of crispbench's busy lag cell (ten actors running 20-50 us handlers,
// 1,000 pending deadlines, p99 11.4 ms) found it runnable for 18.6 ms
// while the two runners ran on.
func (w *Watchdog) expire() {
	now := w.clk.Now()
	nk := w.key(now)
	ready.Lock(&w.mu)
	if w.stop {
		w.mu.Unlock()
		return
	}
	seen := w.kicks // firings this pass answers; later ones need another
	w.isArm = false
	w.due.Store(noDue)
	if w.real {
		w.passMark = nk + int64(passSlack)
		w.due.Store(w.passMark)
	}
	batch := w.batch[:0]
	if batch == nil && len(w.spare) > 0 {
		batch = w.spare[len(w.spare)-1]
		w.spare = w.spare[:len(w.spare)-1]
	}
	first := nk // key of the earliest deadline in the batch
	for len(w.heap) > 0 && w.heap[0].key <= nk {
		top := w.heap[0]
		first = min(first, top.key)
		w.removeTop()
		if !top.live() {
			w.stale--
			continue
		}
		_, renew := top.t.(Renewer)
		batch = append(batch, expiry{top.t, top.e, renew})
		if renew {
			top.e.seq = renewing
		} else {
			top.e.seq = 0
		}
	}
	w.firing = len(batch) > 0
	if w.firing {
		w.expired.Add(1)
	}
	if k, ok := w.next(); ok {
		// Measured from a fresh reading: taking the lock and the batch
		// took time, and the timer must not be late by that much.
		w.arm(k, w.clk.Now())
	}
	help := len(batch) >= helpMin && nk-first >= int64(helpBehind) && runtime.GOMAXPROCS(0) > 1
	var helperRenew []renewal
	if help {
		w.helping++
		w.helpers.Add(1)
		helperRenew, w.helperRenew = w.helperRenew, nil
	}
	w.mu.Unlock()

	renew := w.renew[:0]
	if help {
		renew = w.share(batch, now, renew, helperRenew) // sets w.batch
	} else {
		for i := range batch {
			renew = w.call(&batch[i], now, renew)
			batch[i] = expiry{}
		}
		w.batch = batch[:0]
	}

	ready.Lock(&w.mu)
	w.renewAll(renew)
	clear(renew)
	w.renew = renew[:0]
	w.firing = false
	w.kicks -= seen
	w.endPass()
	w.mu.Unlock()
	if w.afterBatch != nil {
		w.afterBatch()
	}
}

// endPass ends a pass's mark (passSlack): due is the armed deadline
// again, or noDue, unless a Nudge has claimed a wake-up meanwhile. Called
// with mu held.
func (w *Watchdog) endPass() {
	if w.passMark == noDue {
		return
	}
	w.passMark = noDue
	restore := int64(noDue)
	if w.isArm {
		restore = w.armed
	}
	if d := w.due.Load(); d != wokenDue {
		w.due.CompareAndSwap(d, restore) // a Nudge's claim, coming now, wins
	}
}

// passSlack is how long a pass of the watchdog's goroutine may run before
// the runners' nudges take it for stuck: while it runs, due is at most
// the pass's start plus passSlack (passMark), so a Nudge after that
// reports true, as for a deadline the timer has not fired for: the
// runners wake the goroutine (the wake-up counts it as ready) and yield
// to it after every message until the pass has ended and the wake-up
// has been taken. The slack keeps an ordinary pass from making them
// yield at all.
//
// A pass can stop mid-way for a long time without blocking: Go preempts
// the goroutine (for the collector, or after its processor's time slice,
// which a goroutine made runnable by a runner inherits) and puts it back
// in a run queue, where, behind runners that never yield, it waits until
// Go preempts them too, 10 ms each or more. Meanwhile nothing made them
// yield: due was noDue (the heap was empty, or the pass had not armed
// the timer yet), and the watchdog, neither blocked nor waiting for a
// wake-up, did not count as ready. A runtime trace of a stalled run of
// crispbench's busy lag cell (ten actors running 20-50 us handlers,
// 1,000 pending deadlines, p99 30.7 ms; about one run in seven stalled
// so): the goroutine preempted in removeTop during a collection, then
// runnable for 38 ms while four runners ran spans of 17-20 ms. The same
// cell with 250-350 us handlers stalled so too (37-78 ms). Measured
// (Intel Xeon 2 vCPU, quiet, 1,000 pending, runs alternated with the
// build before): with the mark alone, 3 of 18 runs of the two cells
// still stalled 4-12 ms (the other cause: see expire); with both, none
// of 13 runs of each cell, against 6 of 62 cell runs (8-78 ms) before.
var passSlack = 200 * time.Microsecond

// When the watchdog falls behind (a batch of at least helpMin targets,
// the earliest due helpBehind or more before the reading that found
// them), it shares the batch's Expire calls with one helper goroutine.
// Detection stays on the watchdog's goroutine: the batch is taken out
// of the heap, in order, before anyone expires it; only the targets'
// work (failing messages, waking their callers) is shared. A helper
// pays only where a processor is idle: the new goroutine waits in the
// watchdog's processor's run queue until another processor, finding
// nothing else to do, takes it, and if none does, it starts only after
// the watchdog's goroutine has claimed every target and finds nothing
// left. On virtual time the watchdog is never behind, so targets are
// called in the same order as without helpers.
const (
	helpMin    = 32
	helpBehind = 50 * time.Microsecond
)

// share calls every target of batch, each exactly once, on this
// goroutine and one helper, which claim targets in order from a shared
// counter. It returns renew with this goroutine's renewals appended; the
// helper renews its own (appended to helperRenew). Whichever is done with batch last keeps it for
// reuse: w.batch, or w.spare for the helper.
func (w *Watchdog) share(batch []expiry, now time.Time, renew, helperRenew []renewal) []renewal {
	var next atomic.Int64
	// claim calls targets until none is left; with flush > 0 it watches
	// its renewals again each time it holds flush of them.
	claim := func(renew []renewal, flush int) []renewal {
		for {
			i := next.Add(1) - 1
			if i >= int64(len(batch)) {
				return renew
			}
			renew = w.call(&batch[i], now, renew)
			if flush > 0 && len(renew) == flush {
				ready.Lock(&w.mu)
				w.renewAll(renew)
				w.mu.Unlock()
				clear(renew)
				renew = renew[:0]
			}
		}
	}
	// The goroutine done last with batch keeps it for the next pass.
	var left atomic.Int32
	left.Store(2)
	go func() {
		defer w.helpers.Done()
		renew := claim(helperRenew, helperFlush)
		last := left.Add(-1) == 0
		ready.Lock(&w.mu)
		w.renewAll(renew)
		clear(renew)
		w.helperRenew = renew[:0]
		w.helping--
		if last {
			clear(batch)
			w.spare = append(w.spare, batch[:0])
		}
		w.mu.Unlock()
		if w.afterBatch != nil {
			w.afterBatch() // WaitIdle's waiters may be waiting for this helper
		}
	}()
	// The helper waits in this processor's run queue. Where the other
	// processor runs the collector's idle-time mark worker, which looks
	// for work only in its own run queue and the global one, it waited
	// there until this goroutine had claimed the whole batch (a runtime
	// trace of BenchmarkMissLag: 20 ms). A yield puts this goroutine in
	// the global queue and the helper on this processor; the mark worker
	// then gives its processor up to the watchdog's goroutine.
	// Beside goroutines that never yield it would wait out one of their
	// time slices: YieldGlobal does not yield then.
	ready.Add(1)
	ready.YieldGlobal()
	ready.Done()
	renew = claim(renew, 0)
	w.batch = nil
	if left.Add(-1) == 0 {
		clear(batch)
		w.batch = batch[:0]
	}
	return renew
}

// helperFlush is how many renewals a helper keeps before it watches them
// again (the watchdog's goroutine keeps its own until its share is
// done: nothing would expire them sooner). Beside goroutines that never
// yield, a helper waits out their time slices now and then, and the
// renewals it held waited with it: BenchmarkMissLag's cell beside two
// such goroutines went from p99 55 to 64-68 ms with all held to the end.
const helperFlush = 64

// call calls x's target, its Renew or its Expire, and returns renew
// with the renewal appended for a Renewer.
func (w *Watchdog) call(x *expiry, now time.Time, renew []renewal) []renewal {
	if !x.renew {
		x.t.Expire(now)
		return renew
	}
	r := renewal{x.e, x.t, noDue}
	if when := x.t.(Renewer).Renew(now); !when.IsZero() {
		r.key = w.key(when)
	}
	return append(renew, r)
}

// renewAll watches renewed entries again, unless they have been
// watched or cancelled since, or the watchdog has stopped. Called with
// mu held.
func (w *Watchdog) renewAll(rs []renewal) {
	for _, r := range rs {
		if r.e.seq != renewing {
			continue // watched again, or cancelled, meanwhile
		}
		if r.key == noDue || w.stop {
			r.e.seq = 0
			continue
		}
		w.seq++
		r.e.seq = w.seq
		w.push(slot{r.key, w.seq, r.e, r.t})
		if !w.isArm || r.key < w.armed {
			w.arm(r.key, w.clk.Now())
		}
	}
}

// The heap is 4-ary: the children of slot i are 4i+1 to 4i+4. Half the
// depth of a binary heap, and the four children share one or two cache
// lines.

// push adds s to the heap. Called with mu held.
//
// The heap grows by doubling, where append grows a large slice by a
// quarter: a system whose actors each queue a deadline behind a running
// handler once (bench's ring-100k with deadlines: 100,000 entries of 40
// bytes, one per actor, watched for an hour) left about five times the
// final heap behind as garbage, 47 bytes allocated a hop against 24
// without deadlines, and a second collection a run (the write barriers
// it turns on, 7.5% of the CPU profile, are absent without deadlines:
// that they are this collection's is inferred). Doubling: 35 bytes a
// hop, one collection; whole process
// CPU time 0.78 (0.71-0.98; 8 pairs) of before (AMD EPYC 2 vCPU,
// BENCHMARKS.md, fortieth session).
func (w *Watchdog) push(s slot) {
	if len(w.heap) == cap(w.heap) {
		grown := make([]slot, len(w.heap), max(64, 2*cap(w.heap)))
		copy(grown, w.heap)
		w.heap = grown
	}
	w.heap = append(w.heap, s)
	w.up(len(w.heap) - 1)
}

// removeTop deletes slot 0. Called with mu held.
func (w *Watchdog) removeTop() {
	last := len(w.heap) - 1
	w.heap[0] = w.heap[last]
	w.heap[last] = slot{} // drop the reference so the entry can be collected
	w.heap = w.heap[:last]
	if last > 0 {
		w.down(0)
	}
}

// compact drops every stale slot and restores heap order, in O(n).
// Called with mu held.
func (w *Watchdog) compact() {
	live := w.heap[:0]
	for _, sl := range w.heap {
		if sl.live() {
			live = append(live, sl)
		}
	}
	clear(w.heap[len(live):])
	w.heap, w.stale = live, 0
	for i := (len(w.heap) - 2) / 4; len(w.heap) > 1 && i >= 0; i-- { // parents only
		w.down(i)
	}
}

func (w *Watchdog) up(j int) {
	s := w.heap[j]
	for j > 0 {
		i := (j - 1) / 4
		if !s.before(w.heap[i]) {
			break
		}
		w.heap[j] = w.heap[i]
		j = i
	}
	w.heap[j] = s
}

func (w *Watchdog) down(i int) {
	n := len(w.heap)
	s := w.heap[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if w.heap[k].before(w.heap[m]) {
				m = k
			}
		}
		if !w.heap[m].before(s) {
			break
		}
		w.heap[i] = w.heap[m]
		i = m
	}
	w.heap[i] = s
}
