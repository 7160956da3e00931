package vclock

import (
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
)

// The ledger is the clock.Mock behind the *clock.Timer and *clock.Ticker
// values a Clock hands out (the package documentation says why). Their
// owners call Stop and Reset, which are the Mock's code and work on its
// fields under its lock: a pending timer is in the Mock's timers list with
// stopped false, and Reset computes the new instant from the Mock's now.
// The Clock keeps that now equal to its own, reads the list at every
// round, and fires a timer by doing what Mock's runNextTimer and Tick do
// (mark it stopped and take it out of the list, or move a ticker on),
// under the Mock's lock, without their real sleeps and goroutines.

// shape is where clock v1.3.5 keeps what the ledger reads and writes:
// field offsets, and the dynamic types of the Mock's list entries. It is
// found by name and type, never assumed.
type shape struct {
	mockMu, mockNow, mockTimers                 uintptr
	listType                                    reflect.Type // []clockTimer
	timerC, timerFn, timerNext, timerStopped    uintptr
	tickerC, tickerD, tickerNext, tickerStopped uintptr
	timerEntry, tickerEntry                     reflect.Type // *internalTimer, *internalTicker
}

var loadShape = sync.OnceValues(func() (*shape, error) {
	var (
		s       shape
		missing []string
	)
	offset := func(t reflect.Type, name string, want reflect.Type) uintptr {
		f, ok := t.FieldByName(name)
		if !ok || want != nil && f.Type != want {
			missing = append(missing, t.Name()+"."+name)
			return 0
		}
		return f.Offset
	}
	var (
		mock, timer, ticker = reflect.TypeFor[clock.Mock](), reflect.TypeFor[clock.Timer](), reflect.TypeFor[clock.Ticker]()
		mutex, instant      = reflect.TypeFor[sync.Mutex](), reflect.TypeFor[time.Time]()
		ch, flag            = reflect.TypeFor[chan time.Time](), reflect.TypeFor[bool]()
	)
	s.mockMu = offset(mock, "mu", mutex)
	s.mockNow = offset(mock, "now", instant)
	s.mockTimers = offset(mock, "timers", nil)
	s.timerC = offset(timer, "c", ch)
	s.timerFn = offset(timer, "fn", reflect.TypeFor[func()]())
	s.timerNext = offset(timer, "next", instant)
	s.timerStopped = offset(timer, "stopped", flag)
	s.tickerC = offset(ticker, "c", ch)
	s.tickerD = offset(ticker, "d", reflect.TypeFor[time.Duration]())
	s.tickerNext = offset(ticker, "next", instant)
	s.tickerStopped = offset(ticker, "stopped", flag)
	if len(missing) > 0 {
		return nil, fmt.Errorf("no fields %v", missing)
	}
	f, _ := mock.FieldByName("timers")
	s.listType = f.Type
	if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Interface {
		return nil, fmt.Errorf("field Mock.timers is a %v", f.Type)
	}

	// Learn the list's entry types from a Mock holding one of each, and
	// check that entries are the very structs handed out.
	m := clock.NewMock()
	t, k := m.AfterFunc(time.Hour, func() {}), m.Ticker(time.Hour)
	list := reflect.NewAt(s.listType, unsafe.Add(unsafe.Pointer(m), s.mockTimers)).Elem()
	if list.Len() != 2 {
		return nil, fmt.Errorf("field Mock.timers has %d entries for 2 timers", list.Len())
	}
	te, ke := list.Index(0).Elem(), list.Index(1).Elem()
	if te.Kind() != reflect.Pointer || te.UnsafePointer() != unsafe.Pointer(t) ||
		ke.Kind() != reflect.Pointer || ke.UnsafePointer() != unsafe.Pointer(k) {
		return nil, fmt.Errorf("field Mock.timers does not hold the timers handed out")
	}
	s.timerEntry, s.tickerEntry = te.Type(), ke.Type()
	return &s, nil
})

// field returns a pointer to the field at offset off in the struct at p.
// The offsets come from shape, checked against the field's type there.
func field[T any](p unsafe.Pointer, off uintptr) *T { return (*T)(unsafe.Add(p, off)) }

type ledger struct {
	m     *clock.Mock // makes the timers; never advanced
	s     *shape
	mu    *sync.Mutex                 // the Mock's own lock
	now   *time.Time                  // the Mock's now; guarded by mu
	list  reflect.Value               // the Mock's timers: pending timers; guarded by mu
	known map[unsafe.Pointer]*tracked // by timer address
	round uint64                      // counts scans; guarded, like known, by the Clock's mu
}

// tracked is what the Clock last saw of a pending timer in the ledger.
type tracked struct {
	next   *time.Time // the timer's next field; read under the lock
	ticker bool
	at     time.Time // *next when last seen
	key    int64     // at, as a Clock key
	seq    uint64    // set order, renewed whenever at changes
	round  uint64    // last scan that found it pending
}

func newLedger(start time.Time) *ledger {
	s, err := loadShape()
	if err != nil {
		panic("vclock: github.com/benbjohnson/clock is not laid out as in v1.3.5, which this package reads: " + err.Error())
	}
	m := clock.NewMock()
	p := unsafe.Pointer(m)
	l := &ledger{
		m:     m,
		s:     s,
		mu:    field[sync.Mutex](p, s.mockMu),
		now:   field[time.Time](p, s.mockNow),
		list:  reflect.NewAt(s.listType, unsafe.Add(p, s.mockTimers)).Elem(),
		known: make(map[unsafe.Pointer]*tracked),
	}
	l.lock()
	l.setNow(start)
	l.unlock()
	return l
}

func (l *ledger) lock()   { l.mu.Lock() }
func (l *ledger) unlock() { l.mu.Unlock() }

// setNow keeps the Mock's now equal to the Clock's, so that the Mock's
// Reset and Ticker compute the same instants. Called with the lock held.
func (l *ledger) setNow(t time.Time) { *l.now = t }

// track starts tracking the timer or ticker at p; the caller sets the
// instant it is due. Called with the Clock's mu held.
func (l *ledger) track(p unsafe.Pointer, ticker bool) *tracked {
	t := &tracked{next: field[time.Time](p, l.s.timerNext), ticker: ticker, round: l.round}
	if ticker {
		t.next = field[time.Time](p, l.s.tickerNext)
	}
	l.known[p] = t
	return t
}

// set records that t is due at next, which gives it a new set order.
// Called with the Clock's mu held.
func (t *tracked) set(c *Clock, next time.Time) {
	t.at, t.key, t.seq = next, c.keyOf(next), c.nextSeq()
}

// timer makes a *clock.Timer due d from now, calling f or, if f is nil,
// sending on its channel. Called with the Clock's mu held, not the lock.
func (l *ledger) timer(c *Clock, d time.Duration, f func()) *clock.Timer {
	t := l.m.AfterFunc(d, f) // the Mock's Timer would fire due timers itself
	p := unsafe.Pointer(t)
	l.track(p, false).set(c, c.now.Add(d))
	if f != nil {
		return t
	}
	ch := *field[chan time.Time](p, l.s.timerC)
	t.C = ch
	if d <= 0 { // due now: fire at once, as the real timer does
		l.lock()
		for i := l.list.Len() - 1; i >= 0; i-- {
			if l.list.Index(i).Elem().UnsafePointer() == p {
				l.take(i, p)
				break
			}
		}
		l.unlock()
		ch <- c.now
	}
	return t
}

// ticker makes a *clock.Ticker with period d. Called with the Clock's mu
// held, not the lock.
func (l *ledger) ticker(c *Clock, d time.Duration) *clock.Ticker {
	t := l.m.Ticker(d)
	l.track(unsafe.Pointer(t), true).set(c, c.now.Add(d))
	return t
}

// scan looks at every pending timer in the ledger and reports the
// earliest: its key, its set order, its index in the list, and whether
// there is one. A timer found for the first time (Reset after firing or
// Stop) or due at a new instant (Reset while pending) gets a new set
// order; timers no longer pending (Stop) are forgotten. Called with the
// Clock's mu and the lock held.
func (l *ledger) scan(c *Clock) (key int64, seq uint64, index int, ok bool) {
	l.round++
	n := l.list.Len()
	for i := range n {
		e := l.list.Index(i).Elem()
		p := e.UnsafePointer()
		t := l.known[p]
		if t == nil {
			t = l.track(p, e.Type() == l.s.tickerEntry)
			t.set(c, *t.next)
		} else if *t.next != t.at {
			t.set(c, *t.next)
		}
		t.round = l.round
		if !ok || t.key < key || t.key == key && t.seq < seq {
			key, seq, index, ok = t.key, t.seq, i, true
		}
	}
	if len(l.known) > n {
		for p, t := range l.known {
			if t.round != l.round {
				delete(l.known, p)
			}
		}
	}
	return key, seq, index, ok
}

// claim fires the timer at list index i, which scan has just reported
// earliest and the Clock has moved to: a timer is marked stopped and
// taken out of the list, a ticker moved on by its period. It returns what
// the driver must then do. Called with the Clock's mu and the lock held,
// held since the scan.
func (l *ledger) claim(c *Clock, i int) firing {
	p := l.list.Index(i).Elem().UnsafePointer()
	if t := l.known[p]; t.ticker {
		d := *field[time.Duration](p, l.s.tickerD)
		if d > 0 {
			*t.next = c.now.Add(d)
			t.set(c, *t.next)
		} else { // Reset to a period the real ticker refuses: tick once, then stop
			*field[bool](p, l.s.tickerStopped) = true
			l.remove(i)
			delete(l.known, p)
		}
		return firing{at: c.now, ch: *field[chan time.Time](p, l.s.tickerC)}
	}
	l.take(i, p)
	if fn := *field[func()](p, l.s.timerFn); fn != nil {
		return firing{fn: fn}
	}
	return firing{at: c.now, ch: *field[chan time.Time](p, l.s.timerC)}
}

// take marks the timer at list index i (at address p) fired: stopped,
// out of the list, forgotten. Called with the lock held.
func (l *ledger) take(i int, p unsafe.Pointer) {
	*field[bool](p, l.s.timerStopped) = true
	l.remove(i)
	delete(l.known, p)
}

// remove deletes list entry i, keeping the others in order. Called with
// the lock held.
func (l *ledger) remove(i int) {
	n := l.list.Len()
	reflect.Copy(l.list.Slice(i, n), l.list.Slice(i+1, n))
	l.list.Index(n - 1).SetZero()
	l.list.SetLen(n - 1)
}
