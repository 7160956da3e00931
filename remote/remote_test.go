package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/remote"
)

func TestACallRunsOnTheServingActorAndReturnsItsResult(t *testing.T) {
	sys := newSystem(t, clock.New())
	n := newNode(t)
	serveAdd(t, n, crisp.Spawn(sys, &Counter{}))
	for i := 1; i <= 3; i++ {
		v, err := get(t, remote.Call(n, add, Add{By: 2}, remote.Within(time.Minute)))
		require.NoError(t, err)
		assert.Equal(t, 2*i, v)
	}
}

func TestACallFromAnotherNodeReachesTheServer(t *testing.T) {
	sys := newSystem(t, clock.New())
	server := newNode(t)
	serveAdd(t, server, crisp.Spawn(sys, &Counter{}))
	client := newNode(t, remote.URL(server.URL()))
	v, err := get(t, remote.Call(client, add, Add{By: 5}))
	require.NoError(t, err)
	assert.Equal(t, 5, v)
}

// seen is what a handler saw of its message.
type seen struct {
	Deadline time.Time
	Priority int
	Tag      string
}

func TestTheSendOptionsCrossTheWire(t *testing.T) {
	// A mock clock near the real time, for a context whose deadline is
	// (in real time) still ahead.
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	clk := clock.NewMock()
	clk.Set(start)
	sys := newSystem(t, clk)
	n := newNode(t, remote.WithClock(clk))
	ep := remote.NewEndpoint[struct{}, seen]("test.seen")
	_, err := remote.Serve(n, ep, crisp.Spawn(sys, &Counter{}), func(p *crisp.Proc, _ *Counter, _ struct{}) (seen, error) {
		tag, _ := p.Tag().(string)
		return seen{p.Deadline(), p.Priority(), tag}, nil
	})
	require.NoError(t, err)

	v, err := get(t, remote.Call(n, ep, struct{}{}, remote.Within(time.Second), remote.Priority(7), remote.Tag("gold")))
	require.NoError(t, err)
	assert.True(t, v.Deadline.Equal(start.Add(time.Second)), "the absolute deadline arrives exact: %v", v.Deadline)
	assert.Equal(t, 7, v.Priority)
	assert.Equal(t, "gold", v.Tag)

	ctx, cancel := context.WithDeadline(context.Background(), start.Add(300*time.Millisecond))
	defer cancel()
	v, err = get(t, remote.Call(n, ep, struct{}{}, remote.Within(time.Second), remote.Context(ctx)))
	require.NoError(t, err)
	assert.True(t, v.Deadline.Equal(start.Add(300*time.Millisecond)), "the context's earlier deadline wins: %v", v.Deadline)

	v, err = get(t, remote.Call(n, ep, struct{}{}))
	require.NoError(t, err)
	assert.True(t, v.Deadline.IsZero(), "no deadline stays none")
}

func TestARequestWhoseDeadlinePassedBeforeArrivalNeverStarts(t *testing.T) {
	callerClock, serverClock := newMock(), newMock()
	serverClock.Set(t0.Add(time.Second)) // the server's clock is a second ahead
	sys := newSystem(t, serverClock)
	server := newNode(t, remote.WithClock(serverClock))
	ran := false
	ep := remote.NewEndpoint[struct{}, int]("test.late")
	_, err := remote.Serve(server, ep, crisp.Spawn(sys, &Counter{}, crisp.WithName("late")), func(*crisp.Proc, *Counter, struct{}) (int, error) {
		ran = true
		return 1, nil
	})
	require.NoError(t, err)
	client := newNode(t, remote.URL(server.URL()), remote.WithClock(callerClock))

	_, err = get(t, remote.Call(client, ep, struct{}{}, remote.Within(100*time.Millisecond)))
	require.ErrorIs(t, err, deadline.ErrMissed)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var missed *deadline.MissedError
	require.ErrorAs(t, err, &missed)
	assert.Equal(t, t0.Add(100*time.Millisecond), missed.Deadline.UTC())
	assert.Equal(t, t0.Add(time.Second), missed.Detected.UTC(), "detected on the receiver's clock, at arrival")
	assert.Equal(t, "late", missed.Actor)
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtArrival, rerr.Where)
	assert.Equal(t, "test.late", rerr.Endpoint)
	assert.True(t, rerr.Timeout())
	require.NoError(t, sys.WaitIdle(context.Background()))
	assert.False(t, ran)
}

func TestADeadlineAlreadyPastAtTheCallFailsAtOnce(t *testing.T) {
	clk := newMock()
	n := newNode(t, remote.WithClock(clk))
	_, err := get(t, remote.Call(n, add, Add{}, remote.By(t0)))
	require.ErrorIs(t, err, deadline.ErrMissed)
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtCaller, rerr.Where)
}

// blocker serves an endpoint whose handler signals started and waits for
// release.
type blocker struct {
	started chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 16), release: make(chan struct{})}
}

var slow = remote.NewEndpoint[string, string]("test.slow")

// wait waits for the handler to start, failing the test if f resolves
// first.
func (b *blocker) wait(t *testing.T, f interface{ Done() <-chan struct{} }) {
	t.Helper()
	select {
	case <-b.started:
	case <-f.Done():
		t.Fatal("the call ended before its handler started")
	}
}

func (b *blocker) serve(t *testing.T, n *remote.Node, a crisp.Ref[*Counter], opts ...remote.ServeOption) {
	t.Helper()
	_, err := remote.Serve(n, slow, a, func(_ *crisp.Proc, _ *Counter, req string) (string, error) {
		if req == "block" {
			b.started <- struct{}{}
			<-b.release
		}
		return req, nil
	}, opts...)
	require.NoError(t, err)
}

func TestAMissInTheReceiversQueueArrivesAtTheDeadline(t *testing.T) {
	queued := make(chan struct{}, 4)
	remote.SetQueuedHook(func() { queued <- struct{}{} })
	defer remote.SetQueuedHook(nil)
	clk := newMock()
	sys := newSystem(t, clk)
	n := newNode(t, remote.WithClock(clk))
	b := newBlocker()
	b.serve(t, n, crisp.Spawn(sys, &Counter{}, crisp.WithName("busy")))

	first := remote.Call(n, slow, "block")
	<-b.started
	<-queued
	second := remote.Call(n, slow, "quick", remote.Within(50*time.Millisecond))
	<-queued
	clk.Add(50 * time.Millisecond) // the receiver's watchdog fires: the actor is still busy
	_, err := get(t, second)
	var missed *deadline.MissedError
	require.ErrorAs(t, err, &missed)
	assert.Equal(t, t0.Add(50*time.Millisecond), missed.Detected.UTC(), "caught by the watchdog exactly at the deadline")
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtReceiver, rerr.Where)
	close(b.release)
	v, err := get(t, first)
	require.NoError(t, err)
	assert.Equal(t, "block", v)
}

func TestACallWithNoAnswerFailsAtItsDeadlinePlusTheAllowance(t *testing.T) {
	// The caller's mock clock reads the real time: the server, on the
	// real clock, sees the deadline an hour ahead.
	callerClock := clock.NewMock()
	callerClock.Set(time.Now())
	sys := newSystem(t, clock.New())
	server := newNode(t)
	b := newBlocker()
	b.serve(t, server, crisp.Spawn(sys, &Counter{}))
	defer close(b.release)
	client := newNode(t, remote.URL(server.URL()), remote.WithClock(callerClock), remote.Allowance(20*time.Millisecond))

	f := remote.Call(client, slow, "block", remote.Within(time.Hour))
	b.wait(t, f) // it started in time: no miss, just no answer
	callerClock.Add(time.Hour + 19*time.Millisecond)
	assert.False(t, f.Ready(), "not before the bound")
	callerClock.Add(time.Millisecond)
	_, err := get(t, f)
	require.ErrorIs(t, err, remote.ErrNoAnswer)
	assert.NotErrorIs(t, err, deadline.ErrMissed, "no answer is not a miss")
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtNetwork, rerr.Where)
	assert.True(t, rerr.Timeout())
}

func TestACallWithoutDeadlineFailsAfterMaxWait(t *testing.T) {
	callerClock := newMock()
	sys := newSystem(t, clock.New())
	server := newNode(t)
	b := newBlocker()
	b.serve(t, server, crisp.Spawn(sys, &Counter{}))
	defer close(b.release)
	client := newNode(t, remote.URL(server.URL()), remote.WithClock(callerClock), remote.MaxWait(time.Minute))
	f := remote.Call(client, slow, "block")
	b.wait(t, f)
	callerClock.Add(time.Minute)
	_, err := get(t, f)
	require.ErrorIs(t, err, remote.ErrNoAnswer)
}

func TestAContextEndingFailsTheCall(t *testing.T) {
	sys := newSystem(t, clock.New())
	n := newNode(t)
	b := newBlocker()
	b.serve(t, n, crisp.Spawn(sys, &Counter{}))
	defer close(b.release)
	ctx, cancel := context.WithCancel(context.Background())
	f := remote.Call(n, slow, "block", remote.Context(ctx))
	<-b.started
	cancel()
	_, err := get(t, f)
	require.ErrorIs(t, err, context.Canceled)

	_, err = get(t, remote.Call(n, slow, "x", remote.Context(ctx)))
	require.ErrorIs(t, err, context.Canceled, "a context already ended fails at once")
}

func TestClosingTheNodeFailsItsPendingCalls(t *testing.T) {
	sys := newSystem(t, clock.New())
	server := newNode(t)
	b := newBlocker()
	b.serve(t, server, crisp.Spawn(sys, &Counter{}))
	defer close(b.release)
	client, err := remote.Start(remote.URL(server.URL()))
	require.NoError(t, err)
	f := remote.Call(client, slow, "block")
	<-b.started
	require.NoError(t, client.Close(context.Background()))
	_, err = get(t, f)
	require.ErrorIs(t, err, remote.ErrClosed)
	_, err = get(t, remote.Call(client, slow, "x"))
	require.ErrorIs(t, err, remote.ErrClosed)
}

func TestEveryFailureArrivesTyped(t *testing.T) {
	sys := newSystem(t, clock.New())
	n := newNode(t)
	ep := remote.NewEndpoint[string, string]("test.fail")
	_, err := remote.Serve(n, ep, crisp.Spawn(sys, &Counter{}), func(_ *crisp.Proc, _ *Counter, req string) (string, error) {
		switch req {
		case "error":
			return "", errors.New("out of stock")
		case "panic":
			panic("boom")
		}
		return req, nil
	})
	require.NoError(t, err)

	check := func(t *testing.T, err error, where string, target error) *remote.Error {
		t.Helper()
		require.Error(t, err)
		var rerr *remote.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, where, rerr.Where)
		if target != nil {
			assert.ErrorIs(t, err, target)
		}
		assert.NotErrorIs(t, err, deadline.ErrMissed, "only a miss is a miss")
		return rerr
	}
	t.Run("the handler's error", func(t *testing.T) {
		_, err := get(t, remote.Call(n, ep, "error"))
		r := check(t, err, remote.AtReceiver, nil)
		assert.Equal(t, "out of stock", r.Err.Error())
	})
	t.Run("a panic", func(t *testing.T) {
		_, err := get(t, remote.Call(n, ep, "panic"))
		check(t, err, remote.AtReceiver, nil)
		var pe *crisp.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "boom", pe.Value)
	})
	t.Run("a stopped actor", func(t *testing.T) {
		stopped := crisp.Spawn(sys, &Counter{})
		stopped.Stop()
		ep := remote.NewEndpoint[string, string]("test.stopped")
		_, err := remote.Serve(n, ep, stopped, func(*crisp.Proc, *Counter, string) (string, error) { return "", nil })
		require.NoError(t, err)
		_, err = get(t, remote.Call(n, ep, "x"))
		check(t, err, remote.AtReceiver, crisp.ErrStopped)
	})
	t.Run("a refusal", func(t *testing.T) {
		ep := remote.NewEndpoint[string, string]("test.refuse")
		b := newBlocker()
		_, err := remote.Serve(n, ep, crisp.Spawn(sys, &Counter{}), func(_ *crisp.Proc, _ *Counter, req string) (string, error) {
			b.started <- struct{}{}
			<-b.release
			return req, nil
		}, remote.MaxInFlight(1))
		require.NoError(t, err)
		first := remote.Call(n, ep, "a")
		<-b.started
		_, err = get(t, remote.Call(n, ep, "b"))
		check(t, err, remote.AtArrival, remote.ErrRefused)
		close(b.release)
		_, err = get(t, first)
		require.NoError(t, err)
	})
	t.Run("an unknown endpoint", func(t *testing.T) {
		other := remote.NewEndpoint[string, string]("test.fail", remote.Partitions(4))
		_, err := get(t, remote.Call(n, other, "x"))
		check(t, err, remote.AtArrival, remote.ErrUnknownEndpoint)
	})
	t.Run("no responders", func(t *testing.T) {
		nobody := remote.NewEndpoint[string, string]("test.nobody")
		_, err := get(t, remote.Call(n, nobody, "x", remote.Within(time.Hour)))
		check(t, err, remote.AtNetwork, remote.ErrNoResponders)
	})
	t.Run("a request the receiver cannot decode", func(t *testing.T) {
		wrong := remote.NewEndpoint[int, string]("test.fail")
		_, err := get(t, remote.Call(n, wrong, 42))
		check(t, err, remote.AtArrival, remote.ErrCodec)
		var ce *remote.CodecError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "decode request", ce.Op)
	})
	t.Run("a response the caller cannot decode", func(t *testing.T) {
		wrong := remote.NewEndpoint[string, int]("test.fail")
		_, err := get(t, remote.Call(n, wrong, "x"))
		check(t, err, remote.AtCaller, remote.ErrCodec)
	})
	t.Run("a request the caller cannot encode", func(t *testing.T) {
		wrong := remote.NewEndpoint[func(), int]("test.fail")
		_, err := get(t, remote.Call(n, wrong, func() {}))
		check(t, err, remote.AtCaller, remote.ErrCodec)
	})
}

func TestMalformedRequestsGetABadRequestReply(t *testing.T) {
	sys := newSystem(t, clock.New())
	n := newNode(t)
	serveAdd(t, n, crisp.Spawn(sys, &Counter{}), remote.MaxRequest(64))
	nc, err := nats.Connect(n.URL())
	require.NoError(t, err)
	defer nc.Close()
	// A raw client: requests go out with reply subject <inbox>.b1, the
	// answers come back on <inbox>.r (docs/wire.md).
	inbox := nats.NewInbox()
	replies, err := nc.SubscribeSync(inbox + ".r")
	require.NoError(t, err)
	good := func() remote.RawRequest {
		return remote.RawRequest{ID: 9, Sent: 1, Codec: "json", Payload: []byte(`{"By":1}`)}
	}
	ask := func(t *testing.T, batch []byte) []remote.RawReply {
		t.Helper()
		require.NoError(t, nc.PublishRequest("crisp.v2.e.test.add", inbox+".b1", batch))
		m, err := replies.NextMsg(10 * time.Second) // clock seam of the test: a hang guard only
		require.NoError(t, err)
		rs, err := remote.ParseReplies(m.Data)
		require.NoError(t, err)
		return rs
	}
	cases := map[string]func(*remote.RawRequest){
		"another version":   func(r *remote.RawRequest) { r.Version = 1 },
		"another kind":      func(r *remote.RawRequest) { r.Kind = 9 },
		"a bad deadline":    func(r *remote.RawRequest) { r.Deadline = -5 },
		"no sent time":      func(r *remote.RawRequest) { r.Sent = 0 },
		"a negative cost":   func(r *remote.RawRequest) { r.Cost = -5 },
		"no codec":          func(r *remote.RawRequest) { r.Codec = "" },
		"an oversized body": func(r *remote.RawRequest) { r.Payload = make([]byte, 65) },
		"an oversized tag":  func(r *remote.RawRequest) { r.Tag = string(make([]byte, 2000)) },
		"a tag not UTF-8":   func(r *remote.RawRequest) { r.Tag = "\xff" },
		"lengths past the end": func(r *remote.RawRequest) {
			r.KeyLen = 500
		},
		"a truncated header": func(r *remote.RawRequest) { r.Truncate = 20 },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			r := good()
			spoil(&r)
			rs := ask(t, r.Frame())
			require.Len(t, rs, 1)
			assert.Equal(t, uint64(9), rs[0].ID)
			assert.Equal(t, "bad-request", rs[0].Status, rs[0].Text)
		})
	}
	t.Run("garbage in the payload", func(t *testing.T) {
		r := good()
		r.Payload = []byte("{{{")
		rs := ask(t, r.Frame())
		require.Len(t, rs, 1)
		assert.Equal(t, "codec", rs[0].Status)
	})
	t.Run("a batch of three, one bad", func(t *testing.T) {
		a, b, c := good(), good(), good()
		a.ID, b.ID, c.ID = 1, 2, 3
		b.Version = 7
		batch := append(append(a.Frame(), b.Frame()...), c.Frame()...)
		require.NoError(t, nc.PublishRequest("crisp.v2.e.test.add", inbox+".b2", batch))
		got := map[uint64]string{}
		for len(got) < 3 {
			m, err := replies.NextMsg(10 * time.Second) // clock seam of the test: a hang guard only
			require.NoError(t, err)
			rs, err := remote.ParseReplies(m.Data)
			require.NoError(t, err)
			for _, r := range rs {
				got[r.ID] = r.Status
			}
		}
		assert.Equal(t, map[uint64]string{1: "ok", 2: "bad-request", 3: "ok"}, got)
	})
	t.Run("a batch cut short", func(t *testing.T) {
		a, b := good(), good()
		a.ID, b.ID = 4, 5
		batch := append(a.Frame(), b.Frame()[:10]...)
		rs := ask(t, batch)
		require.Len(t, rs, 1, "the whole frame is served, the cut one dropped")
		assert.Equal(t, uint64(4), rs[0].ID)
		assert.Equal(t, "ok", rs[0].Status)
	})
	v, err := get(t, remote.Call(n, add, Add{By: 1}))
	require.NoError(t, err, "the server lives on")
	assert.Equal(t, 4, v, "the three good calls of batches ran")
}

func TestTheSkewEstimateSeesAClockAhead(t *testing.T) {
	callerClock, serverClock := newMock(), newMock()
	serverClock.Set(t0.Add(time.Hour))
	sys := newSystem(t, serverClock)
	server := newNode(t, remote.WithClock(serverClock))
	serveAdd(t, server, crisp.Spawn(sys, &Counter{}))
	client := newNode(t, remote.URL(server.URL()), remote.WithClock(callerClock))
	_, err := get(t, remote.Call(client, add, Add{By: 1}))
	require.NoError(t, err)
	assert.Equal(t, time.Hour, client.Skew(), "frozen clocks: the estimate is exact")
}

func TestMembersOfAGroupShareTheLoad(t *testing.T) {
	sys := newSystem(t, clock.New())
	first := newNode(t)
	second := newNode(t, remote.URL(first.URL()))
	var mu sync.Mutex
	served := map[string]int{}
	ep := remote.NewEndpoint[int, int]("test.share")
	for _, m := range []struct {
		name string
		n    *remote.Node
	}{{"first", first}, {"second", second}} {
		_, err := remote.Serve(m.n, ep, crisp.Spawn(sys, &Counter{}), func(_ *crisp.Proc, _ *Counter, req int) (int, error) {
			mu.Lock()
			served[m.name]++
			mu.Unlock()
			return req * 2, nil
		})
		require.NoError(t, err)
	}
	client := newNode(t, remote.URL(first.URL()))
	const calls = 200
	for i := range calls { // one at a time: each its own batch
		v, err := get(t, remote.Call(client, ep, i, remote.Within(time.Minute)))
		require.NoError(t, err)
		assert.Equal(t, 2*i, v)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, calls, served["first"]+served["second"])
	// NATS picks a member at random for each batch (here each call):
	// either getting none of 200 has probability 2^-199.
	assert.NotZero(t, served["first"])
	assert.NotZero(t, served["second"])
}

func TestAKeyKeepsItsOrderAcrossTheMembersOfAGroup(t *testing.T) {
	sys := newSystem(t, clock.New())
	first := newNode(t)
	second := newNode(t, remote.URL(first.URL()))
	ep := remote.NewEndpoint[int, int]("test.keyed", remote.Partitions(4))
	var mu sync.Mutex
	order := map[string][]int{} // key -> sequence numbers in the order served
	member := map[string]string{}
	for _, m := range []struct {
		name string
		n    *remote.Node
		own  []int
	}{{"first", first, []int{0, 1}}, {"second", second, []int{2, 3}}} {
		g := crisp.SpawnGroup(sys, []*Counter{{}, {}, {}})
		_, err := remote.Serve(m.n, ep, g, func(p *crisp.Proc, _ *Counter, seq int) (int, error) {
			key := p.Tag().(string)
			mu.Lock()
			defer mu.Unlock()
			order[key] = append(order[key], seq)
			if member[key] == "" {
				member[key] = m.name
			}
			if member[key] != m.name {
				return 0, fmt.Errorf("key %s served by %s and %s", key, member[key], m.name)
			}
			return seq, nil
		}, remote.OwnPartitions(m.own...))
		require.NoError(t, err)
	}
	client := newNode(t, remote.URL(first.URL()))
	var fs []*future.Future[int]
	const keys, per = 12, 30
	for i := range per {
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			fs = append(fs, remote.Call(client, ep, i, remote.Key(key), remote.Tag(key)))
		}
	}
	for _, f := range fs {
		_, err := get(t, f)
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	members := map[string]bool{}
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		want := make([]int, per)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, order[key], "key %s in send order", key)
		members[member[key]] = true
	}
	assert.Len(t, members, 2, "the keys spread over both members")
}

func TestAPolicyFailureArrivesTyped(t *testing.T) {
	queued := make(chan struct{}, 4)
	remote.SetQueuedHook(func() { queued <- struct{}{} })
	defer remote.SetQueuedHook(nil)
	sys := newSystem(t, clock.New())
	n := newNode(t)
	ep := remote.NewEndpoint[string, string]("test.policy")
	a := crisp.Spawn(sys, &Counter{}, crisp.WithPolicy(policy.Func(func(a, b *policy.Item) int {
		if a.Tag == "bad" || b.Tag == "bad" {
			panic("cannot order bad")
		}
		return int(a.Seq) - int(b.Seq)
	})))
	b := newBlocker()
	_, err := remote.Serve(n, ep, a, func(_ *crisp.Proc, _ *Counter, req string) (string, error) {
		if req == "block" {
			b.started <- struct{}{}
			<-b.release
		}
		return req, nil
	})
	require.NoError(t, err)
	first := remote.Call(n, ep, "block")
	b.wait(t, first)
	<-queued
	// Two queued behind the busy actor: the policy must compare them.
	good := remote.Call(n, ep, "good", remote.Tag("good"))
	<-queued
	bad := remote.Call(n, ep, "bad", remote.Tag("bad"))
	<-queued
	close(b.release)
	_, err = get(t, bad)
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtReceiver, rerr.Where)
	var pe *crisp.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "cannot order bad", pe.Value)
	_, _ = get(t, good) // it may fail too: the policy panicked ordering it
	_, err = get(t, first)
	require.NoError(t, err)
}

func TestClosingANodeAnswersWhatItsServicesTook(t *testing.T) {
	sys := newSystem(t, clock.New())
	client := newNode(t) // with the NATS server: it outlives the serving node
	server, err := remote.Start(remote.URL(client.URL()))
	require.NoError(t, err)
	b := newBlocker()
	b.serve(t, server, crisp.Spawn(sys, &Counter{}))
	first := remote.Call(client, slow, "block")
	b.wait(t, first)
	second := remote.Call(client, slow, "second")
	// Once the NATS server has processed the second request, it is on
	// its way to the serving node, ahead of the drain's unsubscription.
	require.NoError(t, remote.Flush(client))
	closed := make(chan error, 1)
	go func() { closed <- server.Close(context.Background()) }()
	close(b.release)
	v, err := get(t, first)
	require.NoError(t, err)
	assert.Equal(t, "block", v)
	v, err = get(t, second)
	require.NoError(t, err, "a request taken before the close is answered")
	assert.Equal(t, "second", v)
	require.NoError(t, <-closed)
	_, err = get(t, remote.Call(client, slow, "late"))
	require.ErrorIs(t, err, remote.ErrNoResponders)
}

func TestNATSOptionsReachTheClient(t *testing.T) {
	server := newNode(t)
	closed := make(chan struct{})
	n, err := remote.Start(remote.URL(server.URL()), remote.NATSOptions(nats.ClosedHandler(func(*nats.Conn) { close(closed) })))
	require.NoError(t, err)
	require.NoError(t, n.Close(context.Background()))
	<-closed // the handler given through NATSOptions ran
}

func TestACallOverTheMaximumPayloadFailsAtTheCaller(t *testing.T) {
	n := newNode(t)
	big := remote.NewEndpoint[[]byte, int]("test.big")
	_, err := get(t, remote.Call(n, big, make([]byte, 9<<20)))
	require.ErrorIs(t, err, remote.ErrBadRequest)
	var rerr *remote.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, remote.AtCaller, rerr.Where)
}

func TestACallOnAClosedConnectionFailsAtOnce(t *testing.T) {
	n := newNode(t)
	remote.CloseConn(n)
	_, err := get(t, remote.Call(n, add, Add{}, remote.Within(time.Hour)))
	require.ErrorIs(t, err, remote.ErrClosed)
}
