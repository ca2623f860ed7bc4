package httpapi

import "testing"

// TestNegotiateOutputFor: custom resources skip a clause asking for the
// object in Protobuf, and take the next acceptable one; conversions to
// meta.k8s.io types stay acceptable in Protobuf; built-ins keep Protobuf.
func TestNegotiateOutputFor(t *testing.T) {
	tests := []struct {
		accept       string
		unstructured bool
		wantOK       bool
		want         representation
	}{
		{"application/vnd.kubernetes.protobuf", false, true, representation{enc: encProtobuf}},
		{"application/vnd.kubernetes.protobuf", true, false, representation{}},
		{"application/vnd.kubernetes.protobuf, application/json", true, true, representation{enc: encJSON}},
		{"application/vnd.kubernetes.protobuf;q=1, application/yaml;q=0.5", true, true, representation{enc: encYAML}},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, true,
			representation{enc: encProtobuf, as: asPartialObjectMetadata, metaVersion: "v1"}},
		{"", true, true, representation{}},
	}
	for _, tt := range tests {
		got, ok := negotiateOutputFor(tt.accept, tt.unstructured)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("negotiateOutputFor(%q, %v) = %+v, %v; want %+v, %v", tt.accept, tt.unstructured, got, ok, tt.want, tt.wantOK)
		}
	}
}
