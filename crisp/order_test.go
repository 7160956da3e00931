package crisp_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

func TestCallReturnsTheHandlersResult(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})

	v, err := crisp.Call(a, record("first")).Get()
	require.NoError(t, err)
	assert.Equal(t, "first", v)

	boom := fmt.Errorf("bad data")
	_, err = crisp.Call(a, func(*crisp.Proc, *state) (int, error) { return 7, boom }).Get()
	assert.ErrorIs(t, err, boom)

	crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, "told") })
	assert.Equal(t, []string{"first", "told"}, ranOn(t, a))
}

// queued holds the actor with a gate, sends every message, then opens the
// gate, so the order of the log is purely the policy's.
func queued(t *testing.T, a *crisp.Actor[*state], send func()) []string {
	t.Helper()
	g := newGate()
	hold(t, a, g)
	send()
	g.open()
	return ranOn(t, a)
}

// sent is a message a test sent: its name and its deadline (zero if
// none).
type sent struct {
	name string
	due  time.Time
}

// edfOrder returns the names of msgs in EDF's order: earliest deadline
// first, those without one last, ties in the order sent.
func edfOrder(msgs []sent) []string {
	msgs = slices.Clone(msgs)
	slices.SortStableFunc(msgs, func(x, y sent) int { return deadline.Compare(x.due, y.due) })
	names := make([]string, len(msgs))
	for i, m := range msgs {
		names[i] = m.name
	}
	return names
}

func TestEDFMatchesAReferenceSort(t *testing.T) {
	for seed := range uint64(20) {
		t.Run("seed "+strconv.FormatUint(seed, 10), func(t *testing.T) {
			sys, mock := newSystem(t)
			a := crisp.Spawn(sys, &state{})
			r := rand.New(rand.NewPCG(seed, 99))

			var msgs []sent
			got := queued(t, a, func() {
				for i := range 200 {
					m := sent{name: strconv.Itoa(i)}
					var opts []crisp.SendOption
					if r.IntN(4) > 0 { // a quarter without deadline
						m.due = mock.Now().Add(time.Duration(1+r.IntN(50)) * time.Second)
						opts = append(opts, crisp.By(m.due))
					}
					msgs = append(msgs, m)
					crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, m.name) }, opts...)
				}
			})

			assert.Equal(t, edfOrder(msgs), got)
		})
	}
}

// Senders on several goroutines send with one Within nearly, not
// exactly, in deadline order: the actor keeps such messages plain, the
// few out of order apart (spilled), and folds both into its policy's
// queue when a message that cannot be plain arrives (here, one in ten
// carries a context). Whichever way, they run in EDF order, ties in
// arrival order, those without a deadline last.
func TestEDFMatchesAReferenceSortNearlyInOrder(t *testing.T) {
	for seed := range uint64(30) {
		t.Run("seed "+strconv.FormatUint(seed, 10), func(t *testing.T) {
			sys, mock := newSystem(t)
			a := crisp.Spawn(sys, &state{})
			r := rand.New(rand.NewPCG(seed, 7))
			reach := 1 + r.IntN(12)       // how far back an out-of-order deadline goes
			withCtx := seed%3 == 0        // some runs fold into the policy's queue
			noDeadline := r.IntN(20) == 0 // now and then a message without one

			var msgs []sent
			got := queued(t, a, func() {
				for i := range 200 {
					m := sent{name: strconv.Itoa(i)}
					if !noDeadline || r.IntN(10) > 0 {
						back := r.IntN(reach+1) * r.IntN(2) // half in order
						m.due = mock.Now().Add(time.Duration(100+i-back) * time.Second)
					}
					msgs = append(msgs, m)
					var opts []crisp.SendOption
					if !m.due.IsZero() {
						opts = append(opts, crisp.By(m.due))
					}
					if withCtx && r.IntN(10) == 0 {
						opts = append(opts, crisp.Context(context.Background()))
					}
					crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, m.name) }, opts...)
				}
			})

			assert.Equal(t, edfOrder(msgs), got)
		})
	}
}

func TestFIFOIgnoresDeadlines(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(policy.FIFO()))
	got := queued(t, a, func() {
		for i := range 10 {
			crisp.Call(a, record(strconv.Itoa(i)), crisp.By(mock.Now().Add(time.Duration(10-i)*time.Second)))
		}
	})
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, got)
}

func TestPriorityFirstThenDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(policy.ByPriority()))
	later, sooner := crisp.By(mock.Now().Add(time.Hour)), crisp.By(mock.Now().Add(time.Minute))
	got := queued(t, a, func() {
		crisp.Call(a, record("low-soon"), crisp.Priority(0), sooner)
		crisp.Call(a, record("high-late"), crisp.Priority(5), later)
		crisp.Call(a, record("high-none"), crisp.Priority(5))
		crisp.Call(a, record("high-soon"), crisp.Priority(5), sooner)
		crisp.Call(a, record("mid"), crisp.Priority(1))
	})
	assert.Equal(t, []string{"high-soon", "high-late", "high-none", "mid", "low-soon"}, got)
}

func TestCustomerFirstPolicyReadsTags(t *testing.T) {
	sys, _ := newSystem(t)
	customerA := policy.Func(func(x, y *policy.Item) int {
		xa, ya := x.Tag == "A", y.Tag == "A"
		switch {
		case xa && !ya:
			return -1
		case ya && !xa:
			return 1
		}
		return deadline.Compare(x.Deadline, y.Deadline)
	})
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(customerA))
	got := queued(t, a, func() {
		crisp.Call(a, record("B-soon"), crisp.Tag("B"), crisp.Within(time.Second))
		crisp.Call(a, record("A-late"), crisp.Tag("A"), crisp.Within(time.Hour))
		crisp.Call(a, record("C-none"), crisp.Tag("C"))
		crisp.Call(a, record("A-none"), crisp.Tag("A"))
	})
	assert.Equal(t, []string{"A-late", "A-none", "B-soon", "C-none"}, got)
}

func TestEqualKeysRunInSendOrder(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	due := crisp.By(mock.Now().Add(time.Minute))
	var want []string
	got := queued(t, a, func() {
		for i := range 50 {
			name := strconv.Itoa(i)
			want = append(want, name)
			crisp.Tell(a, func(_ *crisp.Proc, s *state) { s.ran = append(s.ran, name) }, due, crisp.Priority(3))
		}
	})
	assert.Equal(t, want, got)
}

func TestDeadlinedMessageOvertakesUndeadlined(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	got := queued(t, a, func() {
		crisp.Call(a, record("none-1"))
		crisp.Call(a, record("late"), crisp.Within(time.Hour))
		crisp.Call(a, record("none-2"))
		crisp.Call(a, record("soon"), crisp.Within(time.Minute))
	})
	assert.Equal(t, []string{"soon", "late", "none-1", "none-2"}, got)
}

func TestProcShowsTheMessage(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	type seen struct {
		deadline time.Time
		prio     int
		tag      any
		name     string
		now      time.Time
	}
	due := mock.Now().Add(time.Minute)
	f := crisp.Call(a, func(p *crisp.Proc, _ *state) (seen, error) {
		return seen{p.Deadline(), p.Priority(), p.Tag(), p.Name(), p.Now()}, nil
	}, crisp.By(due), crisp.Priority(4), crisp.Tag("cust-17"), crisp.MessageName("resize"))
	got, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, seen{due, 4, "cust-17", "resize", t0}, got)

	name, err := crisp.Call(a, namedHandler).Get()
	require.NoError(t, err)
	assert.Equal(t, "crisp_test.namedHandler", name)
}

func namedHandler(p *crisp.Proc, _ *state) (string, error) { return p.Name(), nil }

// The send options are plain values: sending with several of them must
// not allocate more than sending with none.
func TestSendOptionsDoNotAllocate(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, a, g)
	defer g.open()
	noop := func(*crisp.Proc, *state) {}
	due := mock.Now().Add(time.Hour)
	plain := testing.AllocsPerRun(100, func() { crisp.Tell(a, noop) })
	opts := testing.AllocsPerRun(100, func() {
		crisp.Tell(a, noop, crisp.Within(time.Hour), crisp.By(due), crisp.Priority(2), crisp.MessageName("x"))
	})
	// At most its message, which may come from those earlier tests'
	// Tells left (recycled messages are shared by all actors).
	assert.LessOrEqual(t, plain, 1.0, "a Tell allocates its message only")
	// The deadlined Tells queue behind the gate and are watched; the
	// watchdog's heap may grow, which is amortised below one per send.
	assert.LessOrEqual(t, opts, 1.0, "a Tell with options allocates its message only")
}

// Messages without a deadline, context or key skip the policy's queue
// while nothing else is queued (the runtime keeps them in arrival order
// on the side, and folds them into the queue when anything else
// arrives). Whatever arrives with them, the policy's order holds and
// nothing is lost.
func TestPlainMessagesKeepThePolicysOrder(t *testing.T) {
	sendMix := func(a *crisp.Actor[*state]) {
		crisp.Call(a, record("p1"))
		crisp.Call(a, record("p2"), crisp.Priority(5), crisp.Tag("x"), crisp.MessageName("second"))
		crisp.Call(a, record("d1"), crisp.Within(time.Hour))
		crisp.Call(a, record("p3"))
		crisp.Call(a, record("d0"), crisp.Within(time.Minute))
		crisp.Call(a, record("p4"))
	}
	for _, c := range []struct {
		name string
		pol  policy.Policy
		want []string
	}{
		{"EDF: deadlines overtake plain messages queued before them", policy.EDF(), []string{"d0", "d1", "p1", "p2", "p3", "p4"}},
		{"FIFO: arrival order whatever the deadlines", policy.FIFO(), []string{"p1", "p2", "d1", "p3", "d0", "p4"}},
		{"ByPriority: a priority overtakes plain messages", policy.ByPriority(), []string{"p2", "d0", "d1", "p1", "p3", "p4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sys, _ := newSystem(t)
			a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(c.pol))
			assert.Equal(t, c.want, queued(t, a, func() { sendMix(a) }))
			// And again, now that the actor has been through it once.
			assert.Equal(t, append(slices.Clone(c.want), c.want...), queued(t, a, func() { sendMix(a) }))
		})
	}
	t.Run("a process that suspends joins them in its policy's order", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		got := queued(t, a, func() {
			crisp.Call(a, func(p *crisp.Proc, s *state) (string, error) {
				s.ran = append(s.ran, "s before")
				p.Suspend() // ready at once: weighed against p1 and p2, which arrived after it
				s.ran = append(s.ran, "s after")
				return "", nil
			})
			crisp.Call(a, record("p1"))
			crisp.Call(a, record("p2"))
		})
		assert.Equal(t, []string{"s before", "s after", "p1", "p2"}, got)
	})
	// queuePlain queues 100 plain Calls behind a handler held at g.
	queuePlain := func(t *testing.T) (*crisp.System, *crisp.Actor[*state], *gate, []*future.Future[string]) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		g := newGate()
		hold(t, a, g)
		var futs []*future.Future[string]
		for i := range 100 {
			futs = append(futs, crisp.Call(a, record(strconv.Itoa(i))))
		}
		return sys, a, g, futs
	}
	t.Run("a stop fails every plain message queued", func(t *testing.T) {
		_, a, g, futs := queuePlain(t)
		a.Stop()
		g.open()
		for _, f := range futs {
			_, err := f.Get()
			assert.ErrorIs(t, err, crisp.ErrStopped)
		}
	})
	t.Run("shutdown resolves every plain message queued", func(t *testing.T) {
		sys, _, g, futs := queuePlain(t)
		done := make(chan error, 1)
		go func() { done <- sys.Shutdown(context.Background()) }()
		g.open()
		require.NoError(t, <-done)
		for _, f := range futs {
			require.True(t, f.Ready())
		}
	})
}
