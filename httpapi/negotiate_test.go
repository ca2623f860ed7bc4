package httpapi

import "testing"

// TestNegotiateOutputFor_Cached: the second answer for an Accept header,
// taken from the cache, is the parser's, and the cache tells a custom
// resource (no Protobuf) from a built-in kind for the same header.
func TestNegotiateOutputFor_Cached(t *testing.T) {
	for _, accept := range []string{
		"application/vnd.kubernetes.protobuf,application/json",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
		"application/yaml",
		"text/html",
		"",
	} {
		for _, unstructured := range []bool{false, true} {
			wantRep, wantOK := negotiateOutputUncached(accept, unstructured)
			for i := range 2 {
				gotRep, gotOK := negotiateOutputFor(accept, unstructured)
				if gotRep != wantRep || gotOK != wantOK {
					t.Errorf("%q unstructured=%v call %d: got %+v %v, want %+v %v", accept, unstructured, i, gotRep, gotOK, wantRep, wantOK)
				}
			}
		}
	}
	proto, _ := negotiateOutputFor("application/vnd.kubernetes.protobuf,application/json", false)
	cr, _ := negotiateOutputFor("application/vnd.kubernetes.protobuf,application/json", true)
	if proto.enc != encProtobuf || cr.enc != encJSON {
		t.Errorf("got %v for a built-in kind and %v for a custom resource, want Protobuf and JSON", proto.enc, cr.enc)
	}
}
