package future_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// countingSource is a plumb.Source that counts the waits it allowed and
// the ends it was told of, and says when a wait has been allowed.
type countingSource struct {
	clk     clock.Clock
	checked chan struct{}
	checks  atomic.Int32
	ends    atomic.Int32
}

func (s *countingSource) Clock() clock.Clock { return s.clk }
func (s *countingSource) CheckWait() error {
	s.checks.Add(1)
	s.checked <- struct{}{}
	return nil
}
func (s *countingSource) EndWait() { s.ends.Add(1) }

// A future keeps only where its source is (the runtime's cell), and, once
// failed, its error in the same word. A wait its source allowed is told
// to the same source when it ends, even when the failure that ends it
// has taken the source's place; the error comes back from every kind of
// wait.
func TestAWaitEndsWithItsSourceWhenTheFutureFails(t *testing.T) {
	boom := errors.New("boom")
	for name, get := range map[string]func(f *future.Future[int]) (int, error){
		"Get":        func(f *future.Future[int]) (int, error) { return f.Get() },
		"GetWithin":  func(f *future.Future[int]) (int, error) { return f.GetWithin(time.Hour) },
		"GetContext": func(f *future.Future[int]) (int, error) { return f.GetContext(t.Context()) },
	} {
		t.Run(name, func(t *testing.T) {
			src := &countingSource{clk: clock.NewMock(), checked: make(chan struct{}, 1)}
			var cell any = src // what crisp's message would hold: its job
			p := new(future.Promise[int])
			plumb.SetSourceAt(p, &cell)
			require.Same(t, src, plumb.SourceOf(p.Future()))
			type result struct {
				v   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := get(p.Future())
				done <- result{v, err}
			}()
			<-src.checked // the wait is allowed: the failure comes during it
			require.True(t, p.Fail(boom))
			r := <-done
			assert.Zero(t, r.v)
			assert.Same(t, boom, r.err)
			assert.EqualValues(t, 1, src.checks.Load())
			assert.EqualValues(t, 1, src.ends.Load(), "the wait's end is told to the source that allowed it")
			_, err := p.Future().Get()
			assert.Same(t, boom, err, "and the error stays")
			assert.Nil(t, plumb.SourceOf(p.Future()), "a failed future has no source left to ask")
			assert.Same(t, src, cell, "the cell is the runtime's: the future never writes it")
		})
	}
	t.Run("resolved without an error, the source stays", func(t *testing.T) {
		src := &countingSource{clk: clock.NewMock(), checked: make(chan struct{}, 1)}
		var cell any = src
		p := new(future.Promise[int])
		plumb.SetSourceAt(p, &cell)
		require.True(t, p.Resolve(7, nil))
		v, err := p.Future().Get()
		assert.Equal(t, 7, v)
		assert.NoError(t, err)
		assert.Same(t, src, plumb.SourceOf(p.Future()))
	})
}
