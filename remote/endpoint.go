package remote

import (
	"hash/fnv"
	"strconv"
)

// Endpoint names a typed handler that nodes serve ([Serve]) and call
// ([Call]). Build it once, with the same name and options, on every
// node that uses it: its request type Req, response type Resp, codec and
// partition count are part of the contract between them.
type Endpoint[Req, Resp any] struct {
	name       string
	subject    string // of calls without a key or partitions
	codec      Codec
	partitions int
}

// EndpointOption configures [NewEndpoint].
type EndpointOption struct{ apply func(*endpointConfig) }

type endpointConfig struct {
	codec      Codec
	partitions int
}

// WithCodec sets the endpoint's codec (JSON by default).
func WithCodec(c Codec) EndpointOption {
	if c == nil {
		panic("crisp: remote.WithCodec(nil)")
	}
	return EndpointOption{func(e *endpointConfig) { e.codec = c }}
}

// Partitions splits the endpoint's keyed calls ([Key]) into n
// partitions by a hash of the key, each a NATS subject of its own, so
// that one member of a group serves each key (see [OwnPartitions] and
// docs/wire.md for the rule when members join and leave). Calls without
// a key are shared among all members. Without Partitions, keyed calls
// are shared like the others and keep their order only within a member.
func Partitions(n int) EndpointOption {
	if n <= 0 || n > maxPartitions {
		panic("crisp: remote.Partitions out of range (1 to 65536)")
	}
	return EndpointOption{func(e *endpointConfig) { e.partitions = n }}
}

// NewEndpoint declares an endpoint. name is one or more tokens of
// letters, digits, '_' and '-', joined by '.'; other names panic.
func NewEndpoint[Req, Resp any](name string, opts ...EndpointOption) Endpoint[Req, Resp] {
	if !validName(name) {
		panic("crisp: remote.NewEndpoint: bad name " + strconv.Quote(name))
	}
	c := endpointConfig{codec: JSON()}
	for _, o := range opts {
		o.apply(&c)
	}
	return Endpoint[Req, Resp]{name: name, subject: subject(name), codec: c.codec, partitions: c.partitions}
}

// Name returns the endpoint's name.
func (e Endpoint[Req, Resp]) Name() string { return e.name }

func validName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	tok := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if tok == 0 {
				return false
			}
			tok = 0
		case c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			tok++
		default:
			return false
		}
	}
	return tok > 0
}

// subject is where calls without a key (or to an endpoint without
// partitions) go; partSubject where keyed calls of partition i go.
func subject(name string) string            { return "crisp.v2.e." + name }
func partSubject(name string, i int) string { return "crisp.v2.k." + strconv.Itoa(i) + "." + name }

// partition maps a key to its partition: FNV-1a, 32 bits, modulo n.
// Every node computes the same, whatever its platform.
func partition(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// queueGroup is the NATS queue group of every subscription: the members
// serving a subject share its requests, one member each.
const queueGroup = "crisp"
