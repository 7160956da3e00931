package model_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/model"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/vclock"
)

// t0 is instant zero of every program.
var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// astate is every actor's state: the counter AwaitCond reads. A
// supervised actor gets a fresh one at each restart.
type astate struct{ counter int }

// byTag is the model's ByTag policy as a policy.Func: smaller tag first.
var byTag = policy.Func(func(a, b *policy.Item) int { return cmp.Compare(tagOf(a), tagOf(b)) })

func tagOf(it *policy.Item) int {
	n, _ := it.Tag.(int)
	return n
}

// execute runs p on the runtime, on a virtual clock driven until no
// timer is left, then shuts the system down, and returns what it saw.
//
// With bare true, as the design intends and by default, sys.WaitIdle
// alone decides when the clock moves on. With bare false (-bubble) the
// run happens in a testing/synctest bubble and each round also waits for
// synctest.Wait, that is until every goroutine of the system is blocked:
// a divergence that shows only without the bubble is work WaitIdle does
// not count (two such faults were found that way and are fixed: see
// crisp/regress_test.go).
func execute(t *testing.T, p *model.Program, bare bool) (res *model.Result, err error) {
	if bare {
		return newExec(p).run(nil)
	}
	synctest.Test(t, func(*testing.T) { res, err = newExec(p).run(synctest.Wait) })
	return res, err
}

type exec struct {
	p        *model.Program
	vc       *vclock.Clock
	sys      *crisp.System
	actors   []crisp.Ref[*astate]
	promises []*future.Promise[string]

	mu   sync.Mutex // guards res, futs
	res  model.Result
	futs map[int]*future.Future[string]
}

func newExec(p *model.Program) *exec {
	return &exec{p: p, futs: map[int]*future.Future[string]{}}
}

// run runs the program; settle, if not nil, is called after every
// WaitIdle and must leave the system settled.
func (x *exec) run(settle func()) (*model.Result, error) {
	p := x.p
	x.res.Msgs = make([]model.MsgResult, len(p.Msgs))
	x.res.Steps = make([][]model.Step, len(p.Actors))
	x.vc = vclock.New(t0)
	x.sys = crisp.NewSystem(crisp.WithClock(x.vc), crisp.WithLogger(quiet))
	for i, pol := range p.Actors {
		opts := []crisp.ActorOption{crisp.WithName(fmt.Sprintf("a%d", i)), crisp.WithMissHook(x.missed)}
		switch pol {
		case model.FIFO:
			opts = append(opts, crisp.WithPolicy(policy.FIFO()))
		case model.Priority:
			opts = append(opts, crisp.WithPolicy(policy.ByPriority()))
		case model.ByTag:
			opts = append(opts, crisp.WithPolicy(byTag))
		}
		if bd := p.BoundOf(i); bd.Capacity > 0 {
			opts = append(opts, crisp.WithCapacity(bd.Capacity, crisp.FailWhenFull))
		}
		if p.BoundOf(i).Admission {
			opts = append(opts, crisp.WithAdmission())
		}
		if sup := p.SupOf(i); sup.Restart {
			opts = append(opts, crisp.Restart(func() *astate { return &astate{} }))
			if sup.Limit > 0 {
				opts = append(opts, crisp.RestartLimit(sup.Limit, 0))
			}
			if sup.Backoff > 0 {
				opts = append(opts, crisp.Backoff(sup.Backoff, sup.MaxBackoff))
			}
		}
		if w := p.Group(i); w > 0 {
			states := make([]*astate, w)
			for k := range states {
				states[k] = &astate{}
			}
			x.actors = append(x.actors, crisp.SpawnGroup(x.sys, states, opts...))
			continue
		}
		x.actors = append(x.actors, crisp.Spawn(x.sys, &astate{}, opts...))
	}
	for range p.Promises {
		x.promises = append(x.promises, future.NewPromise[string](x.vc))
	}
	for _, e := range p.Events {
		x.vc.At(t0.Add(e.At), func() { x.event(e) })
	}
	idle := x.sys.WaitIdle
	if settle != nil {
		idle = func(ctx context.Context) error {
			if err := x.sys.WaitIdle(ctx); err != nil {
				return err
			}
			settle()
			return x.sys.WaitIdle(ctx)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runErr := x.vc.Run(ctx, idle)

	x.mu.Lock()
	got := &model.Result{Msgs: append([]model.MsgResult(nil), x.res.Msgs...), Steps: make([][]model.Step, len(x.res.Steps))}
	for i, s := range x.res.Steps {
		got.Steps[i] = append([]model.Step(nil), s...)
	}
	x.mu.Unlock()

	var errs []error
	if runErr != nil {
		errs = append(errs, fmt.Errorf("driving the clock: %w", runErr))
	}
	if err := x.sys.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shutdown: %w", err))
	}
	x.mu.Lock()
	for id, f := range x.futs {
		if !f.Ready() {
			errs = append(errs, fmt.Errorf("m%d: future unresolved after Shutdown", id))
		}
	}
	x.mu.Unlock()
	return got, errors.Join(errs...)
}

func (x *exec) event(e model.Event) {
	switch e.Kind {
	case model.ESend:
		x.send(e.Msg, nil)
	case model.EResolve:
		x.promises[e.Promise].Resolve(e.Value, nil)
	case model.EFail:
		x.promises[e.Promise].Fail(errors.New(model.PromiseError(e.Promise)))
	case model.EStop:
		x.actors[e.Actor].Stop()
	}
}

func (x *exec) send(id int, local map[int]*future.Future[string]) {
	m := &x.p.Msgs[id]
	name := "m" + strconv.Itoa(id)
	opts := []crisp.SendOption{crisp.MessageName(name), crisp.Priority(m.Priority), crisp.Tag(m.Tag)}
	for _, k := range m.Keys {
		opts = append(opts, crisp.Key(k))
	}
	switch m.DL.Kind {
	case model.Within:
		opts = append(opts, crisp.Within(m.DL.D))
	case model.By:
		opts = append(opts, crisp.By(t0.Add(m.DL.D)))
	}
	if m.Cost > 0 {
		opts = append(opts, crisp.Cost(m.Cost))
	}
	x.mu.Lock()
	x.res.Msgs[id].Sent, x.res.Msgs[id].SentAt = true, x.vc.Now().Sub(t0)
	x.mu.Unlock()
	a := x.actors[m.To]
	if m.Tell && id%2 == 1 {
		// Every other Tell is a Send carrying its number: the model
		// holds Send to a Tell's promises.
		crisp.Send(a, func(p *crisp.Proc, s *astate, id int) {
			x.step(m.To, name, "start", p)
			x.body(p, s, id, name, m.Body, map[int]*future.Future[string]{}, nil)
		}, id, opts...)
		return
	}
	if m.Tell {
		crisp.Tell(a, func(p *crisp.Proc, s *astate) {
			x.step(m.To, name, "start", p)
			x.body(p, s, id, name, m.Body, map[int]*future.Future[string]{}, nil)
		}, opts...)
		return
	}
	f := crisp.CallNext(a, func(p *crisp.Proc, s *astate) crisp.Next[*astate, string] {
		x.step(m.To, name, "start", p)
		return x.body(p, s, id, name, m.Body, map[int]*future.Future[string]{}, nil)
	}, opts...)
	if local != nil {
		local[id] = f
	}
	x.mu.Lock()
	x.futs[id] = f
	x.mu.Unlock()
	if !plumb.OnResolve(f, func() { x.resolved(id, f) }) {
		x.resolved(id, f)
	}
}

func (x *exec) resolved(id int, f *future.Future[string]) {
	v, err := f.Get()
	out := outcome(v, err)
	at := x.vc.Now().Sub(t0)
	x.mu.Lock()
	x.res.Msgs[id].Outcome, x.res.Msgs[id].ResolvedAt = out, at
	x.mu.Unlock()
}

func (x *exec) missed(e *deadline.MissedError) {
	id, err := strconv.Atoi(e.Message[1:])
	if err != nil {
		panic("miss of an unknown message " + e.Message)
	}
	x.mu.Lock()
	x.res.Msgs[id].Missed, x.res.Msgs[id].MissedAt = true, e.Detected.Sub(t0)
	x.mu.Unlock()
}

func (x *exec) step(actor int, proc, what string, p *crisp.Proc) {
	at := p.Now().Sub(t0)
	x.mu.Lock()
	x.res.Steps[actor] = append(x.res.Steps[actor], model.Step{Proc: proc, What: what, At: at})
	x.mu.Unlock()
}

func (x *exec) ref(local map[int]*future.Future[string], r int) *future.Future[string] {
	if r < 0 {
		return x.promises[-1-r].Future()
	}
	return local[r]
}

// body runs a handler's steps as process name of message id; local holds
// the futures of the Calls it can reach.
func (x *exec) body(p *crisp.Proc, s *astate, id int, name string, ops []model.Op, local map[int]*future.Future[string], obs []string) crisp.Next[*astate, string] {
	self := x.p.Msgs[id].To
	for i, op := range ops {
		switch op.Kind {
		case model.OSleep:
			p.Sleep(op.D)
		case model.OSend:
			x.send(op.Msg, local)
		case model.OAwait:
			v, err := crisp.Await(p, x.ref(local, op.Ref))
			obs = append(obs, model.ObsFuture('a', op.Ref, outcome(v, err)))
		case model.OAwaitWithin:
			v, err := crisp.AwaitWithin(p, x.ref(local, op.Ref), op.D)
			obs = append(obs, model.ObsFuture('w', op.Ref, outcome(v, err)))
		case model.OAwaitCond:
			n := op.N
			p.AwaitCond(func() bool { return s.counter >= n })
			obs = append(obs, model.ObsCond(s.counter))
		case model.OIncr:
			s.counter++
		case model.OSuspend:
			p.Suspend()
		case model.OPanic:
			x.step(self, name, "panic", p)
			panic(model.PanicValue(id))
		case model.OStop:
			x.actors[op.Actor].Stop()
		case model.OGet:
			v, err := x.ref(local, op.Ref).Get()
			obs = append(obs, model.ObsFuture('g', op.Ref, outcome(v, err)))
		case model.OThen:
			x.step(self, name, "end", p)
			ref, body, kname := op.Ref, op.Body, name+".k"
			kLocal := make(map[int]*future.Future[string], len(local))
			for r, f := range local {
				kLocal[r] = f
			}
			return crisp.Then(p, x.ref(local, ref), func(p *crisp.Proc, s *astate, v string, err error) crisp.Next[*astate, string] {
				x.step(self, kname, "start", p)
				return x.body(p, s, id, kname, body, kLocal, []string{model.ObsFuture('k', ref, outcome(v, err))})
			})
		}
		switch op.Kind {
		case model.OSleep, model.OAwait, model.OAwaitWithin, model.OAwaitCond, model.OSuspend:
			x.step(self, name, "op"+strconv.Itoa(i), p)
		}
	}
	x.step(self, name, "end", p)
	return crisp.Return[*astate](model.ProcValue(name, obs), nil)
}

// outcome names a future's result as the model does.
func outcome(v string, err error) string {
	if err == nil {
		return model.OutValue(v)
	}
	var (
		miss *deadline.MissedError
		pe   *crisp.PanicError
		inf  *crisp.InfeasibleError
	)
	switch {
	case errors.Is(err, crisp.ErrFull):
		return model.OutFull
	case errors.As(err, &inf):
		return model.OutInfeasible(inf.Wait)
	case errors.As(err, &miss):
		return model.OutMissed(miss.Deadline.Sub(t0), miss.Detected.Sub(t0))
	case errors.As(err, &pe):
		return model.OutPanic(pe.Value)
	case errors.Is(err, crisp.ErrStopped):
		return model.OutStopped
	case errors.Is(err, crisp.ErrDeadlock):
		return model.OutDeadlock
	case errors.Is(err, future.ErrTimeout):
		return model.OutTimeout
	}
	return model.OutErr(err.Error())
}
