package observe_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/observe"
)

// Stats kept as an observer, read while the system runs.
func ExampleStats() {
	mock := clock.NewMock()
	stats := observe.NewStats()
	sys := crisp.NewSystem(crisp.WithClock(mock), crisp.WithObserver(stats))
	defer sys.Shutdown(context.Background())

	a := crisp.Spawn(sys, &plant{}, crisp.WithName("valve"))
	crisp.Call(a, step).Get()
	_, err := crisp.Call(a, step, crisp.Within(0)).Get() // already too late
	fmt.Println(err != nil)
	sys.WaitIdle(context.Background())

	v := stats.Snapshot().Actors[0]
	fmt.Println(v.Name, "sent", v.Sent, "finished", v.Finished, "missed", v.Missed, "queued", v.Queued)
	// Output:
	// true
	// valve sent 2 finished 1 missed 1 queued 0
}

// The live page, served beside net/http/pprof's.
func ExampleHandler() {
	stats := observe.NewStats()
	sys := crisp.NewSystem(crisp.WithObserver(stats), crisp.WithObserver(observe.Profiling()))
	defer sys.Shutdown(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/debug/crisp", observe.Handler(stats))
	srv := &http.Server{Addr: "localhost:6060", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	_ = srv // go srv.ListenAndServe(); then open http://localhost:6060/debug/crisp
}
