package joblog_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// synthetic is an io.Reader of a log of n jobs that it writes a few
// hundred at a time, so that no more than a chunk of the log exists in
// memory at once.
type synthetic struct {
	n, next int
	buf     bytes.Buffer
	w       *joblog.Writer
	read    int64 // bytes handed out
}

func newSynthetic(n int, f joblog.Format) *synthetic {
	s := &synthetic{n: n}
	s.w = joblog.NewWriter(&s.buf, f)
	return s
}

var epoch = time.Date(2013, 2, 1, 0, 0, 0, 0, time.UTC)

func syntheticJob(i int) joblog.Job {
	return joblog.Job{
		ID:        fmt.Sprintf("J%07d", i+1),
		Customer:  fmt.Sprintf("C%03d", i%180+1),
		Submitted: epoch.Add(time.Duration(i) * 5 * time.Second),
		Duration:  time.Duration(1+i%3600) * time.Second,
		Node:      fmt.Sprintf("node-%d", i%8+1),
		Outcome:   joblog.Outcome(1 + i%3),
		Agreement: joblog.Agreement{StartDeadline: time.Hour, ResultTimeout: 2 * time.Hour, Priority: i % 2},
	}
}

func (s *synthetic) Read(p []byte) (int, error) {
	for s.buf.Len() == 0 {
		if s.next == s.n {
			return 0, io.EOF
		}
		for k := 0; k < 512 && s.next < s.n; k++ {
			if err := s.w.Write(syntheticJob(s.next)); err != nil {
				return 0, err
			}
			s.next++
		}
		if err := s.w.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := s.buf.Read(p)
	s.read += int64(n)
	return n, err
}

// TestStreamingMemoryIsBounded reads a 1,000,000-job log in each format
// and checks that the heap stays far below the log's size, and so
// below the 1 GiB the replay may use. The million jobs take some ten
// seconds, so they need CRISP_LONG=1 (.ci/run sets it); otherwise, and
// under the race detector (which slows this single-goroutine loop
// tenfold and finds nothing in it), the log has 100,000 jobs.
func TestStreamingMemoryIsBounded(t *testing.T) {
	n := 1_000_000
	if !longTests || raceEnabled {
		n = 100_000
	}
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		t.Run(f.String(), func(t *testing.T) {
			src := newSynthetic(n, f)
			r := joblog.NewReader(src)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base, peak := ms.HeapAlloc, ms.HeapAlloc
			count := 0
			for j, err := range r.All() {
				require.NoError(t, err)
				if count%50_000 == 0 {
					require.Equal(t, syntheticJob(count).ID, j.ID)
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
				}
				count++
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			require.Equal(t, n, count)
			t.Logf("%d jobs, %.1f MiB of %v: heap at most %.1f MiB (%.1f MiB before), %.0f MiB allocated in all",
				n, mib(uint64(src.read)), f, mib(peak), mib(base), mib(ms.TotalAlloc))
			// The garbage collector lets the heap reach 4 MiB before it
			// first collects; the full log is 68 MiB (CSV) or 177 MiB
			// (JSON Lines), so 16 MiB could not hold it.
			assert.Less(t, peak, uint64(16<<20), "heap far below the log's size and 1 GiB")
		})
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkRead measures reading a log, per job.
func BenchmarkRead(b *testing.B) {
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		b.Run(f.String(), func(b *testing.B) {
			var buf bytes.Buffer
			w := joblog.NewWriter(&buf, f)
			for i := range 10_000 {
				require.NoError(b, w.Write(syntheticJob(i)))
			}
			require.NoError(b, w.Flush())
			log := buf.Bytes()
			b.SetBytes(int64(len(log)) / 10_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				r := joblog.NewReader(bytes.NewReader(log))
				for _, err := range r.All() {
					if err != nil {
						b.Fatal(err)
					}
					if i++; i == b.N {
						break
					}
				}
			}
		})
	}
}
