package pagetest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// browser returns the path of a headless-capable Chromium, or skips the
// test outside CI.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH: CI must install it (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the browser test is skipped")
	return ""
}

type node struct{ jobs int }

func work(d time.Duration) func(*crisp.Proc, *node) (int, error) {
	return func(p *crisp.Proc, n *node) (int, error) {
		p.Sleep(d)
		n.jobs++
		return n.jobs, nil
	}
}

// TestPageInABrowser serves the page of a running system (on virtual
// time), loads it in headless Chromium, sees its actors, then makes a
// message miss and sees the miss appear on the page without a reload.
func TestPageInABrowser(t *testing.T) {
	exe := browser(t)
	mock := clock.NewMock()
	mock.Set(time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC))
	stats := observe.NewStats()
	sys := crisp.NewSystem(crisp.WithClock(mock), crisp.WithObserver(stats),
		crisp.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	idle := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.WaitIdle(ctx))
	}

	names := []string{"controller", "node-1", "node-2", "node-3"}
	actors := map[string]*crisp.Actor[*node]{}
	for _, n := range names {
		actors[n] = crisp.Spawn(sys, &node{}, crisp.WithName(n))
	}
	// Some history: jobs of different lengths queue on the nodes; a job
	// on node-3 waits on a future that never comes, and stays suspended.
	var fs []*future.Future[int]
	for i := range 12 {
		n := names[1+i%3]
		fs = append(fs, crisp.Call(actors[n], work(time.Duration(1+i%4)*100*time.Millisecond), crisp.Within(time.Hour)))
		fs = append(fs, crisp.Call(actors["controller"], work(0)))
	}
	never := future.NewPromise[int](mock)
	crisp.Call(actors["node-3"], func(p *crisp.Proc, _ *node) (int, error) { return crisp.Await(p, never.Future()) })
	for range 30 {
		mock.Add(50 * time.Millisecond)
		idle()
	}
	for _, f := range fs {
		_, err := f.Get()
		require.NoError(t, err)
	}

	mux := http.NewServeMux()
	mux.Handle("/debug/crisp", observe.Handler(stats))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
			chromedp.WindowSize(1200, 420))...)
	defer cancelA()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first call starts the browser, which lives as long as its
	// context: no timeout on it, only on what follows.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/debug/crisp")))
	ctx, cancelT := context.WithTimeout(bctx, 60*time.Second)
	defer cancelT()

	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible("#actors tbody tr")))
	body, err := chromedp.Run(ctx, chromedp.Text("#actors tbody"))
	require.NoError(t, err)
	for _, n := range names {
		require.Contains(t, body, n, "the page lists every actor")
	}
	require.NotContains(t, body, "too late")

	// A miss on node-2, while the page is open: its script's refresh
	// must show it.
	_, err = crisp.Call(actors["node-2"], work(0), crisp.Within(0), crisp.MessageName("too late")).Get()
	require.ErrorIs(t, err, deadline.ErrMissed)
	idle()
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll("#actors tbody tr")].some(r => r.cells[0].textContent === "node-2" && r.cells[5].textContent === "1" && r.cells[12].textContent.startsWith("too late"))`,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(t, err, "the miss appears on the page without a reload")
	row, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#actors tbody tr")].find(r => r.cells[0].textContent === "node-2").innerText`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(row, "node-2"), row)
	require.Contains(t, row, "too late at 09:00:01.500")

	if path := os.Getenv("CRISP_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("wrote %s", path)
	}
}
