package timeliness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// Load is what the actors do while deadlines are pending.
type Load int

// The loads.
const (
	// Idle actors are each held by a handler blocked on a channel: no
	// CPU, and every message sent to them waits.
	Idle Load = iota
	// Busy actors each run a chain of short CPU-bound messages (20-50µs
	// of spinning each, each sending the next at a higher priority than
	// the deadlined messages), so their runners are runnable all the time.
	Busy
	// Long: every probe goes to one actor, held by a handler blocked on
	// a channel, while each of the other actors runs a chain of long
	// CPU-bound messages (250-350µs of spinning each). Nothing that
	// holds a processor blocks for longer than a handler, so the miss is
	// noticed only if the runtime looks between handlers.
	Long
)

// MarshalText writes the load's name, for JSON.
func (l Load) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a load's name.
func (l *Load) UnmarshalText(b []byte) error {
	return unmarshalName(l, b, []Load{Idle, Busy, Long})
}

// String returns the load's name.
func (l Load) String() string {
	switch l {
	case Busy:
		return "busy"
	case Long:
		return "long"
	}
	return "idle"
}

// Mechanism is what tells a waiting caller that its deadline passed.
type Mechanism int

// The mechanisms.
const (
	// Crisp: a crisp.Call with crisp.By(deadline) to an actor that
	// cannot start it; the caller blocks in the future's Get.
	Crisp Mechanism = iota
	// CrispPrecision: the same on a system made with
	// crisp.WithPrecision(time.Millisecond).
	CrispPrecision
	// AfterFunc: a time.AfterFunc per message fails a future.Promise at
	// the deadline; the caller blocks in that future's Get.
	AfterFunc
	// Context: a context.WithDeadline per message; the caller blocks on
	// its Done channel.
	Context
	// Timer: the caller blocks on a time.Timer's channel until the
	// deadline, and nothing else happens: no future, no callback, no
	// actor. It is the floor for any Go code that must wake at a
	// deadline on that machine and under that load, crisp's included:
	// the runtime's timer, the wake-up of a parked goroutine and its wait
	// for a processor. Beside goroutines that never yield that wait is
	// the runtime's 10 ms preemption slice or more.
	Timer
)

// Mechanisms lists the mechanisms in the order reports show them.
var Mechanisms = []Mechanism{Crisp, CrispPrecision, AfterFunc, Context, Timer}

// MarshalText writes the mechanism's name, for JSON.
func (m Mechanism) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mechanism's name.
func (m *Mechanism) UnmarshalText(b []byte) error { return unmarshalName(m, b, Mechanisms) }

// String returns the mechanism's name, as reports show it.
func (m Mechanism) String() string {
	switch m {
	case Crisp:
		return "crisp"
	case CrispPrecision:
		return "crisp+precision"
	case AfterFunc:
		return "AfterFunc"
	case Context:
		return "context"
	case Timer:
		return "timer"
	}
	return fmt.Sprintf("Mechanism(%d)", int(m))
}

// LagCell is one scenario of the lag grid.
type LagCell struct {
	Pending int  `json:"pending"` // deadlines pending at any moment: one per waiting goroutine
	Actors  int  `json:"actors"`  // the probes are spread over this many actors, round robin
	Load    Load `json:"load"`
	Hogs    int  `json:"hogs"` // extra goroutines spinning on the CPU
}

// String describes the cell in words.
func (c LagCell) String() string {
	return fmt.Sprintf("%s pending, %s actors, %s, %d hogs", fmtInt(int64(c.Pending)), fmtInt(int64(c.Actors)), c.Load, c.Hogs)
}

// LagConfig sizes the lag section.
type LagConfig struct {
	Pending    []int
	Actors     []int
	Loads      []Load
	Hogs       []int
	Mechanisms []Mechanism
	// Window is the span of deadlines measured in each run, after a
	// warm-up in which every waiter has cycled once.
	Window time.Duration
	// MaxRate and MinSpan set the stream of deadlines: each waiter has
	// one deadline pending at a time, due U(S/2, 3S/2) after its
	// previous one, where S = max(MinSpan, pending/MaxRate). So
	// deadlines come due at pending/S per second: MaxRate for large
	// pending counts.
	MaxRate float64
	MinSpan time.Duration
	// MaxBusyActors skips Busy and Long cells with more actors than this: with
	// every runner always runnable and CPU-bound, the Go scheduler gives
	// each a 10ms time slice, so a goroutine that yields (the waiters,
	// the harness) waits about actors×10ms/GOMAXPROCS, 50s for 10,000
	// actors on 2 processors, and a run takes tens of minutes. 0: no limit.
	MaxBusyActors int
	Repeat        int    // runs per cell and mechanism, interleaved
	Seed          uint64 // the deadline schedule's seed; the same in every run
	// Observer, if not nil, watches every crisp system the runs make
	// (crispbench timeliness --http).
	Observer crisp.Observer `json:"-"`
	// TraceDir, if not empty, is a directory that receives a Go runtime
	// trace (go tool trace) of each run of crisp's own mechanism (Crisp),
	// named after its cell, its run and its lag p99 (crispbench
	// timeliness --trace): a stalled run can then be read goroutine by
	// goroutine. The tracer costs time, and makes stalls likelier.
	TraceDir string `json:"-"`
}

// DefaultLag is the full run's configuration; quick shrinks it to a
// smoke test of every code path.
func DefaultLag(quick bool) LagConfig {
	c := LagConfig{
		Pending:    []int{1, 1_000, 100_000},
		Actors:     []int{10, 10_000},
		Loads:      []Load{Idle, Busy, Long},
		Hogs:       []int{0, 2},
		Mechanisms: Mechanisms,
		Window:     2 * time.Second,
		MaxRate:    50_000,
		MinSpan:    5 * time.Millisecond,
		Repeat:     1,
		Seed:       1,
		// See MaxBusyActors.
		MaxBusyActors: 1_000,
	}
	if quick {
		c.Pending, c.Actors, c.Hogs = []int{100}, []int{10}, []int{0}
		c.Window, c.MinSpan = 30*time.Millisecond, 2*time.Millisecond
	}
	return c
}

// span returns the mean gap S between one waiter's deadlines.
func (c LagConfig) span(pending int) time.Duration {
	return max(c.MinSpan, time.Duration(float64(pending)/c.MaxRate*float64(time.Second)))
}

// LagRun is one run of one cell with one mechanism.
type LagRun struct {
	Lag Quantiles `json:"lag"`
	// SentLate counts probes whose deadline had passed when they were
	// sent, because their waiter learned of its previous miss that late.
	SentLate int64 `json:"sent_late"`
	// Censored counts measured probes not reported within the grace
	// period after the window; they are recorded as the grace period.
	Censored int64 `json:"censored"`
	// Detect is, for crisp, MissedError.Detected − Deadline: when the
	// runtime established the miss, before delivering it to the caller.
	Detect Quantiles `json:"detect"`
	// CPU is the process's CPU time per second of wall time during the
	// window (1.0 = one core busy).
	CPU    float64 `json:"cpu_per_s"`
	hist   *hdrhistogram.Histogram
	detect *hdrhistogram.Histogram
}

// LagCellResult is one cell with every mechanism: runs, and their
// histograms merged.
type LagCellResult struct {
	LagCell
	Span   time.Duration        `json:"span_ns"`
	Runs   map[string][]LagRun  `json:"runs"`   // by mechanism
	Merged map[string]Quantiles `json:"merged"` // by mechanism, all runs' samples
}

// LagResult is the lag section's outcome.
type LagResult struct {
	Config  LagConfig       `json:"config"`
	Cells   []LagCellResult `json:"cells"`
	Virtual []VirtualLagRun `json:"virtual"`
}

// errAborted ends a baseline's probe when a run ends.
var errAborted = errors.New("timeliness: run over")

// Lag measures miss notification lag on the real clock for every cell
// of c and every mechanism, runs interleaved so that drifting load on
// the machine touches all mechanisms alike, and the same scenario on
// virtual time. progress, if not nil, is called before each run.
func Lag(ctx context.Context, c LagConfig, progress func(string)) (*LagResult, error) {
	res := &LagResult{Config: c}
	for _, p := range c.Pending {
		for _, a := range c.Actors {
			for _, l := range c.Loads {
				if l != Idle && c.MaxBusyActors > 0 && a > c.MaxBusyActors {
					continue
				}
				for _, h := range c.Hogs {
					cell := LagCell{Pending: p, Actors: a, Load: l, Hogs: h}
					res.Cells = append(res.Cells, LagCellResult{
						LagCell: cell, Span: c.span(p),
						Runs: map[string][]LagRun{}, Merged: map[string]Quantiles{},
					})
				}
			}
		}
	}
	for i := range res.Cells {
		cr := &res.Cells[i]
		merged := map[string]*hdrhistogram.Histogram{}
		for rep := range c.Repeat {
			for _, m := range c.Mechanisms {
				if progress != nil {
					progress(fmt.Sprintf("lag: %v, %v, run %d of %d", cr.LagCell, m, rep+1, c.Repeat))
				}
				run, err := tracedLagRun(ctx, c, cr.LagCell, m, rep)
				if err != nil {
					return nil, err
				}
				cr.Runs[m.String()] = append(cr.Runs[m.String()], run)
				if merged[m.String()] == nil {
					merged[m.String()] = newHist()
				}
				merged[m.String()].Merge(run.hist)
			}
		}
		for m, h := range merged {
			cr.Merged[m] = quantiles(h)
		}
	}
	for _, p := range c.Pending {
		if progress != nil {
			progress(fmt.Sprintf("lag: %s pending on virtual time", fmtInt(int64(p))))
		}
		actors := min(p, c.Actors[len(c.Actors)-1])
		v, err := VirtualLag(ctx, p, actors, c.span(p), 3*c.span(p), c.Seed)
		if err != nil {
			return nil, err
		}
		res.Virtual = append(res.Virtual, v)
	}
	return res, nil
}

// lagActor is the state of an actor of the lag scenario.
type lagActor struct {
	self *crisp.Actor[*lagActor]
	r    *rand.Rand
	stop *atomic.Bool
	// work and jitter make each chained message spin for
	// U(work, work+jitter).
	work, jitter time.Duration
}

// chain is a busy actor's message: spin a while, then send the next.
func chain(_ *crisp.Proc, s *lagActor) {
	spin(s.work + time.Duration(s.r.Int64N(int64(s.jitter))))
	if !s.stop.Load() {
		crisp.Tell(s.self, chain, crisp.Priority(1))
	}
}

// spin keeps the processor busy for d.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

func probe(*crisp.Proc, *lagActor) (struct{}, error) { return struct{}{}, nil }

// shardedHist is a histogram many goroutines record into.
type shardedHist struct {
	shards [64]struct {
		mu sync.Mutex
		h  *hdrhistogram.Histogram
		_  [48]byte
	}
}

func newShardedHist() *shardedHist {
	s := new(shardedHist)
	for i := range s.shards {
		s.shards[i].h = newHist()
	}
	return s
}

func (s *shardedHist) record(i int, v time.Duration) {
	sh := &s.shards[i%len(s.shards)]
	sh.mu.Lock()
	_ = sh.h.RecordValue(max(int64(v), 0))
	sh.mu.Unlock()
}

func (s *shardedHist) merged() *hdrhistogram.Histogram {
	h := newHist()
	for i := range s.shards {
		h.Merge(s.shards[i].h)
	}
	return h
}

// lagRun runs one cell with one mechanism.
//
// The scenario: cell.Actors actors (policy.ByPriority), each held by a
// first handler: blocked on a channel (Idle), or turning into a chain of
// spinning messages once the probes are queued (Busy). cell.Hogs
// goroutines spin. cell.Pending waiting goroutines each have one probe
// pending at a time: they send it (or, for the baselines, arm a timer or
// context) with the next deadline of their schedule, wait for the miss,
// note the time, and send the next. The schedules depend only on c.Seed,
// so every mechanism sees the same deadlines relative to the run's start.
// tracedLagRun is lagRun, under the runtime's tracer if c.TraceDir asks
// for a trace of mechanism m's runs; the trace is named once the run's
// p99 is known. rep is the run's number in its cell, from 0.
func tracedLagRun(ctx context.Context, c LagConfig, cell LagCell, m Mechanism, rep int) (LagRun, error) {
	if c.TraceDir == "" || m != Crisp {
		return lagRun(ctx, c, cell, m)
	}
	f, err := os.CreateTemp(c.TraceDir, "running-*.trace")
	if err != nil {
		return LagRun{}, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return LagRun{}, fmt.Errorf("trace: %w", err)
	}
	run, err := lagRun(ctx, c, cell, m)
	trace.Stop()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("trace: %w", cerr)
	}
	if err != nil {
		os.Remove(f.Name())
		return run, err
	}
	name := fmt.Sprintf("lag-%v-%d-pending-%d-actors-%d-hogs-run%d-p99-%.2fms.trace",
		cell.Load, cell.Pending, cell.Actors, cell.Hogs, rep+1, float64(run.Lag.P99)/1e6)
	if err := os.Rename(f.Name(), filepath.Join(c.TraceDir, name)); err != nil {
		return run, fmt.Errorf("trace: %w", err)
	}
	return run, nil
}

func lagRun(ctx context.Context, c LagConfig, cell LagCell, mech Mechanism) (LagRun, error) {
	var opts []crisp.Option
	opts = append(opts, crisp.WithLogger(discard), crisp.WithObserver(c.Observer))
	if mech == CrispPrecision {
		opts = append(opts, crisp.WithPrecision(time.Millisecond))
	}
	sys := crisp.NewSystem(opts...)
	var (
		stop    atomic.Bool           // chains and hogs end
		aborted atomic.Bool           // waiters end
		gate    = make(chan struct{}) // busy actors start their chains
		release = make(chan struct{}) // idle actors' handlers return
		held    sync.WaitGroup
		bg      sync.WaitGroup // hogs
	)
	actors := make([]*crisp.Actor[*lagActor], cell.Actors)
	for i := range actors {
		st := &lagActor{r: rand.New(rand.NewPCG(c.Seed, uint64(i))), stop: &stop,
			work: 20 * time.Microsecond, jitter: 30 * time.Microsecond}
		if cell.Load == Long {
			st.work, st.jitter = 250*time.Microsecond, 100*time.Microsecond
		}
		actors[i] = crisp.Spawn(sys, st, crisp.WithPolicy(policy.ByPriority()))
		st.self = actors[i]
		held.Add(1)
		busy := cell.Load == Busy || cell.Load == Long && i > 0 // Long: actor 0 takes the probes, blocked
		crisp.Tell(actors[i], func(p *crisp.Proc, s *lagActor) {
			held.Done()
			if !busy {
				<-release
				return
			}
			<-gate
			chain(p, s)
		})
	}
	held.Wait()
	for range cell.Hogs {
		bg.Go(func() {
			for !stop.Load() {
			}
		})
	}

	span := c.span(cell.Pending)
	lead := max(20*time.Millisecond, time.Duration(cell.Pending)*5*time.Microsecond)
	t0 := time.Now()
	winStart := lead + span
	winEnd := winStart + c.Window
	hist, detect := newShardedHist(), newShardedHist()
	var (
		sentLate, outstanding atomic.Int64
		firstSent, waiters    sync.WaitGroup
		censored              atomic.Int64
	)
	base, cancelBase := context.WithCancel(context.Background())
	type baseline struct {
		t *time.Timer
		p *future.Promise[struct{}]
	}
	slots := make([]atomic.Pointer[baseline], cell.Pending)
	firstSent.Add(cell.Pending)
	waiters.Add(cell.Pending)
	for i := range cell.Pending {
		go func() {
			defer waiters.Done()
			r := rand.New(rand.NewPCG(c.Seed, uint64(i)+1<<32))
			off := lead + time.Duration(r.Int64N(int64(span)))
			a := actors[i%len(actors)]
			if cell.Load == Long {
				a = actors[0]
			}
			sent := sync.OnceFunc(firstSent.Done) // once its first deadline is out
			for !aborted.Load() {
				dl := t0.Add(off)
				inWindow := off >= winStart && off <= winEnd
				if inWindow {
					outstanding.Add(1)
				}
				if !time.Now().Before(dl) {
					sentLate.Add(1)
				}
				var (
					missed   bool
					detected time.Time
				)
				switch mech {
				case Crisp, CrispPrecision:
					f := crisp.Call(a, probe, crisp.By(dl))
					sent()
					_, err := f.Get()
					var me *deadline.MissedError
					if missed = errors.As(err, &me); missed {
						detected = me.Detected
					}
				case AfterFunc:
					p := future.NewPromise[struct{}](nil)
					b := &baseline{p: p}
					b.t = time.AfterFunc(time.Until(dl), func() { p.Fail(deadline.ErrMissed) })
					slots[i].Store(b)
					if aborted.Load() {
						b.t.Stop()
						p.Fail(errAborted)
					}
					sent()
					_, err := p.Future().Get()
					missed = err == deadline.ErrMissed
				case Context:
					dctx, cancel := context.WithDeadline(base, dl)
					sent()
					<-dctx.Done()
					missed = dctx.Err() == context.DeadlineExceeded
					cancel()
				case Timer:
					t := time.NewTimer(time.Until(dl))
					sent()
					select {
					case <-t.C:
						missed = true
					case <-base.Done(): // the run ends
						t.Stop()
					}
				}
				now := time.Now()
				if inWindow {
					if missed && !aborted.Load() {
						hist.record(i, now.Sub(dl))
						if !detected.IsZero() {
							detect.record(i, detected.Sub(dl))
						}
					} else {
						censored.Add(1) // cut short at the end of the run
					}
					outstanding.Add(-1)
				}
				if !missed {
					break
				}
				off += span/2 + time.Duration(r.Int64N(int64(span)))
			}
			sent() // if the run was aborted before it sent any
		}()
	}
	firstSent.Wait()
	close(gate) // busy actors start spinning now that the probes are queued

	var run LagRun
	sleepUntil(ctx, t0.Add(winStart))
	cpu0, _ := processCPU()
	w0 := time.Now()
	sleepUntil(ctx, t0.Add(winEnd))
	cpu1, ok := processCPU()
	if wall := time.Since(w0); ok && wall > 0 {
		run.CPU = float64(cpu1-cpu0) / float64(wall)
	}
	// Let the misses of the window's last deadlines arrive.
	const grace = time.Second
	for end := time.Now().Add(grace); outstanding.Load() > 0 && time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(time.Millisecond)
	}

	aborted.Store(true)
	stop.Store(true)
	cancelBase()
	for i := range slots {
		if b := slots[i].Load(); b != nil {
			b.t.Stop()
			b.p.Fail(errAborted)
		}
	}
	close(release)
	err := sys.Shutdown(context.WithoutCancel(ctx))
	waiters.Wait()
	bg.Wait()
	if err != nil {
		return LagRun{}, err
	}
	if err := ctx.Err(); err != nil {
		return LagRun{}, err
	}
	run.hist = hist.merged()
	run.Censored = censored.Load()
	for range run.Censored {
		_ = run.hist.RecordValue(int64(grace))
	}
	run.Lag = quantiles(run.hist)
	run.detect = detect.merged()
	run.Detect = quantiles(run.detect)
	run.SentLate = sentLate.Load()
	runtime.GC() // leave the next run a clean heap
	return run, nil
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// Tables renders the result: per pending count, the lag of every cell
// and mechanism (all runs' samples merged); the precision option's CPU
// cost; and the virtual-time runs.
func (r *LagResult) Tables() []Table {
	var ts []Table
	c := r.Config
	for _, pending := range c.Pending {
		t := Table{
			Title: fmt.Sprintf("miss notification lag, %s pending deadlines", fmtInt(int64(pending))),
			Note: fmt.Sprintf("Deadline to the return of the caller's Get (context: of <-ctx.Done(); timer: of <-t.C, a bare time.Timer, the floor for any Go code woken at a deadline). Each waiter's deadlines are U(S/2, 3S/2) apart, S = %v: %s deadlines a second. "+
				"%d run(s) per row, samples merged; \"p99 runs\" is the range of the runs' own p99. \"detect p99\": MissedError.Detected − Deadline.",
				c.span(pending), fmtInt(int64(float64(pending)/c.span(pending).Seconds())), c.Repeat),
			Header: []string{"actors", "load", "hogs", "mechanism", "misses", "p50", "p99", "p99.9", "max", "p99 runs", "detect p99", "CPU/s", "sent late", "censored"},
		}
		for _, cell := range r.Cells {
			if cell.Pending != pending {
				continue
			}
			for _, m := range c.Mechanisms {
				runs := cell.Runs[m.String()]
				q := cell.Merged[m.String()]
				var lo, hi time.Duration = math.MaxInt64, 0
				var late, cens int64
				var cpu, detect float64
				for _, run := range runs {
					lo, hi = min(lo, run.Lag.P99), max(hi, run.Lag.P99)
					late += run.SentLate
					cens += run.Censored
					cpu += run.CPU / float64(len(runs))
					detect = max(detect, float64(run.Detect.P99))
				}
				det := "-"
				if m == Crisp || m == CrispPrecision {
					det = fmtDur(time.Duration(detect))
				}
				t.Rows = append(t.Rows, []string{
					fmtInt(int64(cell.Actors)), cell.Load.String(), fmt.Sprint(cell.Hogs), m.String(), fmtInt(q.Count),
					fmtDur(q.P50), fmtDur(q.P99), fmtDur(q.P999), fmtDur(q.Max),
					fmtDur(lo) + "–" + fmtDur(hi), det, fmt.Sprintf("%.2f", cpu), fmtInt(late), fmtInt(cens),
				})
			}
		}
		ts = append(ts, t)
	}
	if slices.Contains(c.Mechanisms, Crisp) && slices.Contains(c.Mechanisms, CrispPrecision) {
		t := Table{
			Title: "CPU cost of crisp.WithPrecision(time.Millisecond)",
			Note: "Process CPU seconds per second of wall time during the measured window (mean over runs), without and with the option, same scenario. " +
				"Where actors are busy or hogs run, the processors are saturated either way and the cost shows as lag, not CPU.",
			Header: []string{"pending", "actors", "load", "hogs", "crisp CPU/s", "precision CPU/s", "difference", "p99 crisp", "p99 precision"},
		}
		for _, cell := range r.Cells {
			mean := func(m Mechanism) float64 {
				var s float64
				for _, run := range cell.Runs[m.String()] {
					s += run.CPU
				}
				return s / float64(max(1, len(cell.Runs[m.String()])))
			}
			a, b := mean(Crisp), mean(CrispPrecision)
			t.Rows = append(t.Rows, []string{fmtInt(int64(cell.Pending)), fmtInt(int64(cell.Actors)), cell.Load.String(), fmt.Sprint(cell.Hogs),
				fmt.Sprintf("%.2f", a), fmt.Sprintf("%.2f", b), fmt.Sprintf("%+.2f", b-a),
				fmtDur(cell.Merged[Crisp.String()].P99), fmtDur(cell.Merged[CrispPrecision.String()].P99)})
		}
		ts = append(ts, t)
	}
	v := Table{
		Title:  "the same scenario on virtual time (vclock)",
		Note:   "Idle actors held by a sleeping handler; each waiter reads the virtual clock when its Get returns.",
		Header: []string{"pending", "actors", "misses", "lags ≠ 0", "max |lag|"},
	}
	for _, run := range r.Virtual {
		v.Rows = append(v.Rows, []string{fmtInt(int64(run.Pending)), fmtInt(int64(run.Actors)), fmtInt(run.Misses), fmtInt(run.NonZero), fmtDur(run.MaxAbs)})
	}
	return append(ts, v)
}
