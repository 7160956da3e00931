// Command bench runs crisp side by side with the Go actor libraries and
// a plain goroutines-and-channels baseline, on every workload of the
// catalogue (internal/suite), and prints a markdown table.
//
// Run it from bench/ with the workspace off, since the repository's
// go.work does not include this module:
//
//	GOWORK=off go run . -suite quick
//	GOWORK=off go run . -suite all -json > all.json
//	GOWORK=off go run . -suite quick -workload bank -system crisp -cpuprofile bank.prof
//	GOWORK=off go run . -suite quick -hogs 2
//
// Each workload runs on every system in alternation (crisp, crisp+dl,
// chan, protoactor, ... then again), -reps times. Every run builds its
// system, is timed from then until its answer is in, checks the answer,
// and shuts the system down. A run that fails, answers wrongly, takes
// longer than -timeout or grows the heap past -maxheap is reported in the
// table's notes, never dropped; a run that does not even return after
// its cancellation is abandoned with its system for the rest of that
// workload.
//
// With -hogs N, N goroutines spin beside the runs without ever yielding
// (Go preempts them only by signal, every 10 ms): CPU-bound neighbours.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/crisprt/crisp/bench/internal/suite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses args, runs the chosen cells and writes the report to
// stdout, progress to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.list {
		return listWorkloads(stdout, cfg.suite)
	}
	rep, err := runSuite(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if cfg.json {
		return writeJSON(stdout, rep)
	}
	return writeMarkdown(stdout, rep)
}

// listWorkloads prints the names of the workloads that suite runs, in
// the report's order: what a script loops over to run one process each.
func listWorkloads(w io.Writer, suiteName string) error {
	for _, wl := range suite.Workloads() {
		if wl.Size(suiteName) != nil {
			if _, err := fmt.Fprintln(w, wl.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
