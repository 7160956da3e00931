package main

import (
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
