package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/observe"
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

// TestServesThePage runs the day with --http on a free port and reads
// the page's JSON: the Controller's and the nodes' actors, and the miss
// of B-2 on node-2.
func TestServesThePage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	done := make(chan error, 1)
	go func() { done <- runMain(ctx, []string{"--http", "127.0.0.1:0"}, stdout, stderr) }()
	var url string
	for url == "" { // the address is printed once the listener is up
		select {
		case err := <-done:
			t.Fatalf("ended early: %v\n%s", err, stderr.String())
		case <-stderr.wrote:
		}
		if _, rest, ok := strings.Cut(stderr.String(), "serving "); ok {
			url, _, _ = strings.Cut(rest, ";")
		}
	}
	res, err := http.Get(url + "?format=json")
	require.NoError(t, err)
	var snap observe.Snapshot
	require.NoError(t, json.NewDecoder(res.Body).Decode(&snap))
	res.Body.Close()
	names := map[string]observe.ActorStats{}
	for _, a := range snap.Actors {
		names[a.Name] = a
	}
	assert.Contains(t, names, "controller")
	assert.EqualValues(t, 1, names["node-2"].Missed, "B-2 missed on node-2")
	assert.Equal(t, "every request ended: 5 of 5 answered\n", lastLine(stdout.String()))
	cancel()
	require.NoError(t, <-done)
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:] + "\n"
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader,
// signalling each write.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
