package replay

import (
	"container/heap"
	"sync"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/vclock"
)

// A sequencer gives turns, one at a time, in the order of
// their keys, once everything else due at the current virtual instant
// is done.
//
// The virtual clock fires one timer at a time, but one timer can set off
// work on several actors at once: when two nodes finish at the same
// instant, the Controller hears of them in whichever order their
// goroutines happen to run. Whatever the Controller does that depends on
// that order (choosing the least loaded node, sending a job where it may
// overtake another) waits for its turn. Turns are handed out by clock
// functions at the current instant, which run after every timer already
// due then and each in a round of its own, with the system idle in
// between: by the first turn, the instant's other work is done, and each
// turn's work is done before the next.
type sequencer struct {
	clk *vclock.Clock

	mu      sync.Mutex // guards waiting and armed
	waiting turnHeap
	armed   bool // a clock function will hand out the next turn
}

// turnKey orders turns: by job, then attempt, then phase.
type turnKey struct {
	job     uint64
	attempt int
	phase   uint8
}

// The phases of an attempt that wait for a turn.
const (
	phaseTimeout uint8 = iota + 1 // deciding whether a result beat its timeout
	phaseRetry                    // choosing the node to retry on
	phaseCheck                    // a literal status check (tests)
)

func (a turnKey) less(b turnKey) bool {
	if a.job != b.job {
		return a.job < b.job
	}
	if a.attempt != b.attempt {
		return a.attempt < b.attempt
	}
	return a.phase < b.phase
}

type turn struct {
	key   turnKey
	ready future.Promise[struct{}]
}

// next returns a future that resolves at key's turn.
func (s *sequencer) next(key turnKey) *future.Future[struct{}] {
	t := &turn{key: key}
	s.mu.Lock()
	heap.Push(&s.waiting, t)
	if !s.armed {
		s.armed = true
		s.clk.At(s.clk.Now(), s.give)
	}
	s.mu.Unlock()
	return t.ready.Future()
}

// give hands out one turn; it runs on the clock's driver.
func (s *sequencer) give() {
	s.mu.Lock()
	t := heap.Pop(&s.waiting).(*turn)
	if s.waiting.Len() > 0 {
		s.clk.At(s.clk.Now(), s.give)
	} else {
		s.armed = false
	}
	s.mu.Unlock()
	t.ready.Resolve(struct{}{}, nil)
}

// turnHeap is a min-heap of turns by key.
type turnHeap []*turn

func (h turnHeap) Len() int           { return len(h) }
func (h turnHeap) Less(i, j int) bool { return h[i].key.less(h[j].key) }
func (h turnHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *turnHeap) Push(x any)        { *h = append(*h, x.(*turn)) }
func (h *turnHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil // the popped turn is the caller's now
	*h = old[:len(old)-1]
	return t
}
