package remote_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/remote"
)

func TestMain(m *testing.M) {
	if node := nodeMain(); node {
		return
	}
	goleak.VerifyTestMain(m)
}

// t0 is where every mock clock in these tests starts.
var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(t0)
	return m
}

// newSystem starts a system on clk, shut down when the test ends.
func newSystem(t *testing.T, clk clock.Clock) *crisp.System {
	t.Helper()
	sys := crisp.NewSystem(crisp.WithClock(clk), crisp.WithLogger(quiet))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	})
	return sys
}

// newNode starts a node, closed when the test ends (before the systems
// made earlier are shut down: cleanups run last first).
func newNode(t *testing.T, opts ...remote.Option) *remote.Node {
	t.Helper()
	n, err := remote.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, n.Close(ctx))
	})
	return n
}

// get waits for f, failing the test after a generous real-time bound:
// a future that never resolves is a bug, not slowness.
// (The futures of a node on a mock clock time out on that clock, hence
// the real timer here.)
func get[T any](t *testing.T, f *future.Future[T]) (T, error) {
	t.Helper()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	select {
	case <-f.Done():
	case <-guard.C:
		t.Fatal("a remote future did not resolve")
	}
	return f.Get()
}

// Counter is the state of the actors these tests serve.
type Counter struct{ N int }

// Add is the request of the "add" endpoint.
type Add struct{ By int }

var add = remote.NewEndpoint[Add, int]("test.add")

func serveAdd(t *testing.T, n *remote.Node, a crisp.Ref[*Counter], opts ...remote.ServeOption) *remote.Service {
	t.Helper()
	s, err := remote.Serve(n, add, a, func(_ *crisp.Proc, c *Counter, req Add) (int, error) {
		c.N += req.By
		return c.N, nil
	}, opts...)
	require.NoError(t, err)
	return s
}
