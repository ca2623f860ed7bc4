package openapispec_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec"
	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec/extract"
	"github.com/edgeapi/edgeapi/registry"
)

// TestV3_EqualsKubeAPIServer compares each group-version document with
// kube-apiserver's (api/openapi-spec/v3 of the Kubernetes release): every
// path item edgeapi serves and every schema is kube-apiserver's, and a
// group-version whose resources edgeapi all serves (coordination.k8s.io/v1,
// events.k8s.io/v1) has kube-apiserver's document exactly, but for
// info.version.
func TestV3_EqualsKubeAPIServer(t *testing.T) {
	dir, err := extract.Download()
	if err != nil {
		t.Fatal(err)
	}
	kinds := registry.Builtin().Kinds()
	for _, p := range openapispec.GroupVersionPaths(kinds) {
		b, err := openapispec.V3(kinds, p, "v1.36.3")
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		kb, err := os.ReadFile(filepath.Join(dir, "api", "openapi-spec", "v3", strings.ReplaceAll(p, "/", "__")+"_openapi.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(kb, &want); err != nil {
			t.Fatal(err)
		}
		gotPaths, wantPaths := got["paths"].(map[string]any), want["paths"].(map[string]any)
		for path, item := range gotPaths {
			if !reflect.DeepEqual(item, wantPaths[path]) {
				t.Errorf("%s: path %s differs from kube-apiserver's", p, path)
			}
		}
		gotSchemas := got["components"].(map[string]any)["schemas"].(map[string]any)
		wantSchemas := want["components"].(map[string]any)["schemas"].(map[string]any)
		for name, s := range gotSchemas {
			if !reflect.DeepEqual(s, wantSchemas[name]) {
				t.Errorf("%s: schema %s differs from kube-apiserver's", p, name)
			}
		}
		if p == "apis/coordination.k8s.io/v1" || p == "apis/events.k8s.io/v1" {
			if missing := missingKeys(wantPaths, gotPaths); len(missing) > 0 {
				t.Errorf("%s: paths missing: %v", p, missing)
			}
			if missing := missingKeys(wantSchemas, gotSchemas); len(missing) > 0 {
				t.Errorf("%s: schemas missing: %v", p, missing)
			}
			if !reflect.DeepEqual(got["components"].(map[string]any)["securitySchemes"], want["components"].(map[string]any)["securitySchemes"]) {
				t.Errorf("%s: securitySchemes differ", p)
			}
		}
	}
}

func missingKeys(want, got map[string]any) []string {
	var out []string
	for k := range want {
		if _, ok := got[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestV2_EqualsKubeAPIServer: every path item, definition and parameter of
// the v2 document is kube-apiserver's (api/openapi-spec/swagger.json).
func TestV2_EqualsKubeAPIServer(t *testing.T) {
	dir, err := extract.Download()
	if err != nil {
		t.Fatal(err)
	}
	b, err := openapispec.V2(registry.Builtin().Kinds(), "v1.36.3")
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	kb, err := os.ReadFile(filepath.Join(dir, "api", "openapi-spec", "swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(kb, &want); err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{"paths", "definitions", "parameters"} {
		g, w := got[section].(map[string]any), want[section].(map[string]any)
		if len(g) == 0 {
			t.Errorf("no %s", section)
		}
		for name, v := range g {
			if !reflect.DeepEqual(v, w[name]) {
				t.Errorf("%s %s differs from kube-apiserver's", section, name)
			}
		}
	}
	for _, p := range []string{"/api/v1/namespaces/{namespace}/configmaps/{name}", "/apis/coordination.k8s.io/v1/watch/leases", "/api/v1/namespaces/{name}/finalize", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/status"} {
		if got["paths"].(map[string]any)[p] == nil {
			t.Errorf("no path %s", p)
		}
	}
	if !reflect.DeepEqual(got["securityDefinitions"], want["securityDefinitions"]) || !reflect.DeepEqual(got["security"], want["security"]) {
		t.Error("security differs")
	}
}
