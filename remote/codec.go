package remote

import "encoding/json"

// Codec turns requests and responses into bytes and back. Both sides of
// an endpoint must use codecs of the same Name: a request whose codec
// the receiver does not use gets a codec error. A protobuf codec is a
// few lines over google.golang.org/protobuf/proto (Marshal and
// Unmarshal of proto.Message values), written where that dependency is
// wanted; this module does not import it.
type Codec interface {
	// Name identifies the encoding on the wire ("json").
	Name() string
	// Marshal encodes v, a *Req or *Resp of the endpoint.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into v, a pointer.
	Unmarshal(data []byte, v any) error
}

// JSON returns the default codec, encoding/json.
func JSON() Codec { return jsonCodec{} }

type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
