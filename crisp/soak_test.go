package crisp_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// BenchmarkSoak is the soak test: b.N messages with deadlines through
// 10,000 actors, from one sender per processor, each keeping up to 1,024
// calls in flight, and then a check that memory came back: the heap
// after a full GC must be within 10% of what it was, after the same GC,
// once the actors had been spawned and had each run a message. It is not
// part of the default test run; the soak of issue 8 is
//
//	go test -run '^$' -bench Soak -benchtime 10000000x ./crisp/
//
// It reports, besides ns/op, the heap before and after (live objects,
// and spans in use), their ratios, the goroutines left, and the share
// of messages that missed their deadlines (2 to 50 ms from the send:
// under this load some do).
func BenchmarkSoak(b *testing.B) {
	const actors = 10_000
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	defer func() {
		if err := sys.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	type counter struct{ n int }
	work := func(_ *crisp.Proc, s *counter) (int, error) {
		s.n++
		return s.n, nil
	}
	as := make([]*crisp.Actor[*counter], actors)
	for i := range as {
		as[i] = crisp.Spawn(sys, &counter{})
	}
	for _, a := range as { // every actor has run once: what an actor keeps is in the baseline
		if _, err := crisp.Call(a, work, crisp.Within(time.Second)).Get(); err != nil {
			b.Fatal(err)
		}
	}
	settle := func() (alloc, inuse uint64, goroutines int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sys.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, ms.HeapInuse, runtime.NumGoroutine()
	}
	cold, _, _ := settle()
	// A warm-up under the same load, a tenth of the run (at most a
	// million messages): the Go runtime keeps a descriptor for every
	// goroutine it ever made (runtime.malg, some 400 B each), so the peak
	// number of runner goroutines alive at once stays in the heap for
	// good. The baseline is taken once that peak is reached; what grows
	// after it grows with the messages.
	var missed, other atomic.Int64
	senders := runtime.GOMAXPROCS(0)
	soakLoad(as, work, senders, min(b.N/10, 1_000_000), &missed, &other)
	alloc0, inuse0, g0 := settle()
	if soakProfile != "" {
		writeHeap(b, soakProfile+".start")
	}
	missed.Store(0)

	b.ResetTimer()
	soakLoad(as, work, senders, b.N, &missed, &other)
	b.StopTimer()

	alloc1, inuse1, g1 := settle()
	if soakProfile != "" {
		writeHeap(b, soakProfile+".end")
	}
	mb := func(n uint64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(mb(cold), "heap-cold-MB")
	b.ReportMetric(mb(alloc0), "heap-start-MB")
	b.ReportMetric(mb(alloc1), "heap-end-MB")
	b.ReportMetric(float64(alloc1)/float64(alloc0), "heap-ratio")
	b.ReportMetric(mb(inuse0), "inuse-start-MB")
	b.ReportMetric(mb(inuse1), "inuse-end-MB")
	b.ReportMetric(float64(g1-g0), "goroutines-left")
	b.ReportMetric(100*float64(missed.Load())/float64(b.N), "%missed")
	if other.Load() > 0 {
		b.Errorf("%d calls failed other than by missing their deadline", other.Load())
	}
	if float64(alloc1) > 1.1*float64(alloc0) {
		b.Errorf("heap after the soak %.1f MB, %.0f%% of the %.1f MB before: more than 10%% more", mb(alloc1), 100*float64(alloc1)/float64(alloc0), mb(alloc0))
	}
	if g1 > g0 {
		b.Errorf("%d goroutines more than before", g1-g0)
	}
	runtime.KeepAlive(as)
}

// soakLoad sends n calls to random actors of as from senders goroutines,
// each keeping up to 1,024 in flight, and counts how they failed.
func soakLoad[S any](as []*crisp.Actor[S], work func(*crisp.Proc, S) (int, error), senders, n int, missed, other *atomic.Int64) {
	const window = 1024
	var wg sync.WaitGroup
	for s := range senders {
		k := n / senders
		if s < n%senders {
			k++
		}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(s), uint64(n)))
			var inflight [window]*future.Future[int]
			check := func(f *future.Future[int]) {
				if f == nil {
					return
				}
				if _, err := f.Get(); err != nil {
					if errors.Is(err, deadline.ErrMissed) {
						missed.Add(1)
					} else {
						other.Add(1)
					}
				}
			}
			for i := range k {
				check(inflight[i%window])
				dl := time.Duration(2+r.IntN(48)) * time.Millisecond
				inflight[i%window] = crisp.Call(as[r.IntN(len(as))], work, crisp.Within(dl))
			}
			for _, f := range inflight {
				check(f)
			}
		})
	}
	wg.Wait()
}

var soakProfile = os.Getenv("SOAK_PROFILE")

func writeHeap(b *testing.B, name string) {
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
