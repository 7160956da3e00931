package replay_test

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
	"github.com/crisprt/crisp/cmd/crispbench/internal/sample"
)

// streamGenerated returns a reader of a generated log of about jobs
// jobs, written by a goroutine as it is read: the log never exists
// whole. Its customers, nodes and habits are the default log's, over a
// period long enough to keep the default log's load (2 months per
// 25,000 jobs). Closing the reader ends the goroutine; wait for done.
func streamGenerated(t testing.TB, seed uint64, jobs int) (r *io.PipeReader, done <-chan struct{}) {
	t.Helper()
	p := gen.Defaults()
	p.Seed, p.Jobs = seed, jobs
	p.To = p.From.Add(time.Duration(float64(p.To.Sub(p.From)) * float64(jobs) / float64(gen.Defaults().Jobs)))
	g, err := gen.New(p)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		w := joblog.NewWriter(pw, joblog.CSV)
		for j := range g.Jobs() {
			if err := w.Write(j); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(w.Flush())
	}()
	return pr, ch
}

// TestMillionJobsInBoundedMemory replays a 1,000,000-job log, streamed,
// under both strategies at once, and checks that the memory in use
// (heap and goroutine stacks) stays under 1 GiB. It takes about a
// minute, so -short skips it, and so does the race detector.
func TestMillionJobsInBoundedMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a minute's replay; run without -short and -race")
	}
	const jobs = 1_000_000
	log, done := streamGenerated(t, 1, jobs)
	defer func() { log.Close(); <-done }()

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse + ms.StackInuse
	var peak uint64
	calls := 0
	cfg := replay.Defaults()
	cfg.Progress = func(int64) {
		if calls++; calls%64 == 0 { // every 16,384 jobs
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse+ms.StackInuse)
		}
	}
	start := time.Now()
	rep, err := replay.Run(context.Background(), log, cfg)
	require.NoError(t, err)
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse+ms.StackInuse)

	require.InEpsilon(t, jobs, rep.Jobs, 0.01)
	assert.Zero(t, rep.Results[1].Total.Never)
	t.Logf("%d jobs, both strategies, in %v: heap and stacks in use at most %.0f MiB (%.0f MiB before), %.0f MiB obtained from the system",
		rep.Jobs, time.Since(start).Round(time.Millisecond), mib(peak), mib(base), mib(ms.Sys))
	for _, r := range rep.Results {
		t.Logf("%-8v satisfaction %.2f%%, never answered %d", r.Strategy, 100*r.Total.Satisfaction(), r.Total.Never)
	}
	assert.Less(t, peak, uint64(1<<30))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkReplay replays the embedded log (24,784 jobs) under both
// strategies, side by side, as `crispbench replay` does.
func BenchmarkReplay(b *testing.B) {
	for _, tc := range []struct {
		name       string
		strategies []replay.Strategy
	}{
		{"both", []replay.Strategy{replay.Polling, replay.Deadline}},
		{"polling", []replay.Strategy{replay.Polling}},
		{"deadline", []replay.Strategy{replay.Deadline}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := replay.Defaults()
			cfg.Strategies = tc.strategies
			b.ReportAllocs()
			for b.Loop() {
				rep, err := replay.Run(context.Background(), sample.Open(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(rep.Jobs), "jobs")
			}
		})
	}
}
