// Package otelcrisp reports a crisp system to OpenTelemetry: metrics of
// its messages and actors, and a span per message. It is a crisp
// observer (crisp.WithObserver), in a module of its own so that the
// library's module needs no OpenTelemetry:
//
//	obs, err := otelcrisp.New() // the global meter and tracer providers
//	if err != nil { ... }
//	sys := crisp.NewSystem(crisp.WithObserver(obs))
//
// Metrics, all with the attribute crisp.actor (the actor's name):
//
//	crisp.message.sent          counter, {message}
//	crisp.message.ended         counter, {message}; crisp.outcome: finished,
//	                            panicked, missed, refused, cancelled, stopped, failed
//	crisp.message.queue.wait    histogram, s: from send to start
//	crisp.message.run.duration  histogram, s: from start to finish (suspensions included)
//	crisp.message.slack         histogram, s: time left to the deadline at start
//	crisp.deadline.miss.lag     histogram, s: from a missed deadline to its detection
//	crisp.actor.queue.length    up-down counter, {message}: sent and not yet started or ended
//	crisp.actor.suspended       up-down counter, {process}: processes waiting with their actor released
//	crisp.actor.restarts        counter, {restart}
//
// Spans: one per message, named "process ACTOR", of kind consumer, from
// its send to its end, a child of the span in the message's context
// (crisp.Context) if it has one. Attributes: crisp.actor, crisp.message,
// crisp.priority, crisp.policy, crisp.deadline (RFC 3339, if any),
// crisp.slack (seconds, at start), crisp.outcome; events "started",
// "suspended", "resumed"; status Error for every outcome but finished.
// Span and metric times are the system's clock's.
//
// The observer's cost per message is that of the SDK's instruments
// (eight measurements per message) and of a span, if the tracer samples
// it: microseconds, not nanoseconds; BenchmarkCall measures it. An
// unsampled span gets no attributes. It is safe for concurrent use.
package otelcrisp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/policy"
)

// scope is the instrumentation scope's name.
const scope = "github.com/crisprt/crisp/otelcrisp"

// Option configures New.
type Option func(*config)

type config struct {
	mp metric.MeterProvider
	tp trace.TracerProvider
}

// WithMeterProvider sets where metrics go; the default is
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets where spans go; the default is
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// Observer is a crisp.Observer that records to OpenTelemetry.
type Observer struct {
	tracer trace.Tracer

	sent, ended, restarts     metric.Int64Counter
	wait, run, slack, lag     metric.Float64Histogram
	queueLength, suspendedNow metric.Int64UpDownCounter

	spans  sync.Map // message ID -> trace.Span, from Sent to its end
	actors sync.Map // actor name -> *actorAttrs
}

// New makes an Observer. It fails only if an instrument cannot be made.
func New(opts ...Option) (*Observer, error) {
	c := config{mp: otel.GetMeterProvider(), tp: otel.GetTracerProvider()}
	for _, o := range opts {
		o(&c)
	}
	m := c.mp.Meter(scope)
	o := &Observer{tracer: c.tp.Tracer(scope)}
	var err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		var x metric.Int64Counter
		if err == nil {
			x, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		}
		return x
	}
	hist := func(name, desc string) metric.Float64Histogram {
		var x metric.Float64Histogram
		if err == nil {
			x, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
		}
		return x
	}
	updown := func(name, unit, desc string) metric.Int64UpDownCounter {
		var x metric.Int64UpDownCounter
		if err == nil {
			x, err = m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		}
		return x
	}
	o.sent = counter("crisp.message.sent", "{message}", "Messages sent to actors.")
	o.ended = counter("crisp.message.ended", "{message}", "Messages ended, by outcome.")
	o.restarts = counter("crisp.actor.restarts", "{restart}", "Actor restarts by a supervisor.")
	o.wait = hist("crisp.message.queue.wait", "Time from a message's send to its start.")
	o.run = hist("crisp.message.run.duration", "Time from a message's start to its finish, suspensions included.")
	o.slack = hist("crisp.message.slack", "Time left to a message's deadline when it started.")
	o.lag = hist("crisp.deadline.miss.lag", "Time from a missed deadline to its detection.")
	o.queueLength = updown("crisp.actor.queue.length", "{message}", "Messages sent and not yet started or ended.")
	o.suspendedNow = updown("crisp.actor.suspended", "{process}", "Processes waiting with their actor released.")
	if err != nil {
		return nil, fmt.Errorf("otelcrisp: %w", err)
	}
	return o, nil
}

// actorAttrs are an actor's attribute sets, made once per actor name:
// making a set allocates, and Observe runs several times per message.
type actorAttrs struct {
	kv      attribute.KeyValue
	add     []metric.AddOption                        // crisp.actor
	rec     []metric.RecordOption                     // crisp.actor
	outcome [crisp.EventFailed + 1][]metric.AddOption // crisp.actor and crisp.outcome, by terminal kind
}

func (o *Observer) attrsOf(actor string) *actorAttrs {
	if v, ok := o.actors.Load(actor); ok {
		return v.(*actorAttrs)
	}
	a := &actorAttrs{kv: attribute.String("crisp.actor", actor)}
	set := metric.WithAttributeSet(attribute.NewSet(a.kv))
	a.add = []metric.AddOption{set}
	a.rec = []metric.RecordOption{set}
	for k := crisp.EventFinished; k <= crisp.EventFailed; k++ {
		a.outcome[k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(a.kv, attribute.String("crisp.outcome", k.String())))}
	}
	v, _ := o.actors.LoadOrStore(actor, a)
	return v.(*actorAttrs)
}

// Observe records e.
func (o *Observer) Observe(e crisp.Event) {
	ctx := context.Background()
	a := o.attrsOf(e.Actor)
	add, rec := a.add, a.rec
	switch e.Kind {
	case crisp.EventSent:
		o.sent.Add(ctx, 1, add...)
		o.queueLength.Add(ctx, 1, add...)
		o.startSpan(e, a.kv)
	case crisp.EventStarted:
		o.queueLength.Add(ctx, -1, add...)
		o.wait.Record(ctx, e.Wait.Seconds(), rec...)
		if !e.Deadline.IsZero() {
			o.slack.Record(ctx, e.Slack.Seconds(), rec...)
		}
		if s := o.span(e.ID); s != nil {
			if !e.Deadline.IsZero() {
				s.SetAttributes(attribute.Float64("crisp.slack", e.Slack.Seconds()))
			}
			s.AddEvent("started", trace.WithTimestamp(e.Time))
		}
	case crisp.EventSuspended:
		o.suspendedNow.Add(ctx, 1, add...)
		if s := o.span(e.ID); s != nil {
			s.AddEvent("suspended", trace.WithTimestamp(e.Time))
		}
	case crisp.EventResumed:
		o.suspendedNow.Add(ctx, -1, add...)
		if s := o.span(e.ID); s != nil {
			s.AddEvent("resumed", trace.WithTimestamp(e.Time))
		}
	case crisp.EventRestarted:
		o.restarts.Add(ctx, 1, add...)
	}
	if e.Kind.Terminal() {
		o.end(ctx, e, a)
	}
}

func (o *Observer) end(ctx context.Context, e crisp.Event, a *actorAttrs) {
	add, rec := a.add, a.rec
	o.ended.Add(ctx, 1, a.outcome[e.Kind]...)
	switch {
	case e.Kind == crisp.EventFinished || e.Kind == crisp.EventPanicked:
		o.run.Record(ctx, e.Run.Seconds(), rec...)
	case e.Kind == crisp.EventStopped && e.Started:
		o.suspendedNow.Add(ctx, -1, add...)
	default: // it never started
		o.queueLength.Add(ctx, -1, add...)
		if e.Kind == crisp.EventMissed {
			o.lag.Record(ctx, e.Lag.Seconds(), rec...)
		}
	}
	v, ok := o.spans.LoadAndDelete(e.ID)
	if !ok {
		return
	}
	s := v.(trace.Span)
	s.SetAttributes(attribute.String("crisp.outcome", e.Kind.String()))
	if e.Kind != crisp.EventFinished {
		msg := e.Kind.String()
		if e.Err != nil {
			msg = e.Err.Error()
		}
		s.SetStatus(codes.Error, msg)
	}
	s.End(trace.WithTimestamp(e.Time))
}

func (o *Observer) startSpan(e crisp.Event, actor attribute.KeyValue) {
	parent := e.Context
	if parent == nil {
		parent = context.Background()
	}
	_, s := o.tracer.Start(parent, "process "+e.Actor, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(e.Time))
	if !s.IsRecording() {
		return // not sampled: spare the attributes
	}
	s.SetAttributes(actor,
		attribute.String("crisp.message", e.Message),
		attribute.Int("crisp.priority", e.Priority),
		attribute.String("crisp.policy", policyName(e.Policy)))
	if !e.Deadline.IsZero() {
		s.SetAttributes(attribute.String("crisp.deadline", e.Deadline.Format(time.RFC3339Nano)))
	}
	o.spans.Store(e.ID, s)
}

func (o *Observer) span(id uint64) trace.Span {
	if v, ok := o.spans.Load(id); ok {
		return v.(trace.Span)
	}
	return nil
}

// policyName names a policy: its String method's result (the built-in
// policies have one), else its type.
func policyName(p policy.Policy) string {
	switch p := p.(type) {
	case nil:
		return ""
	case fmt.Stringer:
		return p.String()
	}
	return fmt.Sprintf("%T", p)
}
