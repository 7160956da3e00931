package model_test

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/crisprt/crisp/internal/model"
)

var (
	long     = flag.Bool("long", false, "check 100,000 programs against the model")
	programs = flag.Int("programs", 0, "programs to check (default 2,000; 300 with -short; 100,000 with -long)")
	seed     = flag.Uint64("seed", 1, "seed of the first program; program i has seed+i")
	bubble   = flag.Bool("bubble", false, "run each program in a testing/synctest bubble and end each round with synctest.Wait as well as sys.WaitIdle")
	verbose  = flag.Bool("v.programs", false, "log every program checked")
)

// options are the runtime bugs the model steers around while they are
// open (model.Options). None is open: both were fixed with the tests of
// crisp/regress_test.go, and the model now checks those programs too.
func options() model.Options {
	return model.Options{}
}

// TestConformance runs random programs on the runtime, on a virtual
// clock, and on the model, and requires the same observable behaviour:
// every future's outcome and the instant it was resolved, what the miss
// hooks heard and when, and every actor's steps (starts, returns from
// waits, ends) in order, with their instants. A divergence is reported
// with its seed and a program shrunk to the fewest parts that still
// diverge. Programs whose behaviour the semantics leaves open (two
// goroutines touching the same actor at one instant) are skipped and
// counted; see the model's package documentation.
func TestConformance(t *testing.T) {
	n := 2000
	switch {
	case *programs > 0:
		n = *programs
	case *long:
		n = 100_000
	case testing.Short():
		n = 300
	}
	opt := options()
	var (
		checked, boundary int
		bounded, full     int // programs with bounded actors; Calls refused as full
		infeasible        int // Calls refused by admission control
		skipped           = map[string]int{}
		failures          int
	)
	s := *seed
	for tries := 0; checked < n && tries < 4*n; tries++ {
		sd := s
		s++
		p := model.Generate(sd)
		want, err := model.Run(p, opt)
		if err != nil {
			skipped[skipKind(err)]++
			continue
		}
		if sd%3 == 0 { // move a deadline onto the instant of a start
			if q := model.Boundary(p, want, sd); q != nil {
				if w, err := model.Run(q, opt); err == nil {
					p, want = q, w
					boundary++
				}
			}
		}
		checked++
		if len(p.Bounds) > 0 {
			bounded++
		}
		for _, r := range want.Msgs {
			switch {
			case r.Outcome == model.OutFull:
				full++
			case strings.HasPrefix(r.Outcome, "infeasible"):
				infeasible++
			}
		}
		if *verbose {
			t.Logf("seed %d:\n%s", sd, p)
		}
		got, err := execute(t, p, !*bubble)
		diff := model.Diff(p, want, got)
		if err == nil && len(diff) == 0 {
			continue
		}
		failures++
		t.Errorf("seed %d: the runtime diverges from the model:\n%s\nprogram:\n%s", sd, explain(err, diff), p)
		small := model.Shrink(p, func(q *model.Program) bool {
			w, err := model.Run(q, opt)
			if err != nil {
				return false
			}
			g, err := execute(t, q, !*bubble)
			return err != nil || len(model.Diff(q, w, g)) > 0
		})
		w, _ := model.Run(small, opt)
		g, err := execute(t, small, !*bubble)
		t.Errorf("seed %d, shrunk:\n%s\n%s\nmodel's steps: %v", sd, small, explain(err, model.Diff(small, w, g)), w.Steps)
		if failures >= 3 {
			t.Fatalf("stopping after %d divergences", failures)
		}
	}
	var kinds []string
	for k := range skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var sk []string
	total := 0
	for _, k := range kinds {
		sk = append(sk, fmt.Sprintf("%d %s", skipped[k], k))
		total += skipped[k]
	}
	t.Logf("%d programs checked (%d with a deadline on a start's instant; %d with bounded actors, %d Calls refused as full, %d as infeasible), %d divergent; %d skipped: %s",
		checked, boundary, bounded, full, infeasible, failures, total, strings.Join(sk, ", "))
	if checked < n {
		t.Errorf("only %d of %d programs could be checked", checked, n)
	}
}

func skipKind(err error) string {
	var se *model.SkipError
	if !errors.As(err, &se) {
		return "invalid: " + err.Error()
	}
	if se.Bug {
		return "known bug (" + se.Kind + ")"
	}
	return se.Kind
}

func explain(err error, diff []string) string {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "  error: %v\n", err)
	}
	for _, d := range diff {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}
