package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// batchSize is how many jobs the reader hands the simulations at once:
// enough to make handing over cheap, few enough to keep memory flat.
const batchSize = 256

// Horizon is how far the replay's virtual clock reaches past the log's
// first submission: the largest time.Duration, about 292 years. A log
// whose jobs are submitted later is refused with [ErrSpan]. Timers
// that would fall past it (a long job, a large start deadline or result
// timeout) fire at the horizon instead: time saturates there, as in
// vclock, and never wraps around.
const Horizon time.Duration = math.MaxInt64

// ErrSpan is the error of a log that spans more than [Horizon].
var ErrSpan = errors.New("the log spans too long a time to replay")

// Run replays the log read from log under each strategy of cfg, and
// reports. The strategies run side by side, each on its own clock and
// system, fed the same jobs by one reader, which keeps at most a few
// batches ahead of the slower simulation. Run returns the log's first
// error (a *joblog.LineError naming the line and field) unless
// cfg.SkipBad, or ctx's error if it ends first. It owns every goroutine
// it starts and returns after they have all ended.
func Run(ctx context.Context, log io.Reader, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.First = slices.Clone(cfg.First)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var opts []joblog.Option
	if cfg.SkipBad {
		opts = append(opts, joblog.SkipBad())
	}
	in := &countingReader{r: log}
	reader := joblog.NewReader(in, opts...)

	sims := make([]*sim, len(cfg.Strategies))
	feeds := make([]chan []joblog.Job, len(sims))
	results := make([]Result, len(sims))
	errs := make([]error, len(sims))
	var wg sync.WaitGroup
	for i, s := range cfg.Strategies {
		feeds[i] = make(chan []joblog.Job, 4)
		sims[i] = newSim(ctx, &cfg, s, feeds[i])
		wg.Go(func() {
			results[i], errs[i] = sims[i].run()
			if errs[i] != nil {
				cancel(errs[i])
			}
		})
	}

	rep := &Report{Log: cfg.Name, Config: cfg}
	rep.Config.Progress, rep.Config.Observe = nil, nil
	readErr := feed(ctx, reader, feeds, in, cfg.Progress, rep)
	if readErr != nil {
		cancel(readErr)
	}
	wg.Wait()
	if readErr != nil {
		return nil, readErr
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	n, first := reader.Skipped()
	rep.Skipped = n
	for _, e := range first {
		rep.SkipErrors = append(rep.SkipErrors, e.Error())
	}
	rep.LogNodes = len(sims[0].nodeOf)
	rep.Results = results
	return rep, nil
}

// feed reads the log and hands its jobs to every simulation, in
// batches; it closes the feeds when done, and notes the log's extent in
// rep.
func feed(ctx context.Context, r *joblog.Reader, feeds []chan []joblog.Job, in *countingReader, progress func(int64), rep *Report) error {
	defer func() {
		for _, f := range feeds {
			close(f)
		}
	}()
	send := func(b []joblog.Job) error {
		for _, f := range feeds {
			select {
			case f <- b:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if progress != nil {
			progress(in.n)
		}
		return nil
	}
	b := make([]joblog.Job, 0, batchSize)
	for j, err := range r.All() {
		if err != nil {
			return err
		}
		if rep.Jobs == 0 {
			rep.From = j.Submitted
		} else if j.Submitted.After(rep.From.Add(Horizon)) {
			return fmt.Errorf("%w: job %s submitted at %s, more than 292 years after the log's first job (%s): the replay's clock reaches no further",
				ErrSpan, j.ID, j.Submitted.Format(time.RFC3339), rep.From.Format(time.RFC3339))
		}
		rep.Jobs++
		rep.To = j.Submitted
		if b = append(b, j); len(b) == batchSize {
			if err := send(b); err != nil {
				return err
			}
			// The simulations read the batch just sent: the next one is
			// new.
			b = make([]joblog.Job, 0, batchSize)
		}
	}
	if len(b) > 0 {
		return send(b)
	}
	return nil
}

// countingReader counts the bytes read through it, for progress.
type countingReader struct {
	r io.Reader
	n int64 // read only by the goroutine reading
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
