package crisp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/vclock"
)

func TestSleepKeepsTheActorAndLetsVirtualTimeMove(t *testing.T) {
	vc := vclock.New(t0)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(quiet))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	node := crisp.Spawn(sys, &state{}, crisp.WithName("node"))

	type outcome struct{ start, end time.Time }
	job := func(name string, d time.Duration) func(*crisp.Proc, *state) (outcome, error) {
		return func(p *crisp.Proc, s *state) (outcome, error) {
			start := p.Now()
			logged(s, name)
			p.Sleep(d) // the node works on the job for d
			return outcome{start: start, end: p.Now()}, nil
		}
	}
	long := crisp.Call(node, job("long", time.Hour))
	require.NoError(t, sys.WaitIdle(context.Background()))                             // long has started: sleeping counts as idle
	short := crisp.Call(node, job("short", time.Minute), crisp.Within(10*time.Minute)) // behind long: misses
	after := crisp.Call(node, job("after", time.Minute))
	require.NoError(t, vc.Run(context.Background(), sys.WaitIdle))

	l, err := long.Get()
	require.NoError(t, err)
	assert.Equal(t, t0, l.start)
	assert.Equal(t, t0.Add(time.Hour), l.end)
	_, err = short.Get()
	requireMissed(t, err, t0.Add(10*time.Minute), t0.Add(10*time.Minute))
	a, err := after.Get()
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Hour), a.start, "starts when the node is free")
	assert.Equal(t, t0.Add(time.Hour+time.Minute), a.end)
	assert.Equal(t, []string{"long", "after"}, ranOn(t, node))
}

func TestStopCutsSleepShort(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	started := make(chan struct{})
	f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
		close(started)
		p.Sleep(time.Hour)
		return "cut short", nil
	})
	<-started
	waitIdle(t, sys) // sleeping counts as idle
	a.Stop()
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "cut short", v, "the handler goes on and delivers its own result")
}

// Under a driven clock, a timer due at the same instant as the
// watchdog's must not stall the driver: the watchdog's due timer is the
// driver's to fire, not work that keeps the system busy.
func TestASleepAndAnEventAtTheSameInstant(t *testing.T) {
	vc := vclock.New(t0)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(quiet))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := crisp.Spawn(sys, &state{})
	var events []string
	vc.At(t0.Add(10*time.Millisecond), func() { events = append(events, "event") })
	var queued = make(chan *future.Future[string], 1)
	vc.At(t0, func() {
		crisp.Tell(a, func(p *crisp.Proc, s *state) { p.Sleep(10 * time.Millisecond) }, crisp.Within(time.Millisecond)) // first, under EDF
		queued <- crisp.Call(a, record("behind the sleeper"), crisp.Within(10*time.Millisecond))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, vc.Run(ctx, sys.WaitIdle), "the driver stalled")
	assert.Equal(t, []string{"event"}, events)
	_, err := (<-queued).Get()
	requireMissed(t, err, t0.Add(10*time.Millisecond), t0.Add(10*time.Millisecond))
}
