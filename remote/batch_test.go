package remote_test

import (
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/remote"
)

// Calls made before the node's flusher runs ride one batch: ten calls
// go out as one NATS message of ten frames, and each gets its own
// answer.
func TestCallsMadeDuringAFlushShareOneMessage(t *testing.T) {
	sys := newSystem(t, clock.New())
	n := newNode(t)
	serveAdd(t, n, crisp.Spawn(sys, &Counter{}))
	nc, err := nats.Connect(n.URL())
	require.NoError(t, err)
	defer nc.Close()
	wire, err := nc.SubscribeSync("crisp.v2.e.test.add") // beside the queue group: sees every message
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	flush := remote.HoldCalls(n)
	var fs []*future.Future[int]
	for range 10 {
		fs = append(fs, remote.Call(n, add, Add{By: 1}))
	}
	flush()
	var got []int
	for _, f := range fs {
		v, err := get(t, f)
		require.NoError(t, err)
		got = append(got, v)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, got, "one answer each, in the order sent")
	m, err := wire.NextMsg(10 * time.Second) // clock seam of the test: a hang guard only
	require.NoError(t, err)
	assert.Equal(t, 10, remote.Frames(m.Data), "the ten calls shared one message")
}

// One timer serves every pending call of a node: calls made in any
// order of their bounds each fail at their own bound, not before.
func TestEachCallFailsAtItsOwnBound(t *testing.T) {
	callerClock := clock.NewMock()
	callerClock.Set(time.Now()) // the server, on the real clock, sees the deadlines hours ahead
	sys := newSystem(t, clock.New())
	server := newNode(t)
	b := newBlocker()
	b.serve(t, server, crisp.Spawn(sys, &Counter{}))
	defer close(b.release)
	client := newNode(t, remote.URL(server.URL()), remote.WithClock(callerClock), remote.Allowance(20*time.Millisecond))

	first := remote.Call(client, slow, "block", remote.Within(3*time.Hour))
	b.wait(t, first) // the actor is busy: the calls below get no answer
	third := remote.Call(client, slow, "x", remote.Within(time.Hour))
	second := remote.Call(client, slow, "y", remote.Within(2*time.Hour))
	ready := func() []bool { return []bool{third.Ready(), second.Ready(), first.Ready()} }

	callerClock.Add(time.Hour + 20*time.Millisecond)
	_, err := get(t, third)
	require.ErrorIs(t, err, remote.ErrNoAnswer)
	assert.Equal(t, []bool{true, false, false}, ready())
	callerClock.Add(time.Hour - time.Millisecond)
	assert.Equal(t, []bool{true, false, false}, ready(), "not before its bound")
	callerClock.Add(time.Millisecond)
	_, err = get(t, second)
	require.ErrorIs(t, err, remote.ErrNoAnswer)
	callerClock.Add(time.Hour)
	_, err = get(t, first)
	require.ErrorIs(t, err, remote.ErrNoAnswer)
	assert.True(t, !slices.Contains(ready(), false))
}
