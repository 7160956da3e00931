package otelcrisp_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/otelcrisp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

type plant struct{ n int }

func step(_ *crisp.Proc, p *plant) (int, error) { p.n++; return p.n, nil }

type setup struct {
	sys    *crisp.System
	mock   *clock.Mock
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newSetup(t *testing.T) *setup {
	s := &setup{mock: clock.NewMock(), reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	s.mock.Set(t0)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	obs, err := otelcrisp.New(otelcrisp.WithMeterProvider(mp), otelcrisp.WithTracerProvider(s.tp))
	require.NoError(t, err)
	s.sys = crisp.NewSystem(crisp.WithClock(s.mock), crisp.WithObserver(obs),
		crisp.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() {
		require.NoError(t, s.sys.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
		require.NoError(t, s.tp.Shutdown(context.Background()))
	})
	return s
}

func (s *setup) idle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.sys.WaitIdle(ctx))
}

// metrics collects and indexes the metrics by name.
func (s *setup) metrics(t *testing.T) map[string]metricdata.Metrics {
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, "github.com/crisprt/crisp/otelcrisp", sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func sumOf(t *testing.T, m metricdata.Metrics, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(attrs...)
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value
			}
		}
		return 0
	}
	t.Fatalf("%s is not an int64 sum: %T", m.Name, m.Data)
	return 0
}

func histOf(t *testing.T, m metricdata.Metrics, actor string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	want := attribute.NewSet(attribute.String("crisp.actor", actor))
	d, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", m.Name)
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&want) {
			return p
		}
	}
	t.Fatalf("%s has no point for %s", m.Name, actor)
	return metricdata.HistogramDataPoint[float64]{}
}

// TestMetrics runs on virtual time: a held actor queues two deadlined
// messages, one of which misses; one process suspends and stays so.
func TestMetrics(t *testing.T) {
	s := newSetup(t)
	a := crisp.Spawn(s.sys, &plant{}, crisp.WithName("valve"))
	p := future.NewPromise[int](s.mock)
	crisp.Call(a, func(pr *crisp.Proc, _ *plant) (int, error) { return crisp.Await(pr, p.Future()) })
	s.idle(t) // suspended
	started, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(a, func(*crisp.Proc, *plant) { close(started); <-release })
	<-started
	ok := crisp.Call(a, step, crisp.Within(time.Hour))
	late := crisp.Call(a, step, crisp.Within(time.Second))
	s.mock.Add(2 * time.Second)
	_, err := late.Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	close(release)
	_, err = ok.Get()
	require.NoError(t, err)
	s.idle(t)

	ms := s.metrics(t)
	valve := attribute.String("crisp.actor", "valve")
	assert.EqualValues(t, 4, sumOf(t, ms["crisp.message.sent"], valve))
	assert.EqualValues(t, 2, sumOf(t, ms["crisp.message.ended"], valve, attribute.String("crisp.outcome", "finished")))
	assert.EqualValues(t, 1, sumOf(t, ms["crisp.message.ended"], valve, attribute.String("crisp.outcome", "missed")))
	assert.EqualValues(t, 0, sumOf(t, ms["crisp.actor.queue.length"], valve))
	assert.EqualValues(t, 1, sumOf(t, ms["crisp.actor.suspended"], valve))

	wait := histOf(t, ms["crisp.message.queue.wait"], "valve")
	assert.EqualValues(t, 3, wait.Count, "three started")
	assert.InDelta(t, 2.0, wait.Sum, 1e-9, "ok waited 2 s behind the held handler")
	slack := histOf(t, ms["crisp.message.slack"], "valve")
	assert.EqualValues(t, 1, slack.Count, "one deadlined message started")
	assert.InDelta(t, 3598.0, slack.Sum, 1e-9)
	lag := histOf(t, ms["crisp.deadline.miss.lag"], "valve")
	assert.EqualValues(t, 1, lag.Count)
	assert.Zero(t, lag.Sum, "on virtual time the miss is seen at the deadline")
	run := histOf(t, ms["crisp.message.run.duration"], "valve")
	assert.EqualValues(t, 2, run.Count)
	assert.Equal(t, "s", ms["crisp.message.run.duration"].Unit)
	assert.Equal(t, "{message}", ms["crisp.message.sent"].Unit)
	for _, name := range []string{"crisp.message.sent", "crisp.message.ended", "crisp.message.queue.wait",
		"crisp.message.run.duration", "crisp.message.slack", "crisp.deadline.miss.lag",
		"crisp.actor.queue.length", "crisp.actor.suspended"} {
		assert.Contains(t, ms, name)
	}
}

// TestSpans checks that each message is a span, child of the sender's
// span, with its attributes, events and status.
func TestSpans(t *testing.T) {
	s := newSetup(t)
	a := crisp.Spawn(s.sys, &plant{}, crisp.WithName("valve"))
	ctx, parent := s.tp.Tracer("test").Start(context.Background(), "request")
	_, err := crisp.Call(a, step, crisp.Context(ctx), crisp.Within(time.Minute), crisp.MessageName("open")).Get()
	require.NoError(t, err)
	_, err = crisp.Call(a, step, crisp.Within(0), crisp.MessageName("too late")).Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	_, err = crisp.Call(a, func(*crisp.Proc, *plant) (int, error) { panic("boom") }, crisp.MessageName("bad")).Get()
	require.Error(t, err)
	s.idle(t)
	parent.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range s.spans.Ended() {
		for _, kv := range sp.Attributes() {
			if kv.Key == "crisp.message" {
				spans[kv.Value.AsString()] = sp
			}
		}
	}
	require.Len(t, spans, 3)
	open := spans["open"]
	assert.Equal(t, "process valve", open.Name())
	assert.Equal(t, parent.SpanContext().SpanID(), open.Parent().SpanID(), "child of the sender's span")
	assert.Equal(t, parent.SpanContext().TraceID(), open.SpanContext().TraceID())
	attrs := attribute.NewSet(open.Attributes()...)
	for k, want := range map[attribute.Key]attribute.Value{
		"crisp.actor":    attribute.StringValue("valve"),
		"crisp.policy":   attribute.StringValue("edf"),
		"crisp.outcome":  attribute.StringValue("finished"),
		"crisp.deadline": attribute.StringValue(t0.Add(time.Minute).Format(time.RFC3339Nano)),
		"crisp.slack":    attribute.Float64Value(60),
	} {
		got, ok := attrs.Value(k)
		assert.True(t, ok, "attribute %s", k)
		assert.Equal(t, want, got, "attribute %s", k)
	}
	assert.Equal(t, codes.Unset, open.Status().Code)
	require.Len(t, open.Events(), 1)
	assert.Equal(t, "started", open.Events()[0].Name)
	assert.Equal(t, t0, open.StartTime(), "span times are the system clock's")

	late := spans["too late"]
	assert.Equal(t, codes.Error, late.Status().Code)
	assert.Contains(t, late.Status().Description, "deadline missed")
	assert.False(t, late.Parent().IsValid(), "no context, no parent")
	assert.Equal(t, codes.Error, spans["bad"].Status().Code)
	bad := attribute.NewSet(spans["bad"].Attributes()...)
	v, _ := bad.Value("crisp.outcome")
	assert.Equal(t, "panicked", v.AsString())
}
