package timeliness

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// OverheadConfig sizes the overhead section.
type OverheadConfig struct {
	Messages int // per throughput measurement
	Repeat   int // throughput measurements per row, interleaved; the median is reported
	// Pending, Rates and Window shape the watchdog CPU measurement: for
	// each pending count and stream rate, the process's CPU time is read
	// over Window while Rate deadlines a second come due.
	Pending []int
	Rates   []int
	Actors  int
	Window  time.Duration
}

// DefaultOverhead is the full run's configuration; quick shrinks it.
func DefaultOverhead(quick bool) OverheadConfig {
	c := OverheadConfig{
		Messages: 200_000,
		Repeat:   5,
		Pending:  []int{1_000, 100_000},
		Rates:    []int{0, 1_000, 10_000},
		Actors:   100,
		Window:   2 * time.Second,
	}
	if quick {
		c.Messages, c.Repeat, c.Pending, c.Window = 5_000, 1, []int{1_000}, 100*time.Millisecond
	}
	return c
}

// Throughput is one row of the throughput table.
type Throughput struct {
	Name      string  `json:"name"`
	NsOff     float64 `json:"ns_per_msg_off"` // without deadlines
	NsOn      float64 `json:"ns_per_msg_on"`  // with crisp.Within(time.Hour)
	AllocsOff float64 `json:"allocs_per_msg_off"`
	AllocsOn  float64 `json:"allocs_per_msg_on"`
}

// WatchdogCPU is one row of the watchdog CPU table.
type WatchdogCPU struct {
	Pending   int     `json:"pending"`
	Rate      int     `json:"rate"` // deadlines coming due per second during the window
	Precision bool    `json:"precision"`
	CPU       float64 `json:"cpu_per_s"` // process CPU seconds per second
	Misses    int     `json:"misses"`    // misses detected during the window
}

// OverheadResult is the overhead section's outcome.
type OverheadResult struct {
	Config     OverheadConfig `json:"config"`
	Throughput []Throughput   `json:"throughput"`
	Watchdog   []WatchdogCPU  `json:"watchdog"`
}

// Overhead measures what deadlines cost: the throughput and allocations
// of Tell and Call with and without deadlines, and the process's CPU
// time while the watchdog holds many deadlines and a stream of them
// comes due.
func Overhead(ctx context.Context, c OverheadConfig) (*OverheadResult, error) {
	res := &OverheadResult{Config: c}
	type bench struct {
		name string
		f    func(n int, deadline bool) (time.Duration, uint64)
	}
	for _, b := range []bench{
		{"Tell, one sender, one actor", tellThroughput},
		{"Call+Get round trip", callRoundTrip},
		{"Call, 100 in flight", callPipelined},
	} {
		var off, on []float64
		var aOff, aOn []float64
		for range c.Repeat {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d, a := b.f(c.Messages, false)
			off, aOff = append(off, float64(d)/float64(c.Messages)), append(aOff, float64(a)/float64(c.Messages))
			d, a = b.f(c.Messages, true)
			on, aOn = append(on, float64(d)/float64(c.Messages)), append(aOn, float64(a)/float64(c.Messages))
		}
		res.Throughput = append(res.Throughput, Throughput{
			Name: b.name, NsOff: median(off), NsOn: median(on), AllocsOff: median(aOff), AllocsOn: median(aOn),
		})
	}
	for _, p := range c.Pending {
		for _, prec := range []bool{false, true} {
			for _, r := range c.Rates {
				if prec && r == 0 {
					continue
				}
				w, err := watchdogCPU(ctx, c, p, r, prec)
				if err != nil {
					return nil, err
				}
				res.Watchdog = append(res.Watchdog, w)
			}
		}
	}
	return res, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

type counter struct{ n int }

func incr(_ *crisp.Proc, s *counter) { s.n++ }

func get(_ *crisp.Proc, s *counter) (int, error) { return s.n, nil }

// measure runs f and returns its wall time and the heap allocations made
// meanwhile (by every goroutine of the process).
func measure(f func()) (time.Duration, uint64) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t := time.Now()
	f()
	d := time.Since(t)
	runtime.ReadMemStats(&m1)
	return d, m1.Mallocs - m0.Mallocs
}

func sendOpts(deadline bool) []crisp.SendOption {
	if deadline {
		return []crisp.SendOption{crisp.Within(time.Hour)}
	}
	return nil
}

func withSystem(f func(sys *crisp.System)) {
	sys := crisp.NewSystem(crisp.WithLogger(discard))
	f(sys)
	_ = sys.Shutdown(context.Background())
}

// tellThroughput sends n Tells to one actor from one goroutine and waits
// until the actor has run them all.
func tellThroughput(n int, deadline bool) (d time.Duration, allocs uint64) {
	withSystem(func(sys *crisp.System) {
		a := crisp.Spawn(sys, &counter{})
		opts := sendOpts(deadline)
		d, allocs = measure(func() {
			for range n {
				crisp.Tell(a, incr, opts...)
			}
			_, _ = crisp.Call(a, get).Get()
		})
	})
	return d, allocs
}

// callRoundTrip makes n Calls to one actor, one at a time, each waited
// for with Get.
func callRoundTrip(n int, deadline bool) (d time.Duration, allocs uint64) {
	withSystem(func(sys *crisp.System) {
		a := crisp.Spawn(sys, &counter{})
		opts := sendOpts(deadline)
		d, allocs = measure(func() {
			for range n {
				_, _ = crisp.Call(a, get, opts...).Get()
			}
		})
	})
	return d, allocs
}

// callPipelined makes n Calls to one actor with up to 100 unanswered at
// a time.
func callPipelined(n int, deadline bool) (d time.Duration, allocs uint64) {
	withSystem(func(sys *crisp.System) {
		a := crisp.Spawn(sys, &counter{})
		opts := sendOpts(deadline)
		var ring [100]*future.Future[int]
		d, allocs = measure(func() {
			for i := range n {
				if f := ring[i%len(ring)]; f != nil {
					_, _ = f.Get()
				}
				ring[i%len(ring)] = crisp.Call(a, get, opts...)
			}
			for _, f := range ring {
				if f != nil {
					_, _ = f.Get()
				}
			}
		})
	})
	return d, allocs
}

// watchdogCPU holds c.Actors actors in blocked handlers with pending
// deadlined Calls queued on them, due an hour later, and rate×Window
// more due during the window, spread evenly; it then reads the
// process's CPU time over the window, while nothing but the watchdog
// (and the delivery of the misses it finds, and the Go runtime) runs.
func watchdogCPU(ctx context.Context, c OverheadConfig, pending, rate int, precision bool) (WatchdogCPU, error) {
	res := WatchdogCPU{Pending: pending, Rate: rate, Precision: precision}
	opts := []crisp.Option{crisp.WithLogger(discard)}
	if precision {
		opts = append(opts, crisp.WithPrecision(time.Millisecond))
	}
	sys := crisp.NewSystem(opts...)
	release := make(chan struct{})
	var held sync.WaitGroup
	actors := make([]*crisp.Actor[*counter], c.Actors)
	for i := range actors {
		actors[i] = crisp.Spawn(sys, &counter{})
		held.Add(1)
		crisp.Tell(actors[i], func(*crisp.Proc, *counter) { held.Done(); <-release })
	}
	held.Wait()
	far := time.Now().Add(time.Hour)
	for i := range pending {
		crisp.Call(actors[i%len(actors)], get, crisp.By(far.Add(time.Duration(i))))
	}
	stream := int(float64(rate) * c.Window.Seconds())
	start := time.Now().Add(100 * time.Millisecond)
	due := make([]*future.Future[int], 0, stream)
	for i := range stream {
		at := start.Add(time.Duration(i) * c.Window / time.Duration(stream))
		due = append(due, crisp.Call(actors[(i*7919)%len(actors)], get, crisp.By(at)))
	}
	runtime.GC()
	sleepUntil(ctx, start)
	cpu0, _ := processCPU()
	w0 := time.Now()
	sleepUntil(ctx, start.Add(c.Window))
	cpu1, ok := processCPU()
	if wall := time.Since(w0); ok && wall > 0 {
		res.CPU = float64(cpu1-cpu0) / float64(wall)
	}
	for _, f := range due {
		if f.Ready() {
			res.Misses++
		}
	}
	close(release)
	err := sys.Shutdown(context.WithoutCancel(ctx))
	if err == nil {
		err = ctx.Err()
	}
	return res, err
}

// Tables renders the result.
func (r *OverheadResult) Tables() []Table {
	tp := Table{
		Title: "throughput with deadlines off and on",
		Note: fmt.Sprintf("Median of %d runs of %s messages each; \"on\" sends every message with crisp.Within(time.Hour). "+
			"Allocations are the process's heap allocations per message.", r.Config.Repeat, fmtInt(int64(r.Config.Messages))),
		Header: []string{"workload", "off ns/msg", "on ns/msg", "on/off", "off allocs/msg", "on allocs/msg"},
	}
	for _, t := range r.Throughput {
		tp.Rows = append(tp.Rows, []string{t.Name,
			fmt.Sprintf("%.0f", t.NsOff), fmt.Sprintf("%.0f", t.NsOn), fmt.Sprintf("%.2fx", t.NsOn/t.NsOff),
			fmt.Sprintf("%.2f", t.AllocsOff), fmt.Sprintf("%.2f", t.AllocsOn)})
	}
	wd := Table{
		Title: "watchdog CPU time",
		Note: fmt.Sprintf("%d actors held by blocked handlers; the pending deadlines are an hour away; the stream's deadlines come due evenly during a %v window in which nothing else runs. "+
			"CPU is the whole process's (getrusage), in milliseconds of CPU per second.", r.Config.Actors, r.Config.Window),
		Header: []string{"pending", "stream", "precision", "CPU ms/s", "misses in window", "CPU per miss"},
	}
	idle := map[int]float64{}
	for _, w := range r.Watchdog {
		if w.Rate == 0 && !w.Precision {
			idle[w.Pending] = w.CPU
		}
	}
	for _, w := range r.Watchdog {
		per := "-"
		if w.Misses > 0 {
			secs := r.Config.Window.Seconds()
			per = fmtDur(time.Duration((w.CPU - idle[w.Pending]) * secs / float64(w.Misses) * 1e9))
		}
		prec := "off"
		if w.Precision {
			prec = "1ms"
		}
		wd.Rows = append(wd.Rows, []string{fmtInt(int64(w.Pending)), fmt.Sprintf("%s/s", fmtInt(int64(w.Rate))), prec,
			fmt.Sprintf("%.1f", w.CPU*1000), fmtInt(int64(w.Misses)), per})
	}
	return []Table{tp, wd}
}
