package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is what a run of a program shows: the fate of every message and
// what each actor ran, when. The model predicts one; the executor in the
// tests records one from the runtime; Diff compares them.
type Result struct {
	Msgs  []MsgResult // by message ID
	Steps [][]Step    // by actor, in the order the actor took them
}

// MsgResult is the fate of one message.
type MsgResult struct {
	Sent   bool
	SentAt time.Duration
	// Outcome is how a Call's future was resolved by the end of the run
	// (before the final Shutdown), in the form of the Out functions, or
	// "" if it was not (a Tell, a message never sent, or a process still
	// waiting when the run ended: Shutdown resolves those).
	Outcome    string
	ResolvedAt time.Duration
	// Missed and MissedAt are what the actor's miss hook heard.
	Missed   bool
	MissedAt time.Duration
}

// Step is one thing an actor did: a process started or went on after a
// wait, or ended.
type Step struct {
	Proc string // the process: "m3", or "m3.k" for the continuation of m3's Then
	What string // "start", "op<i>" (after step i of the handler returned), "end", "panic"
	At   time.Duration
}

func (s Step) String() string { return fmt.Sprintf("%s.%s@%v", s.Proc, s.What, s.At) }

// Outcomes, as strings both sides build the same way. Errors name only
// what the semantics fixes.

// OutValue is a handler's result.
func OutValue(v string) string { return "v:" + v }

// OutMissed is a *deadline.MissedError.
func OutMissed(dl, detected time.Duration) string {
	return fmt.Sprintf("missed(dl=%v)@%v", dl, detected)
}

// OutPanic is a *crisp.PanicError with the handler's panic value.
func OutPanic(v any) string { return fmt.Sprintf("panic:%v", v) }

// The outcomes without details.
const (
	OutStopped  = "stopped"  // crisp.ErrStopped
	OutDeadlock = "deadlock" // crisp.ErrDeadlock
	OutTimeout  = "timeout"  // future.ErrTimeout
)

// OutFull is a *crisp.FullError: the mailbox was full.
const OutFull = "full"

// OutInfeasible is a *crisp.InfeasibleError with its estimated wait.
func OutInfeasible(wait time.Duration) string { return fmt.Sprintf("infeasible(wait=%v)", wait) }

// OutErr is an error a promise was failed with.
func OutErr(msg string) string { return "err:" + msg }

// PanicValue is what the handler of message id panics with.
func PanicValue(id int) string { return fmt.Sprintf("p%d", id) }

// PromiseError is the message of the error promise k is failed with.
func PromiseError(k int) string { return fmt.Sprintf("e%d", k) }

// Observation strings, which handlers fold into their results.

// ObsFuture is what a wait on ref saw: kind is 'a' (Await), 'w'
// (AwaitWithin), 'g' (Get) or 'k' (a Then continuation's input).
func ObsFuture(kind byte, ref int, out string) string {
	return fmt.Sprintf("%c%s(%s)", kind, refName(ref), out)
}

// ObsCond is the counter an AwaitCond saw when it returned.
func ObsCond(counter int) string { return fmt.Sprintf("c(%d)", counter) }

// ProcValue is the result of the handler of process proc that made the
// observations obs.
func ProcValue(proc string, obs []string) string {
	return proc + "[" + strings.Join(obs, " ") + "]"
}

// Diff lists the differences between the model's result want and the
// runtime's got, or returns nil.
func Diff(p *Program, want, got *Result) []string {
	var d []string
	for id := range p.Msgs {
		w, g := want.Msgs[id], got.Msgs[id]
		name := fmt.Sprintf("m%d", id)
		if w.Sent != g.Sent {
			d = append(d, fmt.Sprintf("%s: sent %v, want %v", name, g.Sent, w.Sent))
			continue
		}
		if !w.Sent {
			continue
		}
		if w.SentAt != g.SentAt {
			d = append(d, fmt.Sprintf("%s: sent at %v, want %v", name, g.SentAt, w.SentAt))
		}
		if w.Outcome != g.Outcome {
			d = append(d, fmt.Sprintf("%s: outcome %q, want %q", name, g.Outcome, w.Outcome))
		} else if w.Outcome != "" && w.ResolvedAt != g.ResolvedAt {
			d = append(d, fmt.Sprintf("%s: resolved at %v, want %v", name, g.ResolvedAt, w.ResolvedAt))
		}
		if w.Missed != g.Missed || w.Missed && w.MissedAt != g.MissedAt {
			d = append(d, fmt.Sprintf("%s: miss hook %v@%v, want %v@%v", name, g.Missed, g.MissedAt, w.Missed, w.MissedAt))
		}
	}
	for a := range p.Actors {
		ws, gs := want.Steps[a], got.Steps[a]
		if p.Group(a) > 0 {
			// A group's workers step in parallel: at one instant, the
			// order between processes is open, each one's own is not.
			ws, gs = byInstant(ws), byInstant(gs)
		}
		n := max(len(ws), len(gs))
		for i := range n {
			var w, g string
			if i < len(ws) {
				w = ws[i].String()
			}
			if i < len(gs) {
				g = gs[i].String()
			}
			if w != g {
				d = append(d, fmt.Sprintf("a%d step %d: %s, want %s (ran %v, want %v)", a, i, orNone(g), orNone(w), gs, ws))
				break
			}
		}
	}
	return d
}

// byInstant returns steps sorted by instant, then by process, each
// process's steps at one instant kept in their order.
func byInstant(steps []Step) []Step {
	out := slices.Clone(steps)
	slices.SortStableFunc(out, func(a, b Step) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Proc, b.Proc)
	})
	return out
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
