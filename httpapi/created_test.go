package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// crdFromYAML parses a CustomResourceDefinition.
func crdFromYAML(t *testing.T, doc string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// TestServer_Create_CustomResourceAnswer: the answer to a POST of a
// custom resource is the stored object read back as any read serves it
// (decoded, pruned and defaulted again, encoded), byte for byte, whether
// or not the create takes the shortcut of primeCreated; and the shortcut
// is taken where the kind allows it.
func TestServer_Create_CustomResourceAnswer(t *testing.T) {
	widgets := crdFromYAML(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.example.com}
spec:
  group: test.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
              ratio: {type: number}
              text: {type: string}
              tags: {type: array, items: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          aaa: {type: string}
          spec:
            type: object
            properties:
              size: {type: integer, default: 5}
              ratio: {type: number}
              text: {type: string}
              tags: {type: array, items: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, default: {phase: New}, properties: {phase: {type: string}}}
`)
	plain := crdFromYAML(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: plains.test.example.com}
spec:
  group: test.example.com
  scope: Cluster
  names: {plural: plains, singular: plain, kind: Plain}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {n: {type: integer, default: 1}, s: {type: string}}}
          status: {type: object, properties: {phase: {type: string, default: Idle}}}
`)
	ts, db, reg := newBenchServerRegistry(t)
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{gadgetCRD(t), widgets, plain} {
		kinds, err := registry.CustomResourceKinds(crd)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kinds {
			reg.Add(k)
		}
	}
	gadgets := "/apis/bench.example.com/v1/namespaces/default/gadgets"
	tests := []struct {
		name, path, body string
		// fast: the answer must come from primeCreated.
		fast bool
	}{
		{"minimal", gadgets, `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a"}}`, true},
		{"bench body", gadgets, `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"b"},"spec":{"notes":"xx","field00":"a","field01":8080,"field02":["a","b"],"field03":{"enabled":true,"mode":"auto","limit":3}}}`, true},
		{"defaults, status dropped", gadgets, `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"c"},"spec":{"field01":1,"field03":{},"field07":{"mode":"off"},"unknown":1},"status":{"x":1}}`, true},
		{"metadata", gadgets, `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"generateName":"d-","labels":{"z":"1","a":"2"},"annotations":{"note":"<b>&amp;</b> é \u2028"},"finalizers":["example.com/f"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u1"}]},"spec":{"field01":2,"notes":"<>&\"\\ \u00e9 \ud83d\ude00"}}`, true},
		{"numbers", gadgets, `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"e"},"spec":{"field01":10,"field05":1.0,"field09":12,"field03":{"limit":2e0}}}`, true},
		{"storage version with a member before kind", "/apis/test.example.com/v2/namespaces/default/widgets", `{"apiVersion":"test.example.com/v2","kind":"Widget","aaa":"x","metadata":{"name":"f"},"spec":{"ratio":1e30,"text":"t","extra":{"b":[1,2.5,{"z":null,"a":true}],"a":"\u003c"}}}`, false},
		{"storage version, status default", "/apis/test.example.com/v2/namespaces/default/widgets", `{"apiVersion":"test.example.com/v2","kind":"Widget","metadata":{"name":"g"},"spec":{}}`, false},
		{"other version", "/apis/test.example.com/v1/namespaces/default/widgets", `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"h"},"spec":{"tags":["x"]}}`, false},
		{"status subresource, default inside status", "/apis/test.example.com/v1/plains", `{"apiVersion":"test.example.com/v1","kind":"Plain","metadata":{"name":"i"},"spec":{"s":"s"},"status":{}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(ts.URL+tt.path+"?fieldManager=m", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST: %d %s", resp.StatusCode, got)
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Metadata   struct{ Name, Namespace string }
			}
			if err := json.Unmarshal(got, &meta); err != nil {
				t.Fatal(err)
			}
			var k *registry.Kind
			for _, kk := range reg.Kinds() {
				if kk.GVK.GroupVersion().String() == meta.APIVersion && strings.HasSuffix(tt.path, "/"+kk.Resource) {
					k = kk
				}
			}
			if k == nil {
				t.Fatalf("no kind for %s", tt.path)
			}
			stored, err := db.Get(context.Background(), k.StoreKey(meta.Metadata.Namespace, meta.Metadata.Name))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := k.DecodeStored(stored.Value)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("answer\n%s\nwant the object as read back\n%s", got, want)
			}
			fast, ok := createdJSON(k, stored.Value)
			if ok && k.CreatedReadsBack && string(fast) != string(want) {
				t.Errorf("createdJSON\n%s\nwant\n%s", fast, want)
			}
			if gotFast := ok && k.CreatedReadsBack; gotFast != tt.fast {
				t.Errorf("answer from primeCreated: %v, want %v", gotFast, tt.fast)
			}
		})
	}
}

// FuzzCreatedJSON: for any object stored as custom resources are
// (registry.Kind.EncodeStorage, then the store's resourceVersion stamp),
// createdJSON either declines or gives the object's encoding with
// apiVersion and kind, byte for byte as encoding/json writes it.
func FuzzCreatedJSON(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"x":"<y>"}},"spec":{"image":"i","n":[1,2.5]}}`))
	f.Add([]byte(`{"aaa":1,"metadata":{"zzz":1,"annotations":{"a":"b"}},"spec":null}`))
	f.Add([]byte(`{"metadata":{"name":"a\u2028"},"zz":{"q\u003c":"\u00e9"}}`))
	f.Add([]byte(`{"metadata":{}}`))
	k := testCRKind(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil || m == nil {
			return
		}
		value, err := k.EncodeStorage(&unstructured.Unstructured{Object: m})
		if err != nil {
			return
		}
		stamped, err := store.StampRevision(value, 42)
		if err != nil {
			return
		}
		got, ok := createdJSON(k, stamped)
		if !ok {
			return
		}
		var back map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(stamped, &back); err != nil {
			t.Fatal(err)
		}
		back["apiVersion"], back["kind"] = k.GVK.GroupVersion().String(), k.GVK.Kind
		want, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("createdJSON(%s) =\n%s\nwant\n%s", stamped, got, want)
		}
	})
}
