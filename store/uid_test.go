package store

import "testing"

func TestMetadataUID(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{"metadata":{"name":"a","uid":"u1"}}`, "u1"},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"3"},"data":{"uid":"x"}}`, "u1"},
		// Sorted keys (unstructured): an owner reference's uid comes first.
		{`{"metadata":{"name":"a","ownerReferences":[{"kind":"X","name":"o","uid":"owner"}],"uid":"u2"}}`, "u2"},
		{`{"data":{"metadata":{"uid":"nested"}},"metadata":{"uid":"top"}}`, "top"},
		{`{"s":"\"metadata\":{\"uid\":\"fake\"}","metadata":{"uid":"real"}}`, "real"},
		{`{"metadata":{"uid":"a\u0062c"}}`, "abc"},
		{` { "metadata" : { "uid" : "spaced" } } `, "spaced"},
		{`{"metadata":{"name":"no-uid"}}`, ""},
		{`{"metadata":{"uid":7}}`, ""},
		{`{"kind":"x"}`, ""},
		{`[]`, ""},
		{`{"metadata":{"uid":"unterminated`, ""},
		{``, ""},
	} {
		if got := MetadataUID([]byte(tc.value)); got != tc.want {
			t.Errorf("MetadataUID(%s) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
