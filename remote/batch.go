package remote

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A sender coalesces the frames bound for one subject (calls) or one
// caller's inbox (replies) into NATS messages. A frame is appended to
// the sender's pending batch, and the sender is queued on its node's
// flusher of calls or of replies; the flusher, a goroutine that runs
// while some sender has frames, publishes each queued sender's batch.
// Under load many frames share one message, and the messages of several
// subjects one write on the socket (NATS's own flusher writes what was
// published before it runs); nothing waits for a timer.
//
// Frames are never reordered: a sender's batches are published by one
// goroutine at a time, in order.
type sender struct {
	n       *Node
	subject string
	calls   bool // batches of calls: each gets its reply subject, <inbox>.b<batch>

	mu     sync.Mutex // guards buf, ps, queued, spare, spps
	buf    []byte     // frames waiting, each with its length prefix
	ps     []*pending // with calls: the pending of each frame in buf, in order
	queued bool       // on the flusher's queue: buf is published soon
	spare  []byte     // the buffer of the previous publish, for reuse
	spps   []*pending
}

// A flusher publishes the batches of the senders queued on it: a node
// has one for its calls and one for its replies. Its goroutine starts
// when a sender is queued while none runs, and ends when no sender is
// queued.
type flusher struct {
	n     *Node
	calls bool

	mu      sync.Mutex // guards queue, running, spare
	queue   []*sender  // senders with frames, in the order they were queued
	running bool       // a goroutine publishes the queue
	spare   []*sender
}

// maxBatch bounds the bytes of one NATS message of frames (or the
// server's max_payload if smaller); a larger frame goes alone in its own
// message.
const maxBatch = 1 << 20

// senderFor returns the node's sender of calls to subject, or with
// calls false of replies to the caller's inbox subject (they go to
// subject.r), making it on first use.
func (n *Node) senderFor(subject string, calls bool) *sender {
	m := &n.replySenders
	if calls {
		m = &n.callSenders
	}
	if s, ok := m.Load(subject); ok {
		return s.(*sender)
	}
	s := &sender{n: n, subject: subject, calls: calls}
	if !calls {
		s.subject = strings.Clone(subject) + ".r"
	}
	v, _ := m.LoadOrStore(strings.Clone(subject), s)
	return v.(*sender)
}

// add appends a frame made by appendFrame to the batch, with the
// pending call it belongs to (nil for a reply), and queues the sender
// on its flusher if it is not queued already. A call whose publish
// fails is finished with the error.
func (s *sender) add(p *pending, appendFrame func([]byte) []byte) {
	s.mu.Lock()
	s.buf = appendFrame(s.buf)
	if s.calls {
		s.ps = append(s.ps, p)
	}
	queued := s.queued
	s.queued = true
	s.mu.Unlock()
	if !queued {
		f := &s.n.replyFlusher
		if s.calls {
			f = &s.n.callFlusher
		}
		f.enqueue(s)
	}
}

// enqueue queues s, and starts the flusher's goroutine if none runs.
// While the node closes, the caller flushes itself instead.
func (f *flusher) enqueue(s *sender) {
	f.mu.Lock()
	f.queue = append(f.queue, s)
	if f.running {
		f.mu.Unlock()
		return
	}
	f.running = true
	f.mu.Unlock()
	if f.n.startDrain() {
		go func() {
			f.run()
			f.n.drains.Done()
		}()
		return
	}
	f.run()
}

// run publishes the queued senders' batches until none is queued. The
// goroutine starts on the processor of the goroutine that queued the
// first frame, and runs once that one blocks or yields: an actor that
// answers a batch of requests has made all its replies by then. When
// more frames are likely coming (other calls are out, or other requests
// are being served), it first yields once (see Node.yield), so that the
// goroutines runnable meanwhile add theirs.
func (f *flusher) run() {
	if f.moreComing() {
		f.n.yield()
	}
	for {
		f.mu.Lock()
		q := f.queue
		if len(q) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.queue = f.spare[:0]
		f.mu.Unlock()
		for _, s := range q {
			s.flush()
		}
		clear(q)
		f.mu.Lock()
		f.spare = q
		f.mu.Unlock()
	}
}

// moreComing reports whether more frames are likely to follow soon: for
// calls, whether calls are out besides those queued (their answers make
// callers call again); for replies, whether requests are being served.
func (f *flusher) moreComing() bool {
	if f.calls {
		return f.n.outstanding.Load() > 1
	}
	return f.n.serving.Load() > 0
}

// flush publishes the sender's batch; only the flusher's goroutine
// calls it.
func (s *sender) flush() {
	s.mu.Lock()
	buf, ps := s.buf, s.ps
	s.buf, s.ps = s.spare[:0], s.spps[:0]
	s.queued = false
	s.mu.Unlock()
	s.publish(buf, ps)
	clear(ps)              // let the pendings go
	if cap(buf) > 64<<10 { // a burst of large frames: do not keep its buffer
		buf = nil
	}
	s.mu.Lock()
	s.spare, s.spps = buf, ps
	s.mu.Unlock()
}

// publish sends buf's frames in messages of at most maxBatch bytes
// (whole frames), each to the sender's subject.
func (s *sender) publish(buf []byte, ps []*pending) {
	limit := min(maxBatch, int(s.n.nc.MaxPayload()))
	for len(buf) > 0 {
		end, k := 0, 0 // bytes and frames of this message
		for end < len(buf) {
			n := lenPrefix + int(binary.BigEndian.Uint32(buf[end:]))
			if end > 0 && end+n > limit {
				break
			}
			end += n
			k++
		}
		var err error
		if s.calls {
			b := s.n.batch.Add(1)
			for _, p := range ps[:k] {
				p.batch.Store(b)
			}
			reply := s.n.inbox + ".b" + strconv.FormatUint(b, 36)
			err = s.n.nc.PublishRequest(s.subject, reply, buf[:end])
			if err != nil {
				s.n.failPublish(ps[:k], err)
			}
			ps = ps[k:]
		} else {
			_ = s.n.nc.Publish(s.subject, buf[:end]) // a lost reply: the caller's bound covers it
		}
		buf = buf[end:]
	}
}

// startDrain counts a flusher's goroutine in, unless the node is
// closing (then the goroutine that queued publishes itself).
func (n *Node) startDrain() bool {
	n.dmu.Lock()
	defer n.dmu.Unlock()
	if n.stopping {
		return false
	}
	n.drains.Add(1)
	return true
}

// batchOf is the batch a pending call's frame went out in (0: not yet
// sent): a no-responders notice names the batch, not the calls.
type batchOf = atomic.Uint64

// Yields of a flusher before it publishes (see yield).
const (
	slowYield   = time.Millisecond      // a yield this long waited behind goroutines that do not yield
	noYield     = 10 * time.Millisecond // after one, flushers do not yield for this long,
	maxNoYield  = time.Second           // doubled after each further slow one, up to this
	slowBackoff = 7                     // 10ms << 7 = 1.28s: maxNoYield caps it
)

// yield is what a flusher does before publishing when more frames are
// likely coming: it yields the processor once, so that the goroutines
// runnable meanwhile (callers woken by answers, actors serving
// requests) add their frames to the batch. Measured, yielding cuts the
// messages of 4x100 calls about fivefold and the CPU per call by a third
// (remotebench). But a yielded goroutine waits in the scheduler's global
// queue, behind the goroutines preempted there: beside goroutines that
// never yield, one yield costs one of their time slices (10 ms), and
// every batch of the node waits with it. So a yield that took longer
// than slowYield turns yielding off for noYield, and each slow one
// after that (the yields that probe whether they are still slow)
// doubles the time off, up to maxNoYield; a fast one ends the backoff.
// While yielding is off, the flusher publishes at once. A short sleep
// instead was tried (a goroutine woken by its timer runs next on its
// processor, and it batched more: 82 to 9 system calls per 100 calls
// beside two such goroutines), but a processor running one of them
// fires its timers only at the end of a slice, so the sleep lasted
// milliseconds: remotebench's 4x100 beside two hogs, six alternated
// pairs, made 0.10-0.53x protoactor's calls per second with the sleep
// (median 0.37) and 0.12-1.07x without (median 0.87). A slow yield may
// also be the operating system's doing, on a loaded machine: the short
// first time off makes such a false alarm cheap.
func (n *Node) yield() {
	now := time.Now() // clock seam: the scheduler's delay, on the real monotonic clock, not the node's time
	if now.UnixNano() < n.noYieldUntil.Load() {
		return
	}
	runtime.Gosched()
	n.yielded(now, time.Since(now)) // clock seam: as above
}

// yielded notes a yield begun at start that took took: a slow one
// turns yielding off (for longer after each slow one in a row), a fast
// one ends the backoff.
func (n *Node) yielded(start time.Time, took time.Duration) {
	if took <= slowYield {
		n.slowYields.Store(0)
		return
	}
	k := min(n.slowYields.Add(1)-1, slowBackoff)
	n.noYieldUntil.Store(start.Add(took + min(noYield<<k, maxNoYield)).UnixNano())
}
