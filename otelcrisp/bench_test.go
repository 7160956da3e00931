package otelcrisp_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/otelcrisp"
)

// BenchmarkCall is a Call+Get round trip without an observer, with the
// adapter's metrics only (spans not sampled), and with metrics and a
// recorded span per message: the adapter's price per message.
func BenchmarkCall(b *testing.B) {
	for _, c := range []struct {
		name  string
		obs   bool
		spans bool
	}{{"none", false, false}, {"metrics", true, false}, {"metrics+spans", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var opts []crisp.Option
			if c.obs {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer mp.Shutdown(context.Background())
				sampler := sdktrace.NeverSample()
				if c.spans {
					sampler = sdktrace.AlwaysSample()
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
				defer tp.Shutdown(context.Background())
				obs, err := otelcrisp.New(otelcrisp.WithMeterProvider(mp), otelcrisp.WithTracerProvider(tp))
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, crisp.WithObserver(obs))
			}
			sys := crisp.NewSystem(opts...)
			defer sys.Shutdown(context.Background())
			a := crisp.Spawn(sys, &plant{})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := crisp.Call(a, step).Get(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
