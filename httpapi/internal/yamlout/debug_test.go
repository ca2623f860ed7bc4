package yamlout

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func TestDebug(t *testing.T) {
	g := generator{r: rand.New(rand.NewPCG(1, 2))}
	for range 20000 {
		src := g.document()
		got, _ := Append(nil, src)
		want, _ := reference(src)
		if bytes.Equal(got, want) {
			continue
		}
		// Find the smallest sub-object that differs.
		var walk func(v interface{}) bool
		walk = func(v interface{}) bool {
			switch v := v.(type) {
			case map[string]interface{}:
				for _, e := range v {
					if walk(e) {
						return true
					}
				}
			case []interface{}:
				for _, e := range v {
					if walk(e) {
						return true
					}
				}
			}
			b, _ := json.Marshal(v)
			got, _ := Append(nil, b)
			want, _ := reference(b)
			if !bytes.Equal(got, want) {
				t.Logf("sub %q\ngot %q\nwant %q", b, got, want)
				return true
			}
			return false
		}
		var v interface{}
		d := json.NewDecoder(bytes.NewReader(src)); d.UseNumber(); d.Decode(&v)
		walk(v)
		return
	}
}
