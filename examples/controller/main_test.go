package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTimeline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Equal(t, `00:00  B-1 sent to node-1: must start by 00:10
00:00  C-1 sent to node-2: must start by 00:10
00:02  C-2 sent to node-1: must start by 00:32
00:03  A-1 sent to node-1: must start by 01:03
00:05  B-2 sent to node-2: must start by 00:19
00:19  B-2 missed its start deadline on node-2: customer B told, trying another node
00:19  B-2 sent to node-3: must start by 00:33
00:20  B-1 completed on node-1 (started 00:00); customer B told
00:24  B-2 completed on node-3 (started 00:19); customer B told
00:25  A-1 completed on node-1 (started 00:20); customer A told
00:30  C-2 completed on node-1 (started 00:25); customer C told
00:40  C-1: no result from node-2 in time: customer C told its state is unknown
every request ended: 5 of 5 answered
`, out.String())
}

func TestEveryRequestEndsAndCustomerAGoesFirst(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
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
	// C-2 must start earlier than A-1, and both wait on node-1: A-1 runs first.
	assert.Less(t, strings.Index(out.String(), "A-1 completed on node-1"), strings.Index(out.String(), "C-2 completed on node-1"))
	assert.Equal(t, "every request ended: 5 of 5 answered", lines[len(lines)-1])
}
