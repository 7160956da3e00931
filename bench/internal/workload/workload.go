// Package workload defines what every system in the side-by-side suite
// computes: one size type per workload, the answer a correct run must
// return (Expect), and the few pieces of sequential code that all
// implementations share (random choices, the N-queens kernel, the
// fork-join computation), so that the systems differ only in how their
// actors talk.
//
// An implementation is a function
//
//	func(ctx context.Context, t workload.Timer, size S) (workload.Result, error)
//
// that builds its system, starts the timer once the system exists,
// spawns its actors and runs the workload, stops the timer when the
// answer is in, and shuts its system down before returning, so that no
// goroutine it started outlives the call. It stops early, with ctx.Err(),
// when ctx ends (the runner's time and memory limits).
package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Timer is what a run reports its measured span to: a *testing.B, or the
// runner's stopwatch. Building and shutting down the system are not timed;
// spawning the workload's actors is.
type Timer interface {
	StartTimer()
	StopTimer()
}

// Result is a run's answer: two numbers whose meaning each size type
// documents. A run is correct when its Result equals the size's Expect.
type Result struct {
	Count int64
	Check int64
}

func (r Result) String() string { return fmt.Sprintf("{count %d, check %d}", r.Count, r.Check) }

// Size is one workload at one size.
type Size interface {
	// Expect is the answer a correct run returns.
	Expect() Result
	// Ops is the number of operations (round trips, requests, messages)
	// a per-operation figure divides the run's time by.
	Ops() int
	String() string
}

// Await returns the value ch delivers, or ctx.Err() if ctx ends first.
func Await[T any](ctx context.Context, ch <-chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Cancelled reports whether ctx has ended, looking only every 1024th
// call (i is a loop counter), so that loops spawning a million actors can
// afford to ask.
func Cancelled(ctx context.Context, i int) bool {
	return i&1023 == 0 && ctx.Err() != nil
}

// ShutdownTimeout bounds how long a run waits for its system to stop.
const ShutdownTimeout = 30 * time.Second

// FarDeadline is the relative deadline the deadlines-on variants give
// every message: far enough that none is ever missed, so that the run
// measures only what deadlines cost.
const FarDeadline = time.Hour

// NewRand returns the deterministic random source that workload actors
// use (Big's choice of peer, Bank's transfers), so that every system makes
// the same choices.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// PingPong: one pair of actors, one message in flight. The pinger sends
// Ping(1), Ping(2), ... each after the pong of the previous one; the ponger
// answers Pong(n). Count is the number of pongs the pinger received, Check
// the sum of their n. The micro workload times one round trip; Savina's
// PingPong is the same exchange at a fixed 40,000 round trips.
type PingPong struct{ RoundTrips int }

func (p PingPong) Expect() Result {
	n := int64(p.RoundTrips)
	return Result{Count: n, Check: n * (n + 1) / 2}
}
func (p PingPong) Ops() int       { return p.RoundTrips }
func (p PingPong) String() string { return fmt.Sprintf("%d round trips", p.RoundTrips) }

// RequestReply: a plain goroutine (not an actor) makes Requests requests
// of one server actor, one at a time, each with the library's timed wait
// (Timeout, never reached). Request n is answered with n+1. Count is the
// number of replies, Check their sum.
type RequestReply struct {
	Requests int
	Timeout  time.Duration
}

func (p RequestReply) Expect() Result {
	n := int64(p.Requests)
	return Result{Count: n, Check: n*(n+1)/2 + n}
}
func (p RequestReply) Ops() int       { return p.Requests }
func (p RequestReply) String() string { return fmt.Sprintf("%d requests", p.Requests) }

// Throughput: Pairs pinger/ponger pairs, each pinger keeping InFlight
// pings outstanding until it has had PerPair pongs. Pings carry 1..PerPair.
// Count is the pongs received, Check the sum of their n. Ops counts both
// directions, as message-throughput figures usually do.
type Throughput struct{ Pairs, InFlight, PerPair int }

func (p Throughput) Expect() Result {
	n := int64(p.PerPair)
	return Result{Count: int64(p.Pairs) * n, Check: int64(p.Pairs) * n * (n + 1) / 2}
}
func (p Throughput) Ops() int { return 2 * p.Pairs * p.PerPair }
func (p Throughput) String() string {
	return fmt.Sprintf("%d pairs x %d in flight, %d round trips each", p.Pairs, p.InFlight, p.PerPair)
}

// Counting (Savina): a producer actor sends N increments to a counter
// actor, then asks for the count. Count is the count the counter reports;
// Check is N.
type Counting struct{ N int }

func (p Counting) Expect() Result { return Result{Count: int64(p.N), Check: int64(p.N)} }
func (p Counting) Ops() int       { return p.N }
func (p Counting) String() string { return fmt.Sprintf("%d messages", p.N) }

// ThreadRing (Savina): Actors actors in a ring pass one token that
// starts at actor 0 with the value Passes; an actor that receives v > 0
// passes v-1 to its successor, and the one that receives 0 ends the run.
// Count is that actor's index, Check is 1.
type ThreadRing struct{ Actors, Passes int }

func (p ThreadRing) Expect() Result {
	return Result{Count: int64(p.Passes % p.Actors), Check: 1}
}
func (p ThreadRing) Ops() int { return p.Passes }
func (p ThreadRing) String() string {
	return fmt.Sprintf("%d actors, %d passes", p.Actors, p.Passes)
}

// ForkJoin (Savina's fork-join throughput): the driver sends Messages
// messages to each of Actors actors, round robin; each message makes its
// actor run Spin once. Each actor reports when it has handled all of its
// messages. Count is the messages handled, Check the actors that reported.
type ForkJoin struct{ Actors, Messages int }

func (p ForkJoin) Expect() Result {
	return Result{Count: int64(p.Actors) * int64(p.Messages), Check: int64(p.Actors)}
}
func (p ForkJoin) Ops() int { return p.Actors * p.Messages }
func (p ForkJoin) String() string {
	return fmt.Sprintf("%d actors x %d messages", p.Actors, p.Messages)
}

// Spin is the small computation of each fork-join message, after Savina's
// performComputation. Actors add its result to their state so that the
// compiler cannot drop it.
func Spin(theta float64) float64 {
	s := math.Sin(theta)
	return s * s
}

// Chameneos (Savina): Chameneos creatures, each with a colour, ask a
// mall to meet. The mall pairs two requests and forwards the second to
// the first; the first takes the complement of the two colours, tells the
// second to take it too, and both ask again. After Meetings meetings the
// mall answers every request with exit; each creature then reports its
// number of meetings. Count is the sum of those numbers (two per
// meeting), Check the creatures that reported.
type Chameneos struct{ Chameneos, Meetings int }

func (p Chameneos) Expect() Result {
	return Result{Count: 2 * int64(p.Meetings), Check: int64(p.Chameneos)}
}
func (p Chameneos) Ops() int { return p.Meetings }
func (p Chameneos) String() string {
	return fmt.Sprintf("%d chameneos, %d meetings", p.Chameneos, p.Meetings)
}

// Complement is the colour two chameneos of colours a and b both take
// after they meet (of three colours 0, 1, 2).
func Complement(a, b int) int {
	if a == b {
		return a
	}
	return 3 - a - b
}

// Big (Savina): Actors actors; each sends Pings pings, one at a time,
// each to a peer it picks at random (itself included) with
// NewRand(its index); a ping is answered with a pong carrying the
// answerer's index. When an actor has had all its pongs it reports to a
// sink. Count is the pongs received, Check the sum of the indices they
// carried.
type Big struct{ Actors, Pings int }

func (p Big) Expect() Result {
	var check int64
	for i := 0; i < p.Actors; i++ {
		r := NewRand(uint64(i))
		for range p.Pings {
			check += int64(r.IntN(p.Actors))
		}
	}
	return Result{Count: int64(p.Actors) * int64(p.Pings), Check: check}
}
func (p Big) Ops() int { return p.Actors * p.Pings }
func (p Big) String() string {
	return fmt.Sprintf("%d actors x %d pings", p.Actors, p.Pings)
}

// NQueens (Savina's NQueens first-K): a master and Workers workers count
// the placements of Size queens. A work item is a partial board; a worker
// given one with fewer than Threshold rows sends each fitting extension
// back to the master, which deals work out round robin; one with
// Threshold rows or more it completes sequentially (QueensCount). Every
// work item ends with a done message to the master carrying the
// solutions it found, and the master stops when no work is outstanding or
// Limit solutions are found. Count is the solutions found, Check the work
// items handled.
type NQueens struct{ Size, Threshold, Workers, Limit int }

func (p NQueens) Expect() Result {
	var solutions, items int64
	var walk func(board []byte)
	walk = func(board []byte) {
		items++
		if len(board) >= p.Threshold || len(board) == p.Size {
			solutions += QueensCount(board, p.Size)
			return
		}
		for col := range byte(p.Size) {
			if QueenFits(board, col) {
				walk(append(board[:len(board):len(board)], col))
			}
		}
	}
	walk(nil)
	return Result{Count: min(solutions, int64(max(p.Limit, 0))), Check: items}
}
func (p NQueens) Ops() int { return 1 }
func (p NQueens) String() string {
	return fmt.Sprintf("size %d, threshold %d, %d workers", p.Size, p.Threshold, p.Workers)
}

// QueenFits reports whether a queen may go in column col of the next row
// of board (board[r] is the column of the queen in row r). Columns are
// bytes, so that boards travel as protocol-buffer bytes unconverted; the
// unsigned col-d may wrap, but then to 244 or more, which no column of a
// board of up to 32 rows equals.
func QueenFits(board []byte, col byte) bool {
	row := byte(len(board))
	for r, c := range board {
		d := row - byte(r)
		if c == col || c == col-d || c == col+d {
			return false
		}
	}
	return true
}

// QueensCount counts the ways to complete board to n queens on an n x n
// board, sequentially. n is at most 16 (the diagonals are bits of a
// uint32).
func QueensCount(board []byte, n int) int64 {
	var cols, diag, anti uint32
	row := len(board)
	for r, c := range board {
		cols |= 1 << c
		diag |= 1 << (int(c) + r)
		anti |= 1 << (int(c) - r + n - 1)
	}
	var count func(row int, cols, diag, anti uint32) int64
	count = func(row int, cols, diag, anti uint32) int64 {
		if row == n {
			return 1
		}
		var total int64
		for c := 0; c < n; c++ {
			if cols&(1<<c) != 0 || diag&(1<<(c+row)) != 0 || anti&(1<<(c-row+n-1)) != 0 {
				continue
			}
			total += count(row+1, cols|1<<c, diag|1<<(c+row), anti|1<<(c-row+n-1))
		}
		return total
	}
	return count(row, cols, diag, anti)
}

// Bank (Savina's bank transaction): a teller sends Transactions
// transfers, all at once, each to its source account; the source debits
// itself, has the destination credit itself and waits for its
// acknowledgement (without blocking the other work of its account), then
// acknowledges to the teller. Transfers come from Transfers. Count is the
// acknowledgements the teller received, Check the sum over accounts of
// (index+1) x final balance (all balances start at zero).
type Bank struct{ Accounts, Transactions int }

func (p Bank) Expect() Result {
	bal := make([]int64, p.Accounts)
	next := p.Transfers()
	for range p.Transactions {
		src, dst, amt := next()
		bal[src] -= amt
		bal[dst] += amt
	}
	return Result{Count: int64(p.Transactions), Check: BankCheck(bal)}
}
func (p Bank) Ops() int { return p.Transactions }
func (p Bank) String() string {
	return fmt.Sprintf("%d accounts, %d transactions", p.Accounts, p.Transactions)
}

// Transfers returns the teller's generator of transfers: source and
// destination accounts (different) and an amount from 1 to 1000.
func (p Bank) Transfers() func() (src, dst int, amount int64) {
	r := NewRand(1)
	return func() (int, int, int64) {
		src := r.IntN(p.Accounts)
		dst := r.IntN(p.Accounts - 1)
		if dst >= src {
			dst++
		}
		return src, dst, 1 + r.Int64N(1000)
	}
}

// BankCheck is Bank's Check of the final balances.
func BankCheck(balances []int64) int64 {
	var sum int64
	for i, b := range balances {
		sum += int64(i+1) * b
	}
	return sum
}

// Fib (Savina's recursive Fibonacci): an actor asked for fib(n) answers
// 1 if n <= 2, and otherwise spawns two children, asks them for fib(n-1)
// and fib(n-2), and answers the sum; an actor stops once it has answered.
// Count is fib(N); Check is 0.
type Fib struct{ N int }

func (p Fib) Expect() Result {
	a, b := int64(1), int64(1)
	for i := 2; i < p.N; i++ {
		a, b = b, a+b
	}
	return Result{Count: b}
}

// Actors is the number of actors a run spawns: 2 fib(N) - 1.
func (p Fib) Actors() int { return int(2*p.Expect().Count - 1) }
func (p Fib) Ops() int    { return p.Actors() }
func (p Fib) String() string {
	return fmt.Sprintf("fib(%d), %d actors", p.N, p.Actors())
}

// Ring (the Scala-actors message-passing benchmark): Processes
// processes in a ring, each passing what it receives to its successor.
// Tokens tokens start evenly spaced (token i at process i*Processes/Tokens)
// and each makes Hops passes; the process holding a token that has made
// its last pass reports its own index. Count is the tokens that finished,
// Check the sum of the reported indices.
type Ring struct{ Processes, Tokens, Hops int }

func (p Ring) Expect() Result {
	var check int64
	for i := range p.Tokens {
		check += int64((p.Start(i) + p.Hops) % p.Processes)
	}
	return Result{Count: int64(p.Tokens), Check: check}
}

// Start is the index of the process token i starts at.
func (p Ring) Start(i int) int { return int(int64(i) * int64(p.Processes) / int64(p.Tokens)) }
func (p Ring) Ops() int        { return p.Tokens * p.Hops }
func (p Ring) String() string {
	return fmt.Sprintf("%d processes, %d tokens x %d hops", p.Processes, p.Tokens, p.Hops)
}
