package remote

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// WireVersion is the version of the wire format that this package
// writes and reads (docs/wire.md). A request of another version gets a
// bad-request reply.
const WireVersion = "1"

// Header names of the wire format, version 1 (docs/wire.md).
const (
	hVersion    = "Crisp-Wire"
	hDeadline   = "Crisp-Deadline" // absolute, Unix nanoseconds
	hSent       = "Crisp-Sent"     // sender's clock at send, Unix nanoseconds
	hPriority   = "Crisp-Priority"
	hTag        = "Crisp-Tag"
	hKey        = "Crisp-Key"
	hCost       = "Crisp-Cost" // nanoseconds
	hPartitions = "Crisp-Partitions"
	hCodec      = "Crisp-Codec"

	hStatus   = "Crisp-Status"
	hError    = "Crisp-Error"
	hReceived = "Crisp-Received" // receiver's clock at arrival
	hReplied  = "Crisp-Replied"  // receiver's clock at reply
	hDetected = "Crisp-Detected"
	hWhere    = "Crisp-Where"
	hActor    = "Crisp-Actor"
	hMessage  = "Crisp-Message"
)

// Reply statuses (the Crisp-Status header).
const (
	stOK         = "ok"
	stError      = "error"
	stMissed     = "missed"
	stStopped    = "stopped"
	stPanicked   = "panicked"
	stPolicy     = "policy"
	stRefused    = "refused"
	stUnknown    = "unknown"
	stCodec      = "codec"
	stBadRequest = "bad-request"
)

// Limits the decoder enforces on what arrives.
const (
	maxHeaderValue = 1024    // bytes per header value
	maxErrorText   = 4096    // bytes of Crisp-Error kept on a reply
	maxPartitions  = 1 << 16 // partitions of one endpoint
	defaultMaxBody = 1 << 20 // request payload, unless MaxRequest says otherwise
	maxHeaders     = 32      // header keys on a request
)

// request is what the receiver reads from a request's headers.
type request struct {
	deadline   time.Time // zero: none
	sent       time.Time
	priority   int
	tag, key   string
	cost       time.Duration
	partitions int
	codec      string
}

// encodeRequest writes r's headers into h.
func encodeRequest(h nats.Header, r *request) {
	h.Set(hVersion, WireVersion)
	if !r.deadline.IsZero() {
		h.Set(hDeadline, strconv.FormatInt(r.deadline.UnixNano(), 10))
	}
	h.Set(hSent, strconv.FormatInt(r.sent.UnixNano(), 10))
	if r.priority != 0 {
		h.Set(hPriority, strconv.Itoa(r.priority))
	}
	if r.tag != "" {
		h.Set(hTag, r.tag)
	}
	if r.key != "" {
		h.Set(hKey, r.key)
	}
	if r.cost > 0 {
		h.Set(hCost, strconv.FormatInt(int64(r.cost), 10))
	}
	if r.partitions > 0 {
		h.Set(hPartitions, strconv.Itoa(r.partitions))
	}
	h.Set(hCodec, r.codec)
}

// badRequest is a decoding failure: the request is answered with
// status bad-request and this text.
type badRequest string

func (b badRequest) Error() string { return string(b) }

// decodeRequest reads and checks a request's headers and payload size.
// It never panics, whatever h and size hold: the fuzz target
// FuzzDecodeRequest checks that.
func decodeRequest(h nats.Header, size, maxBody int) (request, error) {
	var r request
	if len(h) > maxHeaders {
		return r, badRequest(fmt.Sprintf("%d header keys (at most %d)", len(h), maxHeaders))
	}
	for k, vs := range h {
		if len(vs) != 1 && strings.HasPrefix(k, "Crisp-") {
			return r, badRequest(fmt.Sprintf("header %.64q given %d times", k, len(vs)))
		}
		for _, v := range vs {
			if len(v) > maxHeaderValue {
				return r, badRequest(fmt.Sprintf("header %.64q is %d bytes (at most %d)", k, len(v), maxHeaderValue))
			}
		}
	}
	if v := h.Get(hVersion); v != WireVersion {
		return r, badRequest(fmt.Sprintf("wire version %.16q, this node reads %q", v, WireVersion))
	}
	if size > maxBody {
		return r, badRequest(fmt.Sprintf("payload of %d bytes (at most %d)", size, maxBody))
	}
	var err error
	if r.deadline, err = instant(h, hDeadline, false); err != nil {
		return r, err
	}
	if r.sent, err = instant(h, hSent, true); err != nil {
		return r, err
	}
	if v := h.Get(hPriority); v != "" {
		if r.priority, err = strconv.Atoi(v); err != nil {
			return r, badRequest(fmt.Sprintf("%s: %.32q is not an integer", hPriority, v))
		}
	}
	if v := h.Get(hCost); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return r, badRequest(fmt.Sprintf("%s: %.32q is not a duration in nanoseconds", hCost, v))
		}
		r.cost = time.Duration(n)
	}
	if v := h.Get(hPartitions); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > maxPartitions {
			return r, badRequest(fmt.Sprintf("%s: %.32q is not a partition count", hPartitions, v))
		}
		r.partitions = n
	}
	r.tag, r.key, r.codec = h.Get(hTag), h.Get(hKey), h.Get(hCodec)
	for _, s := range [...]string{r.tag, r.key, r.codec} {
		if !utf8.ValidString(s) {
			return r, badRequest("a header is not valid UTF-8")
		}
	}
	if r.codec == "" {
		return r, badRequest("no " + hCodec + " header")
	}
	return r, nil
}

// instant reads a Unix-nanosecond header; absent is the zero time,
// unless required.
func instant(h nats.Header, name string, required bool) (time.Time, error) {
	v := h.Get(name)
	if v == "" {
		if required {
			return time.Time{}, badRequest("no " + name + " header")
		}
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, badRequest(fmt.Sprintf("%s: %.32q is not a time in Unix nanoseconds", name, v))
	}
	return time.Unix(0, n), nil
}

// clip keeps s within n bytes, on a rune boundary, valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func unixNano(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }
