package remote

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// FuzzDecodeRequest feeds the request decoder arbitrary header values
// and payload sizes: it must never panic, and what it accepts must
// survive a round trip through the encoder unchanged. The reply decoder
// gets the same values and must not panic either.
func FuzzDecodeRequest(f *testing.F) {
	f.Add("1", "1700000000000000000", "1700000000000000000", "3", "gold", "k1", "5000", "4", "json", "", 10)
	f.Add("1", "", "1", "", "", "", "", "", "json", "x", 0)
	f.Add("2", "-1", "0", "x", "\xff", "", "-3", "0", "", "dup", 1<<21)
	f.Fuzz(func(t *testing.T, version, dl, sent, prio, tag, key, cost, parts, codec, extra string, size int) {
		h := nats.Header{}
		for k, v := range map[string]string{hVersion: version, hDeadline: dl, hSent: sent, hPriority: prio,
			hTag: tag, hKey: key, hCost: cost, hPartitions: parts, hCodec: codec} {
			if v != "" {
				h.Set(k, v)
			}
		}
		if extra != "" {
			h.Add(hSent, extra)
			h.Add("X-"+extra, extra)
		}
		r, err := decodeRequest(h, size, defaultMaxBody)
		if err == nil {
			h2 := nats.Header{}
			encodeRequest(h2, &r)
			r2, err := decodeRequest(h2, size, defaultMaxBody)
			if err != nil {
				t.Fatalf("an accepted request does not survive a round trip: %v", err)
			}
			if r2 != r {
				t.Fatalf("round trip changed the request: %+v to %+v", r, r2)
			}
		}
		h.Set(hStatus, version)
		h.Set(hError, extra)
		h.Set(hDetected, sent)
		_ = replyError(version, h)
		_ = replyError(stMissed, h)
		_ = replyError(stCodec, h)
	})
}
