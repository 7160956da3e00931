package remote

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// WireVersion is the version of the wire format that this package
// writes and reads (docs/wire.md). A request of another version gets a
// bad-request reply.
const WireVersion = "2"

// wireVersion is WireVersion as the first byte of every frame.
const wireVersion = 2

// Frame kinds (the second byte of a request frame).
const kindRequest = 1

// Reply statuses: the second byte of a reply frame.
const (
	stOK byte = iota
	stError
	stMissed
	stStopped
	stPanicked
	stPolicy
	stRefused
	stUnknown
	stCodec
	stBadRequest
)

// Where a failure was found: a byte of a reply frame.
const (
	whereNone byte = iota
	whereArrival
	whereReceiver
)

// Limits the decoder enforces on what arrives.
const (
	maxHeaderValue = 1024    // bytes of a tag, a key or a codec name
	maxErrorText   = 4096    // bytes of error text kept on a reply
	maxPartitions  = 1 << 16 // partitions of one endpoint
	defaultMaxBody = 1 << 20 // request payload, unless MaxRequest says otherwise
	maxFrame       = 1 << 30 // bytes of one frame, whatever else says
)

// Sizes of the fixed parts of the frames (docs/wire.md).
const (
	lenPrefix   = 4  // every frame: its length, big-endian uint32
	reqFixed    = 51 // request: version .. key length
	replyFixed  = 49 // reply: version .. message length
	idEnd       = 10 // version, kind or status, then the call id
	maxReplyStr = 4096
)

// request is what a request frame carries besides its payload.
type request struct {
	id         uint64
	deadline   time.Time // zero: none
	sent       time.Time
	priority   int
	tag, key   string
	cost       time.Duration
	partitions int
	codec      string
}

// appendRequest appends r's frame, with payload data, to b.
func appendRequest(b []byte, r *request, data []byte) []byte {
	n := reqFixed + len(r.codec) + len(r.tag) + len(r.key) + len(data)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, wireVersion, kindRequest)
	b = binary.BigEndian.AppendUint64(b, r.id)
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(r.deadline)))
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(r.sent)))
	b = binary.BigEndian.AppendUint64(b, uint64(int64(r.priority)))
	b = binary.BigEndian.AppendUint64(b, uint64(r.cost))
	b = binary.BigEndian.AppendUint32(b, uint32(r.partitions))
	b = append(b, byte(len(r.codec)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.tag)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.key)))
	b = append(b, r.codec...)
	b = append(b, r.tag...)
	b = append(b, r.key...)
	return append(b, data...)
}

// nanos is t in Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// nextFrame splits the first frame off a batch. ok is false when the
// batch cannot be framed any further (a length beyond its end): the rest
// of it is lost.
func nextFrame(b []byte) (frame, rest []byte, ok bool) {
	if len(b) < lenPrefix {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if n > maxFrame || uint64(n) > uint64(len(b)-lenPrefix) {
		return nil, nil, false
	}
	return b[lenPrefix : lenPrefix+int(n)], b[lenPrefix+int(n):], true
}

// frameID returns the call id of a frame; ok is false if the frame is
// too short to hold one (it cannot be answered).
func frameID(f []byte) (uint64, bool) {
	if len(f) < idEnd {
		return 0, false
	}
	return binary.BigEndian.Uint64(f[2:]), true
}

// badRequest is a decoding failure: the request is answered with
// status bad-request and this text.
type badRequest string

func (b badRequest) Error() string { return string(b) }

// decodeRequest reads and checks a request frame (without its length
// prefix), returning its payload. It never panics, whatever f holds:
// the fuzz target FuzzDecodeRequest checks that.
func decodeRequest(f []byte, maxBody int) (request, []byte, error) {
	var r request
	if len(f) < 2 || f[0] != wireVersion {
		v := "none"
		if len(f) > 0 {
			v = fmt.Sprint(f[0])
		}
		return r, nil, badRequest(fmt.Sprintf("wire version %s, this node reads %s", v, WireVersion))
	}
	if f[1] != kindRequest {
		return r, nil, badRequest(fmt.Sprintf("frame of kind %d is not a request", f[1]))
	}
	if len(f) < reqFixed {
		return r, nil, badRequest(fmt.Sprintf("request frame of %d bytes (at least %d)", len(f), reqFixed))
	}
	be := binary.BigEndian
	r.id = be.Uint64(f[2:])
	dl, sent := int64(be.Uint64(f[10:])), int64(be.Uint64(f[18:]))
	prio, cost := int64(be.Uint64(f[26:])), int64(be.Uint64(f[34:]))
	parts := be.Uint32(f[42:])
	lc, lt, lk := int(f[46]), int(be.Uint16(f[47:])), int(be.Uint16(f[49:]))
	switch {
	case dl < 0:
		return r, nil, badRequest(fmt.Sprintf("deadline %d is not a time in Unix nanoseconds", dl))
	case sent <= 0:
		return r, nil, badRequest(fmt.Sprintf("sent time %d is not a time in Unix nanoseconds", sent))
	case int64(int(prio)) != prio:
		return r, nil, badRequest(fmt.Sprintf("priority %d out of range", prio))
	case cost < 0:
		return r, nil, badRequest(fmt.Sprintf("cost %d is not a duration in nanoseconds", cost))
	case parts > maxPartitions:
		return r, nil, badRequest(fmt.Sprintf("partition count %d (at most %d)", parts, maxPartitions))
	case lt > maxHeaderValue || lk > maxHeaderValue:
		return r, nil, badRequest(fmt.Sprintf("tag or key of %d bytes (at most %d)", max(lt, lk), maxHeaderValue))
	case lc == 0:
		return r, nil, badRequest("no codec name")
	case reqFixed+lc+lt+lk > len(f):
		return r, nil, badRequest("codec, tag and key lengths run past the frame")
	}
	s := f[reqFixed:]
	codec, tag, key := s[:lc], s[lc:lc+lt], s[lc+lt:lc+lt+lk]
	if !utf8.Valid(codec) || !utf8.Valid(tag) || !utf8.Valid(key) {
		return r, nil, badRequest("codec, tag or key is not valid UTF-8")
	}
	body := s[lc+lt+lk:]
	if len(body) > maxBody {
		return r, nil, badRequest(fmt.Sprintf("payload of %d bytes (at most %d)", len(body), maxBody))
	}
	if dl != 0 {
		r.deadline = time.Unix(0, dl)
	}
	r.sent = time.Unix(0, sent)
	r.priority, r.cost, r.partitions = int(prio), time.Duration(cost), int(parts)
	r.codec, r.tag, r.key = string(codec), string(tag), string(key)
	return r, body, nil
}

// reply is what a reply frame carries besides its payload.
type reply struct {
	id                 uint64
	status, where      byte
	received, replied  int64 // the receiver's clock, Unix nanoseconds
	deadline, detected int64 // on missed
	text               string
	actor, message     string // on missed
}

// appendReply appends r's frame, with payload data, to b. Texts are
// clipped to their limits.
func appendReply(b []byte, r *reply, data []byte) []byte {
	text, actor, msg := clip(r.text, maxErrorText), clip(r.actor, maxReplyStr), clip(r.message, maxReplyStr)
	n := replyFixed + len(text) + len(actor) + len(msg) + len(data)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, wireVersion, r.status)
	b = binary.BigEndian.AppendUint64(b, r.id)
	b = binary.BigEndian.AppendUint64(b, uint64(r.received))
	b = binary.BigEndian.AppendUint64(b, uint64(r.replied))
	b = append(b, r.where)
	b = binary.BigEndian.AppendUint64(b, uint64(r.deadline))
	b = binary.BigEndian.AppendUint64(b, uint64(r.detected))
	b = binary.BigEndian.AppendUint16(b, uint16(len(text)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(actor)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	b = append(b, text...)
	b = append(b, actor...)
	b = append(b, msg...)
	return append(b, data...)
}

// decodeReply reads a reply frame (without its length prefix),
// returning its payload. It never panics, whatever f holds.
func decodeReply(f []byte) (reply, []byte, error) {
	var r reply
	if len(f) < replyFixed || f[0] != wireVersion {
		return r, nil, badRequest(fmt.Sprintf("reply frame of %d bytes or another version", len(f)))
	}
	be := binary.BigEndian
	r.status, r.id = f[1], be.Uint64(f[2:])
	r.received, r.replied = int64(be.Uint64(f[10:])), int64(be.Uint64(f[18:]))
	r.where = f[26]
	r.deadline, r.detected = int64(be.Uint64(f[27:])), int64(be.Uint64(f[35:]))
	lt, la, lm := int(be.Uint16(f[43:])), int(be.Uint16(f[45:])), int(be.Uint16(f[47:]))
	if replyFixed+lt+la+lm > len(f) {
		return r, nil, badRequest("reply text lengths run past the frame")
	}
	s := f[replyFixed:]
	r.text = strings.ToValidUTF8(string(s[:lt]), "?")
	r.actor = strings.ToValidUTF8(string(s[lt:lt+la]), "?")
	r.message = strings.ToValidUTF8(string(s[lt+la:lt+la+lm]), "?")
	return r, s[lt+la+lm:], nil
}

// clip keeps s within n bytes, on a rune boundary, valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
