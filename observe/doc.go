// Package observe watches a crisp system through its observer
// (crisp.WithObserver): figures per actor (Stats), a live page of them
// (Handler), and the runtime's profiler and tracer split by actor and
// message (Profiling).
//
// Each is an ordinary crisp.Observer, so a system pays for what it is
// given and nothing for the rest; several may watch one system:
//
//	stats := observe.NewStats()
//	sys := crisp.NewSystem(crisp.WithObserver(stats), crisp.WithObserver(observe.Profiling()))
//	http.Handle("/debug/crisp", observe.Handler(stats))
//
// Observers are called on the goroutines of the runtime (see
// crisp.Observer) and own no goroutine; everything here is safe for
// concurrent use and needs only the standard library. For OpenTelemetry
// metrics and traces see the module github.com/crisprt/crisp/otelcrisp.
package observe
