package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelinessBadFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"negative hogs", []string{"timeliness", "lag", "--hogs=-1"}, "--hogs must not be negative, not -1"},
		{"no pending", []string{"timeliness", "lag", "--pending", "0"}, "--pending counts must be at least 1, not [0]"},
		{"no actors", []string{"timeliness", "lag", "--actors", "10,0"}, "--actors counts must be at least 1, not [10 0]"},
		{"no such load", []string{"timeliness", "lag", "--load", "idle,heavy"}, `--load must be one of "idle","busy","long" but got "heavy"`},
		{"no such load section", []string{"timeliness", "hogs"}, "[<section>] must be one of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runArgs(t, c.args...)
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			assert.ErrorContains(t, err, c.says)
			assert.ErrorContains(t, err, "(see 'crispbench timeliness --help')")
		})
	}
}

func TestTimelinessHelpNamesTheContentionFlag(t *testing.T) {
	out, _, err := runArgs(t, "timeliness", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "--hogs")
	assert.Contains(t, out, "long")
}

func TestTimelinessLagMeasuresTheCellsAskedFor(t *testing.T) {
	out, _, err := runArgs(t, "timeliness", "lag", "--quick", "--format", "json",
		"--pending", "20", "--actors", "3", "--load", "busy", "--hogs", "1")
	require.NoError(t, err)
	var r struct {
		Lag struct {
			Cells []struct {
				Pending, Actors, Hogs int
				Load                  string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.Lag.Cells, 2, "one cell, without and with the hog")
	for i, c := range r.Lag.Cells {
		assert.Equal(t, 20, c.Pending)
		assert.Equal(t, 3, c.Actors)
		assert.Equal(t, "busy", c.Load)
		assert.Equal(t, i, c.Hogs)
	}
}
