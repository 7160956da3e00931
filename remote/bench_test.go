package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/remote"
)

// BenchmarkCall times a remote call's round trip between two nodes of
// one process (the caller over loopback TCP to the server embedded in
// the serving node), beside a local crisp.Call to the same handler:
// the difference is what going remote costs. bench/cmd/remotebench
// compares with protoactor-go's remote.
func BenchmarkCall(b *testing.B) {
	b.Run("local crisp.Call", func(b *testing.B) {
		sys := crisp.NewSystem()
		defer sys.Shutdown(context.Background())
		a := crisp.Spawn(sys, &Counter{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := crisp.Call(a, func(_ *crisp.Proc, c *Counter) (int, error) {
				c.N++
				return c.N, nil
			}, crisp.Within(time.Minute)).Get(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remote.Call", func(b *testing.B) {
		sys := crisp.NewSystem()
		defer sys.Shutdown(context.Background())
		server, err := remote.Start()
		if err != nil {
			b.Fatal(err)
		}
		defer server.Close(context.Background())
		client, err := remote.Start(remote.URL(server.URL()))
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close(context.Background())
		if _, err := remote.Serve(server, add, crisp.Spawn(sys, &Counter{}), func(_ *crisp.Proc, c *Counter, req Add) (int, error) {
			c.N += req.By
			return c.N, nil
		}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := remote.Call(client, add, Add{By: 1}, remote.Within(time.Minute)).Get(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
