package crisp

import (
	"context"
	"testing"
	"time"

	"github.com/crisprt/crisp/internal/plumb"
)

// BenchmarkExpireCalls measures the miss path of one actor, on one
// goroutine and without the watchdog: per op, one of 1,000 Calls queued
// with deadlines behind a blocked handler, each with an OnResolve
// callback, failed by the actor's expire (drain, the deadline index or
// the plain messages, the MissedError, the future, the callback). "in
// order" sends the deadlines in deadline order (they queue as plain
// messages), "shuffled" in a scattered order, as BenchmarkMissLag does.
// It isolates the CPU cost of a miss from what BenchmarkMissLag adds:
// the watchdog's scheduling, the sends and the collector.
func BenchmarkExpireCalls(b *testing.B) {
	for _, mono := range []bool{true, false} {
		name := "shuffled"
		if mono {
			name = "in order"
		}
		b.Run(name, func(b *testing.B) {
			sys := NewSystem(WithLogger(discard()))
			defer sys.Shutdown(context.Background())
			a := Spawn(sys, 0)
			release, held := make(chan struct{}), make(chan struct{})
			Tell(a, func(*Proc, int) { close(held); <-release })
			<-held
			defer close(release)
			const n = 1000
			base := time.Now().Add(time.Hour)
			var fired int
			cb := func() { fired++ }
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				b.StopTimer()
				for k := range n {
					d := k
					if !mono {
						d = (k * 7919) % n
					}
					f := Call(a, func(*Proc, int) (int, error) { return 0, nil }, By(base.Add(time.Duration(d)*time.Microsecond)))
					plumb.OnResolve(f, cb)
				}
				b.StartTimer()
				a.core.expire(base.Add(time.Second))
			}
			b.StopTimer()
			if fired == 0 {
				b.Fatal("nothing expired")
			}
		})
	}
}
