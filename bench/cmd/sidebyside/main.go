// Command sidebyside renders the side-by-side table of BENCHMARKS.md
// from bench's JSON reports, so that no figure is copied by hand.
//
// Each argument is a set of runs: a JSON file of `bench -json`, or a
// directory of them (its *.json files, in name order; sidebyside.sh
// writes one per workload, numbered). The files of a set must agree on
// suite, repetitions, hogs, GOMAXPROCS and Go version. For one set it
// prints one table: rows are workloads, columns systems, each cell the
// median time and its ratio to the fastest actor library of the row
// (chan, the no-library baseline, is not one), and crisp's also its
// ratio to chan. Given two sets, typically without and with -hogs, it
// prints both tables, then crisp's ratio to each peer in the first set
// against the second, flagging every ratio more than 20% worse in the
// second (issue 13's target for -hogs 2). Example, from bench/:
//
//	GOWORK=off go run ./cmd/sidebyside results/quick-hogs0 results/quick-hogs2
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sidebyside", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: GOWORK=off go run ./cmd/sidebyside [-cpu MODEL] SET [SET2]

Renders bench's JSON reports (a file, or a directory of them) as the
side-by-side table; with a second set, also compares crisp's ratios. Example:

	GOWORK=off go run ./cmd/sidebyside results/quick-hogs0 results/quick-hogs2

Flags:
`)
		fs.PrintDefaults()
	}
	cpu := fs.String("cpu", "", `the CPU model for the header (default: /proc/cpuinfo's "model name")`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if n := fs.NArg(); n < 1 || n > 2 {
		fs.Usage()
		return fmt.Errorf("want one or two sets, got %d", n)
	}
	if *cpu == "" {
		*cpu = cpuModel("/proc/cpuinfo")
	}
	var sets []*set
	for _, path := range fs.Args() {
		s, err := load(path)
		if err != nil {
			return err
		}
		sets = append(sets, s)
	}
	var b strings.Builder
	for _, s := range sets {
		writeTable(&b, s, *cpu)
	}
	if len(sets) == 2 {
		writeComparison(&b, sets[0], sets[1])
	}
	_, err := io.WriteString(stdout, b.String())
	return err
}

// cpuModel returns the first "model name" of a /proc/cpuinfo file, or
// "unknown CPU".
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
