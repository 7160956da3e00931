package joblog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// FuzzParseObject checks the JSON scanner against encoding/json: a line
// it accepts is valid JSON, and gives the same values.
func FuzzParseObject(f *testing.F) {
	f.Add([]byte(`{"job":"J1","customer":"C\u00e9","duration":270,"priority":null}`))
	f.Add([]byte(`{ "job" : "a\"b" , "node":"\xff" }`))
	f.Add([]byte(`{"job":01}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var rec record
		if parseObject(line, &rec) != nil {
			return
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if !assert.NoError(t, d.Decode(&m), "accepted %q", line) {
			return
		}
		assert.True(t, json.Valid(line), "accepted %q", line)
		for f, name := range fieldNames {
			v, ok := m[name]
			if !ok || v == nil {
				assert.False(t, rec.set[f], "%s in %q", name, line)
				continue
			}
			assert.Equal(t, fmt.Sprint(v), rec.text[f], "%s in %q", name, line)
		}
	})
}
