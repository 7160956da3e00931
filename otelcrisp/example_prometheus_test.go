package otelcrisp_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/otelcrisp"
)

// Exporting a system's metrics to Prometheus through OpenTelemetry's
// Prometheus exporter: the registry is served as /metrics would be, and
// scraped here once.
func Example_prometheus() {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		panic(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	obs, err := otelcrisp.New(otelcrisp.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()), crisp.WithObserver(obs))
	defer sys.Shutdown(context.Background())

	valve := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	crisp.Call(valve, step).Get()
	crisp.Call(valve, step, crisp.Within(0)).Get() // missed at once
	sys.WaitIdle(context.Background())

	// In a program: http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "crisp_message_sent") || strings.HasPrefix(line, "crisp_message_ended") {
			fmt.Println(line)
		}
	}
	// Output:
	// crisp_message_ended_total{crisp_actor="valve",crisp_outcome="finished"} 1
	// crisp_message_ended_total{crisp_actor="valve",crisp_outcome="missed"} 1
	// crisp_message_sent_total{crisp_actor="valve"} 2
}
