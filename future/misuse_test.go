package future_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// Misuses and odd values that docs/errors.md lists and no other test
// shows.

func TestMisuseAPanickingCallbackReachesTheResolver(t *testing.T) {
	p := future.NewPromise[int](nil)
	f := p.Future()
	done := f.Done()
	var later bool
	require.True(t, plumb.OnResolve(f, func() { panic("callback") }))
	require.True(t, plumb.OnResolve(f, func() { later = true }))
	assert.PanicsWithValue(t, "callback", func() { p.Resolve(1, nil) })
	assert.True(t, later, "the other callbacks still run")
	select {
	case <-done:
	default:
		t.Fatal("the Done channel is not closed")
	}
	v, err := f.Get()
	assert.Equal(t, 1, v)
	assert.NoError(t, err, "the future is resolved all the same")
}

// A lone callback is called without the buffer and deferred recover that
// several need (wake's fast path): its panic reaches the resolver all
// the same, and the future stays resolved.
func TestMisuseALonePanickingCallbackReachesTheResolver(t *testing.T) {
	p := future.NewPromise[int](nil)
	f := p.Future()
	require.True(t, plumb.OnResolve(f, func() { panic("alone") }))
	assert.PanicsWithValue(t, "alone", func() { p.Resolve(1, nil) })
	assert.False(t, p.Resolve(2, nil), "resolved once")
	v, err := f.Get()
	assert.Equal(t, 1, v)
	assert.NoError(t, err)
}

func TestMisuseSeveralPanickingCallbacksRaiseTheFirst(t *testing.T) {
	p := future.NewPromise[int](nil)
	f := p.Future()
	var ran []int
	require.True(t, plumb.OnResolve(f, func() { ran = append(ran, 1); panic("first") }))
	require.True(t, plumb.OnResolve(f, func() { ran = append(ran, 2) }))
	require.True(t, plumb.OnResolve(f, func() { ran = append(ran, 3); panic("second") }))
	require.True(t, plumb.OnResolve(f, func() { ran = append(ran, 4) }))
	assert.PanicsWithValue(t, "first", func() { p.Resolve(1, nil) })
	assert.Equal(t, []int{1, 2, 3, 4}, ran, "every callback runs, in the order they were added")
}

func TestMisuseZeroAndNilPromises(t *testing.T) {
	var zero future.Promise[string] // usable, on the real clock
	_, err := zero.Future().GetWithin(time.Millisecond)
	assert.ErrorIs(t, err, future.ErrTimeout)
	require.True(t, zero.Resolve("x", nil))
	v, err := zero.Future().Get()
	assert.Equal(t, "x", v)
	assert.NoError(t, err)

	p := future.NewPromise[string](nil) // nil clock: the real one
	_, err = p.Future().GetWithin(time.Millisecond)
	assert.ErrorIs(t, err, future.ErrTimeout)
}

func TestMisuseGetContextWithANilContext(t *testing.T) {
	f := future.NewPromise[int](nil).Future()
	assert.Panics(t, func() {
		//lint:ignore SA1012 the nil context is the point
		_, _ = f.GetContext(nil)
	}, "a nil context is a nil dereference, as everywhere in Go")
}
