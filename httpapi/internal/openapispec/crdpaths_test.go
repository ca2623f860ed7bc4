package openapispec_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec"
	"github.com/edgeapi/edgeapi/registry"
)

// TestV3_CustomKindEqualsKubeCRDBuilder compares the v3 document of a
// custom kind with what kube-apiserver's CRD OpenAPI builder makes, for
// both scopes, with and without a status subresource: the same paths, the
// same operations with the same IDs, group-version-kind and action, the
// same patch media types (which decide kubectl's patch type) and the same
// schemas. The operations' descriptions, parameter lists and responses are
// those of a built-in kind of the same scope (kube-apiserver's CRD builder
// words some descriptions differently, omits the watch stream and 201
// media types of responses, and orders parameters its own way) and are not
// compared.
func TestV3_CustomKindEqualsKubeCRDBuilder(t *testing.T) {
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(crontabSchema), &props); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		namespaced bool
		status     bool
		scale      bool
	}{
		{"namespaced", true, false, false}, {"namespaced status", true, true, false}, {"cluster", false, false, false}, {"cluster status", false, true, false},
		{"namespaced scale", true, false, true}, {"namespaced status scale", true, true, true}, {"cluster scale", false, false, true}, {"cluster status scale", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: "crontabs.stable.example.com"},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{
					Group: "stable.example.com",
					Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList"},
					Scope: apiextensionsv1.ClusterScoped,
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
						Name: "v1", Served: true, Storage: true,
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &props},
					}},
				},
			}
			if tc.namespaced {
				crd.Spec.Scope = apiextensionsv1.NamespaceScoped
			}
			crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{}
			if tc.status {
				crd.Spec.Versions[0].Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
			}
			var scale *registry.ScaleSubresource
			if tc.scale {
				sel := ".status.selector"
				crd.Spec.Versions[0].Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: &sel}
				scale = &registry.ScaleSubresource{}
			}
			k := &registry.Kind{
				GVK:               schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
				Resource:          "crontabs",
				ListKind:          "CronTabList",
				Namespaced:        tc.namespaced,
				StatusSubresource: tc.status,
				Scale:             scale,
				OpenAPISchema:     func() ([]byte, error) { return []byte(crontabSchema), nil },
			}
			want, err := builder.BuildOpenAPIV3(crd, "v1", builder.Options{})
			if err != nil {
				t.Fatal(err)
			}
			wb, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			b, err := openapispec.V3([]*registry.Kind{k}, "apis/stable.example.com/v1", "v1.36.3")
			if err != nil {
				t.Fatal(err)
			}
			var got, w map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(wb, &w); err != nil {
				t.Fatal(err)
			}
			gp, wp := got["paths"].(map[string]any), w["paths"].(map[string]any)
			for p := range wp {
				if gp[p] == nil {
					t.Errorf("path %s missing", p)
				}
			}
			for p, item := range gp {
				if wp[p] == nil {
					t.Errorf("path %s not in kube-apiserver's document", p)
					continue
				}
				gi, wi := item.(map[string]any), wp[p].(map[string]any)
				if g, w := sortedKeys(gi), sortedKeys(wi); !reflect.DeepEqual(g, w) {
					t.Errorf("%s: operations %v, want %v", p, g, w)
				}
				for op, v := range gi {
					gop, ok1 := v.(map[string]any)
					wop, ok2 := wi[op].(map[string]any)
					if !ok1 || !ok2 {
						continue
					}
					if gop["operationId"] != wop["operationId"] {
						t.Errorf("%s %s: operationId %v, want %v", op, p, gop["operationId"], wop["operationId"])
					}
					if !reflect.DeepEqual(gop["x-kubernetes-group-version-kind"], wop["x-kubernetes-group-version-kind"]) || gop["x-kubernetes-action"] != wop["x-kubernetes-action"] {
						t.Errorf("%s %s: group-version-kind or action differ", op, p)
					}
					if op == "patch" {
						g := sortedKeys(gop["requestBody"].(map[string]any)["content"].(map[string]any))
						w := sortedKeys(wop["requestBody"].(map[string]any)["content"].(map[string]any))
						if !reflect.DeepEqual(g, w) {
							t.Errorf("%s %s: media types %v, want %v", op, p, g, w)
						}
					}
				}
			}
			gs := got["components"].(map[string]any)["schemas"].(map[string]any)
			ws := w["components"].(map[string]any)["schemas"].(map[string]any)
			for n := range ws {
				if gs[n] == nil {
					t.Errorf("schema %s missing", n)
				}
			}
			for n := range gs {
				if ws[n] == nil {
					t.Errorf("schema %s not in kube-apiserver's document", n)
				}
			}
		})
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
