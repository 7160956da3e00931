package joblog_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// FuzzReader feeds the Reader arbitrary input (the seed corpus is in
// testdata/fuzz/FuzzReader). Whatever it reads must be readable again
// after writing it out in the same format, and every error must name a
// line.
func FuzzReader(f *testing.F) {
	f.Add([]byte(header+goodCSV), false)
	f.Add([]byte(goodJSON+goodJSON), true)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		var opts []joblog.Option
		if skip {
			opts = append(opts, joblog.SkipBad())
		}
		r := joblog.NewReader(bytes.NewReader(data), opts...)
		jobs, err := readAll(r)
		lines := bytes.Count(data, []byte("\n")) + 1
		var le *joblog.LineError
		switch {
		case err == nil:
		case errors.As(err, &le):
			assert.True(t, le.Line >= 1 && le.Line <= lines, "line %d of %d", le.Line, lines)
		default:
			assert.ErrorIs(t, err, joblog.ErrEmpty)
		}
		n, first := r.Skipped()
		assert.LessOrEqual(t, len(jobs)+n, lines)
		for _, le := range first {
			assert.True(t, le.Line >= 1 && le.Line <= lines, "skipped line %d of %d", le.Line, lines)
		}
		if len(jobs) == 0 {
			return
		}
		text := write(t, r.Format(), jobs)
		again, err := readAll(joblog.NewReader(strings.NewReader(text)))
		require.NoError(t, err, "reading back:\n%s", text)
		equalJobs(t, jobs, again)
	})
}
