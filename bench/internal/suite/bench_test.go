package suite_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/crisprt/crisp/bench/internal/suite"
)

var benchSizes = flag.String("bench.suite", suite.Quick, "sizes the benchmarks run: quick or all (short under -short)")

// benchmark runs workload name on every system that implements it, one
// sub-benchmark per system, so that benchstat can compare runs:
//
//	GOWORK=off go test ./internal/suite -run XXX -bench . -count 6 > new.txt
//	benchstat old.txt new.txt
//
// A micro workload (round trips, requests, messages) runs b.N operations
// once, so ns/op is per operation; any other runs its whole size b.N
// times, so ns/op is per run. Only the timed span of each run counts
// (not building or shutting down its system).
func benchmark(b *testing.B, name string) {
	w := suite.Lookup(name)
	if w == nil {
		b.Fatalf("no workload %s", name)
	}
	sizes := *benchSizes
	if testing.Short() {
		sizes = suite.Short
	}
	size := w.Size(sizes)
	if size == nil {
		b.Skipf("%s is not in the %s sizes", name, sizes)
	}
	want := size.Expect()
	for _, sys := range suite.Systems {
		run, ok := w.Impl[sys]
		if !ok {
			continue
		}
		b.Run(sys, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.StopTimer()
			if w.PerOp != nil {
				s := w.PerOp(b.N)
				got, err := run(ctx, b, s)
				if err != nil {
					b.Fatal(err)
				}
				if got != s.Expect() {
					b.Fatalf("got %v, want %v", got, s.Expect())
				}
				return
			}
			for range b.N {
				got, err := run(ctx, b, size)
				if err != nil {
					b.Fatal(err)
				}
				if got != want {
					b.Fatalf("got %v, want %v", got, want)
				}
			}
		})
	}
}

func BenchmarkPingPong(b *testing.B)       { benchmark(b, "pingpong") }
func BenchmarkRequestReply(b *testing.B)   { benchmark(b, "request-reply") }
func BenchmarkThroughput(b *testing.B)     { benchmark(b, "throughput-4x100") }
func BenchmarkSavinaPingPong(b *testing.B) { benchmark(b, "savina-pingpong") }
func BenchmarkCounting(b *testing.B)       { benchmark(b, "counting") }
func BenchmarkThreadRing(b *testing.B)     { benchmark(b, "threadring") }
func BenchmarkForkJoin(b *testing.B)       { benchmark(b, "fork-join") }
func BenchmarkChameneos(b *testing.B)      { benchmark(b, "chameneos") }
func BenchmarkBig(b *testing.B)            { benchmark(b, "big") }
func BenchmarkNQueens(b *testing.B)        { benchmark(b, "nqueens") }
func BenchmarkBank(b *testing.B)           { benchmark(b, "bank") }
func BenchmarkFib(b *testing.B)            { benchmark(b, "fib") }
func BenchmarkRing1k(b *testing.B)         { benchmark(b, "ring-1k") }
func BenchmarkRing100k(b *testing.B)       { benchmark(b, "ring-100k") }
func BenchmarkRing1m(b *testing.B)         { benchmark(b, "ring-1m") }
