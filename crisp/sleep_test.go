package crisp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
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
