// Package oncrisp runs the workloads on crisp. Handlers are closures
// sent with Tell (Call where the workload is a request with a timed
// reply); an actor's state is a pointer to a small struct; completion is
// reported to the driver on a channel, as in every other system.
//
// Each workload is a method of Config, so that the same code runs with
// deadlines off (Plain) and on (Deadlines: every message carries
// workload.FarDeadline, which none misses) and the two can be compared.
package oncrisp

import (
	"context"
	"fmt"

	"github.com/crisprt/crisp/bench/internal/workload"
	"github.com/crisprt/crisp/crisp"
)

// Config says how messages are sent.
type Config struct {
	// Deadlines gives every message the start deadline
	// workload.FarDeadline from its sending.
	Deadlines bool
}

// The two configurations the suite compares.
var (
	Plain     = Config{}
	Deadlines = Config{Deadlines: true}
)

// opts returns the send options of every message: made once per run, so
// that passing them allocates nothing per message.
func (c Config) opts() []crisp.SendOption {
	if c.Deadlines {
		return []crisp.SendOption{crisp.Within(workload.FarDeadline)}
	}
	return nil
}

// shutdown ends sys, folding a failure to stop into the run's error.
func shutdown(sys *crisp.System, err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), workload.ShutdownTimeout)
	defer cancel()
	if serr := sys.Shutdown(ctx); serr != nil && *err == nil {
		*err = fmt.Errorf("oncrisp: shutdown: %w", serr)
	}
}
