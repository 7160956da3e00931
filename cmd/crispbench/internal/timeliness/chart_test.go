package timeliness_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/timeliness"
)

// lagResult is a lag section's outcome made up for charting: two pending
// counts, three cells each, every mechanism measured except context in
// the last cell.
func lagResult() *timeliness.LagResult {
	r := &timeliness.LagResult{Config: timeliness.DefaultLag(true)}
	r.Config.Pending = []int{1, 100000}
	p99 := []time.Duration{80 * time.Microsecond, 1500 * time.Microsecond, 40 * time.Millisecond, time.Second}
	for _, pending := range r.Config.Pending {
		for i, load := range []timeliness.Load{timeliness.Idle, timeliness.Busy, timeliness.Idle} {
			c := timeliness.LagCellResult{
				LagCell: timeliness.LagCell{Pending: pending, Actors: 10, Load: load, Hogs: 2 * (i / 2)},
				Merged:  map[string]timeliness.Quantiles{},
			}
			for k, m := range r.Config.Mechanisms {
				if i == 2 && m == timeliness.Context {
					continue
				}
				c.Merged[m.String()] = timeliness.Quantiles{Count: 100, P99: p99[(k+i)%len(p99)]}
			}
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

// The lag chart draws a bar per mechanism and cell, in every panel, and
// names each mechanism once, in a legend shared by the panels.
func TestLagChartIsGroupedBarsWithOneLegend(t *testing.T) {
	r := lagResult()
	var svg bytes.Buffer
	require.NoError(t, r.Chart(&svg))
	if name := os.Getenv("CRISP_LAG_CHART"); name != "" {
		// For looking at the chart: CRISP_LAG_CHART=/tmp/lag.svg go test -run LagChart.
		require.NoError(t, os.WriteFile(name, svg.Bytes(), 0o644))
	}
	s := svg.String()
	for _, m := range r.Config.Mechanisms {
		assert.Equal(t, 1, strings.Count(s, ">"+m.String()+"<"), "%s is named once", m)
	}
	// Bars are filled paths with no outline; 2 panels x 3 cells x 4
	// mechanisms, less the missing one per panel, drawn at zero height,
	// plus one thumbnail per legend entry.
	fills := strings.Count(s, "fill:")
	assert.GreaterOrEqual(t, fills, 2*3*4+len(r.Config.Mechanisms), "bars and thumbnails")
}
