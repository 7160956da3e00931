// Command remotebench measures crisp's remote calls (package remote,
// over NATS) beside protoactor-go's remote (over gRPC), on loopback in
// one process and in the same run, and beside a local crisp Call: what
// going remote costs.
//
//	GOWORK=off go run ./cmd/remotebench                 # from bench/
//	GOWORK=off go run ./cmd/remotebench -reps 9 -roundtrips 20000
//	GOWORK=off go run ./cmd/remotebench -hogs 2 -cpuprofile cpu.out
//
// Two workloads, each run -reps times per system in alternation, medians
// reported:
//   - round trip: one caller makes -roundtrips requests, one at a time,
//     each waiting for its reply (request n answered with n+1);
//   - throughput: -pairs callers, each against a server actor of its
//     own, each keeping -inflight requests outstanding until it has had
//     -per replies (4x100 by default); the table also gives the
//     process's CPU time per call, which other load on the machine blurs
//     less than the wall clock, and its heap allocations and read and
//     write system calls (/proc/self/io, Linux) per call, which depend on
//     how calls are batched but not on the machine's speed.
//
// -hogs N runs N goroutines that never yield beside every measurement
// (CPU-bound neighbours, as bench's runner does); -cpuprofile writes a
// profile of the whole run.
//
// Systems: crisp-local (crisp.Call and Get in one process), crisp-remote
// (remote.Call from one node to another: the serving node embeds the
// NATS server, as remote.Start does by default, and the calling node
// connects to it over loopback TCP; values in JSON, remote's default),
// crisp-remote-pb (the same with proto-remote's protobuf messages and a
// protobuf codec: both remotes then encode alike), and
// proto-remote (protoactor-go's RequestFuture from one actor system to
// another over its gRPC remote, on loopback).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crisprt/crisp/bench/internal/hogs"
	"github.com/crisprt/crisp/bench/internal/ongoakt/msg"
	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/remote"

	_ "github.com/crisprt/crisp/bench/internal/protoconflict"

	"github.com/asynkron/protoactor-go/actor"
	protoremote "github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "remotebench:", err)
		os.Exit(1)
	}
}

type config struct {
	roundTrips, pairs, inFlight, per, reps, hogs int
	systems                                      []string
	cpuProfile                                   string
}

var allSystems = []string{"crisp-local", "crisp-remote", "crisp-remote-pb", "proto-remote"}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remotebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var systems string
	fs.IntVar(&c.roundTrips, "roundtrips", 5000, "requests of the round-trip workload")
	fs.IntVar(&c.pairs, "pairs", 4, "callers (each with its server actor) of the throughput workload")
	fs.IntVar(&c.inFlight, "inflight", 100, "requests each caller keeps outstanding")
	fs.IntVar(&c.per, "per", 5000, "replies each caller waits for")
	fs.IntVar(&c.reps, "reps", 5, "repetitions of each cell, in alternation")
	fs.StringVar(&systems, "system", strings.Join(allSystems, ","), "systems to run")
	fs.IntVar(&c.hogs, "hogs", 0, "goroutines that never yield, running beside every measurement")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.roundTrips < 1 || c.pairs < 1 || c.inFlight < 1 || c.per < c.inFlight || c.reps < 1 || c.hogs < 0 {
		return errors.New("sizes must be positive, and -per at least -inflight")
	}
	for _, s := range strings.Split(systems, ",") {
		if !slices.Contains(allSystems, s) {
			return fmt.Errorf("-system: unknown %q (have %s)", s, strings.Join(allSystems, ", "))
		}
		c.systems = append(c.systems, s)
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.hogs > 0 {
		h := hogs.Start(c.hogs)
		defer h.Stop()
	}
	rt := map[string][]time.Duration{}
	tp := map[string][]time.Duration{}
	cpu := map[string][]time.Duration{}    // process CPU per throughput call
	allocs := map[string][]time.Duration{} // heap allocations per 10 throughput calls (a count, kept as a Duration to share median)
	ios := map[string][]time.Duration{}    // read and write system calls per 100 throughput calls (a count likewise)
	for rep := range c.reps {
		for _, s := range c.systems {
			fmt.Fprintf(stderr, "rep %d: %s\n", rep+1, s)
			d1, d2, used, mallocs, syscalls, err := measure(s, &c)
			if err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			rt[s] = append(rt[s], d1)
			tp[s] = append(tp[s], d2)
			cpu[s] = append(cpu[s], used/time.Duration(c.pairs*c.per))
			allocs[s] = append(allocs[s], time.Duration(10*mallocs)/time.Duration(c.pairs*c.per))
			ios[s] = append(ios[s], time.Duration(100*syscalls)/time.Duration(c.pairs*c.per))
		}
	}
	fmt.Fprintf(stdout, "| workload | %s |\n|---|%s\n", strings.Join(c.systems, " | "), strings.Repeat("---|", len(c.systems)))
	fmt.Fprintf(stdout, "| round trip (per call, %d calls) |", c.roundTrips)
	for _, s := range c.systems {
		lo, hi := spread(rt[s])
		n := time.Duration(c.roundTrips)
		fmt.Fprintf(stdout, " %v (%v to %v) |", round(median(rt[s])/n), round(lo/n), round(hi/n))
	}
	total := c.pairs * c.per
	fmt.Fprintf(stdout, "\n| throughput %dx%d (calls/s, %d calls) |", c.pairs, c.inFlight, total)
	for _, s := range c.systems {
		lo, hi := spread(tp[s]) // the longest run is the lowest rate
		fmt.Fprintf(stdout, " %.0f (%.0f to %.0f) |", float64(total)/median(tp[s]).Seconds(),
			float64(total)/hi.Seconds(), float64(total)/lo.Seconds())
	}
	fmt.Fprintf(stdout, "\n| throughput: CPU of the process per call |")
	for _, s := range c.systems {
		lo, hi := spread(cpu[s])
		fmt.Fprintf(stdout, " %v (%v to %v) |", round(median(cpu[s])), round(lo), round(hi))
	}
	fmt.Fprintf(stdout, "\n| throughput: heap allocations of the process per call |")
	for _, s := range c.systems {
		lo, hi := spread(allocs[s])
		fmt.Fprintf(stdout, " %.1f (%.1f to %.1f) |", float64(median(allocs[s]))/10, float64(lo)/10, float64(hi)/10)
	}
	fmt.Fprintf(stdout, "\n| throughput: read and write system calls per 100 calls |")
	for _, s := range c.systems {
		lo, hi := spread(ios[s])
		fmt.Fprintf(stdout, " %d (%d to %d) |", median(ios[s]), lo, hi)
	}
	fmt.Fprintln(stdout)
	if slices.Contains(c.systems, "crisp-local") && slices.Contains(c.systems, "crisp-remote") {
		fmt.Fprintf(stdout, "\nA remote call costs %.1fx a local one (round trip), %.1fx in throughput.\n",
			float64(median(rt["crisp-remote"]))/float64(median(rt["crisp-local"])),
			float64(median(tp["crisp-remote"]))/float64(median(tp["crisp-local"])))
	}
	fmt.Fprintf(stdout, "\nMedians of %d runs each (lowest to highest in parentheses; %d CPU-bound goroutines beside); GOMAXPROCS and the machine as they were.\n", c.reps, c.hogs)
	return nil
}

// spread returns the smallest and the largest of ds.
func spread(ds []time.Duration) (lo, hi time.Duration) {
	return slices.Min(ds), slices.Max(ds)
}

// round keeps three significant digits or so of a duration per call.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// caller makes one request and waits for its reply; a system provides
// one per server (pair).
type caller func(n int64) (int64, error)

// measure builds system s, times both workloads on it, and tears it down.
// cpu is the process's CPU time (user and system) during the
// throughput workload, a figure that other load on the machine blurs
// less than wall-clock time; mallocs counts the heap allocations the
// process made meanwhile, and syscalls its read and write system calls
// (both depend on how calls are batched, but not on the machine's speed).
func measure(s string, c *config) (roundTrip, throughput, cpu time.Duration, mallocs, syscalls uint64, err error) {
	var callers []caller
	var stop func()
	switch s {
	case "crisp-local":
		callers, stop, err = crispLocal(c.pairs)
	case "crisp-remote":
		callers, stop, err = crispRemote(c.pairs)
	case "crisp-remote-pb":
		callers, stop, err = crispRemotePB(c.pairs)
	case "proto-remote":
		callers, stop, err = protoRemote(c.pairs)
	}
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	defer stop()
	if roundTrip, err = timeRoundTrips(callers[0], c.roundTrips); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	before, io0 := processCPU(), ioCalls()
	throughput, err = timeThroughput(callers, c)
	cpu, syscalls = processCPU()-before, ioCalls()-io0
	runtime.ReadMemStats(&m1)
	return roundTrip, throughput, cpu, m1.Mallocs - m0.Mallocs, syscalls, err
}

func timeRoundTrips(call caller, n int) (time.Duration, error) {
	start := time.Now()
	for i := range n {
		v, err := call(int64(i))
		if err != nil {
			return 0, err
		}
		if v != int64(i)+1 {
			return 0, fmt.Errorf("request %d answered %d", i, v)
		}
	}
	return time.Since(start), nil
}

// timeThroughput runs c.inFlight goroutines per caller, each making its
// share of c.per requests one after the other: c.inFlight outstanding
// per caller at any time.
func timeThroughput(callers []caller, c *config) (time.Duration, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for p := range c.pairs {
		for w := range c.inFlight {
			share := c.per / c.inFlight
			if w < c.per%c.inFlight {
				share++
			}
			wg.Go(func() {
				for i := range share {
					n := int64(w*1_000_000 + i)
					v, err := callers[p](n)
					if err == nil && v != n+1 {
						err = fmt.Errorf("request %d answered %d", n, v)
					}
					if err != nil {
						mu.Lock()
						first = cmp(first, err)
						mu.Unlock()
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return time.Since(start), first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// timeout bounds every request: never reached in a correct run.
const timeout = 30 * time.Second

type server struct{}

func plusOne(_ *crisp.Proc, _ *server, n int64) (int64, error) { return n + 1, nil }

func crispLocal(pairs int) ([]caller, func(), error) {
	sys := crisp.NewSystem()
	var callers []caller
	for range pairs {
		a := crisp.Spawn(sys, &server{})
		callers = append(callers, func(n int64) (int64, error) {
			return crisp.Call(a, func(p *crisp.Proc, s *server) (int64, error) { return plusOne(p, s, n) },
				crisp.Within(timeout)).Get()
		})
	}
	return callers, func() { _ = sys.Shutdown(context.Background()) }, nil
}

// remoteNodes starts the two nodes of a remote system: the serving node,
// whose process runs the NATS server, and the calling node, connected to
// it over loopback TCP; and the crisp system of the serving actors. stop
// ends all three.
func remoteNodes() (srv, cli *remote.Node, sys *crisp.System, stop func(), err error) {
	srv, err = remote.Start()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cli, err = remote.Start(remote.URL(srv.URL()))
	if err != nil {
		_ = srv.Close(context.Background())
		return nil, nil, nil, nil, err
	}
	sys = crisp.NewSystem()
	stop = func() {
		_ = cli.Close(context.Background())
		_ = srv.Close(context.Background())
		_ = sys.Shutdown(context.Background())
	}
	return srv, cli, sys, stop, nil
}

func crispRemote(pairs int) ([]caller, func(), error) {
	srv, cli, sys, stop, err := remoteNodes()
	if err != nil {
		return nil, nil, err
	}
	var callers []caller
	for i := range pairs {
		ep := remote.NewEndpoint[int64, int64](fmt.Sprintf("bench.plus-one.%d", i))
		if _, err := remote.Serve(srv, ep, crisp.Spawn(sys, &server{}), plusOne); err != nil {
			stop()
			return nil, nil, err
		}
		callers = append(callers, func(n int64) (int64, error) {
			return remote.Call(cli, ep, n, remote.Within(timeout)).Get()
		})
	}
	return callers, stop, nil
}

// crispRemotePB is crispRemote with the messages and the codec of
// proto-remote: protobuf's Ping and Pong, encoded by protobuf (a codec
// of a few lines, as remote's Codec documents), so that both remotes
// encode alike.
func crispRemotePB(pairs int) ([]caller, func(), error) {
	srv, cli, sys, stop, err := remoteNodes()
	if err != nil {
		return nil, nil, err
	}
	var callers []caller
	for i := range pairs {
		ep := remote.NewEndpoint[*msg.Ping, *msg.Pong](fmt.Sprintf("bench.plus-one-pb.%d", i), remote.WithCodec(protoCodec{}))
		if _, err := remote.Serve(srv, ep, crisp.Spawn(sys, &server{}), func(_ *crisp.Proc, _ *server, m *msg.Ping) (*msg.Pong, error) {
			return &msg.Pong{N: m.N + 1}, nil
		}); err != nil {
			stop()
			return nil, nil, err
		}
		callers = append(callers, func(n int64) (int64, error) {
			p, err := remote.Call(cli, ep, &msg.Ping{N: n}, remote.Within(timeout)).Get()
			if err != nil {
				return 0, err
			}
			return p.N, nil
		})
	}
	return callers, stop, nil
}

// protoCodec is a remote.Codec for protobuf messages: the endpoint's
// types are pointers to generated messages, so Marshal and Unmarshal get
// a pointer to such a pointer.
type protoCodec struct{}

func (protoCodec) Name() string { return "protobuf" }

func (protoCodec) Marshal(v any) ([]byte, error) {
	m, ok := reflect.ValueOf(v).Elem().Interface().(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a pointer to a proto.Message", v)
	}
	return proto.Marshal(m)
}

func (protoCodec) Unmarshal(data []byte, v any) error {
	p := reflect.ValueOf(v).Elem() // the *Message
	if p.Kind() != reflect.Pointer {
		return fmt.Errorf("%T is not a pointer to a proto.Message", v)
	}
	if p.IsNil() {
		p.Set(reflect.New(p.Type().Elem()))
	}
	m, ok := p.Interface().(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a pointer to a proto.Message", v)
	}
	return proto.Unmarshal(data, m)
}

// plusOneActor answers a Ping(n) with a Pong(n+1).
type plusOneActor struct{}

func (plusOneActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*msg.Ping); ok {
		c.Respond(&msg.Pong{N: m.N + 1})
	}
}

func protoRemote(pairs int) ([]caller, func(), error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs := actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet })
	srvSys, cliSys := actor.NewActorSystem(logs), actor.NewActorSystem(logs)
	srv := protoremote.NewRemote(srvSys, protoremote.Configure("127.0.0.1", 0))
	cli := protoremote.NewRemote(cliSys, protoremote.Configure("127.0.0.1", 0))
	srv.Start()
	cli.Start()
	stop := func() {
		cli.Shutdown(true)
		srv.Shutdown(true)
		cliSys.Shutdown()
		srvSys.Shutdown()
	}
	var callers []caller
	for i := range pairs {
		name := fmt.Sprintf("plus-one-%d", i)
		if _, err := srvSys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return plusOneActor{} }), name); err != nil {
			stop()
			return nil, nil, err
		}
		pid := actor.NewPID(srvSys.Address(), name)
		callers = append(callers, func(n int64) (int64, error) {
			r, err := cliSys.Root.RequestFuture(pid, &msg.Ping{N: n}, timeout).Result()
			if err != nil {
				return 0, err
			}
			p, ok := r.(*msg.Pong)
			if !ok {
				return 0, fmt.Errorf("reply %T", r)
			}
			return p.N, nil
		})
	}
	return callers, stop, nil
}
