module github.com/crisprt/crisp/remote

// nats-server v2.15 needs Go 1.26.
go 1.26.0

// The library itself comes from this repository: go.work at the
// repository root joins both modules (see docs/releasing.md); from the
// first release on, this module requires the library at its tag.

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/nats-io/nats-server/v2 v2.15.2
	github.com/nats-io/nats.go v1.55.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
