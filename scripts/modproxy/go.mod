// modproxy lays out module versions as a file-system module proxy for
// scripts/install-check. It is a module of its own so that golang.org/x/mod
// stays out of the library's and crispbench's builds.
module github.com/crisprt/crisp/scripts/modproxy

go 1.26.0

require golang.org/x/mod v0.41.0
