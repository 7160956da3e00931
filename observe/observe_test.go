package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/crisptest"
	"github.com/crisprt/crisp/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = crisptest.T0

func newSystem(t *testing.T, obs ...crisp.Observer) (*crisp.System, *clock.Mock) {
	t.Helper()
	var opts []crisp.Option
	for _, o := range obs {
		opts = append(opts, crisp.WithObserver(o))
	}
	return crisptest.NewSystem(t, opts...)
}

func waitIdle(t *testing.T, sys *crisp.System) {
	t.Helper()
	crisptest.WaitIdle(t, sys)
}

type plant struct{ n int }

func step(_ *crisp.Proc, p *plant) (int, error) { p.n++; return p.n, nil }

// scenario runs, on a mock clock: one actor "valve" held busy by a
// handler that awaits a promise, while three messages queue (one misses
// its deadline after 2 s) and the promise resolves at 3 s; and one actor
// "pump" that finishes two messages. It returns with the system idle.
func scenario(t *testing.T, sys *crisp.System, mock *clock.Mock) {
	valve := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	pump := crisp.Spawn(sys, &plant{}, crisp.WithName("pump"))
	_, err := crisp.Call(pump, step).Get()
	require.NoError(t, err)
	_, err = crisp.Call(pump, step).Get()
	require.NoError(t, err)
	// An observer hears of a finish after its outcome is delivered: the
	// pump's runner may read the clock for it after Get returns, so the
	// mock moves only once the pump is idle (else its Run could read the
	// second the mock moves below: 2-3 runs in 150 under -race beside
	// CPU-bound processes).
	waitIdle(t, sys)

	started := make(chan struct{})
	release := make(chan struct{})
	crisp.Tell(valve, func(*crisp.Proc, *plant) { close(started); <-release }, crisp.MessageName("hold"))
	<-started
	p := future.NewPromise[int](mock)
	waits := crisp.Call(valve, func(pr *crisp.Proc, _ *plant) (int, error) { return crisp.Await(pr, p.Future()) })
	late := crisp.Call(valve, step, crisp.Within(2*time.Second), crisp.MessageName("late"))
	ok := crisp.Call(valve, step, crisp.Within(time.Hour))
	mock.Add(time.Second)
	close(release)
	waitIdle(t, sys) // waits is suspended; ok ran after a second in the queue
	_, err = ok.Get()
	require.NoError(t, err)
	mock.Add(2 * time.Second)
	waitIdle(t, sys)
	p.Resolve(1, nil)
	waitIdle(t, sys)
	_, err = waits.Get()
	require.NoError(t, err)
	_, err = late.Get()
	require.NoError(t, err, "late ran before its deadline, after the hold")
	miss := crisp.Call(valve, step, crisp.Within(0), crisp.MessageName("too late"))
	_, err = miss.Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	waitIdle(t, sys)
}

func TestStatsCountWhatHappened(t *testing.T) {
	stats := observe.NewStats()
	sys, mock := newSystem(t, stats)
	scenario(t, sys, mock)

	snap := stats.Snapshot()
	require.Len(t, snap.Actors, 2)
	pump, valve := snap.Actors[0], snap.Actors[1]
	assert.Equal(t, "pump", pump.Name)
	assert.Equal(t, observe.ActorStats{Name: "pump", Sent: 2, Finished: 2,
		Wait: observe.Durations{Count: 2}, Run: observe.Durations{Count: 2}}, pump,
		"no time passes on the mock while pump works")

	assert.Equal(t, "valve", valve.Name)
	assert.EqualValues(t, 5, valve.Sent)
	assert.EqualValues(t, 4, valve.Finished)
	assert.EqualValues(t, 1, valve.Missed)
	assert.Zero(t, valve.Queued+valve.Running+valve.Suspended, "all done")
	assert.EqualValues(t, 4, valve.Wait.Count)
	assert.Equal(t, time.Second, valve.Wait.Max, "late and ok waited a second behind the hold")
	assert.EqualValues(t, 1, valve.Lag.Count)
	require.NotNil(t, valve.LastMiss)
	assert.Equal(t, "too late", valve.LastMiss.Message)
	assert.Equal(t, t0.Add(3*time.Second), valve.LastMiss.Detected)

	assert.EqualValues(t, 7, snap.Total.Sent)
	assert.EqualValues(t, 1, snap.Total.Missed)
	assert.Equal(t, valve.LastMiss, snap.Total.LastMiss)
	assert.EqualValues(t, 6, snap.Total.Wait.Count)
}

// TestStatsGaugesWhileBusy reads the gauges while a handler runs, one
// process is suspended and one message is queued.
func TestStatsGaugesWhileBusy(t *testing.T) {
	stats := observe.NewStats()
	sys, mock := newSystem(t, stats)
	a := crisp.Spawn(sys, &plant{}, crisp.WithName("a"))
	p := future.NewPromise[int](mock)
	waits := crisp.Call(a, func(pr *crisp.Proc, _ *plant) (int, error) { return crisp.Await(pr, p.Future()) })
	waitIdle(t, sys)
	started := make(chan struct{})
	release := make(chan struct{})
	crisp.Tell(a, func(*crisp.Proc, *plant) { close(started); <-release })
	<-started
	queued := crisp.Call(a, step)

	snap := stats.Snapshot()
	require.Len(t, snap.Actors, 1)
	got := snap.Actors[0]
	assert.Equal(t, [3]int64{1, 1, 1}, [3]int64{got.Queued, got.Running, got.Suspended}, "queued, running, suspended")

	close(release)
	p.Resolve(1, nil)
	_, err := waits.Get()
	require.NoError(t, err)
	_, err = queued.Get()
	require.NoError(t, err)
	waitIdle(t, sys)
	got = stats.Snapshot().Actors[0]
	assert.Equal(t, [3]int64{0, 0, 0}, [3]int64{got.Queued, got.Running, got.Suspended})
	assert.EqualValues(t, 3, got.Finished)
}

func TestPageServesTheActors(t *testing.T) {
	stats := observe.NewStats()
	sys, mock := newSystem(t, stats)
	scenario(t, sys, mock)
	srv := httptest.NewServer(observe.Handler(stats))
	defer srv.Close()

	res, err := srv.Client().Get(srv.URL + "/debug/crisp")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	html := string(body)
	assert.Contains(t, html, "<td>valve</td>")
	assert.Contains(t, html, "<td>pump</td>")
	assert.Contains(t, html, "too late at 09:00:03.000", "the last miss")
	assert.Contains(t, html, "setInterval(refresh", "it refreshes itself")

	res, err = srv.Client().Get(srv.URL + "/debug/crisp?format=json")
	require.NoError(t, err)
	defer res.Body.Close()
	var snap observe.Snapshot
	require.NoError(t, json.NewDecoder(res.Body).Decode(&snap))
	assert.Equal(t, stats.Snapshot(), snap, "the JSON is the snapshot")
}

func TestPageEscapesNames(t *testing.T) {
	stats := observe.NewStats()
	sys, _ := newSystem(t, stats)
	a := crisp.Spawn(sys, &plant{}, crisp.WithName("<script>alert(1)</script>"))
	_, err := crisp.Call(a, step).Get()
	require.NoError(t, err)
	waitIdle(t, sys)
	rec := httptest.NewRecorder()
	observe.Handler(stats).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.NotContains(t, rec.Body.String(), "<script>alert(1)")
	assert.Contains(t, rec.Body.String(), "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// TestProfilingLabelsTheHandlersGoroutine reads the goroutine profile
// from inside a handler: its goroutine carries the actor's and the
// message's names, over the labels of the message's context.
func TestProfilingLabelsTheHandlersGoroutine(t *testing.T) {
	sys, _ := newSystem(t, observe.Profiling())
	a := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("tenant", "acme"))
	prof, err := crisp.Call(a, func(*crisp.Proc, *plant) (string, error) {
		var b bytes.Buffer
		err := pprof.Lookup("goroutine").WriteTo(&b, 1)
		return b.String(), err
	}, crisp.MessageName("open"), crisp.Context(ctx)).Get()
	require.NoError(t, err)
	assert.Contains(t, prof, `"crisp.actor":"valve"`)
	assert.Contains(t, prof, `"crisp.message":"open"`)
	assert.Contains(t, prof, `"tenant":"acme"`)
	for _, line := range strings.Split(prof, "\n") {
		if strings.Contains(line, `"crisp.actor"`) {
			assert.Contains(t, line, `"crisp.message":"open"`, "both labels on one goroutine")
		}
	}
}

// TestProfilingTracesMessages takes an execution trace while messages
// run, suspend, finish and miss, and checks that the trace holds their
// tasks and regions.
func TestProfilingTracesMessages(t *testing.T) {
	sys, mock := newSystem(t, observe.Profiling())
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	a := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	p := future.NewPromise[int](mock)
	f := crisp.Call(a, func(pr *crisp.Proc, _ *plant) (int, error) { return crisp.Await(pr, p.Future()) },
		crisp.MessageName("waits"), crisp.Within(time.Hour))
	waitIdle(t, sys)
	p.Resolve(3, nil)
	_, err := f.Get()
	require.NoError(t, err)
	_, err = crisp.Call(a, step, crisp.Within(0)).Get()
	require.True(t, errors.Is(err, deadline.ErrMissed))
	waitIdle(t, sys)
	trace.Stop()
	out := buf.String() // strings in the trace are stored verbatim
	assert.Contains(t, out, "crisp.message")
	assert.Contains(t, out, "valve/waits")
	assert.Contains(t, out, "crisp.deadline")
	assert.Contains(t, out, "missed")
}

// ctxKey marks the context a message was sent with.
type ctxKey struct{}

// keyHandler is a slog handler that keeps each record's level, message
// and attributes, and the context value under ctxKey.
type keyHandler struct {
	mu      *sync.Mutex
	records *[]string
}

func (h keyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h keyHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h keyHandler) WithGroup(string) slog.Handler            { return h }
func (h keyHandler) Handle(ctx context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" && a.Key != "deadline" && a.Key != "detected" {
			s += " " + a.String()
		}
		return true
	})
	if v, ok := ctx.Value(ctxKey{}).(string); ok {
		s += " ctx=" + v
	}
	h.mu.Lock()
	*h.records = append(*h.records, s)
	h.mu.Unlock()
	return nil
}

func TestLogReportsWhatWentWrong(t *testing.T) {
	var mu sync.Mutex
	var records []string
	sys, _ := newSystem(t, observe.Log(slog.New(keyHandler{&mu, &records})))
	a := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-7")
	_, err := crisp.Call(a, step, crisp.Within(0), crisp.MessageName("late"), crisp.Context(ctx)).Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	_, err = crisp.Call(a, func(*crisp.Proc, *plant) (int, error) { panic("boom") }, crisp.MessageName("bad")).Get()
	require.Error(t, err)
	_, err = crisp.Call(a, step, crisp.MessageName("fine")).Get()
	require.NoError(t, err)
	a.Stop()
	_, err = crisp.Call(a, step, crisp.MessageName("after stop")).Get()
	require.ErrorIs(t, err, crisp.ErrStopped)
	waitIdle(t, sys)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, records, 3, "%q", records)
	assert.Equal(t, "WARN deadline missed actor=valve message=late lag=0s error=valve: late: deadline missed: had to start by 2013-02-01T09:00:00Z ctx=req-7", records[0])
	assert.Equal(t, "ERROR handler panicked actor=valve message=bad error=crisp: handler panicked: boom panic=boom", records[1])
	assert.Equal(t, "WARN message refused actor=valve message=after stop error=crisp: actor stopped", records[2])
}
