package vclock

import "time"

// eventKind says what a queued timer does when it fires.
type eventKind uint8

const (
	evSend   eventKind = iota // After: send the instant on ch
	evTick                    // Tick: send the instant on ch, and again every period
	evWake                    // Sleep: close wake
	evExpire                  // WithDeadline: end ctx with DeadlineExceeded
	evFunc                    // At: call fn
)

// event is a timer in the clock's own queue: one that hands out no
// *clock.Timer, so that nothing but the clock can stop or reset it.
type event struct {
	key    int64  // instant, as nanoseconds since the clock's start
	seq    uint64 // set order, among all the clock's timers
	index  int    // position in the queue; -1 when not in it
	kind   eventKind
	period int64 // evTick
	ch     chan time.Time
	wake   chan struct{}
	ctx    *deadlineCtx
	fn     func()
}

// events is a binary min-heap of events by (key, seq), for
// container/heap. Each event's index is kept current.
type events []*event

func (q events) Len() int { return len(q) }

func (q events) Less(i, j int) bool {
	return q[i].key < q[j].key || q[i].key == q[j].key && q[i].seq < q[j].seq
}

func (q events) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

func (q *events) Push(x any) {
	e := x.(*event)
	e.index = len(*q)
	*q = append(*q, e)
}

func (q *events) Pop() any {
	old := *q
	n := len(old) - 1
	e := old[n]
	old[n] = nil // let the event be collected once fired
	e.index = -1
	*q = old[:n]
	return e
}
