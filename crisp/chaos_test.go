package crisp_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
)

var chaosLong = flag.Bool("long", false, "run the chaos test for 30 seconds per clock instead of 1, in rounds of a second")

// chaosCap bounds the messages of one round, and so the memory their
// records hold: without the race detector a round sends it in a second.
const chaosCap = 100_000

// TestChaos sends random work to many actors on the real clock, from
// several goroutines, for a second per configuration (30 under -long;
// run it with -race): deadlines short, zero, or already past, some
// messages tied to contexts that end at random, handlers that sleep,
// panic, await futures (some never resolved), conditions and timeouts,
// suspend, send further messages, stop actors (their own or others)
// and hand their results to Then; a quarter of the actors are groups of
// 2 to 4 workers whose messages carry one or two keys (or none); actors
// stopped and replaced while they work; and, at the end, Shutdown called from three goroutines at
// once while the senders still send. Then it checks the promises the
// runtime makes whatever the interleaving: every future is resolved,
// exactly once (its OnResolve callback ran once); no message both ran
// and was failed for its deadline, context or stop; a message that
// missed its deadline never started and was detected at or after it; a
// message that started did so before its deadline, as the runtime read
// the clock when it took the message (checked under a clock that
// records that reading); no two messages of a group holding a key in
// common ran at once; and no goroutine is left.
func TestChaos(t *testing.T) {
	round, total := time.Second, time.Second
	switch {
	case *chaosLong:
		total = 30 * time.Second // in rounds of a second, each with its own system
	case testing.Short():
		round, total = 300*time.Millisecond, 300*time.Millisecond
	}
	for i, cfg := range []struct {
		name string
		clk  func() *chaosClock
	}{
		{"default clock", func() *chaosClock { return nil }},
		{"clock recording take-time readings", newChaosClock},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			end := time.Now().Add(total)
			for r := uint64(0); r == 0 || time.Now().Before(end); r++ {
				runChaos(t, cfg.clk(), round, uint64(i)<<32|r)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// chaosClock is the real clock, remembering for each goroutine the last
// reading made by the runtime's check, as it takes a message, that the
// message's deadline has not passed (crisp's (*core).late): the reading
// the semantics calls the start.
type chaosClock struct {
	clock.Clock
	readings sync.Map // gid.ID -> time.Time
	isLate   sync.Map // pc -> bool
}

func newChaosClock() *chaosClock { return &chaosClock{Clock: clock.New()} }

func (c *chaosClock) Now() time.Time {
	t := c.Clock.Now()
	if c.fromLate() {
		c.readings.Store(gid.Current(), t)
	}
	return t
}

func (c *chaosClock) fromLate() bool {
	var pcs [3]uintptr
	n := runtime.Callers(2, pcs[:])
	for _, pc := range pcs[:n] {
		if v, ok := c.isLate.Load(pc); ok {
			if v.(bool) {
				return true
			}
			continue
		}
		frames := runtime.CallersFrames([]uintptr{pc})
		late := false
		for {
			f, more := frames.Next()
			late = late || strings.HasSuffix(f.Function, "crisp/crisp.(*core).late")
			if !more {
				break
			}
		}
		c.isLate.Store(pc, late)
		if late {
			return true
		}
	}
	return false
}

// takeReading returns, and forgets, the reading the check made on the
// calling goroutine.
func (c *chaosClock) takeReading() (time.Time, bool) {
	v, ok := c.readings.LoadAndDelete(gid.Current())
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

type chaosState struct{ counter int }

// chaosMsg is what the test knows of one message.
type chaosMsg struct {
	id       int
	tell     bool
	past     bool // its deadline had passed when it was sent
	f        *future.Future[int]
	keys     []int // on a group: the keys it holds while it runs
	group    bool  // sent to a group
	plan     []int // its handler's steps
	started  atomic.Int32
	resolved atomic.Int32 // OnResolve calls
	missed   atomic.Int32 // miss hook calls
}

type chaosRun struct {
	t     *testing.T
	sys   *crisp.System
	clk   *chaosClock // nil on the default clock
	slots []atomic.Pointer[chaosActor]
	never []*future.Promise[int] // resolved by nobody: their waiters end at Shutdown

	mu         sync.Mutex // guards msgs, violations
	msgs       []*chaosMsg
	violations []string

	stops, spawns atomic.Int64

	groups sync.Map // *chaosActor -> *[chaosKeys]atomic.Int32, for groups: handlers running with each key
}

// chaosKeys is how many keys group messages choose from.
const chaosKeys = 4

var chaosPolicies = []policy.Policy{policy.EDF(), policy.FIFO(), policy.ByPriority(), policy.Func(func(a, b *policy.Item) int {
	x, _ := a.Tag.(int)
	y, _ := b.Tag.(int)
	return cmp.Compare(x, y)
})}

func runChaos(t *testing.T, clk *chaosClock, d time.Duration, seed uint64) {
	ignore := goleak.IgnoreCurrent()
	opts := []crisp.Option{crisp.WithLogger(quiet)}
	if clk != nil {
		opts = append(opts, crisp.WithClock(clk))
	}
	c := &chaosRun{t: t, sys: crisp.NewSystem(opts...), clk: clk, slots: make([]atomic.Pointer[chaosActor], 48)}
	for i := range c.slots {
		c.spawn(i, rand.New(rand.NewPCG(seed, uint64(i))))
	}
	for range 4 {
		c.never = append(c.never, future.NewPromise[int](nil))
	}

	const senders = 6
	var (
		wg      sync.WaitGroup
		closing atomic.Bool
	)
	for g := range senders {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, 1000+uint64(g)))
			var cancels []context.CancelFunc
			defer func() {
				for _, cancel := range cancels {
					cancel()
				}
			}()
			for n := 0; !closing.Load(); n++ {
				if c.count() >= chaosCap {
					runtime.Gosched() // enough records: wait for the end of the round
					continue
				}
				switch k := r.IntN(10000); {
				case k < 3: // stop an actor mid-flight and put a new one in its place
					i := r.IntN(len(c.slots))
					c.slots[i].Load().Stop()
					c.stops.Add(1)
					c.spawn(i, r)
				case k < 100 && len(cancels) > 0: // end a context
					i := r.IntN(len(cancels))
					cancels[i]()
					cancels = append(cancels[:i], cancels[i+1:]...)
				default:
					if cancel := c.send(r, c.slots[r.IntN(len(c.slots))].Load(), 0, true); cancel != nil {
						cancels = append(cancels, cancel)
					}
				}
				if len(cancels) > 32 {
					cancels[0]()
					cancels = cancels[1:]
				}
				if n%16 == 0 {
					runtime.Gosched() // let the actors work
				}
			}
		})
	}
	// Shut down from three goroutines at once while the senders still
	// send (they go on until Shutdown has returned); their later
	// messages fail with ErrStopped. The test runs on the real clock for
	// a fixed time: it claims no determinism, only the invariants.
	runFor(d)
	shutdown := make(chan error, 3)
	for range 3 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			shutdown <- c.sys.Shutdown(ctx)
		}()
	}
	for range 3 {
		require.NoError(t, <-shutdown, "Shutdown")
	}
	closing.Store(true)
	wg.Wait()

	c.check()
	goleak.VerifyNone(t, ignore)
}

// runFor lets a stress test run on the real clock for d. It paces load
// that claims no determinism; it never stands in for waiting until
// something has happened.
func runFor(d time.Duration) {
	t := time.NewTimer(d)
	<-t.C
}

func (c *chaosRun) spawn(i int, r *rand.Rand) {
	opts := []crisp.ActorOption{
		crisp.WithName("slot" + strconv.Itoa(i)),
		crisp.WithPolicy(chaosPolicies[r.IntN(len(chaosPolicies))]),
		crisp.WithMissHook(c.missHook),
	}
	a := new(chaosActor)
	if i%4 == 0 { // a group of 2 to 4 workers, each with a state of its own
		states := make([]*chaosState, 2+r.IntN(3))
		for j := range states {
			states[j] = &chaosState{}
		}
		a.Ref = crisp.SpawnGroup(c.sys, states, opts...)
		c.groups.Store(a, new([chaosKeys]atomic.Int32))
	} else {
		a.Ref = crisp.Spawn(c.sys, &chaosState{}, opts...)
	}
	c.slots[i].Store(a)
	c.spawns.Add(1)
}

func (c *chaosRun) violation(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

func (c *chaosRun) record(m *chaosMsg) {
	c.mu.Lock()
	m.id = len(c.msgs)
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

func (c *chaosRun) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *chaosRun) byName(name string) *chaosMsg {
	id, err := strconv.Atoi(strings.TrimPrefix(name, "c"))
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msgs[id]
}

func (c *chaosRun) missHook(e *deadline.MissedError) {
	if m := c.byName(e.Message); m != nil {
		m.missed.Add(1)
	}
}

// send sends a random message to a from a sender goroutine (top) or a
// handler, and returns the cancel function of its context, if it has
// one that the caller should end later.
// chaosActor is a slot's actor or group.
type chaosActor struct{ crisp.Ref[*chaosState] }

func (c *chaosRun) send(r *rand.Rand, a *chaosActor, depth int, top bool) context.CancelFunc {
	m := &chaosMsg{tell: r.IntN(5) == 0}
	c.record(m)
	opts := []crisp.SendOption{crisp.MessageName("c" + strconv.Itoa(m.id)), crisp.Priority(r.IntN(3)), crisp.Tag(r.IntN(3))}
	switch k := r.IntN(20); {
	case k == 0:
		opts, m.past = append(opts, crisp.Within(-time.Millisecond)), true
	case k == 1:
		opts, m.past = append(opts, crisp.Within(0)), true
	case k == 2:
		opts, m.past = append(opts, crisp.By(time.Now().Add(-time.Second))), true
	case k < 12:
		opts = append(opts, crisp.Within(time.Duration(r.IntN(2000))*time.Microsecond))
	case k < 16:
		opts = append(opts, crisp.Within(time.Duration(1+r.IntN(20))*time.Millisecond))
	}
	if _, ok := c.groups.Load(a); ok {
		m.group = true
		switch r.IntN(4) {
		case 0: // keyless
		case 1: // two keys, as a transfer
			k := r.IntN(chaosKeys)
			m.keys = []int{k, (k + 1 + r.IntN(chaosKeys-1)) % chaosKeys}
		default:
			m.keys = []int{r.IntN(chaosKeys)}
		}
		for _, k := range m.keys {
			opts = append(opts, crisp.Key(k))
		}
	}
	var cancel context.CancelFunc
	if top && r.IntN(6) == 0 {
		var ctx context.Context
		// Half end on their own, possibly during the send
		// (TestAContextEndingDuringTheSendIsNotARace).
		if r.IntN(2) == 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(3000))*time.Microsecond)
		} else {
			ctx, cancel = context.WithCancel(context.Background())
		}
		opts = append(opts, crisp.Context(ctx))
	}
	plan := make([]int, r.IntN(4))
	for i := range plan {
		plan[i] = r.IntN(100)
	}
	m.plan = plan
	seed := r.Uint64()
	if m.tell {
		crisp.Tell(a, func(p *crisp.Proc, s *chaosState) { c.handle(p, s, a, m, plan, seed, depth) }, opts...)
		return cancel
	}
	m.f = crisp.CallNext(a, func(p *crisp.Proc, s *chaosState) crisp.Next[*chaosState, int] {
		return c.handle(p, s, a, m, plan, seed, depth)
	}, opts...)
	if !plumb.OnResolve(m.f, func() { m.resolved.Add(1) }) {
		m.resolved.Add(1)
	}
	return cancel
}

// started checks a message as its handler begins.
func (c *chaosRun) started(p *crisp.Proc, m *chaosMsg) {
	if m.started.Add(1) > 1 {
		c.violation("c%d started twice", m.id)
	}
	if m.missed.Load() > 0 {
		c.violation("c%d started after its miss was reported", m.id)
	}
	dl := p.Deadline()
	if c.clk == nil || dl.IsZero() {
		return
	}
	at, ok := c.clk.takeReading()
	switch {
	case !ok:
		c.violation("c%d, with a deadline, started without the check that it is not late", m.id)
	case !at.Before(dl):
		c.violation("c%d started at %v, not before its deadline %v", m.id, at, dl)
	}
}

func (c *chaosRun) handle(p *crisp.Proc, s *chaosState, self *chaosActor, m *chaosMsg, plan []int, seed uint64, depth int) crisp.Next[*chaosState, int] {
	c.started(p, m)
	v, inGroup := c.groups.Load(self)
	if inGroup {
		holders := v.(*[chaosKeys]atomic.Int32)
		for _, k := range m.keys {
			if holders[k].Add(1) > 1 {
				c.violation("c%d runs with key %d while another message holds it", m.id, k)
			}
		}
		defer func() {
			for _, k := range m.keys {
				holders[k].Add(-1)
			}
		}()
	}
	r := rand.New(rand.NewPCG(seed, 7))
	other := func() *chaosActor { return c.slots[r.IntN(len(c.slots))].Load() }
	for i, step := range plan {
		switch {
		case step < 20:
			if step < 10 { // stops may cut it short: TestStopAsASleepEndsDoesNotCrashTheWatchdog
				p.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			} else {
				for range r.IntN(50) {
					runtime.Gosched() // work that takes a little time, holding the actor
				}
			}
		case step < 24:
			panic("chaos")
		case step < 30 && !inGroup: // a group's worker waits in place, and Shutdown cannot end a plain wait
			_, _ = crisp.Await(p, c.never[r.IntN(len(c.never))].Future())
		case step < 40 && depth < 2:
			f := crisp.Call(other(), func(p *crisp.Proc, _ *chaosState) (int, error) { return 1, nil }, crisp.Within(time.Millisecond))
			_, _ = crisp.Await(p, f)
		case step < 46:
			_, _ = crisp.AwaitWithin(p, c.never[r.IntN(len(c.never))].Future(), time.Duration(r.IntN(500))*time.Microsecond)
		case step < 52 && !inGroup: // a group's workers have states of their own
			k := s.counter + 1 + r.IntN(2)
			p.AwaitCond(func() bool { return s.counter >= k })
		case step < 65:
			s.counter++
		case step < 72 && !inGroup:
			p.Suspend()
		case step < 74:
			if r.IntN(8) != 0 {
				s.counter++ // most of the time; a stop now and then
				break
			}
			if r.IntN(4) == 0 {
				self.Stop()
			} else {
				other().Stop()
			}
			c.stops.Add(1)
		case step < 80 && !inGroup:
			// Get on a future of the own actor: a self-deadlock error, not a hang.
			f := crisp.Call(self, func(*crisp.Proc, *chaosState) (int, error) { return 0, nil })
			// It inherits the handler's context (propagate.go), which may
			// end, and whose deadline it may miss.
			_, err := f.Get()
			_, ctxDL := p.Context().Deadline()
			inherited := p.Context().Err() != nil || ctxDL && errors.Is(err, deadline.ErrMissed)
			if err != nil && !errors.Is(err, crisp.ErrDeadlock) && !errors.Is(err, crisp.ErrStopped) && !inherited {
				c.violation("c%d: Get on its own actor: %v", m.id, err)
			}
		case step < 90 && depth < 2:
			c.send(r, other(), depth+1, false)
		case depth < 2 && i == len(plan)-1:
			// Detached: its outcome becomes this message's, which check()
			// judges by this message's own deadline and context.
			f := crisp.Call(other(), func(p *crisp.Proc, _ *chaosState) (int, error) { return 2, nil }, crisp.Detached())
			return crisp.Then(p, f, func(p *crisp.Proc, _ *chaosState, v int, err error) crisp.Next[*chaosState, int] {
				return crisp.Return[*chaosState](v, err)
			})
		}
	}
	return crisp.Return[*chaosState](m.id, nil)
}

// check verifies every message once the system has shut down.
func (c *chaosRun) check() {
	t := c.t
	var n struct{ sent, started, value, missed, stopped, ctx, panicked, other, tells, tellMissed int }
	var maxLate time.Duration
	for _, m := range c.msgs {
		n.sent++
		started := m.started.Load() > 0
		if started {
			n.started++
		}
		if m.missed.Load() > 1 {
			c.violation("c%d: the miss hook heard of it %d times", m.id, m.missed.Load())
		}
		if m.tell {
			n.tells++
			if m.missed.Load() > 0 {
				n.tellMissed++
				if started {
					c.violation("c%d (Tell) missed its deadline and started", m.id)
				}
			}
			continue
		}
		if !m.f.Ready() {
			c.violation("c%d: future unresolved after Shutdown (group %v, keys %v, started %d, steps %v)", m.id, m.group, m.keys, m.started.Load(), m.plan)
			continue
		}
		if got := m.resolved.Load(); got != 1 {
			c.violation("c%d: resolved %d times", m.id, got)
		}
		_, err := m.f.Get()
		var (
			miss *deadline.MissedError
			pe   *crisp.PanicError
		)
		switch {
		case err == nil:
			n.value++
			if !started {
				c.violation("c%d has a value but never started", m.id)
			}
		case errors.As(err, &miss):
			n.missed++
			if started {
				c.violation("c%d missed its deadline and started", m.id)
			}
			if miss.Detected.Before(miss.Deadline) {
				c.violation("c%d: miss detected at %v, before its deadline %v", m.id, miss.Detected, miss.Deadline)
			}
			if !m.past {
				maxLate = max(maxLate, miss.Lateness())
			}
			if m.missed.Load() != 1 {
				c.violation("c%d missed, and the miss hook heard of it %d times", m.id, m.missed.Load())
			}
		case errors.As(err, &pe):
			n.panicked++
			if !started {
				c.violation("c%d panicked but never started", m.id)
			}
		case errors.Is(err, crisp.ErrStopped):
			n.stopped++ // before it started, or while suspended
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			n.ctx++
			if started {
				c.violation("c%d was dropped for its context and started", m.id)
			}
		default:
			n.other++
			c.violation("c%d: unexpected error %v", m.id, err)
		}
	}
	t.Logf("%d messages (%d Tells, %d of them missed); %d started; Calls: %d values, %d missed (detected at most %v after a deadline not passed at the send), %d stopped, %d context ended, %d panicked; %d stops, %d actors",
		n.sent, n.tells, n.tellMissed, n.started, n.value, n.missed, maxLate, n.stopped, n.ctx, n.panicked, c.stops.Load(), c.spawns.Load())
	assert.Empty(t, c.violations)
	assert.Zero(t, n.other)
}
