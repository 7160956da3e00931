// Package suite is the catalogue of the side-by-side benchmark: every
// workload, its sizes for each suite, and its implementation on every
// system. The runner, the tests and the testing.B benchmarks all read it.
//
// To add a system (a crisp variant, say), add its name to Systems and an
// entry to the Impl map of each workload it implements; a workload
// without an entry for a system simply has no cell for it.
package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/crisprt/crisp/bench/internal/onchan"
	"github.com/crisprt/crisp/bench/internal/oncrisp"
	"github.com/crisprt/crisp/bench/internal/ongoakt"
	"github.com/crisprt/crisp/bench/internal/onhollywood"
	"github.com/crisprt/crisp/bench/internal/onphony"
	"github.com/crisprt/crisp/bench/internal/onproto"
	_ "github.com/crisprt/crisp/bench/internal/protoconflict" // before hollywood and protoactor-go: see its doc
	"github.com/crisprt/crisp/bench/internal/workload"
)

// Run runs one workload at one size on one system (see package workload
// for the contract).
type Run func(ctx context.Context, t workload.Timer, size workload.Size) (workload.Result, error)

// as adapts an implementation typed by its size to a Run.
func as[S workload.Size](f func(context.Context, workload.Timer, S) (workload.Result, error)) Run {
	return func(ctx context.Context, t workload.Timer, size workload.Size) (workload.Result, error) {
		s, ok := size.(S)
		if !ok {
			return workload.Result{}, fmt.Errorf("suite: size %T given to a %T workload", size, s)
		}
		return f(ctx, t, s)
	}
}

// The suites: Short runs in tests (under the race detector), Quick in
// about a minute, All at the sizes the issue asks for (Savina's defaults).
const (
	Short = "short"
	Quick = "quick"
	All   = "all"
)

// Systems in the order the runner alternates them. "crisp+dl" is crisp
// with a far deadline (workload.FarDeadline) on every message: the cost
// of deadlines. "crisp-tell" is a second crisp style for workloads where
// the issue prescribes one (the Bank: Await) and another is faster.
var Systems = []string{"crisp", "crisp+dl", "crisp-tell", "chan", "protoactor", "hollywood", "goakt", "phony"}

// Workload is one row of the comparison.
type Workload struct {
	Name string
	// Sizes by suite; a suite without an entry does not run the workload.
	Sizes map[string]workload.Size
	// PerOp, for micro workloads, makes the size with n operations (round
	// trips, requests, messages); the runner and the benchmarks then report
	// time per operation. Nil for whole-run workloads.
	PerOp func(n int) workload.Size
	// Unit names PerOp's operation.
	Unit string
	// Impl is the implementation on each system.
	Impl map[string]Run
	// Note says what a reader of the table must know about the cells
	// (which variant a system runs), or is empty.
	Note string
	// Known maps a system to the error it is known to fail this workload
	// with, sometimes or always, through a bug of its own (each is
	// documented where it is defined). Tests skip a run that fails with
	// it, saying so; the runner reports it like any other failure.
	Known map[string]error
}

// Size returns the workload's size in suite, or nil.
func (w *Workload) Size(suite string) workload.Size { return w.Sizes[suite] }

// Lookup returns the workload called name, or nil.
func Lookup(name string) *Workload {
	for _, w := range Workloads() {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// Workloads returns the catalogue, in the order of the report.
func Workloads() []*Workload {
	const limit = 1_500_000 // Savina's NQueens solutions limit: never reached at size 12
	rr := func(n int) workload.RequestReply {
		return workload.RequestReply{Requests: n, Timeout: 10 * time.Second}
	}
	tp := func(n int) workload.Throughput { return workload.Throughput{Pairs: 4, InFlight: 100, PerPair: n} }
	pp := func(n int) workload.PingPong { return workload.PingPong{RoundTrips: n} }
	ring := func(n, hops int) workload.Ring { return workload.Ring{Processes: n, Tokens: 10, Hops: hops} }
	ringImpl := func() map[string]Run {
		return systems(oncrisp.Config.Ring, onchan.Ring, onproto.Ring, onhollywood.Ring, ongoakt.Ring, onphony.Ring)
	}
	const manyActors = "in fib and the rings, hollywood's actors have 16-slot inboxes and protoactor's the lock-free mailbox, " +
		"their documented choices for spawning actors in great numbers."

	// crisp runs the Bank with Await, as the issue asks (the peers use
	// ask or reentrancy); crisp-tell is the same bank written with Tell
	// continuations, crisp's fastest style for it.
	bank := systems(oncrisp.Config.BankAwait, onchan.Bank, onproto.Bank, onhollywood.Bank, ongoakt.Bank, onphony.Bank)
	bank["crisp-tell"] = as(oncrisp.Plain.BankTell)

	return []*Workload{
		{
			Name:  "pingpong",
			Sizes: sizes(pp(500), pp(40_000), pp(200_000)),
			PerOp: func(n int) workload.Size { return pp(n) },
			Unit:  "round trip",
			Impl:  systems(oncrisp.Config.PingPong, onchan.PingPong, onproto.PingPong, onhollywood.PingPong, ongoakt.PingPong, onphony.PingPong),
		},
		{
			Name:  "request-reply",
			Sizes: sizes(rr(500), rr(40_000), rr(200_000)),
			PerOp: func(n int) workload.Size { return rr(n) },
			Unit:  "request",
			Impl: systems(oncrisp.Config.RequestReply, onchan.RequestReply, onproto.RequestReply, onhollywood.RequestReply,
				ongoakt.RequestReply, onphony.RequestReply),
		},
		{
			Name:  "throughput-4x100",
			Sizes: sizes(tp(1_000), tp(40_000), tp(500_000)),
			PerOp: func(n int) workload.Size { return tp(max(n/8, 1)) },
			Unit:  "message",
			Impl: systems(oncrisp.Config.Throughput, onchan.Throughput, onproto.Throughput, onhollywood.Throughput,
				ongoakt.Throughput, onphony.Throughput),
		},
		{
			Name:  "savina-pingpong",
			Sizes: sizes(pp(500), pp(40_000), pp(40_000)),
			Impl:  systems(oncrisp.Config.PingPong, onchan.PingPong, onproto.PingPong, onhollywood.PingPong, ongoakt.PingPong, onphony.PingPong),
		},
		{
			Name:  "counting",
			Sizes: sizes(workload.Counting{N: 10_000}, workload.Counting{N: 200_000}, workload.Counting{N: 1_000_000}),
			Impl:  systems(oncrisp.Config.Counting, onchan.Counting, onproto.Counting, onhollywood.Counting, ongoakt.Counting, onphony.Counting),
		},
		{
			Name: "threadring",
			Sizes: sizes(workload.ThreadRing{Actors: 10, Passes: 1_000}, workload.ThreadRing{Actors: 100, Passes: 40_000},
				workload.ThreadRing{Actors: 100, Passes: 100_000}),
			Impl: systems(oncrisp.Config.ThreadRing, onchan.ThreadRing, onproto.ThreadRing, onhollywood.ThreadRing,
				ongoakt.ThreadRing, onphony.ThreadRing),
		},
		{
			Name: "fork-join",
			Sizes: sizes(workload.ForkJoin{Actors: 6, Messages: 100}, workload.ForkJoin{Actors: 60, Messages: 2_000},
				workload.ForkJoin{Actors: 60, Messages: 10_000}),
			Impl: systems(oncrisp.Config.ForkJoin, onchan.ForkJoin, onproto.ForkJoin, onhollywood.ForkJoin, ongoakt.ForkJoin, onphony.ForkJoin),
		},
		{
			Name: "chameneos",
			Sizes: sizes(workload.Chameneos{Chameneos: 10, Meetings: 500}, workload.Chameneos{Chameneos: 100, Meetings: 20_000},
				workload.Chameneos{Chameneos: 100, Meetings: 200_000}),
			Impl: systems(oncrisp.Config.Chameneos, onchan.Chameneos, onproto.Chameneos, onhollywood.Chameneos,
				ongoakt.Chameneos, onphony.Chameneos),
		},
		{
			Name:  "big",
			Sizes: sizes(workload.Big{Actors: 12, Pings: 100}, workload.Big{Actors: 120, Pings: 1_000}, workload.Big{Actors: 120, Pings: 20_000}),
			Impl:  systems(oncrisp.Config.Big, onchan.Big, onproto.Big, onhollywood.Big, ongoakt.Big, onphony.Big),
		},
		{
			Name: "nqueens",
			Sizes: sizes(workload.NQueens{Size: 8, Threshold: 3, Workers: 4, Limit: limit},
				workload.NQueens{Size: 11, Threshold: 4, Workers: 20, Limit: limit},
				workload.NQueens{Size: 12, Threshold: 4, Workers: 20, Limit: limit}),
			Impl: systems(oncrisp.Config.NQueens, onchan.NQueens, onproto.NQueens, onhollywood.NQueens, ongoakt.NQueens, onphony.NQueens),
			Note: "crisp's workers take the deepest boards first (policy.Priority, as Savina's priority variant); " +
				"chan's master hands out the deepest first (a stack); the other systems go in arrival order.",
		},
		{
			Name: "bank",
			Sizes: sizes(workload.Bank{Accounts: 20, Transactions: 500}, workload.Bank{Accounts: 1_000, Transactions: 10_000},
				workload.Bank{Accounts: 1_000, Transactions: 50_000}),
			Impl: bank,
			Note: "crisp and crisp+dl await each credit (Await: the account serves other messages meanwhile); crisp-tell continues each transfer with Tell continuations instead; " +
				"protoactor and goakt use their reentrancy (ReenterAfter; Request+Then), hollywood and phony continuation messages, " +
				"chan a teller that keeps at most 256 transfers in flight so that bounded channels cannot deadlock.",
		},
		{
			Name:  "fib",
			Sizes: sizes(workload.Fib{N: 12}, workload.Fib{N: 20}, workload.Fib{N: 25}),
			Impl:  systems(oncrisp.Config.Fib, onchan.Fib, onproto.Fib, onhollywood.Fib, ongoakt.Fib, onphony.Fib),
			Note:  manyActors,
			Known: map[string]error{"goakt": ongoakt.ErrSpawnFailed},
		},
		{
			Name:  "ring-1k",
			Sizes: sizes(ring(100, 200), ring(1_000, 20_000), ring(1_000, 100_000)),
			Impl:  ringImpl(),
			Note:  manyActors,
		},
		{
			Name:  "ring-100k",
			Sizes: sizes(nil, nil, ring(100_000, 100_000)),
			Impl:  ringImpl(),
			Note:  manyActors,
		},
		{
			Name:  "ring-1m",
			Sizes: sizes(nil, nil, ring(1_000_000, 100_000)),
			Impl:  ringImpl(),
			Note:  manyActors,
		},
	}
}

// systems builds the usual Impl map: crisp (as a method expression of
// oncrisp.Config, run with deadlines off and on), then chan, protoactor,
// hollywood, goakt and phony.
func systems[S workload.Size](
	crisp func(oncrisp.Config, context.Context, workload.Timer, S) (workload.Result, error),
	ch, proto, holly, goakt, phony func(context.Context, workload.Timer, S) (workload.Result, error),
) map[string]Run {
	withConfig := func(c oncrisp.Config) Run {
		return as(func(ctx context.Context, t workload.Timer, s S) (workload.Result, error) { return crisp(c, ctx, t, s) })
	}
	return map[string]Run{
		"crisp":      withConfig(oncrisp.Plain),
		"crisp+dl":   withConfig(oncrisp.Deadlines),
		"chan":       as(ch),
		"protoactor": as(proto),
		"hollywood":  as(holly),
		"goakt":      as(goakt),
		"phony":      as(phony),
	}
}

// sizes builds a Sizes map; a nil size leaves its suite out.
func sizes(short, quick, all workload.Size) map[string]workload.Size {
	m := map[string]workload.Size{}
	for suite, s := range map[string]workload.Size{Short: short, Quick: quick, All: all} {
		if s != nil {
			m[suite] = s
		}
	}
	return m
}
