package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"time"

	"github.com/crisprt/crisp/bench/internal/hogs"
	rpt "github.com/crisprt/crisp/bench/internal/report"

	"github.com/crisprt/crisp/bench/internal/suite"
	"github.com/crisprt/crisp/bench/internal/workload"
)

// The report's types are shared with cmd/sidebyside (internal/report).
type (
	report  = rpt.Report
	row     = rpt.Row
	cell    = rpt.Cell
	failure = rpt.Failure
)

// runSuite runs every selected cell, the systems of each workload in
// alternation, and returns what it measured.
func runSuite(ctx context.Context, cfg *config, progress io.Writer) (*report, error) {
	rep := &report{
		Suite: cfg.suite, Reps: cfg.reps,
		GoVersion: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.GOMAXPROCS(0), Hogs: cfg.hogs,
		Started: time.Now(),
	}
	for _, w := range suite.Workloads() {
		size := w.Size(cfg.suite)
		if size == nil || (cfg.workloads != nil && !slices.Contains(cfg.workloads, w.Name)) {
			continue
		}
		r := &row{Workload: w.Name, Size: size.String(), Unit: w.Unit, Ops: size.Ops(), Note: w.Note}
		for _, s := range suite.Systems {
			if _, ok := w.Impl[s]; ok && (cfg.systems == nil || slices.Contains(cfg.systems, s)) {
				r.Cells = append(r.Cells, &cell{System: s})
			}
		}
		if len(r.Cells) == 0 {
			continue
		}
		rep.Rows = append(rep.Rows, r)
	}
	if len(rep.Rows) == 0 {
		return nil, errors.New("no workload and system selected")
	}
	stopProfile, err := record(cfg.cpuprofile, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	stopTrace, err := record(cfg.trace, trace.Start, trace.Stop)
	if err != nil {
		return nil, err
	}
	defer stopTrace()
	// The hogs run through every run and the gaps between them (collections
	// included), as a busy neighbour would; they end before the report.
	h := hogs.Start(cfg.hogs)
	defer h.Stop()
	for _, r := range rep.Rows {
		w := suite.Lookup(r.Workload)
		size := w.Size(cfg.suite)
		fmt.Fprintf(progress, "%s (%s):", r.Workload, r.Size)
		for i := range cfg.reps {
			for _, c := range r.Cells {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if c.GaveUp {
					c.Skipped++
					continue
				}
				measure(ctx, c, w.Impl[c.System], cfg, i+1, size)
			}
			fmt.Fprintf(progress, " %d", i+1)
		}
		fmt.Fprintln(progress)
		for _, c := range r.Cells {
			c.Median = median(c.Times)
			if r.Unit != "" && r.Ops > 0 {
				c.PerOp = c.Median / time.Duration(r.Ops)
			}
		}
	}
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// abandonGrace is how long a cancelled run may take to return before it
// is abandoned.
const abandonGrace = workload.ShutdownTimeout + 10*time.Second

// measure runs c's system, run, once and records its time, peak memory
// or failure.
func measure(parent context.Context, c *cell, run suite.Run, cfg *config, rep int, size workload.Size) {
	// Each run starts from the live heap only, with the free memory
	// given back to the OS: every system then pays for the pages its
	// run touches, whatever ran before it. After runtime.GC alone, a run
	// could take over memory the run before it had freed, and ring-1m's
	// crisp+dl, right after crisp, took 0.5x crisp's time in one sitting,
	// the same code (BENCHMARKS.md, thirty-ninth session).
	debug.FreeOSMemory()
	before := readCounts()
	ctx, cancel := context.WithTimeout(parent, cfg.timeout)
	defer cancel()
	mem := startSampler(cfg.maxHeap, cancel)
	type outcome struct {
		res workload.Result
		err error
	}
	var sw stopwatch
	done := make(chan outcome, 1)
	go func() {
		res, err := run(ctx, &sw, size)
		done <- outcome{res, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		select {
		case out = <-done:
		case <-time.After(abandonGrace):
			out.err = fmt.Errorf("did not return within %v of being cancelled; its goroutines are abandoned", abandonGrace)
			c.GaveUp = true
		}
	}
	after := readCounts()
	peak, over := mem.stop()
	c.PeakBytes = max(c.PeakBytes, peak)
	switch err := out.err; {
	case over:
		c.GaveUp = true
		fail(c, rep, fmt.Errorf("cancelled: heap and stacks passed -maxheap (%.1f GiB)", float64(cfg.maxHeap)/(1<<30)))
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		c.GaveUp = true
		fail(c, rep, fmt.Errorf("timed out after %v (%v)", cfg.timeout, err))
	case err != nil:
		fail(c, rep, err)
	case out.res != size.Expect():
		fail(c, rep, fmt.Errorf("wrong answer %v, want %v", out.res, size.Expect()))
	default:
		c.Times = append(c.Times, sw.elapsed())
		c.Allocs = append(c.Allocs, after.allocs-before.allocs)
		c.GCs = append(c.GCs, after.gcs-before.gcs)
	}
	if len(c.Times) == 0 && len(c.Failures) >= giveUpAfter {
		c.GaveUp = true
	}
}

// giveUpAfter is how many failed runs, with none successful, make the
// runner give up a cell.
const giveUpAfter = 2

// fail records run rep of c as failed with err.
func fail(c *cell, rep int, err error) {
	c.Failures = append(c.Failures, failure{Rep: rep, Error: err.Error()})
}

// stopwatch is the runner's workload.Timer.
type stopwatch struct {
	mu      sync.Mutex
	started time.Time
	total   time.Duration
}

func (s *stopwatch) StartTimer() {
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
}

func (s *stopwatch) StopTimer() {
	s.mu.Lock()
	if !s.started.IsZero() {
		s.total += time.Since(s.started)
		s.started = time.Time{}
	}
	s.mu.Unlock()
}

func (s *stopwatch) elapsed() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Memory is measured as the Go heap's objects (live, or dead and not yet
// swept) plus goroutine stacks, read from runtime/metrics every
// sampleEvery during a run and once at its end. A run's figure is the
// peak above the level at its start (just after a collection).
const sampleEvery = time.Millisecond

// counts is what the runtime has allocated and collected so far.
type counts struct{ allocs, gcs uint64 }

// countMetrics are read by readCounts, in counts' order.
var countMetrics = []string{"/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

// readCounts reads the process's allocation and collection counts.
func readCounts() counts {
	s := make([]metrics.Sample, len(countMetrics))
	for i, name := range countMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return counts{allocs: s[0].Value.Uint64(), gcs: s[1].Value.Uint64()}
}

var memMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/stacks:bytes"}

func readMem(s []metrics.Sample) uint64 {
	metrics.Read(s)
	var total uint64
	for _, m := range s {
		if m.Value.Kind() == metrics.KindUint64 {
			total += m.Value.Uint64()
		}
	}
	return total
}

type sampler struct {
	stopc chan struct{}
	done  chan struct{}
	base  uint64
	peak  uint64
	over  bool
}

// startSampler samples memory until stop; it calls cancel once the total
// passes limit.
func startSampler(limit uint64, cancel func()) *sampler {
	samples := make([]metrics.Sample, len(memMetrics))
	for i, name := range memMetrics {
		samples[i].Name = name
	}
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	s.base = readMem(samples)
	s.peak = s.base
	go func() {
		defer close(s.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.stopc:
				s.peak = max(s.peak, readMem(samples))
				return
			case <-tick.C:
				m := readMem(samples)
				s.peak = max(s.peak, m)
				if m > limit && !s.over {
					s.over = true
					cancel()
				}
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak above the start, and
// whether the limit was passed.
func (s *sampler) stop() (peak uint64, over bool) {
	close(s.stopc)
	<-s.done
	return s.peak - s.base, s.over
}

// record creates path and starts writing a profile or trace to it; the
// function it returns stops and closes it. An empty path records
// nothing.
func record(path string, start func(io.Writer) error, stop func()) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		stop()
		f.Close()
	}, nil
}
