package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/crisprt/crisp/bench/internal/suite"
)

type config struct {
	suite      string
	reps       int
	json       bool
	systems    []string // nil: all
	workloads  []string // nil: all in the suite
	cpuprofile string
	trace      string
	timeout    time.Duration
	maxHeap    uint64
	hogs       int  // goroutines that never yield, running beside every run
	list       bool // print the suite's workloads instead of running them
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: GOWORK=off go run . [flags]

Runs the side-by-side benchmark and prints a markdown table. Example:

	GOWORK=off go run . -suite quick -workload bank,fib -system crisp,chan,goakt

Flags:
`)
		fs.PrintDefaults()
	}
	var c config
	var systems, workloads string
	var maxHeapGiB float64
	fs.StringVar(&c.suite, "suite", suite.Quick, "which sizes to run: quick (about a minute), all (the issue's sizes), or short (the tests')")
	fs.IntVar(&c.reps, "reps", 6, "repetitions of each cell, in alternation")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of markdown")
	fs.StringVar(&systems, "system", "", "comma-separated systems to run (default all): "+strings.Join(suite.Systems, ","))
	fs.StringVar(&workloads, "workload", "", "comma-separated workloads to run (default all in the suite)")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the runs to this file (needs exactly one -system and one -workload)")
	fs.StringVar(&c.trace, "trace", "", "write a runtime execution trace of the runs to this file (needs exactly one -system and one -workload); read it with go tool trace, e.g. -pprof=sched for where goroutines waited for a processor")
	fs.DurationVar(&c.timeout, "timeout", 0, "limit on one run (default 20s for quick and short, 5m for all)")
	fs.IntVar(&c.hogs, "hogs", 0, "goroutines that spin without ever yielding, beside the runs: CPU-bound neighbours (Go preempts them every 10ms)")
	fs.BoolVar(&c.list, "list", false, "print the workloads the suite runs, one a line, and exit")
	fs.Float64Var(&maxHeapGiB, "maxheap", 16, "GiB of Go heap and stacks beyond which a run is cancelled and reported")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !slices.Contains([]string{suite.Short, suite.Quick, suite.All}, c.suite) {
		return nil, fmt.Errorf("-suite %q: want quick, all or short", c.suite)
	}
	if c.reps < 1 {
		return nil, errors.New("-reps must be at least 1")
	}
	if c.hogs < 0 {
		return nil, errors.New("-hogs must not be negative")
	}
	if c.timeout == 0 {
		c.timeout = 20 * time.Second
		if c.suite == suite.All {
			c.timeout = 5 * time.Minute
		}
	}
	c.maxHeap = uint64(maxHeapGiB * (1 << 30))
	c.systems = splitList(systems)
	for _, s := range c.systems {
		if !slices.Contains(suite.Systems, s) {
			return nil, fmt.Errorf("-system: unknown system %q (have %s)", s, strings.Join(suite.Systems, ", "))
		}
	}
	c.workloads = splitList(workloads)
	for _, w := range c.workloads {
		if suite.Lookup(w) == nil {
			return nil, fmt.Errorf("-workload: unknown workload %q", w)
		}
	}
	if c.cpuprofile != "" && (len(c.systems) != 1 || len(c.workloads) != 1) {
		return nil, errors.New("-cpuprofile needs exactly one -system and one -workload")
	}
	if c.trace != "" && (len(c.systems) != 1 || len(c.workloads) != 1) {
		return nil, errors.New("-trace needs exactly one -system and one -workload")
	}
	return &c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
