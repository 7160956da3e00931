package crisp_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
)

func TestDbgNudge(t *testing.T) {
	if os.Getenv("DBG_NUDGE") == "" {
		t.Skip()
	}
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	var stop atomic.Bool
	release := make(chan struct{})
	stuck := crisp.Spawn(sys, &counter{})
	crisp.Tell(stuck, func(*crisp.Proc, *counter) { <-release })
	type chainer struct{ self *crisp.Actor[*chainer] }
	var chain func(*crisp.Proc, *chainer)
	chain = func(_ *crisp.Proc, c *chainer) {
		end := time.Now().Add(30 * time.Microsecond)
		for time.Now().Before(end) {
		}
		if !stop.Load() {
			crisp.Tell(c.self, chain)
		}
	}
	for range 9 {
		c := &chainer{}
		c.self = crisp.Spawn(sys, c)
		crisp.Tell(c.self, chain)
	}
	var hogs sync.WaitGroup
	if os.Getenv("DBG_HOGS") != "" {
		for range 2 {
			hogs.Go(func() {
				for !stop.Load() {
				}
			})
		}
	}
	defer hogs.Wait()
	var mu sync.Mutex
	var det, lag []time.Duration
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range 2000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dl := t0.Add(50*time.Millisecond + time.Duration(i)*20*time.Microsecond)
			_, err := crisp.Call(stuck, incr, crisp.By(dl)).Get()
			l := time.Since(dl)
			var me *deadline.MissedError
			if errors.As(err, &me) {
				mu.Lock()
				det = append(det, me.Detected.Sub(dl))
				lag = append(lag, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	close(release)
	sys.Shutdown(t.Context())
	slices.Sort(det)
	slices.Sort(lag)
	q := func(s []time.Duration, p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	fmt.Printf("n=%d detect p50 %v p99 %v; lag p50 %v p99 %v\n", len(det), q(det, .5), q(det, .99), q(lag, .5), q(lag, .99))
}
