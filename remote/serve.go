package remote

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/nats-io/nats.go"
)

// Service is an endpoint served by one node: the subscriptions that
// take its requests and the answers still being worked on.
type Service struct {
	n    *Node
	name string
	clk  clock.Clock // the actor's system's: arrivals, misses and replies read it
	subs []*nats.Subscription

	mu      sync.Mutex     // guards closing, closed and the wg.Add that follows the check of closed
	closing bool           // Close has begun (draining)
	closed  bool           // drained: requests are no longer taken
	wg      sync.WaitGroup // one per request taken and not yet answered
	sem     chan struct{}  // MaxInFlight tokens; nil when unlimited
}

// ServeOption configures [Serve].
type ServeOption struct{ apply func(*serveConfig) }

type serveConfig struct {
	own         []int
	ownSet      bool
	maxInFlight int
	maxBody     int
}

// OwnPartitions makes this member serve only the given partitions of a
// partitioned endpoint ([Partitions]); by default it serves them all.
// Per-key order across the members of a group holds while each
// partition has one member: docs/wire.md gives the rule for members
// joining and leaving.
func OwnPartitions(ids ...int) ServeOption {
	ids = append([]int(nil), ids...)
	return ServeOption{func(c *serveConfig) { c.own, c.ownSet = ids, true }}
}

// MaxInFlight makes the service refuse ([ErrRefused]) a request that
// arrives while n of its requests are queued or running on this node.
// 0, the default, takes them all.
func MaxInFlight(n int) ServeOption {
	if n < 0 {
		panic("crisp: remote.MaxInFlight with a negative count")
	}
	return ServeOption{func(c *serveConfig) { c.maxInFlight = n }}
}

// MaxRequest sets the largest request payload the service reads, in
// bytes (1 MiB by default); a larger one gets [ErrBadRequest].
func MaxRequest(bytes int) ServeOption {
	if bytes <= 0 {
		panic("crisp: remote.MaxRequest with a size <= 0")
	}
	return ServeOption{func(c *serveConfig) { c.maxBody = bytes }}
}

// Serve exposes handler h, run on the actor (or group) to, as endpoint
// e: every request runs as crisp.Call(to, ...) with the request's
// deadline (crisp.By), priority, tag, key and cost, so the actor's
// policy orders it among its local work. A request whose deadline has
// passed on the actor's clock when it arrives is answered with a miss
// at once and never queued. Several nodes may serve one endpoint: they
// share its requests (a NATS queue group).
//
// The actor's system clock is the one the service reads. Serve returns
// an error if NATS refuses a subscription; it panics if n or to is nil,
// or if a partition given to OwnPartitions is out of range.
func Serve[S, Req, Resp any](n *Node, e Endpoint[Req, Resp], to crisp.Ref[S],
	h func(p *crisp.Proc, s S, req Req) (Resp, error), opts ...ServeOption) (*Service, error) {
	if n == nil || to == nil || h == nil {
		panic("crisp: remote.Serve with a nil node, actor or handler")
	}
	c := serveConfig{maxBody: defaultMaxBody}
	for _, o := range opts {
		o.apply(&c)
	}
	subjects := []string{subject(e.name)}
	if e.partitions > 0 {
		own := c.own
		if !c.ownSet {
			for i := range e.partitions {
				own = append(own, i)
			}
		}
		for _, i := range own {
			if i < 0 || i >= e.partitions {
				panic(fmt.Sprintf("crisp: remote.OwnPartitions(%d) on an endpoint of %d partitions", i, e.partitions))
			}
			subjects = append(subjects, partSubject(e.name, i))
		}
	}
	clk := to.System().Clock()
	s := &Service{n: n, name: e.name, clk: clk}
	if c.maxInFlight > 0 {
		s.sem = make(chan struct{}, c.maxInFlight)
	}
	handle := func(msg *nats.Msg) {
		if msg.Reply == "" {
			return // not a call: nobody to answer
		}
		if !s.enter() {
			s.reply(msg, clk.Now(), status(stUnknown, AtArrival, "service closed"), nil)
			return
		}
		arrived := clk.Now()
		r, err := decodeRequest(msg.Header, len(msg.Data), c.maxBody)
		var st func(nats.Header)
		switch {
		case err != nil:
			st = status(stBadRequest, AtArrival, err.Error())
		case r.codec != e.codec.Name():
			st = status(stCodec, AtArrival, fmt.Sprintf("decode request: request in codec %q, endpoint uses %q", r.codec, e.codec.Name()))
		case r.partitions != e.partitions:
			st = status(stUnknown, AtArrival, fmt.Sprintf("called with %d partitions, served with %d", r.partitions, e.partitions))
		case deadline.Missed(r.deadline, arrived):
			st = missed(AtArrival, &deadline.MissedError{Actor: to.Name(), Message: e.name, Deadline: r.deadline, Detected: arrived})
		case !s.admit():
			st = status(stRefused, AtArrival, "too many requests in flight")
		}
		if st != nil {
			s.reply(msg, arrived, st, nil)
			s.wg.Done()
			return
		}
		var req Req
		if err := e.codec.Unmarshal(msg.Data, &req); err != nil {
			s.release()
			s.reply(msg, arrived, status(stCodec, AtArrival, "decode request: "+err.Error()), nil)
			s.wg.Done()
			return
		}
		f := crisp.Call(to, func(p *crisp.Proc, st S) (Resp, error) { return h(p, st, req) }, sendOptions(&r)...)
		if testHookQueued != nil {
			testHookQueued()
		}
		go func() { // one per request in flight: the answer waits for the actor
			defer s.wg.Done()
			<-f.Done()
			s.release()
			v, err := f.Get()
			if err != nil {
				s.reply(msg, arrived, errorStatus(err), nil)
				return
			}
			data, err := e.codec.Marshal(&v)
			if err != nil {
				s.reply(msg, arrived, status(stCodec, AtReceiver, "encode response: "+err.Error()), nil)
				return
			}
			s.reply(msg, arrived, status(stOK, "", ""), data)
		}()
	}
	for _, subj := range subjects {
		sub, err := n.nc.QueueSubscribe(subj, queueGroup, handle)
		if err != nil {
			s.unsubscribe()
			return nil, fmt.Errorf("remote: serving %s: %w", e.name, err)
		}
		sub.SetPendingLimits(-1, 64<<20)
		s.subs = append(s.subs, sub)
	}
	// Subscriptions take effect at the server once flushed: a Call made
	// after Serve returns must find them.
	if err := n.nc.Flush(); err != nil {
		s.unsubscribe()
		return nil, fmt.Errorf("remote: serving %s: %w", e.name, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		s.unsubscribe()
		return nil, ErrClosed
	}
	n.services[s] = struct{}{}
	n.mu.Unlock()
	return s, nil
}

// testHookQueued, when set (by tests only, before any Serve), is
// called after each request is queued on its actor.
var testHookQueued func()

// sendOptions turns a request's headers into crisp send options.
func sendOptions(r *request) []crisp.SendOption {
	opts := make([]crisp.SendOption, 0, 5)
	if !r.deadline.IsZero() {
		opts = append(opts, crisp.By(r.deadline))
	}
	if r.priority != 0 {
		opts = append(opts, crisp.Priority(r.priority))
	}
	if r.tag != "" {
		opts = append(opts, crisp.Tag(r.tag))
	}
	if r.key != "" {
		opts = append(opts, crisp.Key(r.key))
	}
	if r.cost > 0 {
		opts = append(opts, crisp.Cost(r.cost))
	}
	return opts
}

// enter counts a request in, unless the service is closed.
func (s *Service) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Service) admit() bool {
	if s.sem == nil {
		return true
	}
	select {
	case s.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Service) release() {
	if s.sem != nil {
		<-s.sem
	}
}

// reply answers msg; a failure to publish is dropped (the caller's
// bound covers a lost reply).
func (s *Service) reply(msg *nats.Msg, arrived time.Time, st func(nats.Header), data []byte) {
	out := &nats.Msg{Subject: msg.Reply, Data: data, Header: make(nats.Header, 6)}
	out.Header.Set(hVersion, WireVersion)
	st(out.Header)
	out.Header.Set(hReceived, unixNano(arrived))
	out.Header.Set(hReplied, unixNano(s.clk.Now()))
	_ = s.n.nc.PublishMsg(out)
}

// Close stops taking requests and waits, up to ctx, for the answers to
// those already taken. It drains the service's subscriptions first, so
// requests NATS had already delivered to this node are served, not
// dropped; a request arriving after that gets [ErrUnknownEndpoint], or
// [ErrNoResponders] once no member serves the endpoint.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.mu.Unlock()
	var drained []<-chan nats.SubStatus
	for _, sub := range s.subs {
		ch := sub.StatusChanged(nats.SubscriptionClosed)
		if sub.Drain() == nil {
			drained = append(drained, ch)
		} else {
			_ = sub.Unsubscribe()
		}
	}
	var err error
	for _, ch := range drained {
		if err = waitClosed(ctx, ch); err != nil {
			break
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.n.mu.Lock()
	delete(s.n.services, s)
	s.n.mu.Unlock()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitClosed waits for a draining subscription's status channel to
// close.
func waitClosed(ctx context.Context, ch <-chan nats.SubStatus) error {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Service) unsubscribe() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
}

// status writes a reply's status, where and error text.
func status(st, where, text string) func(nats.Header) {
	return func(h nats.Header) {
		h.Set(hStatus, st)
		if where != "" {
			h.Set(hWhere, where)
		}
		if text != "" {
			h.Set(hError, clip(text, maxErrorText))
		}
	}
}

func missed(where string, m *deadline.MissedError) func(nats.Header) {
	return func(h nats.Header) {
		status(stMissed, where, m.Error())(h)
		h.Set(hDeadline, unixNano(m.Deadline))
		h.Set(hDetected, unixNano(m.Detected))
		h.Set(hActor, clip(m.Actor, maxHeaderValue))
		h.Set(hMessage, clip(m.Message, maxHeaderValue))
	}
}

// errorStatus is the reply for a crisp call that failed.
func errorStatus(err error) func(nats.Header) {
	var m *deadline.MissedError
	var pe *crisp.PanicError
	var po *crisp.PolicyError
	switch {
	case errors.As(err, &m):
		return missed(AtReceiver, m)
	case errors.As(err, &pe):
		return status(stPanicked, AtReceiver, fmt.Sprint(pe.Value))
	case errors.As(err, &po):
		return status(stPolicy, AtReceiver, fmt.Sprint(po.Value))
	case errors.Is(err, crisp.ErrStopped):
		return status(stStopped, AtReceiver, err.Error())
	}
	return status(stError, AtReceiver, err.Error())
}

// replyError turns a failed reply's status back into an error.
func replyError(st string, h nats.Header) error {
	text := h.Get(hError)
	switch st {
	case stMissed:
		m := &deadline.MissedError{Actor: h.Get(hActor), Message: h.Get(hMessage)}
		if t, err := strconv.ParseInt(h.Get(hDeadline), 10, 64); err == nil {
			m.Deadline = time.Unix(0, t)
		}
		if t, err := strconv.ParseInt(h.Get(hDetected), 10, 64); err == nil {
			m.Detected = time.Unix(0, t)
		}
		return m
	case stStopped:
		return crisp.ErrStopped
	case stPanicked:
		return &crisp.PanicError{Value: text}
	case stPolicy:
		return &crisp.PolicyError{Value: text}
	case stRefused:
		return fmt.Errorf("%w: %s", ErrRefused, text)
	case stUnknown:
		return fmt.Errorf("%w: %s", ErrUnknownEndpoint, text)
	case stCodec:
		op, rest, ok := strings.Cut(text, ": ")
		if !ok || (op != "decode request" && op != "encode response") {
			op, rest = "decode request", text
		}
		return &CodecError{Op: op, Codec: h.Get(hCodec), Text: rest}
	case stBadRequest:
		return fmt.Errorf("%w: %s", ErrBadRequest, text)
	case stError:
		return errors.New(text)
	}
	return fmt.Errorf("%w: reply with status %.32q: %s", ErrBadRequest, st, text)
}
