package replay_test

import (
	"bytes"
	"context"
	"fmt"
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
// (heap and goroutine stacks) stays under 100 MiB: it grows with the
// customers and nodes, not the jobs (before issue 14 it passed 600 MiB).
// It takes tens of seconds, so it runs only with CRISP_LONG=1 (as
// .ci/run sets it), and not under the race detector.
func TestMillionJobsInBoundedMemory(t *testing.T) {
	if !longTests || raceEnabled {
		t.Skip("tens of seconds' replay; run with CRISP_LONG=1, without -race")
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
		entries := 0
		for _, c := range r.Customers {
			entries += len(c.Waits())
		}
		t.Logf("%-8v satisfaction %.2f%%, never answered %d; waits counted in %d (customer, wait) entries, %d distinct in all",
			r.Strategy, 100*r.Total.Satisfaction(), r.Total.Never, entries, len(r.Total.Waits()))
	}
	assert.Less(t, peak, uint64(100<<20))
}

// TestLostJobsAreNotKept replays, under polling, a log in which a node
// loses nearly every job (each hangs, and its restart forgets the jobs
// queued behind it), and checks that the live heap does not grow with
// them: the replay keeps nothing of a job its node lost. Before issue
// 14 each kept its continuation, its job and its future for the rest of
// the replay, some 1.5 KB of live heap apiece.
func TestLostJobsAreNotKept(t *testing.T) {
	jobs := 40_000
	if raceEnabled {
		jobs = 8_000
	}
	var b bytes.Buffer
	w := joblog.NewWriter(&b, joblog.CSV)
	for i := range jobs {
		require.NoError(t, w.Write(joblog.Job{ID: fmt.Sprintf("J%d", i), Customer: fmt.Sprintf("C%d", i%50),
			Submitted: t0.Add(time.Duration(i) * 10 * time.Second), Duration: time.Minute, Node: "n1", Outcome: joblog.Hung}))
	}
	require.NoError(t, w.Flush())

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	calls := 0
	cfg := replay.Defaults()
	cfg.Strategies = []replay.Strategy{replay.Polling}
	cfg.Progress = func(int64) {
		if calls++; calls%16 == 0 { // every 4,096 jobs read: live heap
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	rep, err := replay.Run(context.Background(), &b, cfg)
	require.NoError(t, err)
	require.Equal(t, jobs, rep.Results[0].Total.Never, "every job lost")
	t.Logf("%d jobs lost: live heap at most %.1f MiB (%.1f MiB before)", jobs, mib(peak), mib(base))
	// The log itself is in b (2.6 MiB for 40,000 jobs); kept, the lost
	// jobs would take some 60 MiB.
	assert.Less(t, peak-base, uint64(jobs)*256, "at most 256 bytes a job: the log's text, not the jobs")
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
