module github.com/crisprt/crisp/cmd/crispbench

go 1.25

// The library itself, from this repository (replay runs it); go.work at
// the repository root puts both modules in one workspace.
require github.com/crisprt/crisp v0.0.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/crisprt/crisp => ../..
