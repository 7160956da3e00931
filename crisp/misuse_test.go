package crisp_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// Misuses and odd values that docs/errors.md lists and no other test
// shows: what the caller gets for each.

func TestMisuseThenWithANilContinuation(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	_, err := crisp.CallNext(a, func(p *crisp.Proc, _ *state) crisp.Next[*state, int] {
		return crisp.Then[*state, int, int](p, future.NewPromise[int](nil).Future(), nil)
	}).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe, "a misuse panic in a handler reaches the caller as a PanicError")
	assert.Equal(t, "crisp: Then with a nil continuation", pe.Value)
}

func TestMisuseAwaitOfANilFuture(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	_, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) {
		return crisp.Await[int](p, nil)
	}).Get()
	var pe *crisp.PanicError
	require.ErrorAs(t, err, &pe)
	re, ok := pe.Value.(runtime.Error)
	require.True(t, ok, "a nil dereference, not a crisp misuse panic: %v", pe.Value)
	assert.Contains(t, re.Error(), "nil pointer")
	_, err = crisp.Call(a, record("next")).Get()
	assert.NoError(t, err, "the actor goes on")
}

func TestMisuseZeroAndNilOptions(t *testing.T) {
	t.Run("By the zero time is no deadline", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		dl, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (time.Time, error) {
			return p.Deadline(), nil
		}, crisp.By(time.Time{})).Get()
		require.NoError(t, err, "not a deadline in year 1, long passed")
		assert.True(t, dl.IsZero())
	})
	t.Run("Context(nil) is no context", func(t *testing.T) {
		sys, _ := newSystem(t)
		a := crisp.Spawn(sys, &state{})
		//lint:ignore SA1012 the nil context is the point
		noCtx := crisp.Context(nil)
		ctx, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (context.Context, error) {
			return p.Context(), nil
		}, noCtx).Get()
		require.NoError(t, err)
		assert.Equal(t, context.Background(), ctx)
	})
	t.Run("nil WithPolicy, WithClock and WithLogger keep the defaults", func(t *testing.T) {
		var buf bytes.Buffer
		def := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
		defer slog.SetDefault(def)
		sys := crisp.NewSystem(crisp.WithClock(nil), crisp.WithLogger(nil))
		defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
		assert.NotNil(t, sys.Clock())
		a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(nil))
		late := crisp.Call(a, record("no deadline"))
		early := crisp.Call(a, record("deadline"), crisp.Within(time.Hour))
		_, _ = late.Get()
		_, _ = early.Get()
		crisp.Tell(a, func(*crisp.Proc, *state) { panic("logged") })
		require.NoError(t, sys.WaitIdle(context.Background()))
		assert.Contains(t, buf.String(), "handler panicked", "the default logger hears of a Tell's panic")
	})
}

func TestMisuseZeroAndNegativeWaits(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	pending := future.NewPromise[int](nil)
	f := crisp.Call(a, func(p *crisp.Proc, _ *state) (string, error) {
		p.Sleep(0)
		p.Sleep(-time.Hour)
		if _, err := crisp.AwaitWithin(p, pending.Future(), 0); err != future.ErrTimeout {
			return "", err
		}
		if _, err := crisp.AwaitWithin(p, pending.Future(), -time.Second); err != future.ErrTimeout {
			return "", err
		}
		return "returned at once", nil
	})
	v, err := f.Get()
	require.NoError(t, err)
	assert.Equal(t, "returned at once", v, "the clock never moved: nothing waited")
}

func TestMisuseOnAShutDownSystem(t *testing.T) {
	sys := crisp.NewSystem(crisp.WithClock(newMock()), crisp.WithLogger(quiet))
	require.NoError(t, sys.Shutdown(context.Background()))
	a := crisp.Spawn(sys, &state{})
	a.Stop() // already stopped: nothing happens
	a.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, sys.WaitIdle(ctx), "an idle system is idle even for an ended context")
	assert.NoError(t, sys.Shutdown(ctx), "nothing left to wait for")
}

func TestMisuseGroupsWithoutWorkers(t *testing.T) {
	sys, _ := newSystem(t)
	assert.PanicsWithValue(t, "crisp: SpawnGroup with no worker", func() { crisp.SpawnGroup[*state](sys, nil) })
}

func TestMisuseProcGettersAfterTheHandler(t *testing.T) {
	sys, mock := newSystem(t)
	a := crisp.Spawn(sys, &state{})
	leaked := make(chan *crisp.Proc, 1)
	_, err := crisp.Call(a, func(p *crisp.Proc, _ *state) (int, error) { leaked <- p; return 0, nil }, crisp.Within(time.Hour)).Get()
	require.NoError(t, err)
	p := <-leaked
	assert.Equal(t, mock.Now(), p.Now(), "the clock is the system's while the runner ends")
	waitIdle(t, sys)
	assert.Equal(t, mock.Now(), p.Now(), "the clock is the system's, still")
	assert.Panics(t, func() { p.Deadline() }, "unchecked: the Proc has no message any more (a nil dereference)")
}
