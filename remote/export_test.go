package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
)

// SetQueuedHook sets the hook called after each request is queued on
// its actor (nil to clear). Tests call it before serving.
func SetQueuedHook(f func()) { testHookQueued = f }

// Flush waits until n's flusher of calls has published the calls made
// so far, then until the NATS server has processed what n published.
func Flush(n *Node) error {
	f := &n.callFlusher
	for {
		f.mu.Lock()
		idle := !f.running
		f.mu.Unlock()
		if idle {
			return n.nc.Flush()
		}
		runtime.Gosched() // the flusher's goroutine runs and ends: it has no timer to wait for
	}
}

// CloseConn closes n's NATS connection behind its back, as a server
// that gives up on the client would.
func CloseConn(n *Node) { n.nc.Close() }

// RawRequest builds a request frame field by field, right or wrong,
// for tests that speak the wire format by hand.
type RawRequest struct {
	Version, Kind   byte // 0: the right ones
	ID              uint64
	Deadline, Sent  int64
	Priority, Cost  int64
	Partitions      uint32
	Codec, Tag, Key string
	KeyLen          int // if > 0, the key length written, whatever Key is
	Truncate        int // if > 0, the frame is cut to this many bytes
	Payload         []byte
}

// Frame returns the request's frame with its length prefix.
func (r RawRequest) Frame() []byte {
	if r.Version == 0 {
		r.Version = wireVersion
	}
	if r.Kind == 0 {
		r.Kind = kindRequest
	}
	be := binary.BigEndian
	var f []byte
	f = append(f, r.Version, r.Kind)
	f = be.AppendUint64(f, r.ID)
	f = be.AppendUint64(f, uint64(r.Deadline))
	f = be.AppendUint64(f, uint64(r.Sent))
	f = be.AppendUint64(f, uint64(r.Priority))
	f = be.AppendUint64(f, uint64(r.Cost))
	f = be.AppendUint32(f, r.Partitions)
	f = append(f, byte(len(r.Codec)))
	f = be.AppendUint16(f, uint16(len(r.Tag)))
	kl := len(r.Key)
	if r.KeyLen > 0 {
		kl = r.KeyLen
	}
	f = be.AppendUint16(f, uint16(kl))
	f = append(f, r.Codec...)
	f = append(f, r.Tag...)
	f = append(f, r.Key...)
	f = append(f, r.Payload...)
	if r.Truncate > 0 {
		f = f[:r.Truncate]
	}
	return append(be.AppendUint32(nil, uint32(len(f))), f...)
}

// RawReply is a reply frame as a test reads it.
type RawReply struct {
	ID     uint64
	Status string
	Text   string
}

var statusNames = [...]string{stOK: "ok", stError: "error", stMissed: "missed", stStopped: "stopped",
	stPanicked: "panicked", stPolicy: "policy", stRefused: "refused", stUnknown: "unknown",
	stCodec: "codec", stBadRequest: "bad-request"}

// ParseReplies reads a batch of reply frames.
func ParseReplies(batch []byte) ([]RawReply, error) {
	var out []RawReply
	for len(batch) > 0 {
		f, rest, ok := nextFrame(batch)
		if !ok {
			return out, errors.New("a batch that does not frame")
		}
		batch = rest
		r, _, err := decodeReply(f)
		if err != nil {
			return out, err
		}
		st := fmt.Sprint(r.status)
		if int(r.status) < len(statusNames) {
			st = statusNames[r.status]
		}
		out = append(out, RawReply{ID: r.id, Status: st, Text: r.text})
	}
	return out, nil
}

// HoldCalls makes n's calls wait in their batches, as they do until
// the node's flusher of calls runs, until the returned function runs
// the flusher.
func HoldCalls(n *Node) (flush func()) {
	f := &n.callFlusher
	f.mu.Lock()
	f.running = true
	f.mu.Unlock()
	return func() { f.run() }
}

// Frames counts the frames of a batch.
func Frames(batch []byte) int {
	k := 0
	for {
		_, rest, ok := nextFrame(batch)
		if !ok {
			return k
		}
		batch = rest
		k++
	}
}
