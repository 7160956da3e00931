package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
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

	fmu   sync.Mutex    // guards fq
	fq    []func()      // answers of failed calls, for answerFailures
	fsig  chan struct{} // fq has work (buffer of one)
	quit  chan struct{} // closed when the service ends: answerFailures returns
	fdone chan struct{} // closed by answerFailures as it returns
	stop  sync.Once     // closes quit
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
	s := &Service{n: n, name: e.name, clk: clk,
		fsig: make(chan struct{}, 1), quit: make(chan struct{}), fdone: make(chan struct{})}
	if c.maxInFlight > 0 {
		s.sem = make(chan struct{}, c.maxInFlight)
	}
	handle := func(msg *nats.Msg) {
		if msg.Reply == "" {
			return // not a call: nobody to answer
		}
		out := n.senderFor(replyInbox(msg.Reply), false)
		arrived := clk.Now()
		data := msg.Data
		for {
			f, rest, ok := nextFrame(data)
			if !ok {
				return // the rest cannot be framed: its calls end at their bound
			}
			data = rest
			serveFrame(s, e, to, h, &c, out, f, arrived)
		}
	}
	go s.answerFailures()
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

// serveFrame serves one request frame of a batch that arrived at
// arrived, answering through out.
func serveFrame[S, Req, Resp any](s *Service, e Endpoint[Req, Resp], to crisp.Ref[S],
	h func(p *crisp.Proc, s S, req Req) (Resp, error), c *serveConfig, out *sender, f []byte, arrived time.Time) {
	id, ok := frameID(f)
	if !ok {
		return // too short to name its call: nobody to answer
	}
	if !s.enter() {
		s.reply(out, &reply{id: id, received: nanos(arrived), status: stUnknown, where: whereArrival, text: "service closed"}, nil)
		return
	}
	r, body, err := decodeRequest(f, c.maxBody)
	var rep *reply
	switch {
	case err != nil:
		rep = failure(stBadRequest, whereArrival, err.Error())
	case r.codec != e.codec.Name():
		rep = failure(stCodec, whereArrival, fmt.Sprintf("decode request: request in codec %q, endpoint uses %q", r.codec, e.codec.Name()))
	case r.partitions != e.partitions:
		rep = failure(stUnknown, whereArrival, fmt.Sprintf("called with %d partitions, served with %d", r.partitions, e.partitions))
	case deadline.Missed(r.deadline, arrived):
		rep = missed(whereArrival, &deadline.MissedError{Actor: to.Name(), Message: e.name, Deadline: r.deadline, Detected: arrived})
	case !s.admit():
		rep = failure(stRefused, whereArrival, "too many requests in flight")
	}
	if rep != nil {
		rep.id, rep.received = id, nanos(arrived)
		s.reply(out, rep, nil)
		s.wg.Done()
		return
	}
	q := &inFlight[S, Req, Resp]{s: s, e: e, h: h, out: out, id: id, arrived: arrived}
	s.n.serving.Add(1)
	if err := e.codec.Unmarshal(body, &q.req); err != nil {
		q.answer(failure(stCodec, whereArrival, "decode request: "+err.Error()), nil)
		return
	}
	var buf [5]crisp.SendOption
	q.f = crisp.Call(to, q.run, sendOptions(buf[:0], &r)...)
	if testHookQueued != nil {
		testHookQueued()
	}
	// The handler answers from the actor (run). A call that ends
	// without running it (missed, stopped, panicked, a policy failure)
	// is answered once its future resolves.
	if !plumb.OnResolve(q.f, q.resolved) {
		q.resolved()
	}
}

// inFlight is one request queued on its actor.
type inFlight[S, Req, Resp any] struct {
	s        *Service
	e        Endpoint[Req, Resp]
	h        func(p *crisp.Proc, s S, req Req) (Resp, error)
	out      *sender
	id       uint64
	arrived  time.Time
	req      Req
	f        *future.Future[Resp]
	answered atomic.Bool
}

// run is the crisp handler: it runs the endpoint's handler and sends
// its answer at once, from the actor, before the future resolves.
func (q *inFlight[S, Req, Resp]) run(p *crisp.Proc, st S) (Resp, error) {
	v, err := q.h(p, st, q.req)
	if err != nil {
		q.answer(errorReply(err), nil)
		return v, err
	}
	data, merr := q.e.codec.Marshal(&v)
	if merr != nil {
		q.answer(failure(stCodec, whereReceiver, "encode response: "+merr.Error()), nil)
	} else {
		q.answer(&reply{status: stOK}, data)
	}
	return v, err
}

// resolved runs on the goroutine that resolved the call's future (or
// on the one that queued it, if already resolved): if the handler did
// not answer, the failure is answered from the service's own goroutine,
// since a resolver must not block.
func (q *inFlight[S, Req, Resp]) resolved() {
	if q.answered.Load() {
		return
	}
	q.s.failed(func() {
		_, err := q.f.Get()
		if err == nil { // cannot be: a call that succeeds ran run
			err = errors.New("crisp: remote call resolved without an answer")
		}
		q.answer(errorReply(err), nil)
	})
}

// answer sends the request's reply, once, and counts it out.
func (q *inFlight[S, Req, Resp]) answer(rep *reply, data []byte) {
	if q.answered.Swap(true) {
		return
	}
	rep.id, rep.received = q.id, nanos(q.arrived)
	q.s.n.serving.Add(-1) // before the reply, so that its flusher sees this one answered
	q.s.reply(q.out, rep, data)
	q.s.release()
	q.s.wg.Done()
}

// failed queues fn, an answer to a call that failed, for the service's
// goroutine.
func (s *Service) failed(fn func()) {
	s.fmu.Lock()
	s.fq = append(s.fq, fn)
	s.fmu.Unlock()
	select {
	case s.fsig <- struct{}{}:
	default:
	}
}

// answerFailures is the service's goroutine: it sends the answers of
// failed calls until the service is closed.
func (s *Service) answerFailures() {
	defer close(s.fdone)
	for {
		select {
		case <-s.fsig:
		case <-s.quit:
			return
		}
		s.fmu.Lock()
		fq := s.fq
		s.fq = nil
		s.fmu.Unlock()
		for _, fn := range fq {
			fn()
		}
	}
}

// replyInbox is the caller's inbox of a batch whose reply subject is
// reply: all but its last token. The answers go to <inbox>.r
// (docs/wire.md).
func replyInbox(reply string) string {
	if i := strings.LastIndexByte(reply, '.'); i >= 0 {
		return reply[:i]
	}
	return reply
}

// testHookQueued, when set (by tests only, before any Serve), is
// called after each request is queued on its actor.
var testHookQueued func()

// sendOptions appends a request's crisp send options to opts.
func sendOptions(opts []crisp.SendOption, r *request) []crisp.SendOption {
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

// reply sends rep through out, with the service's clock at the reply;
// a failure to publish is dropped (the caller's bound covers a lost
// reply).
func (s *Service) reply(out *sender, rep *reply, data []byte) {
	rep.replied = nanos(s.clk.Now())
	out.add(nil, func(b []byte) []byte { return appendReply(b, rep, data) })
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
	defer s.stopFailures()
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

// stopFailures ends the service's goroutine and waits for it.
func (s *Service) stopFailures() {
	s.stop.Do(func() { close(s.quit) })
	<-s.fdone
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
	s.stopFailures()
}

// failure is a reply of status st.
func failure(st, where byte, text string) *reply {
	return &reply{status: st, where: where, text: text}
}

func missed(where byte, m *deadline.MissedError) *reply {
	return &reply{status: stMissed, where: where, text: m.Error(),
		deadline: nanos(m.Deadline), detected: nanos(m.Detected), actor: m.Actor, message: m.Message}
}

// errorReply is the reply for a crisp call that failed.
func errorReply(err error) *reply {
	var m *deadline.MissedError
	var pe *crisp.PanicError
	var po *crisp.PolicyError
	switch {
	case errors.As(err, &m):
		return missed(whereReceiver, m)
	case errors.As(err, &pe):
		return failure(stPanicked, whereReceiver, fmt.Sprint(pe.Value))
	case errors.As(err, &po):
		return failure(stPolicy, whereReceiver, fmt.Sprint(po.Value))
	case errors.Is(err, crisp.ErrStopped):
		return failure(stStopped, whereReceiver, err.Error())
	}
	return failure(stError, whereReceiver, err.Error())
}

// replyError turns a failed reply's status back into an error.
func replyError(r *reply) error {
	text := r.text
	switch r.status {
	case stMissed:
		m := &deadline.MissedError{Actor: r.actor, Message: r.message}
		if r.deadline != 0 {
			m.Deadline = time.Unix(0, r.deadline)
		}
		if r.detected != 0 {
			m.Detected = time.Unix(0, r.detected)
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
		return &CodecError{Op: op, Text: rest}
	case stBadRequest:
		return fmt.Errorf("%w: %s", ErrBadRequest, text)
	case stError:
		return errors.New(text)
	}
	return fmt.Errorf("%w: reply with status %d: %s", ErrBadRequest, r.status, text)
}
