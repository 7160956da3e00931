package watchdog_test

import (
	"cmp"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/watchdog"
)

// fzEntry is a watched value of FuzzWatchdog, with what the model knows
// of it.
type fzEntry struct {
	watchdog.Entry
	id  int
	log *fzLog

	watched  bool
	deadline time.Time
	seq      int // registration order of its current Watch
}

func (e *fzEntry) Expire(now time.Time) { e.log.add(e.id, now) }

// fzLog records expiries, and the batch each came in.
type fzLog struct {
	mu      sync.Mutex
	batch   int
	expired []fzExpiry
}

type fzExpiry struct {
	id, batch int
	now       time.Time
}

func (l *fzLog) add(id int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expired = append(l.expired, fzExpiry{id, l.batch, now})
}

func (l *fzLog) endBatch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batch++
}

func (l *fzLog) take() []fzExpiry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.expired
	l.expired = nil
	return out
}

// FuzzWatchdog runs Watch (new entries, moves, deadlines not in the
// future), Cancel and clock advances decoded from the input against a
// model of the watched set: every entry must expire exactly at its
// deadline, once, in registration order among equal deadlines, all of
// an instant in one batch; a cancelled or moved registration never
// fires; Watch reports false, changing nothing, for a deadline not after
// now; Cancel reports whether the entry was watched; Len follows and the
// watchdog is idle whenever the test has let it settle. With 80 entries
// and many cancels, the heap is compacted as well as drained.
//
// The watchdog runs on a mock clock, advanced to each deadline in turn;
// the synctest bubble lets synctest.Wait tell when the mock's timer
// goroutines and the watchdog have settled, and makes the Mock's sleeps
// virtual.
func FuzzWatchdog(f *testing.F) {
	f.Add([]byte{0, 1, 10, 0, 2, 10, 0, 3, 20, 6, 15, 4, 2, 7})
	f.Add([]byte{0, 5, 2, 1, 5, 3, 2, 6, 5, 0, 6, 4, 6, 20, 7, 7})
	f.Add([]byte{0, 1, 0, 0, 2, 1, 0, 3, 255, 4, 1, 4, 3, 6, 29})
	f.Fuzz(func(t *testing.T, data []byte) {
		data = data[:min(len(data), 1536)]
		synctest.Test(t, func(t *testing.T) { fuzzWatchdog(t, data) })
	})
}

func fuzzWatchdog(t *testing.T, data []byte) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	const grid = 50 * time.Microsecond
	mock := clock.NewMock()
	log := &fzLog{}
	w := watchdog.New(mock, watchdog.AfterBatch(log.endBatch))
	defer w.Stop()
	entries := make([]*fzEntry, 80)
	for i := range entries {
		entries[i] = &fzEntry{id: i, log: log}
	}
	now := mock.Now()
	seq, watched := 0, 0

	moveTo := func(to time.Time) {
		mock.Add(to.Sub(now))
		synctest.Wait()
		now = to
	}
	// advance moves the clock to target, stopping at every watched
	// deadline on the way to check what expired there.
	advance := func(target time.Time) {
		for {
			var at time.Time
			for _, e := range entries {
				if e.watched && !e.deadline.After(target) && (at.IsZero() || e.deadline.Before(at)) {
					at = e.deadline
				}
			}
			if at.IsZero() {
				break
			}
			var due []*fzEntry
			for _, e := range entries {
				if e.watched && e.deadline.Equal(at) {
					due = append(due, e)
				}
			}
			slices.SortFunc(due, func(a, b *fzEntry) int { return cmp.Compare(a.seq, b.seq) })
			moveTo(at)
			got := log.take()
			if len(got) != len(due) {
				t.Fatalf("at %v: %d expiries, want %d (%v)", at, len(got), len(due), got)
			}
			for i, e := range due {
				switch {
				case got[i].id != e.id:
					t.Fatalf("expiry %d at %v: entry %d, want %d (registration order)", i, at, got[i].id, e.id)
				case !got[i].now.Equal(at):
					t.Fatalf("entry %d expired with now %v, its deadline is %v", e.id, got[i].now, at)
				case got[i].batch != got[0].batch:
					t.Fatalf("expiries at %v in batches %d and %d", at, got[0].batch, got[i].batch)
				}
				e.watched = false
				watched--
			}
		}
		if target.After(now) {
			moveTo(target)
			if got := log.take(); len(got) > 0 {
				t.Fatalf("expiries with nothing due: %v", got)
			}
		}
	}

	for op := 0; len(data) > 0; op++ {
		switch next() % 8 {
		case 0, 1, 2, 3: // watch: new, moved, or not in the future
			e := entries[next()%len(entries)]
			b := next()
			after := time.Duration(b%40-2) * grid
			if b >= 200 {
				after += time.Duration(b%3 - 1) // a nanosecond off the grid
			}
			ok := w.Watch(&e.Entry, e, now.Add(after), now)
			if ok != (after > 0) {
				t.Fatalf("op %d: Watch of entry %d %v from now reported %v", op, e.id, after, ok)
			}
			if ok {
				if !e.watched {
					watched++
				}
				seq++
				e.watched, e.deadline, e.seq = true, now.Add(after), seq
			}
		case 4, 5:
			e := entries[next()%len(entries)]
			if got := w.Cancel(&e.Entry); got != e.watched {
				t.Fatalf("op %d: Cancel of entry %d reported %v, want %v", op, e.id, got, e.watched)
			}
			if e.watched {
				e.watched = false
				watched--
			}
		case 6:
			advance(now.Add(time.Duration(next()%30) * grid / 2))
		case 7: // to the next deadline, wherever it is
			var at time.Time
			for _, e := range entries {
				if e.watched && (at.IsZero() || e.deadline.Before(at)) {
					at = e.deadline
				}
			}
			if !at.IsZero() {
				advance(at)
			}
		}
		if got := w.Len(); got != watched {
			t.Fatalf("op %d: Len %d, want %d", op, got, watched)
		}
		if !w.Idle(now) {
			t.Fatalf("op %d: not idle once settled", op)
		}
	}
	advance(now.Add(time.Second))
	if w.Len() != 0 {
		t.Fatalf("Len %d after every deadline passed", w.Len())
	}
	w.Stop()
	e := entries[0]
	if w.Watch(&e.Entry, e, now.Add(time.Second), now) {
		t.Fatal("Watch after Stop reported true")
	}
}
