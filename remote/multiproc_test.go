package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/remote"
)

// nodeEnv, when set to a NATS URL, makes the test binary a node process:
// it serves the "mp.double" endpoint until its stdin closes.
const nodeEnv = "CRISP_REMOTE_TEST_NODE"

var double = remote.NewEndpoint[int, int]("mp.double")

// nodeMain runs the node process and reports true, or reports false at
// once when the binary runs as tests.
func nodeMain() bool {
	url := os.Getenv(nodeEnv)
	if url == "" {
		return false
	}
	if err := runNode(url, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
	return true
}

func runNode(url string, stdin io.Reader, stdout io.Writer) error {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	defer sys.Shutdown(context.Background())
	n, err := remote.Start(remote.URL(url))
	if err != nil {
		return err
	}
	defer n.Close(context.Background())
	g := crisp.SpawnGroup(sys, []*Counter{{}, {}})
	if _, err := remote.Serve(n, double, g, func(_ *crisp.Proc, _ *Counter, v int) (int, error) {
		return 2 * v, nil
	}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin) // until the test closes it (or dies)
	return nil
}

// child is a node process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startChild(t *testing.T, url string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeEnv+"="+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the node process did not start")
	require.Equal(t, "ready\n", line)
	return &child{cmd: cmd, stdin: stdin}
}

// end lets a live child exit and waits for it; a killed one is reaped.
func (c *child) end() {
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
}

// TestNodesKilledAndPausedMidRun serves one endpoint from three node
// processes, calls it in batches from this process, SIGKILLs one node
// and SIGSTOPs another mid-run, and checks that every future resolves,
// by its bound (deadline plus allowance), with an answer or a typed
// failure. Set CRISP_LONG=1 to run it (a few seconds).
func TestNodesKilledAndPausedMidRun(t *testing.T) {
	if os.Getenv("CRISP_LONG") == "" {
		t.Skip("set CRISP_LONG=1 to run the multi-process test")
	}
	const (
		within    = 300 * time.Millisecond
		allowance = 200 * time.Millisecond
		batches   = 10
		perBatch  = 60
	)
	hub := newNode(t, remote.Allowance(allowance))
	var children []*child
	for range 3 {
		children = append(children, startChild(t, hub.URL()))
	}
	defer func() {
		for _, c := range children {
			c.end()
		}
	}()

	type outcome struct {
		err      error
		bound    time.Time
		resolved time.Time
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	clk := hub.Clock()
	for b := range batches {
		var wg sync.WaitGroup
		for i := range perBatch {
			if i == perBatch/2 { // mid-batch: calls are in flight
				switch b {
				case 3:
					require.NoError(t, children[0].cmd.Process.Signal(syscall.SIGKILL))
				case 5:
					require.NoError(t, children[1].cmd.Process.Signal(syscall.SIGSTOP))
				}
			}
			bound := clk.Now().Add(within + allowance)
			f := remote.Call(hub, double, i, remote.Within(within))
			wg.Go(func() {
				v, err := awaitFuture(f)
				o := outcome{err: err, bound: bound, resolved: clk.Now()}
				if err == nil && v != 2*i {
					o.err = fmt.Errorf("wrong answer %d for %d", v, i)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			})
		}
		wg.Wait()
	}

	counts := map[string]int{}
	var late []time.Duration
	for _, o := range outcomes {
		counts[outcomeKind(o.err)]++
		late = append(late, o.resolved.Sub(o.bound))
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	worst := late[len(late)-1]
	t.Logf("futures: %d resolved of %d; %v; worst lateness past the bound %v",
		len(outcomes), batches*perBatch, counts, max(worst, 0))
	assert.Len(t, outcomes, batches*perBatch)
	assert.Zero(t, counts["other"], "only answers and typed failures")
	assert.NotZero(t, counts["ok"])
	assert.NotZero(t, counts["no answer"], "the paused node's share gets no answer")
	// Each future resolves at its bound at the latest, up to the lag of
	// the timer and of this process's scheduling: a generous second on
	// a loaded CI machine under -race.
	assert.Less(t, worst, time.Second)
}

// awaitFuture waits for f with a real-time hang guard.
func awaitFuture[T any](f *future.Future[T]) (T, error) {
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	select {
	case <-f.Done():
		return f.Get()
	case <-guard.C:
		var zero T
		return zero, errors.New("hang: the future did not resolve in 30s")
	}
}
