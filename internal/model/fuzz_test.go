package model_test

import (
	"testing"

	"github.com/crisprt/crisp/internal/model"
)

// FuzzConformance drives the runtime's public calls, in sequences the
// fuzzer chooses, against the model: its input is the stream of choices
// from which the program generator builds a program (actors, groups of
// workers and their policies; sends with deadlines, priorities, tags and keys; sleeps that
// move the virtual clock; awaits, conditions, suspensions, panics,
// stops, Gets and Then continuations; promises resolved and actors
// stopped from outside), which runs on the runtime (driven by WaitIdle
// on a virtual clock, then Shutdown) and on the model, and the two must
// agree as in TestConformance. Programs whose outcome the semantics
// leaves open are skipped.
func FuzzConformance(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{0},
		[]byte("crisp"),
		{255, 255, 255, 255, 255, 255, 255, 255, 1, 2, 3, 4, 5, 6, 7, 8},
		{3, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 17, 99, 200, 7, 1, 0, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, choices []byte) {
		p := model.GenerateFrom(model.NewChoices(choices))
		want, err := model.Run(p, options())
		if err != nil {
			t.Skip(skipKind(err))
		}
		got, err := execute(t, p, true)
		if diff := model.Diff(p, want, got); err != nil || len(diff) > 0 {
			t.Fatalf("the runtime diverges from the model:\n%s\nprogram:\n%s", explain(err, diff), p)
		}
	})
}

// The same choices give the same program, and the generator's own seeds
// and a fuzzer's choices reach the same kinds of programs.
func TestChoicesGiveOneProgram(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("crisp"), {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		a := model.GenerateFrom(model.NewChoices(b)).String()
		if again := model.GenerateFrom(model.NewChoices(b)).String(); again != a {
			t.Errorf("choices %v gave two programs:\n%s\nand\n%s", b, a, again)
		}
	}
	if x, y := model.GenerateFrom(model.NewChoices([]byte("a"))).String(), model.GenerateFrom(model.NewChoices([]byte("b"))).String(); x == y {
		t.Errorf("different choices gave one program:\n%s", x)
	}
}
