package sample_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/sample"
)

func TestEmbeddedLogIsTheGeneratorsSeedOne(t *testing.T) {
	g, err := gen.New(gen.Defaults())
	require.NoError(t, err)
	var want bytes.Buffer
	w := joblog.NewWriter(&want, joblog.CSV)
	for j := range g.Jobs() {
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	got, err := io.ReadAll(sample.Open())
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.Bytes(), got),
		"%s is stale: run go generate in internal/sample", sample.Name)
	assert.Equal(t, len(got), sample.Size())
	assert.Less(t, sample.Size(), 3<<20, "a few MB at most")
}

func TestEmbeddedLogReads(t *testing.T) {
	r := joblog.NewReader(sample.Open())
	n := 0
	for _, err := range r.All() {
		require.NoError(t, err)
		n++
	}
	assert.InEpsilon(t, 25000, n, 0.05)
	assert.Equal(t, joblog.CSV, r.Format())
}
