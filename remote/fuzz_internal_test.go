package remote

import (
	"bytes"
	"testing"
	"time"
)

// FuzzDecodeRequest feeds the frame splitter and the request and reply
// decoders arbitrary batches: they must never panic, and a request they
// accept must survive a round trip through the encoder unchanged.
func FuzzDecodeRequest(f *testing.F) {
	good := request{id: 7, deadline: time.Unix(0, 1_700_000_000_000_000_000), sent: time.Unix(0, 1_699_999_999_000_000_000),
		priority: -3, tag: "gold", key: "k1", cost: 5000, partitions: 4, codec: "json"}
	f.Add(appendRequest(nil, &good, []byte(`{"By":1}`)))
	f.Add(appendRequest(appendRequest(nil, &request{id: 1, sent: time.Unix(0, 1), codec: "json"}, nil), &good, []byte("x")))
	f.Add(appendReply(nil, &reply{id: 3, status: stMissed, where: whereArrival, received: 1, replied: 2,
		deadline: 3, detected: 4, text: "late", actor: "a", message: "m"}, []byte("{}")))
	f.Add([]byte{0, 0, 0, 3, 2, 1, 0})
	f.Add([]byte{0, 0, 0, 60, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, batch []byte) {
		for data := batch; ; {
			fr, rest, ok := nextFrame(data)
			if !ok {
				break
			}
			data = rest
			_, _ = frameID(fr)
			r, body, err := decodeRequest(fr, defaultMaxBody)
			if err == nil {
				again := appendRequest(nil, &r, body)
				fr2, _, ok := nextFrame(again)
				if !ok {
					t.Fatal("an accepted request does not frame again")
				}
				r2, body2, err := decodeRequest(fr2, defaultMaxBody)
				if err != nil {
					t.Fatalf("an accepted request does not survive a round trip: %v", err)
				}
				if r2 != r || !bytes.Equal(body, body2) {
					t.Fatalf("round trip changed the request: %+v to %+v", r, r2)
				}
			}
			rep, _, err := decodeReply(fr)
			if err == nil {
				_ = replyError(&rep)
			}
		}
	})
}
