package store

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMetadataUID: any input is scanned without panic, and for a JSON
// object with one "metadata" and one "uid" member name (and no escapes)
// the scan agrees with encoding/json.
func FuzzMetadataUID(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a","uid":"u1"}}`,
		`{"metadata":{"ownerReferences":[{"uid":"o"}],"uid":"u"}}`,
		`{"s":"\"metadata\"","metadata":{"uid":"a\u0062"}}`,
		`{"metadata":{"uid":7}}`,
		`[`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := MetadataUID(data)
		// encoding/json matches names case-insensitively and decodes
		// escapes in them, and takes the last of duplicate members; kube's
		// decoding, and MetadataUID, match names exactly. Only inputs
		// where none of that can differ are compared: each name once, in
		// any case, and that once in lower case ("metAdAtA" is not
		// metadata to kube-apiserver).
		lower := bytes.ToLower(data)
		for _, name := range [][]byte{[]byte(`"metadata"`), []byte(`"uid"`)} {
			if bytes.Count(lower, name) != 1 || bytes.Count(data, name) != 1 {
				return
			}
		}
		if bytes.IndexByte(data, '\\') >= 0 {
			return
		}
		var v struct {
			Metadata *struct {
				UID *string `json:"uid"`
			} `json:"metadata"`
		}
		if json.Unmarshal(data, &v) != nil || v.Metadata == nil || v.Metadata.UID == nil {
			return
		}
		if got != *v.Metadata.UID {
			t.Errorf("MetadataUID(%q) = %q, encoding/json reads %q", data, got, *v.Metadata.UID)
		}
	})
}
