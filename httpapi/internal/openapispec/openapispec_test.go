package openapispec_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec"
	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec/extract"
	"github.com/edgeapi/edgeapi/registry"
)

// TestDataGz_MatchesKubernetes re-extracts the data from the Kubernetes
// module's api/openapi-spec: the embedded file must equal it, so that it
// cannot drift from kube-apiserver's documents or from the registry.
func TestDataGz_MatchesKubernetes(t *testing.T) {
	dir, err := extract.Download()
	if err != nil {
		t.Fatal(err)
	}
	want, err := extract.Build(dir, registry.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(openapispec.DataGz))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("data.bin.gz (%d bytes unpacked) differs from a fresh extraction (%d bytes): run go generate ./httpapi/internal/openapispec", len(got), len(want))
	}
}

// TestV3_EveryBuiltinKind: each group-version document has a schema
// carrying the group-version-kind of each built-in kind and of its list,
// as kubectl explain finds them.
func TestV3_EveryBuiltinKind(t *testing.T) {
	kinds := registry.Builtin().Kinds()
	for _, p := range openapispec.GroupVersionPaths(kinds) {
		b, err := openapispec.V3(kinds, p, "v1.36.3")
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var doc struct {
			Paths      map[string]any `json:"paths"`
			Components struct {
				Schemas map[string]struct {
					GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		have := map[string]bool{}
		for _, s := range doc.Components.Schemas {
			for _, g := range s.GVK {
				have[g["group"]+"/"+g["version"]+"/"+g["kind"]] = true
			}
		}
		for _, k := range kinds {
			if openapispec.GroupVersionPath(k) != p {
				continue
			}
			kindNames := []string{k.GVK.Kind, k.ListKind}
			base := "/" + p + "/"
			if k.Namespaced {
				base += "namespaces/{namespace}/"
			}
			path := base + k.Resource + "/{name}"
			if !k.Stored() {
				// A review has no list, and only its collection's path
				// (POST).
				kindNames, path = kindNames[:1], base+k.Resource
			}
			for _, kind := range kindNames {
				if !have[k.GVK.Group+"/"+k.GVK.Version+"/"+kind] {
					t.Errorf("%s: no schema of %s", p, kind)
				}
			}
			if doc.Paths[path] == nil {
				t.Errorf("%s: no path %s", p, path)
			}
		}
	}
}
