package model_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/model"
)

const ms = time.Millisecond

// call builds a Call to actor to with a handler.
func call(to int, dl model.Deadline, body ...model.Op) model.Msg {
	return model.Msg{To: to, DL: dl, Body: body}
}

func within(d time.Duration) model.Deadline { return model.Deadline{Kind: model.Within, D: d} }
func by(d time.Duration) model.Deadline     { return model.Deadline{Kind: model.By, D: d} }

func sleep(d time.Duration) model.Op { return model.Op{Kind: model.OSleep, D: d} }
func send(id int) model.Op           { return model.Op{Kind: model.OSend, Msg: id} }
func await(ref int) model.Op         { return model.Op{Kind: model.OAwait, Ref: ref} }

func sendAt(at time.Duration, id int) model.Event {
	return model.Event{At: at, Kind: model.ESend, Msg: id}
}

// runBoth runs p on the model and on the runtime and requires that they
// agree; it returns the model's result.
func runBoth(t *testing.T, p *model.Program) *model.Result {
	t.Helper()
	want, err := model.Run(p, options())
	require.NoError(t, err)
	got, err := execute(t, p, !*bubble)
	require.NoError(t, err)
	require.Empty(t, model.Diff(p, want, got), "program:\n%s", p)
	return want
}

func steps(r *model.Result, actor int) []string {
	var out []string
	for _, s := range r.Steps[actor] {
		out = append(out, s.String())
	}
	return out
}

func TestModelEDFLetsADeadlineOvertake(t *testing.T) {
	p := &model.Program{
		Actors: []model.Policy{model.EDF},
		Msgs: []model.Msg{
			call(0, model.Deadline{}, sleep(10*ms)),
			call(0, model.Deadline{}),
			call(0, within(20*ms)),
		},
		Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1), sendAt(2*ms, 2)},
	}
	r := runBoth(t, p)
	assert.Equal(t, []string{"m0.start@0s", "m0.op0@10ms", "m0.end@10ms", "m2.start@10ms", "m2.end@10ms", "m1.start@10ms", "m1.end@10ms"}, steps(r, 0))
}

func TestModelMissesExactlyAtTheDeadline(t *testing.T) {
	t.Run("a queued message misses when the clock reaches its deadline", func(t *testing.T) {
		p := &model.Program{
			Actors: []model.Policy{model.EDF},
			Msgs:   []model.Msg{call(0, model.Deadline{}, sleep(10*ms)), call(0, within(4*ms))},
			Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1)},
		}
		r := runBoth(t, p)
		assert.Equal(t, model.OutMissed(5*ms, 5*ms), r.Msgs[1].Outcome)
		assert.True(t, r.Msgs[1].Missed)
		assert.Equal(t, 5*ms, r.Msgs[1].MissedAt)
	})
	t.Run("a deadline at the instant its actor frees up is missed then", func(t *testing.T) {
		p := &model.Program{
			Actors: []model.Policy{model.EDF},
			Msgs:   []model.Msg{call(0, model.Deadline{}, sleep(10*ms)), call(0, by(10*ms))},
			Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1)},
		}
		r := runBoth(t, p)
		assert.Equal(t, model.OutMissed(10*ms, 10*ms), r.Msgs[1].Outcome)
	})
	t.Run("a nanosecond later it runs", func(t *testing.T) {
		p := &model.Program{
			Actors: []model.Policy{model.EDF},
			Msgs:   []model.Msg{call(0, model.Deadline{}, sleep(10*ms)), call(0, by(10*ms+1))},
			Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1)},
		}
		r := runBoth(t, p)
		assert.Equal(t, model.OutValue("m1[]"), r.Msgs[1].Outcome)
		assert.Equal(t, 10*ms, r.Msgs[1].ResolvedAt)
	})
	t.Run("a deadline not after the send is missed at the send", func(t *testing.T) {
		p := &model.Program{
			Actors: []model.Policy{model.EDF},
			Msgs:   []model.Msg{call(0, within(0))},
			Events: []model.Event{sendAt(3*ms, 0)},
		}
		r := runBoth(t, p)
		assert.Equal(t, model.OutMissed(3*ms, 3*ms), r.Msgs[0].Outcome)
		assert.Empty(t, steps(r, 0))
	})
}

func TestModelAwaitReleasesTheActor(t *testing.T) {
	p := &model.Program{
		Actors:   []model.Policy{model.EDF},
		Promises: 1,
		Msgs:     []model.Msg{call(0, model.Deadline{}, await(model.PromiseRef(0))), call(0, model.Deadline{})},
		Events: []model.Event{
			sendAt(0, 0), sendAt(1*ms, 1),
			{At: 5 * ms, Kind: model.EResolve, Promise: 0, Value: "x"},
		},
	}
	r := runBoth(t, p)
	assert.Equal(t, []string{"m0.start@0s", "m1.start@1ms", "m1.end@1ms", "m0.op0@5ms", "m0.end@5ms"}, steps(r, 0))
	assert.Equal(t, model.OutValue("m0[apromise0(v:x)]"), r.Msgs[0].Outcome)
}

func TestModelStop(t *testing.T) {
	p := &model.Program{
		Actors: []model.Policy{model.EDF},
		Msgs:   []model.Msg{call(0, model.Deadline{}, sleep(10*ms), sleep(10*ms)), call(0, model.Deadline{})},
		Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1), {At: 4 * ms, Kind: model.EStop, Actor: 0}},
	}
	r := runBoth(t, p)
	assert.Equal(t, model.OutStopped, r.Msgs[1].Outcome, "queued: stopped")
	assert.Equal(t, model.OutValue("m0[]"), r.Msgs[0].Outcome, "running: finishes")
	assert.Equal(t, 4*ms, r.Msgs[0].ResolvedAt, "its sleeps cut short")
}

func TestModelThenAnswersForItsMessage(t *testing.T) {
	p := &model.Program{
		Actors: []model.Policy{model.EDF, model.EDF},
		Msgs: []model.Msg{
			call(0, model.Deadline{}, send(1), model.Op{Kind: model.OThen, Ref: 1, Body: []model.Op{sleep(ms)}}),
			call(1, model.Deadline{}, sleep(3*ms)),
		},
		Events: []model.Event{sendAt(0, 0)},
	}
	r := runBoth(t, p)
	assert.Equal(t, model.OutValue("m0.k[km1(v:m1[])]"), r.Msgs[0].Outcome)
	assert.Equal(t, 4*ms, r.Msgs[0].ResolvedAt)
}

func TestModelGetOnTheOwnActorIsADeadlock(t *testing.T) {
	p := &model.Program{
		Actors: []model.Policy{model.EDF},
		Msgs:   []model.Msg{call(0, model.Deadline{}, send(1), model.Op{Kind: model.OGet, Ref: 1}), call(0, model.Deadline{})},
		Events: []model.Event{sendAt(0, 0)},
	}
	r := runBoth(t, p)
	assert.Equal(t, model.OutValue("m0[gm1(deadlock)]"), r.Msgs[0].Outcome)
}

func TestModelSkipsWhatTheRuntimeLeavesOpen(t *testing.T) {
	// m0 sends two messages to an idle actor: its runner may take the
	// first before the second arrives, or see both and take the one
	// with the earlier deadline.
	p := &model.Program{
		Actors: []model.Policy{model.EDF, model.EDF},
		Msgs:   []model.Msg{call(0, model.Deadline{}, send(1), send(2)), call(1, within(9*ms)), call(1, within(5*ms))},
		Events: []model.Event{sendAt(0, 0)},
	}
	_, err := model.Run(p, options())
	var skip *model.SkipError
	require.ErrorAs(t, err, &skip)
	assert.False(t, skip.Bug)
	assert.Equal(t, "arrival/take on an actor", skip.Kind)

	// With the actor busy, both wait in its queue: the order is the
	// policy's.
	p.Msgs = append(p.Msgs, call(1, model.Deadline{}, sleep(ms)))
	p.Events = []model.Event{sendAt(0, 3), sendAt(0, 0)}
	r := runBoth(t, p)
	assert.Equal(t, []string{"m3.start@0s", "m3.op0@1ms", "m3.end@1ms", "m2.start@1ms", "m2.end@1ms", "m1.start@1ms", "m1.end@1ms"}, steps(r, 1))
}

func TestValidAndNormalize(t *testing.T) {
	p := &model.Program{
		Actors: []model.Policy{model.EDF},
		Msgs:   []model.Msg{call(0, model.Deadline{}, await(1)), call(0, model.Deadline{})},
		Events: []model.Event{sendAt(0, 0)},
	}
	require.Error(t, model.Valid(p), "m1 is awaited but never sent")
	q := model.Normalize(p)
	require.NoError(t, model.Valid(q))
	assert.Len(t, q.Msgs, 1, "m1, sent by nobody, is gone")
	assert.Empty(t, q.Msgs[0].Body, "and so is the await of it")
}

func TestShrinkKeepsWhatMatters(t *testing.T) {
	p := model.Generate(42)
	for i := uint64(43); len(p.Msgs) < 5; i++ {
		p = model.Generate(i)
	}
	// Pretend the bug needs a message with a deadline.
	hasDL := func(q *model.Program) bool {
		for _, m := range q.Msgs {
			if m.DL.Kind != model.NoDL {
				return true
			}
		}
		return false
	}
	if !hasDL(p) {
		t.Skip("no deadline in the program")
	}
	small := model.Shrink(p, hasDL)
	require.NoError(t, model.Valid(small))
	assert.True(t, hasDL(small))
	assert.Len(t, small.Msgs, 1)
	assert.Len(t, small.Events, 1)
	assert.Empty(t, small.Msgs[0].Body)
}

func TestGenerateIsRepeatable(t *testing.T) {
	for sd := range uint64(50) {
		p, q := model.Generate(sd), model.Generate(sd)
		require.Equal(t, p.String(), q.String())
		require.NoError(t, model.Valid(p), "seed %d:\n%s", sd, p)
	}
}

// In a group, messages run in parallel, one per worker; messages with a
// key in common run one after the other, in the order they were sent;
// an eligible message waits for a free worker.
func TestModelGroupRunsInParallelAndKeysInOrder(t *testing.T) {
	keyed := func(m model.Msg, keys ...int) model.Msg { m.Keys = keys; return m }
	p := &model.Program{
		Actors:  []model.Policy{model.EDF},
		Workers: []int{2},
		Msgs: []model.Msg{
			keyed(call(0, model.Deadline{}, sleep(10*ms)), 0),
			keyed(call(0, model.Deadline{}, sleep(10*ms)), 0),
			call(0, model.Deadline{}, sleep(10*ms)),
			call(0, model.Deadline{}),
		},
		Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1), sendAt(2*ms, 2), sendAt(3*ms, 3)},
	}
	r := runBoth(t, p)
	assert.Equal(t, []string{
		"m0.start@0s", "m2.start@2ms",
		"m0.op0@10ms", "m0.end@10ms", "m1.start@10ms",
		"m2.op0@12ms", "m2.end@12ms", "m3.start@12ms", "m3.end@12ms",
		"m1.op0@20ms", "m1.end@20ms",
	}, steps(r, 0))
}

// On a group, a handler that returns Then gives its keys back then, and
// its continuation runs on whichever worker is free when its future is
// resolved, in parallel with the group's other work.
func TestModelGroupThen(t *testing.T) {
	m0 := call(0, model.Deadline{}, model.Op{Kind: model.OThen, Ref: model.PromiseRef(0), Body: []model.Op{sleep(5 * ms)}})
	m0.Keys = []int{0}
	m1 := call(0, model.Deadline{}, sleep(10*ms))
	m1.Keys = []int{0}
	p := &model.Program{
		Actors:   []model.Policy{model.EDF},
		Workers:  []int{2},
		Msgs:     []model.Msg{m0, m1},
		Promises: 1,
		Events: []model.Event{sendAt(0, 0), sendAt(1*ms, 1),
			{At: 2 * ms, Kind: model.EResolve, Promise: 0, Value: "r0"}},
	}
	r := runBoth(t, p)
	assert.Equal(t, []string{
		"m0.start@0s", "m0.end@0s", "m1.start@1ms",
		"m0.k.start@2ms", "m0.k.op0@7ms", "m0.k.end@7ms",
		"m1.op0@11ms", "m1.end@11ms",
	}, steps(r, 0))
	assert.Equal(t, 7*ms, r.Msgs[0].ResolvedAt)
}
