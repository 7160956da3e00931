//go:build race

package main

// protoactor-go's Remote.Start sets gRPC's global logger
// (grpclog.SetLoggerV2) while the gRPC server of a remote started
// before it may be logging: a data race inside those libraries, which
// the race detector reports. Under -race the tests leave proto-remote
// out.
const raceEnabled = true
