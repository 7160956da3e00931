package chart_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/cmd/crispbench/internal/chart"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const log = `job,customer,submitted,duration,node,outcome,start_deadline,result_timeout
J1,C1,2013-02-01T09:00:00Z,1h,node-1,hung,10m,30m
J2,C2,2013-02-01T09:01:00Z,5m,node-1,completed,10m,30m
J3,C3,2013-02-01T09:02:00Z,5m,node-2,completed,10m,30m
J4,C3,2013-02-01T09:03:00Z,2m,node-2,failed,10m,30m
J5,C3,2013-02-01T09:04:00Z,30s,node-2,completed,10m,30m
`

func report(t *testing.T, strategies ...replay.Strategy) *replay.Report {
	t.Helper()
	cfg := replay.Defaults()
	cfg.Nodes = 2
	if len(strategies) > 0 {
		cfg.Strategies = strategies
	}
	rep, err := replay.Run(context.Background(), strings.NewReader(log), cfg)
	require.NoError(t, err)
	return rep
}

// wellFormed parses an SVG document and returns its root element and
// the text it holds.
func wellFormed(t *testing.T, svg []byte) (root xml.StartElement, text string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var sb strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch tk := tok.(type) {
		case xml.StartElement:
			if root.Name.Local == "" {
				root = tk
			}
		case xml.CharData:
			sb.Write(tk)
		}
	}
	return root, sb.String()
}

func TestChartIsSVG(t *testing.T) {
	for _, strategies := range [][]replay.Strategy{nil, {replay.Deadline}} {
		var b bytes.Buffer
		require.NoError(t, chart.Write(&b, report(t, strategies...)))
		root, text := wellFormed(t, b.Bytes())
		assert.Equal(t, "svg", root.Name.Local)
		assert.Equal(t, "http://www.w3.org/2000/svg", root.Name.Space)
		assert.Contains(t, text, "Satisfaction per customer")
		assert.Contains(t, text, "Time to first answer")
		assert.Contains(t, text, "deadline: ")
		if strategies == nil {
			assert.Contains(t, text, "polling: 40.0% never answered")
		}
	}
}

func TestSameReportSameChart(t *testing.T) {
	rep := report(t)
	var a, b bytes.Buffer
	require.NoError(t, chart.Write(&a, rep))
	require.NoError(t, chart.Write(&b, report(t)))
	assert.True(t, bytes.Equal(a.Bytes(), b.Bytes()))
}

func TestNoResults(t *testing.T) {
	assert.Error(t, chart.Write(io.Discard, &replay.Report{}))
}
