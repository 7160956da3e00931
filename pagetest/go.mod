module github.com/crisprt/crisp/pagetest

go 1.26.0

// The library comes from this repository, joined by go.work.

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/chromedp/chromedp v0.23.0
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)
