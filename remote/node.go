package remote

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Default bounds of a node (see [Allowance] and [MaxWait]).
const (
	DefaultAllowance = 250 * time.Millisecond
	DefaultMaxWait   = 30 * time.Second
)

// Node is one process's place on a NATS network: it serves endpoints
// ([Serve]) and calls them ([Call]). Without [URL], Start runs a NATS
// server inside the process, listening on a free loopback port that
// other processes join through [Node.URL].
type Node struct {
	nc        *nats.Conn
	srv       *server.Server // nil when connected to a URL
	url       string
	clk       clock.Clock
	allowance time.Duration
	maxWait   time.Duration

	inbox   string // prefix of this node's reply subjects
	replyTo string // inbox.r, where servers send the replies
	isub    *nats.Subscription
	seq     atomic.Uint64 // call ids
	batch   atomic.Uint64 // batch numbers, in reply subjects
	skew    atomic.Int64  // largest |offset| seen, nanoseconds

	noYieldUntil atomic.Int64 // Unix nanoseconds, real clock: flushers do not yield before (see yield)
	slowYields   atomic.Int64 // slow yields in a row

	callSenders  sync.Map     // subject -> *sender of calls
	replySenders sync.Map     // caller's inbox -> *sender of replies
	callFlusher  flusher      // publishes the batches of calls
	replyFlusher flusher      // publishes the batches of replies
	serving      atomic.Int64 // requests queued on actors and not answered yet

	mu      sync.Mutex // guards pending, bounds, timer, armed, services, closed
	pending map[uint64]*pending
	// outstanding is len(pending), stored under mu, read without it.
	outstanding atomic.Int64
	bounds      bounds       // the pending calls by bound, earliest first
	timer       *clock.Timer // one for the node, armed for the earliest bound
	armed       time.Time    // when timer fires; zero: not armed
	services    map[*Service]struct{}
	closed      bool

	dmu      sync.Mutex     // guards stopping and the drains.Add after its check
	stopping bool           // Close waits for the drains: no new ones
	drains   sync.WaitGroup // the flushers' goroutines
}

// pending is a call waiting for its answer. to resolves the call's
// future with the reply or an error; it runs once, by whoever removes
// the pending from the node's map.
type pending struct {
	id    uint64
	to    resolver
	stop  func() bool // ends the context watch
	sent  time.Time
	bound time.Time // when it fails with ErrNoAnswer
	index int       // in the node's bounds; -1 when not there
	batch batchOf
}

// Option configures [Start].
type Option struct{ apply func(*config) }

type config struct {
	url       string
	nopts     []nats.Option
	clk       clock.Clock
	allowance time.Duration
	maxWait   time.Duration
	host      string
}

// URL connects the node to a NATS deployment (a nats:// or tls:// URL,
// or several separated by commas) instead of starting a server in the
// process.
func URL(u string) Option { return Option{func(c *config) { c.url = u }} }

// NATSOptions passes options to the NATS client (nats.UserInfo,
// nats.Token, nats.Secure, nats.RootCAs, nats.UserCredentials, ...),
// for a deployment given with [URL] or the embedded server alike.
func NATSOptions(opts ...nats.Option) Option {
	return Option{func(c *config) { c.nopts = append(c.nopts, opts...) }}
}

// WithClock makes the node read time on clk: deadlines from [Within],
// the clock readings sent for skew estimation, and the timers that end
// calls at their bound. Pass the clock of the crisp system the node
// serves (crisp.System.Clock) so that both read the same time.
func WithClock(clk clock.Clock) Option { return Option{func(c *config) { c.clk = clk }} }

// Allowance sets how long past its deadline a call waits for its answer
// before failing with [ErrNoAnswer]: it covers the clock skew between
// the nodes, the network's latency and the time the receiver takes to
// send its reply (DefaultAllowance, 250ms). docs/wire.md says how to
// choose it.
func Allowance(d time.Duration) Option {
	if d < 0 {
		panic("crisp: remote.Allowance with a negative duration")
	}
	return Option{func(c *config) { c.allowance = d }}
}

// MaxWait bounds calls that have no deadline: such a call fails with
// [ErrNoAnswer] after d without an answer (DefaultMaxWait, 30s).
func MaxWait(d time.Duration) Option {
	if d <= 0 {
		panic("crisp: remote.MaxWait with a duration <= 0")
	}
	return Option{func(c *config) { c.maxWait = d }}
}

// Listen sets the host on which the embedded server listens
// ("127.0.0.1" by default; "0.0.0.0" to take other machines). It has no
// effect with [URL].
func Listen(host string) Option { return Option{func(c *config) { c.host = host }} }

// Start connects a node: to the deployment given with [URL], or to a
// NATS server it starts inside the process.
func Start(opts ...Option) (*Node, error) {
	c := config{clk: clock.New(), allowance: DefaultAllowance, maxWait: DefaultMaxWait, host: "127.0.0.1"}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.clk == nil {
		c.clk = clock.New()
	}
	n := &Node{clk: c.clk, allowance: c.allowance, maxWait: c.maxWait,
		pending: make(map[uint64]*pending), services: make(map[*Service]struct{})}
	n.callFlusher = flusher{n: n, calls: true}
	n.replyFlusher = flusher{n: n}
	nopts := append([]nats.Option{nats.Name("crisp"), nats.MaxReconnects(-1)}, c.nopts...)
	var err error
	if c.url == "" {
		if n.srv, err = embedded(c.host); err != nil {
			return nil, err
		}
		n.url = n.srv.ClientURL()
		nopts = append(nopts, nats.InProcessServer(n.srv))
	} else {
		n.url = c.url
	}
	if n.nc, err = nats.Connect(n.url, nopts...); err != nil {
		n.shutdownServer()
		return nil, fmt.Errorf("remote: connecting to %s: %w", n.url, err)
	}
	n.inbox = nats.NewInbox()
	if n.isub, err = n.nc.Subscribe(n.inbox+".*", n.answer); err != nil {
		n.nc.Close()
		n.shutdownServer()
		return nil, fmt.Errorf("remote: subscribing to replies: %w", err)
	}
	n.isub.SetPendingLimits(-1, -1) // the replies of this node's own calls: never drop one
	n.replyTo = n.inbox + ".r"
	return n, nil
}

// embedded starts an in-process NATS server on a free port of host.
func embedded(host string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{
		Host: host, Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		MaxPayload: 8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("remote: embedded NATS server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) { // clock seam: a real server's start-up, not the node's time
		s.Shutdown()
		s.WaitForShutdown()
		return nil, errors.New("remote: embedded NATS server did not start")
	}
	return s, nil
}

func (n *Node) shutdownServer() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

// URL returns the URL other processes pass to [URL] to join this node's
// network: the embedded server's, or the one the node connected to.
func (n *Node) URL() string { return n.url }

// Clock returns the node's clock.
func (n *Node) Clock() clock.Clock { return n.clk }

// Skew returns the largest clock offset between this node and the nodes
// that answered its calls, estimated from the clock readings on
// requests and replies as NTP does (half the difference of the two
// one-way delays). It is an estimate, not a bound: it includes any
// asymmetry of the network. Compare it with the node's allowance.
func (n *Node) Skew() time.Duration { return time.Duration(n.skew.Load()) }

// Close ends the node: it closes its services, waiting (up to ctx) for
// the answers to requests they already queued; fails its pending calls
// with [ErrClosed]; closes the connection; and stops the embedded
// server. It returns ctx.Err() if answers were still outstanding when
// ctx ended (they are abandoned: their futures belong to the actors'
// system, which resolves them at its shutdown).
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	svcs := make([]*Service, 0, len(n.services))
	for s := range n.services {
		svcs = append(svcs, s)
	}
	n.mu.Unlock()
	var err error
	for _, s := range svcs {
		if e := s.Close(ctx); e != nil && err == nil {
			err = e
		}
	}
	n.mu.Lock()
	left := n.pending
	n.pending = make(map[uint64]*pending)
	n.outstanding.Store(0)
	n.bounds = nil
	if n.timer != nil {
		n.timer.Stop()
	}
	n.mu.Unlock()
	for _, p := range left {
		p.finish(reply{}, nil, &Error{Where: AtCaller, Err: ErrClosed})
	}
	n.dmu.Lock()
	n.stopping = true
	n.dmu.Unlock()
	n.drains.Wait() // the replies already made go out before the connection closes
	n.nc.Close()
	n.shutdownServer()
	return err
}

// finish ends the pending's context watch and resolves it.
func (p *pending) finish(r reply, data []byte, err *Error) {
	if p.stop != nil {
		p.stop()
	}
	p.to.resolve(&r, data, err)
}

// A resolver resolves a call's future (a *callOf).
type resolver interface {
	resolve(r *reply, data []byte, err *Error)
}

// track adds p to the pending calls and bounds; the caller holds n.mu.
// The node's one timer is re-armed only when p's bound is the earliest.
func (n *Node) track(p *pending) {
	n.pending[p.id] = p
	n.outstanding.Store(int64(len(n.pending)))
	heap.Push(&n.bounds, p)
	if n.armed.IsZero() || p.bound.Before(n.armed) {
		n.arm(p.bound)
	}
}

// arm sets the node's timer for t; the caller holds n.mu.
func (n *Node) arm(t time.Time) {
	d := t.Sub(n.clk.Now())
	n.armed = t
	if n.timer == nil {
		n.timer = n.clk.AfterFunc(d, n.expire)
		return
	}
	n.timer.Reset(d)
}

// expire fails the calls whose bound has come with ErrNoAnswer and
// re-arms the timer for the next bound.
func (n *Node) expire() {
	n.mu.Lock()
	now := n.clk.Now()
	var due []*pending
	for len(n.bounds) > 0 && !n.bounds[0].bound.After(now) {
		p := heap.Pop(&n.bounds).(*pending)
		delete(n.pending, p.id)
		due = append(due, p)
	}
	n.outstanding.Store(int64(len(n.pending)))
	n.armed = time.Time{}
	if len(n.bounds) > 0 && !n.closed {
		n.arm(n.bounds[0].bound)
	}
	n.mu.Unlock()
	for _, p := range due {
		p.finish(reply{}, nil, &Error{Where: AtNetwork, Err: ErrNoAnswer})
	}
}

// take removes and returns the pending call of id, or nil if it was
// resolved already.
func (n *Node) take(id uint64) *pending {
	n.mu.Lock()
	p := n.pending[id]
	if p != nil {
		delete(n.pending, id)
		n.outstanding.Store(int64(len(n.pending)))
		heap.Remove(&n.bounds, p.index)
	}
	n.mu.Unlock()
	return p
}

// failPublish finishes the calls of a batch NATS would not take.
func (n *Node) failPublish(ps []*pending, err error) {
	where := AtNetwork
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		err, where = fmt.Errorf("%w: %w", ErrBadRequest, err), AtCaller
	case errors.Is(err, nats.ErrConnectionClosed):
		err, where = fmt.Errorf("%w: %w", ErrClosed, err), AtCaller
	}
	for _, p := range ps {
		if p := n.take(p.id); p != nil {
			p.finish(reply{}, nil, &Error{Where: where, Err: err})
		}
	}
}

// answer receives every reply batch to this node's calls on inbox.r,
// and the NATS server's no-responders notices on inbox.b<batch>.
func (n *Node) answer(msg *nats.Msg) {
	if msg.Subject != n.replyTo {
		if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
			n.noResponders(msg.Subject[len(n.inbox)+1:])
		}
		return
	}
	data := msg.Data
	for {
		f, rest, ok := nextFrame(data)
		if !ok {
			return
		}
		data = rest
		r, body, err := decodeReply(f)
		if err != nil {
			continue // not a reply this node can read: the call's bound covers it
		}
		p := n.take(r.id)
		if p == nil {
			continue // resolved already: at its bound, by its context or Close
		}
		n.noteSkew(p.sent, r.received, r.replied)
		p.finish(r, body, nil)
	}
}

// noResponders fails the calls of batch token (b<base36>): no service
// subscribes to their subject. A rare path: it scans the pending calls.
func (n *Node) noResponders(token string) {
	if len(token) < 2 || token[0] != 'b' {
		return
	}
	b, err := strconv.ParseUint(token[1:], 36, 64)
	if err != nil {
		return
	}
	var hit []*pending
	n.mu.Lock()
	for id, p := range n.pending {
		if p.batch.Load() == b {
			delete(n.pending, id)
			heap.Remove(&n.bounds, p.index)
			hit = append(hit, p)
		}
	}
	n.outstanding.Store(int64(len(n.pending)))
	n.mu.Unlock()
	for _, p := range hit {
		p.finish(reply{}, nil, &Error{Where: AtNetwork, Err: ErrNoResponders})
	}
}

// noteSkew estimates the offset of the replier's clock from the
// caller's: ((t1-t0) + (t2-t3)) / 2 with t0 the send, t1 the arrival,
// t2 the reply and t3 now.
func (n *Node) noteSkew(t0 time.Time, t1, t2 int64) {
	if t1 <= 0 || t2 <= 0 {
		return
	}
	t3 := n.clk.Now()
	off := ((t1 - t0.UnixNano()) + (t2 - t3.UnixNano())) / 2
	if off < 0 {
		off = -off
	}
	for {
		old := n.skew.Load()
		if off <= old || n.skew.CompareAndSwap(old, off) {
			return
		}
	}
}

// bounds is a min-heap of pending calls by bound (container/heap).
type bounds []*pending

func (b bounds) Len() int           { return len(b) }
func (b bounds) Less(i, j int) bool { return b[i].bound.Before(b[j].bound) }
func (b bounds) Swap(i, j int) {
	b[i], b[j] = b[j], b[i]
	b[i].index, b[j].index = i, j
}
func (b *bounds) Push(x any) {
	p := x.(*pending)
	p.index = len(*b)
	*b = append(*b, p)
}
func (b *bounds) Pop() any {
	old := *b
	p := old[len(old)-1]
	old[len(old)-1] = nil // avoid holding the call
	p.index = -1
	*b = old[:len(old)-1]
	return p
}
