package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/timeliness"
	"github.com/crisprt/crisp/observe"
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
		{"trace of another section", []string{"timeliness", "quality", "--trace", "t"}, "--trace is for the lag section, not quality"},
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
	assert.Contains(t, out, "--trace")
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

// TestTimelinessServesThePage runs a small lag section with --http: it
// says where it serves, and the observer it gives the section counts the
// section's messages (read through servePage, as the page would).
func TestTimelinessServesThePage(t *testing.T) {
	_, stderr, err := runArgs(t, "timeliness", "lag", "--quick", "--format", "json",
		"--pending", "5", "--actors", "2", "--load", "idle", "--hogs", "0", "--http", "127.0.0.1:0")
	require.NoError(t, err)
	assert.Regexp(t, `serving http://127\.0\.0\.1:\d+/debug/crisp`, stderr)

	var opts timeliness.Options
	var discard bytes.Buffer
	stop, err := servePage("127.0.0.1:0", &opts, &discard)
	require.NoError(t, err)
	defer stop()
	_, err = timeliness.Run(context.Background(), "lag", timeliness.Options{Quick: true, Pending: []int{5}, Actors: []int{2},
		Loads: []timeliness.Load{timeliness.Idle}, Hogs: -1, Observer: opts.Observer})
	require.NoError(t, err)
	url := strings.TrimSpace(strings.TrimPrefix(discard.String(), "serving "))
	res, err := http.Get(url + "?format=json")
	require.NoError(t, err)
	defer res.Body.Close()
	var snap observe.Snapshot
	require.NoError(t, json.NewDecoder(res.Body).Decode(&snap))
	assert.NotZero(t, snap.Total.Sent, "the page sees the section's messages")
	assert.NotZero(t, snap.Total.Missed, "the lag section's probes all miss")
}
