package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain runs the test binary as a node process when run() starts it
// as one, as the command itself does.
func TestMain(m *testing.M) {
	if name := os.Getenv(envNode); name != "" {
		if err := runNode(name, os.Getenv(envURL), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	goleak.VerifyTestMain(m)
}

// The timeline runs on the real clock across four processes, so the
// order of lines a minute apart may vary on a loaded machine; the test
// checks what must hold whatever the timing.
func TestEveryRequestEndsAcrossProcessesWithANodeKilled(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, os.Args[0]))
	text := out.String()
	t.Log("\n" + text)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	ended := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 2 && (f[2] == "completed" || strings.Contains(l, "state is unknown")) {
			ended[strings.TrimSuffix(f[1], ":")] = true
		}
	}
	for _, j := range jobs {
		assert.True(t, ended[j.id], "%s never ended", j.id)
	}
	assert.Contains(t, text, "B-2 missed its start deadline on node-2", "a miss on the hung node comes back as a miss")
	assert.Contains(t, text, "A-2: nobody serves node-2", "the killed node's endpoint has no responders")
	assert.Contains(t, text, "A-2 completed on node-3")
	assert.Contains(t, text, "C-1: no result from node-2 in time", "the hung job ends at its bound")
	// C-2 must start earlier than A-1, and both wait on node-1: A-1 runs first.
	assert.Less(t, strings.Index(text, "A-1 completed on node-1"), strings.Index(text, "C-2 completed on node-1"))
	assert.Equal(t, "every request ended: 6 of 6 answered", lines[len(lines)-1])
}
