package crisp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// sendFrom runs send inside a handler of a fresh actor, the message
// sent with opts, and returns what send returned.
func sendFrom[T any](t *testing.T, sys *crisp.System, send func(p *crisp.Proc) T, opts ...crisp.SendOption) T {
	t.Helper()
	parent := crisp.Spawn(sys, &state{}, crisp.WithName("parent"))
	v, err := crisp.Call(parent, func(p *crisp.Proc, _ *state) (T, error) { return send(p), nil }, opts...).Get()
	require.NoError(t, err)
	return v
}

func TestAChildOfACostCarryingParentMissesAtTheParentsFinishingDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	child := crisp.Spawn(sys, &state{}, crisp.WithName("child"))
	g := newGate()
	hold(t, child, g)
	defer func() { g.open() }()

	finish := t0.Add(100 * time.Millisecond)
	var parentStart time.Time
	f := sendFrom(t, sys, func(p *crisp.Proc) *future.Future[string] {
		parentStart = p.Deadline()
		return crisp.Call(child, record("child"), crisp.Within(time.Hour), crisp.MessageName("c"))
	}, crisp.By(finish), crisp.Cost(30*time.Millisecond))
	assert.Equal(t, t0.Add(70*time.Millisecond), parentStart, "the parent's own start deadline")

	mock.Add(100*time.Millisecond - time.Nanosecond)
	assert.False(t, f.Ready(), "a nanosecond before the parent's finishing deadline")
	mock.Add(time.Nanosecond)
	_, err := f.Get() // the child's actor is still busy: the watchdog tells
	requireMissed(t, err, finish, finish)
}

func TestInheritanceOnlyNarrows(t *testing.T) {
	sys, mock := newSystem(t)
	child := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, child, g)
	defer func() { g.open() }()

	finish := t0.Add(100 * time.Millisecond)
	fs := sendFrom(t, sys, func(p *crisp.Proc) []*future.Future[string] {
		return []*future.Future[string]{
			// Its own deadline is earlier: it keeps it.
			crisp.Call(child, record("own"), crisp.By(t0.Add(50*time.Millisecond))),
			// Its own Cost makes it earlier still: start by 100-60 = 40ms.
			crisp.Call(child, record("cost"), crisp.By(t0.Add(time.Hour)), crisp.Cost(60*time.Millisecond)),
			// No deadline of its own: it takes the parent's finish.
			crisp.Call(child, record("none")),
			// Detached: nothing inherited.
			crisp.Call(child, record("detached"), crisp.Within(time.Hour), crisp.Detached()),
		}
	}, crisp.By(finish), crisp.Cost(30*time.Millisecond))

	mock.Add(40 * time.Millisecond)
	_, err := fs[1].Get()
	requireMissed(t, err, t0.Add(40*time.Millisecond), t0.Add(40*time.Millisecond))
	mock.Add(10 * time.Millisecond)
	_, err = fs[0].Get()
	requireMissed(t, err, t0.Add(50*time.Millisecond), t0.Add(50*time.Millisecond))
	mock.Add(50 * time.Millisecond)
	_, err = fs[2].Get()
	requireMissed(t, err, finish, finish)
	assert.False(t, fs[3].Ready(), "a detached child keeps its own deadline")
	g.open()
	g = newGate()
	v, err := fs[3].Get()
	require.NoError(t, err)
	assert.Equal(t, "detached", v)
}

func TestAGrandchildIsBoundByItsGrandparentsFinishingDeadline(t *testing.T) {
	sys, mock := newSystem(t)
	mid := crisp.Spawn(sys, &state{})
	leaf := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, leaf, g)
	defer func() { g.open() }()

	finish := t0.Add(100 * time.Millisecond)
	fmid := sendFrom(t, sys, func(p *crisp.Proc) *future.Future[*future.Future[string]] {
		return crisp.Call(mid, func(p *crisp.Proc, _ *state) (*future.Future[string], error) {
			return crisp.Call(leaf, record("leaf")), nil
		})
	}, crisp.By(finish), crisp.Cost(30*time.Millisecond))
	fleaf, err := fmid.Get()
	require.NoError(t, err)
	mock.Add(100 * time.Millisecond)
	_, err = fleaf.Get()
	requireMissed(t, err, finish, finish)
}

func TestAChildInheritsItsParentsContext(t *testing.T) {
	sys, _ := newSystem(t)
	child := crisp.Spawn(sys, &state{})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "trace-7"))
	defer cancel()

	// A child that runs sees the parent's context.
	seen := sendFrom(t, sys, func(p *crisp.Proc) any {
		v, err := crisp.Call(child, func(p *crisp.Proc, _ *state) (any, error) {
			return p.Context().Value(ctxKey{}), nil
		}).Get()
		require.NoError(t, err)
		return v
	}, crisp.Context(ctx))
	assert.Equal(t, "trace-7", seen)

	// A child still queued when the parent's context ends is dropped.
	g := newGate()
	hold(t, child, g)
	defer g.open()
	f := sendFrom(t, sys, func(p *crisp.Proc) *future.Future[string] {
		return crisp.Call(child, record("queued"))
	}, crisp.Context(ctx))
	cancel()
	_, err := f.Get()
	assert.ErrorIs(t, err, context.Canceled)
}

func TestAParentWithNothingToPassOnChangesNothing(t *testing.T) {
	sys, mock := newSystem(t)
	child := crisp.Spawn(sys, &state{})
	g := newGate()
	hold(t, child, g)
	// A deadline without Cost is a start deadline: the parent started, so
	// it has no finishing deadline to pass on.
	f := sendFrom(t, sys, func(p *crisp.Proc) *future.Future[string] {
		return crisp.Call(child, record("child"))
	}, crisp.Within(10*time.Millisecond))
	mock.Add(time.Second)
	g.open()
	_, err := f.Get() // taken at t0+1s: missed, had it inherited the 10ms
	require.NoError(t, err)
}

type ctxKey struct{}
