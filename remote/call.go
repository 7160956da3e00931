package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/nats-io/nats.go"
)

// CallOption is an option of one [Call]: the remote counterparts of
// crisp's send options, with the same names and meanings. Options are
// small values; passing them does not allocate.
type CallOption struct {
	kind optKind
	n    int64
	t    time.Time
	s    string
	ctx  context.Context
}

type optKind uint8

const (
	optWithin optKind = iota + 1
	optBy
	optPriority
	optTag
	optKey
	optCost
	optContext
)

// Within gives the call the absolute start deadline now+d on the
// calling node's clock; d <= 0 means "must start now" and so fails at
// once with a miss. The deadline travels absolute: see docs/wire.md for
// the clock assumption.
func Within(d time.Duration) CallOption { return CallOption{kind: optWithin, n: int64(d)} }

// By gives the call the absolute start deadline t; the zero time means
// none.
func By(t time.Time) CallOption { return CallOption{kind: optBy, t: t} }

// Priority sets the priority the receiving actor's policy sees.
func Priority(n int) CallOption { return CallOption{kind: optPriority, n: int64(n)} }

// Tag sets the tag the receiving actor's policy sees (as a string: a
// tag crosses the wire as text, at most 1 KiB).
func Tag(s string) CallOption { return CallOption{kind: optTag, s: s} }

// Key names the data the call touches: on the receiver it becomes
// crisp.Key(k), so calls with one key never overlap and start in the
// order they arrive; on an endpoint with [Partitions], it also chooses
// the member that serves the call. At most 1 KiB.
func Key(k string) CallOption { return CallOption{kind: optKey, s: k} }

// Cost says the handler runs for about d (crisp.Cost on the receiver).
func Cost(d time.Duration) CallOption {
	if d < 0 {
		panic("crisp: remote.Cost with a negative duration")
	}
	return CallOption{kind: optCost, n: int64(d)}
}

// Context ties the call to ctx: its deadline, if earlier, becomes the
// call's, and the call's future fails with ctx.Err() when ctx ends
// first. (The receiver is not told of a cancellation: a request already
// sent may still run.)
func Context(ctx context.Context) CallOption {
	if ctx == nil {
		panic("crisp: remote.Context(nil)")
	}
	return CallOption{kind: optContext, ctx: ctx}
}

// Call sends req to endpoint e, served by some node of n's network, and
// returns a future of the response. The future always resolves, by the
// call's bound at the latest: its deadline plus the node's [Allowance]
// if it has one, else [MaxWait] after the call. Failures are [*Error]
// values saying where they happened; see the package doc for the list.
func Call[Req, Resp any](n *Node, e Endpoint[Req, Resp], req Req, opts ...CallOption) *future.Future[Resp] {
	if n == nil {
		panic("crisp: remote.Call on a nil *Node")
	}
	if e.name == "" {
		panic("crisp: remote.Call on an Endpoint not made by NewEndpoint")
	}
	pr := future.NewPromise[Resp](n.clk)
	fail := func(where string, err error) *future.Future[Resp] {
		pr.Fail(&Error{Endpoint: e.name, Where: where, Err: err})
		return pr.Future()
	}
	now := n.clk.Now()
	r := request{sent: now, codec: e.codec.Name(), partitions: e.partitions}
	var ctx context.Context
	for _, o := range opts {
		switch o.kind {
		case optWithin:
			r.deadline = deadline.Earliest(r.deadline, now.Add(time.Duration(o.n)))
		case optBy:
			r.deadline = deadline.Earliest(r.deadline, o.t)
		case optPriority:
			r.priority = int(o.n)
		case optTag:
			r.tag = o.s
		case optKey:
			r.key = o.s
		case optCost:
			r.cost = time.Duration(o.n)
		case optContext:
			ctx = o.ctx
		}
	}
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return fail(AtCaller, err)
		}
		if d, ok := ctx.Deadline(); ok {
			r.deadline = deadline.Earliest(r.deadline, d)
		}
	}
	if deadline.Missed(r.deadline, now) {
		return fail(AtCaller, &deadline.MissedError{Actor: "remote " + e.name, Message: "call", Deadline: r.deadline, Detected: now})
	}
	if len(r.tag) > maxHeaderValue || len(r.key) > maxHeaderValue || len(r.codec) > 255 {
		return fail(AtCaller, fmt.Errorf("%w: tag or key longer than %d bytes, or codec name longer than 255", ErrBadRequest, maxHeaderValue))
	}
	data, err := e.codec.Marshal(&req)
	if err != nil {
		return fail(AtCaller, &CodecError{Op: "encode request", Codec: e.codec.Name(), Text: err.Error()})
	}
	subj := e.subject
	if r.key != "" && e.partitions > 0 {
		subj = partSubject(e.name, partition(r.key, e.partitions))
	}
	r.id = n.seq.Add(1)
	c := &callOf[Req, Resp]{pending: pending{id: r.id, sent: now}, pr: pr, e: e}
	c.to = c
	p := &c.pending
	if !r.deadline.IsZero() {
		p.bound = r.deadline.Add(n.allowance)
	} else {
		p.bound = now.Add(n.maxWait)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return fail(AtCaller, ErrClosed)
	}
	n.track(p)
	// The context watch is armed under the lock so that a reply, which
	// takes the pending under it, finds it set.
	if ctx != nil && ctx.Done() != nil {
		id := r.id
		p.stop = context.AfterFunc(ctx, func() {
			if p := n.take(id); p != nil {
				p.finish(reply{}, nil, &Error{Where: AtCaller, Err: ctx.Err()})
			}
		})
	}
	n.mu.Unlock()
	if int64(lenPrefix+reqFixed+len(r.codec)+len(r.tag)+len(r.key)+len(data)) > n.nc.MaxPayload() {
		n.failPublish([]*pending{p}, nats.ErrMaxPayload)
		return pr.Future()
	}
	n.senderFor(subj, true).add(p, func(b []byte) []byte { return appendRequest(b, &r, data) })
	return pr.Future()
}

// callOf is a call's pending entry with what resolves it: one
// allocation per call.
type callOf[Req, Resp any] struct {
	pending
	pr *future.Promise[Resp]
	e  Endpoint[Req, Resp]
}

// resolve resolves the call's future with the reply or the error.
func (c *callOf[Req, Resp]) resolve(rep *reply, body []byte, err *Error) {
	if err != nil {
		err.Endpoint = c.e.name
		c.pr.Fail(err)
		return
	}
	v, rerr := readReply(c.e, rep, body)
	c.pr.Resolve(v, rerr)
}

// readReply turns a reply into the call's result.
func readReply[Req, Resp any](e Endpoint[Req, Resp], r *reply, body []byte) (Resp, error) {
	var v Resp
	if r.status == stOK {
		if err := e.codec.Unmarshal(body, &v); err != nil {
			return v, &Error{Endpoint: e.name, Where: AtCaller,
				Err: &CodecError{Op: "decode response", Codec: e.codec.Name(), Text: err.Error()}}
		}
		return v, nil
	}
	err := replyError(r)
	if ce, ok := err.(*CodecError); ok && ce.Codec == "" {
		ce.Codec = e.codec.Name()
	}
	return v, &Error{Endpoint: e.name, Where: whereOf(r.where), Err: err}
}

func whereOf(w byte) string {
	if w == whereArrival {
		return AtArrival
	}
	return AtReceiver
}
