// Package pagetest loads crisp's live page (observe.Handler) in a real
// headless browser. It is a module of its own so that the browser's
// driver (github.com/chromedp/chromedp) stays out of the library's
// go.mod; go.work joins it to the repository.
//
// The test needs Debian's chromium (apt-get install chromium). Without
// it, the test skips, saying so, unless CI is set: .ci/run installs it
// and sets CI, so there a missing browser fails the run.
//
// CRISP_SCREENSHOT=path writes the page's screenshot there; the one in
// docs/ is made with
//
//	CRISP_SCREENSHOT=$PWD/docs/observability-page.png go test ./pagetest
package pagetest
