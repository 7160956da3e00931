package remote

import (
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

	inbox string // prefix of this node's reply subjects
	isub  *nats.Subscription
	seq   atomic.Uint64
	skew  atomic.Int64 // largest |offset| seen, nanoseconds

	mu       sync.Mutex // guards pending, services, closed
	pending  map[string]*pending
	services map[*Service]struct{}
	closed   bool
}

// pending is a call waiting for its answer. done resolves the call's
// future with the reply (msg) or an error; it runs once, by whoever
// removes the pending from the node's map.
type pending struct {
	done  func(msg *nats.Msg, err *Error)
	timer *clock.Timer
	stop  func() bool // ends the context watch
	sent  time.Time
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
		pending: make(map[string]*pending), services: make(map[*Service]struct{})}
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
	n.pending = make(map[string]*pending)
	n.mu.Unlock()
	for _, p := range left {
		p.finish(nil, &Error{Where: AtCaller, Err: ErrClosed})
	}
	n.nc.Close()
	n.shutdownServer()
	return err
}

// finish ends the pending's timer and context watch and resolves it.
func (p *pending) finish(msg *nats.Msg, err *Error) {
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.stop != nil {
		p.stop()
	}
	p.done(msg, err)
}

// take removes and returns the pending call of token, or nil if it was
// resolved already.
func (n *Node) take(token string) *pending {
	n.mu.Lock()
	p := n.pending[token]
	delete(n.pending, token)
	n.mu.Unlock()
	return p
}

// answer receives every reply to this node's calls (and the NATS
// server's no-responders notices) on the node's inbox.
func (n *Node) answer(msg *nats.Msg) {
	token := msg.Subject[len(n.inbox)+1:]
	p := n.take(token)
	if p == nil {
		return // resolved already: at its bound, by its context or Close
	}
	if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
		p.finish(nil, &Error{Where: AtNetwork, Err: ErrNoResponders})
		return
	}
	n.noteSkew(p.sent, msg.Header)
	p.finish(msg, nil)
}

// noteSkew estimates the offset of the replier's clock from the
// caller's: ((t1-t0) + (t2-t3)) / 2 with t0 the send, t1 the arrival,
// t2 the reply and t3 now.
func (n *Node) noteSkew(t0 time.Time, h nats.Header) {
	t1, e1 := strconv.ParseInt(h.Get(hReceived), 10, 64)
	t2, e2 := strconv.ParseInt(h.Get(hReplied), 10, 64)
	if e1 != nil || e2 != nil {
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
