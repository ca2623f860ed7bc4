package openapispec_test

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec"
	"github.com/edgeapi/edgeapi/registry"
)

// crontabSchema is a CRD version schema with descriptions, list types,
// nullable, int-or-string, unknown-field-preserving and embedded resource
// fields.
const crontabSchema = `{"type":"object","description":"CronTab runs a command on a schedule.","properties":{
"spec":{"type":"object","description":"spec of the CronTab.","required":["cronSpec"],"properties":{
  "cronSpec":{"type":"string","description":"cron schedule."},
  "replicas":{"type":"integer","format":"int32","minimum":0,"default":1},
  "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
  "note":{"type":"string","nullable":true},
  "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
  "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
  "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
  "resources":{"type":"array","items":{"type":"object","x-kubernetes-embedded-resource":true,"required":["kind"],"properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}}}},
"status":{"type":"object","properties":{"active":{"type":"integer"}}}}}`

// TestCustomSchemas_EqualKubeCRDBuilder builds the schemas of a custom
// kind with kube-apiserver's own CRD OpenAPI builder
// (k8s.io/apiextensions-apiserver, linked into this test only) and
// requires the same kind and list schemas, in v3 and v2.
func TestCustomSchemas_EqualKubeCRDBuilder(t *testing.T) {
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(crontabSchema), &props); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "crontabs.stable.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "stable.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &props},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	k := &registry.Kind{
		GVK:               schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
		Resource:          "crontabs",
		ListKind:          "CronTabList",
		Namespaced:        true,
		StatusSubresource: true,
		OpenAPISchema:     func() ([]byte, error) { return []byte(crontabSchema), nil },
	}
	names := []string{"com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList"}

	t.Run("v3", func(t *testing.T) {
		want, err := builder.BuildOpenAPIV3(crd, "v1", builder.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := openapispec.V3([]*registry.Kind{k}, "apis/stable.example.com/v1", "v1.36.3")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			compareSchema(t, n, got.Components.Schemas[n], want.Components.Schemas[n])
		}
	})
	t.Run("v2", func(t *testing.T) {
		want, err := builder.BuildOpenAPIV2(crd, "v1", builder.Options{V2: true})
		if err != nil {
			t.Fatal(err)
		}
		b, err := openapispec.V2([]*registry.Kind{k}, "v1.36.3")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Definitions map[string]any `json:"definitions"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			compareSchema(t, n, got.Definitions[n], want.Definitions[n])
		}
	})
}

func compareSchema(t *testing.T, name string, got any, want any) {
	t.Helper()
	wb, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var w any
	if err := json.Unmarshal(wb, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		gb, _ := json.Marshal(got)
		t.Errorf("%s:\n got  %s\n want %s", name, gb, wb)
	}
}
