package crisp_test

import (
	"context"
	"testing"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/vclock"
)

func TestZZExpCoincide(t *testing.T) {
	vc := vclock.New(t0)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(quiet))
	defer sys.Shutdown(context.Background())
	a := crisp.Spawn(sys, &state{})
	vc.At(t0.Add(10*time.Millisecond), func() { t.Log("at event", vc.Now()) })
	vc.At(t0, func() {
		crisp.Tell(a, func(p *crisp.Proc, s *state) { p.Sleep(10 * time.Millisecond); t.Log("slept", p.Now()) })
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := vc.Run(ctx, sys.WaitIdle); err != nil {
		t.Fatal(err)
	}
}
