package remote

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A sender coalesces the frames bound for one subject into NATS
// messages. A frame is appended to the pending batch; if no flush is in
// progress, the goroutine that appended it flushes at once, so a lone
// frame waits for nothing; otherwise it rides the next flush, which the
// flushing goroutine makes as soon as its publish returns (a caller
// yields the processor once first, to let other callers add theirs). Under load
// many frames share one message (one server round, one read and one
// write on each side), and nothing waits for a timer.
//
// Frames are never reordered: a sender publishes its batches one at a
// time, in order.
type sender struct {
	n       *Node
	subject string
	calls   bool // batches of calls: each gets its reply subject, <inbox>.b<batch>

	mu    sync.Mutex // guards buf, calls' ps, busy, spare
	buf   []byte     // frames waiting, each with its length prefix
	ps    []*pending // with calls: the pending of each frame in buf, in order
	busy  bool       // a goroutine is flushing
	spare []byte     // the buffer of the previous flush, for reuse
	spps  []*pending
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
// pending call it belongs to (nil for a reply), and flushes if no one
// is flushing. A call whose publish fails is finished with the error.
func (s *sender) add(p *pending, appendFrame func([]byte) []byte) {
	s.mu.Lock()
	s.buf = appendFrame(s.buf)
	if s.calls {
		s.ps = append(s.ps, p)
	}
	if s.busy {
		s.mu.Unlock()
		return
	}
	s.busy = true
	s.flush()
}

// maxRounds bounds the batches one caller's goroutine publishes for
// others before it hands the flushing over to a goroutine of its own:
// under a steady stream of calls it would otherwise never return.
const maxRounds = 16

// flush publishes the batch, and those made meanwhile, until none is
// left; the caller holds s.mu and has set busy. It returns without
// s.mu held.
func (s *sender) flush() {
	for round := 0; len(s.buf) > 0; round++ {
		if s.calls && round == maxRounds {
			go func() { // ends when the stream pauses
				s.mu.Lock()
				s.flush()
			}()
			s.mu.Unlock()
			return
		}
		buf, ps := s.buf, s.ps
		s.buf, s.ps = s.spare[:0], s.spps[:0]
		s.mu.Unlock()
		s.publish(buf, ps)
		clear(ps) // let the pendings go
		if s.calls && s.n.outstanding.Load() > 1 {
			// Other calls are out, so more are likely coming: the
			// calling goroutine yields once after its publish, so that
			// calls made meanwhile on other goroutines join the next
			// batch. Measured, it cuts the messages of 4x100 calls
			// about fivefold and the CPU per call by a third
			// (remotebench). Its own call is out already. A lone call
			// does not yield: beside CPU-bound goroutines a yield can
			// cost a scheduling slice. Replies do not either: they are
			// sent from an actor, whose turn a yield would lengthen.
			runtime.Gosched()
		}
		s.mu.Lock()
		s.spare, s.spps = buf, ps
	}
	s.busy = false
	if cap(s.spare) > 64<<10 { // a burst of large frames: do not keep its buffer
		s.spare = nil
	}
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

// batchOf is the batch a pending call's frame went out in (0: not yet
// sent): a no-responders notice names the batch, not the calls.
type batchOf = atomic.Uint64
