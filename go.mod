module github.com/crisprt/crisp

go 1.25

require github.com/benbjohnson/clock v1.3.5
