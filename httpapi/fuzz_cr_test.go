package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry"
)

// fuzzCRD is a CRD whose schema uses what the custom resource path
// handles beyond plain fields: defaults, CEL rules (with oldSelf), a map
// list, int-or-string, an embedded resource, preserved unknown fields,
// limits and the status subresource.
const fuzzCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.fuzz.example.com}
spec:
  group: fuzz.example.com
  scope: Namespaced
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.size <= 100", messageExpression: "'size ' + string(self.size) + ' is over 100'"}
            - {rule: "self.size >= oldSelf.size", message: "size cannot shrink"}
            properties:
              size: {type: integer, default: 1, minimum: 0}
              name: {type: string, maxLength: 16, pattern: "^[a-z]+$"}
              port: {x-kubernetes-int-or-string: true}
              mode: {type: string, enum: [a, b]}
              ports:
                type: array
                maxItems: 8
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    n: {type: integer}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              labels: {type: object, additionalProperties: {type: string}, x-kubernetes-map-type: granular}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              ready: {type: boolean}
`

// newFuzzCRServer is a fuzz server that also serves fuzzCRD's Gizmos,
// with a Gizmo "keep" and a patch target "target" in namespace fuzz.
func newFuzzCRServer(f *testing.F) *fuzzServer {
	f.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(fuzzCRD), &crd); err != nil {
		f.Fatal(err)
	}
	kinds, err := registry.CustomResourceKinds(&crd)
	if err != nil {
		f.Fatal(err)
	}
	reg := registry.Builtin()
	reg.Replace(nil, kinds)
	return newFuzzServerWith(f, reg, []fuzzSeedRequest{
		{"POST", fuzzGizmos, `{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"keep"},"spec":{"size":3,"ports":[{"name":"a","n":1}],"tags":["x"]}}`},
		{"POST", fuzzGizmos, `{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"target"},"spec":{"size":3,"name":"t","ports":[{"name":"a"}],"extra":{"k":1}}}`},
	})
}

const fuzzGizmos = "/apis/fuzz.example.com/v1/namespaces/fuzz/gizmos"

// FuzzServer_CustomResourceCreate posts any body, in any of the body
// encodings, as a custom resource of a schema with defaults, CEL rules,
// list types and embedded resources. An accepted create reads back as
// answered; nothing else changes.
func FuzzServer_CustomResourceCreate(f *testing.F) {
	fs := newFuzzCRServer(f)
	for _, seed := range []string{
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"a"},"spec":{"size":5,"port":"http","mode":"a"}}`,
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"generateName":"g-"},"spec":{"size":500}}`,
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"b"},"spec":{"ports":[{"name":"a"},{"name":"a"}],"tags":["x","x"]}}`,
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"c"},"spec":{"template":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","bogus":1}},"unknown":1}}`,
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"d"},"spec":{"size":1.5,"name":"UPPER","port":[1]},"status":{"ready":"no"}}`,
		"apiVersion: fuzz.example.com/v1\nkind: Gizmo\nmetadata:\n  name: y\nspec:\n  size: 2\n  extra: {a: [1, {b: null}]}\n",
		`{"apiVersion":"fuzz.example.com/v2","kind":"Gizmo","metadata":{"name":"e"}}`,
		`{"apiVersion":"fuzz.example.com/v1","kind":"Gizmo","metadata":{"name":"f"},"spec":{"extra":[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}}`,
		"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Gizmo",
	} {
		for i := range fuzzContentTypes {
			f.Add([]byte(seed), uint8(i))
		}
	}
	keep := fs.get(&testing.T{}, fuzzGizmos+"/keep")
	f.Fuzz(func(t *testing.T, body []byte, ct uint8) {
		contentType := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]
		rec := fs.do("POST", fuzzGizmos, contentType, "application/json", body)
		checkAnswer(t, "POST", rec)
		if rec.Code == http.StatusCreated {
			var created metav1.PartialObjectMetadata
			if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
				t.Fatalf("created: %v", err)
			}
			path := fuzzGizmos + "/" + created.Name
			if got := fs.get(t, path); !bytes.Equal(got, rec.Body.Bytes()) {
				t.Fatalf("created object reads back differently:\nanswer %s\nGET    %s", rec.Body, got)
			}
			checkAnswer(t, "DELETE", fs.do("DELETE", path, "", "", nil))
		}
		if got := fs.get(t, fuzzGizmos+"/keep"); !bytes.Equal(got, keep) {
			t.Fatalf("a create changed another object:\nbefore %s\nafter  %s", keep, got)
		}
	})
}

// FuzzServer_CustomResourcePatch sends any patch of the four types (a
// strategic merge patch must be refused with 415) to a stored custom
// resource and its status. An accepted patch's answer is what a GET reads
// afterwards; a refused one changes nothing.
func FuzzServer_CustomResourcePatch(f *testing.F) {
	fs := newFuzzCRServer(f)
	for _, seed := range []struct {
		pt    uint8
		patch string
	}{
		{0, `[{"op":"add","path":"/spec/tags/-","value":"y"}]`},
		{0, `[{"op":"replace","path":"/spec/size","value":1}]`},
		{0, `[{"op":"copy","from":"/spec","path":"/spec/extra/x"}]`},
		{1, `{"spec":{"size":4,"ports":[{"name":"b","n":2}]}}`},
		{1, `{"spec":{"size":"x"},"status":{"ready":true}}`},
		{2, `{"spec":{"size":5}}`},
		{3, "apiVersion: fuzz.example.com/v1\nkind: Gizmo\nmetadata:\n  name: target\nspec:\n  size: 9\n  ports:\n  - name: c\n"},
		{3, "apiVersion: fuzz.example.com/v1\nkind: Gizmo\nmetadata:\n  name: other\n"},
	} {
		for _, status := range []bool{false, true} {
			f.Add([]byte(seed.patch), seed.pt, false, status)
			f.Add([]byte(seed.patch), seed.pt, true, status)
		}
	}
	const target = fuzzGizmos + "/target"
	f.Fuzz(func(t *testing.T, patch []byte, pt uint8, force, status bool) {
		contentType := fuzzPatchTypes[int(pt)%len(fuzzPatchTypes)]
		path := target
		if status {
			path += "/status"
		}
		path += "?fieldManager=fuzz"
		if force {
			path += "&force=true"
		}
		before := fs.get(t, target)
		rec := fs.do("PATCH", path, contentType, "application/json", patch)
		checkAnswer(t, "PATCH "+contentType, rec)
		after := fs.get(t, target)
		switch {
		case contentType == "application/strategic-merge-patch+json" && rec.Code != http.StatusUnsupportedMediaType:
			t.Fatalf("strategic merge patch of a custom resource answered %d, want 415", rec.Code)
		case rec.Code == http.StatusOK || rec.Code == http.StatusCreated:
			if !bytes.Equal(after, rec.Body.Bytes()) {
				t.Fatalf("patched object reads back differently:\nanswer %s\nGET    %s", rec.Body, after)
			}
		case !bytes.Equal(before, after):
			t.Fatalf("a refused patch (%d %s) changed the object:\nbefore %s\nafter  %s", rec.Code, rec.Body, before, after)
		}
	})
}
