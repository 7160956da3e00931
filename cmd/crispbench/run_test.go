package main

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runArgs(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"-h"}} {
		out, _, err := runArgs(t, args...)
		require.NoError(t, err)
		assert.Contains(t, out, "Usage: crispbench <command>")
		assert.Contains(t, out, "    crispbench gen --seed 7 -o jobs.csv")
		assert.Regexp(t, `\n  gen +Write a synthetic job log`, out) // aligned with the longest command's name
	}
	out, _, err := runArgs(t, "gen", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "Usage: crispbench gen [flags]")
	assert.Contains(t, out, "    crispbench gen --seed 7 --jobs 1000000 -o big.jsonl")
	assert.Contains(t, out, "--jobs=25000")
	assert.Contains(t, out, `--from="2013-02-01"`)
}

func TestUnknownCommand(t *testing.T) {
	out, _, err := runArgs(t, "frobnicate")
	var ue *usageError
	require.ErrorAs(t, err, &ue)
	assert.EqualError(t, err, "unexpected argument frobnicate (see 'crispbench --help')")
	assert.Empty(t, out)
}

func TestSubcommandsMayNotShareVars(t *testing.T) {
	saved := subcommands
	defer func() { subcommands = saved }()
	subcommands = append(slices.Clone(saved), subcommand{
		name: "other", help: "Clashes with gen.", vars: kong.Vars{"gen_seed": "2"},
		new: func() runner { return new(genCmd) },
	})
	_, _, err := runArgs(t, "gen")
	assert.ErrorContains(t, err, "subcommands gen and other both define ${gen_seed}")
}
