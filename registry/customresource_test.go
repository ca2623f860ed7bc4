package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// testCRD is a CronTab CRD: v1 stored with status and a printer column,
// v1beta1 served and deprecated, v1alpha1 not served.
const testCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Image, type: string, jsonPath: .spec.image}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas, priority: 1}
    selectableFields:
    - jsonPath: .spec.image
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image: {type: string, maxLength: 5}
              replicas: {type: integer, default: 1}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha1
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
`

func testCRKinds(t testing.TB, doc string) []*Kind {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	kinds, err := CustomResourceKinds(&crd)
	if err != nil {
		t.Fatalf("CustomResourceKinds: %v", err)
	}
	return kinds
}

func decodeCR(t *testing.T, k *Kind, js string) *unstructured.Unstructured {
	t.Helper()
	obj, _, strictErrs, err := k.DecodeJSON([]byte(js), true)
	if err != nil || len(strictErrs) > 0 {
		t.Fatalf("DecodeJSON(%s): %v %v", js, strictErrs, err)
	}
	if k.NormalizeOnDecode != nil {
		k.NormalizeOnDecode(obj)
	}
	return obj.(*unstructured.Unstructured)
}

func TestCustomResourceKinds(t *testing.T) {
	kinds := testCRKinds(t, testCRD)
	var got []string
	for _, k := range kinds {
		got = append(got, k.GVK.String()+" "+k.Resource+" "+k.Singular+" "+k.ListKind+" "+k.StorageResource+" "+k.StorageGVK.Version)
	}
	want := []string{
		"stable.example.com/v1, Kind=CronTab crontabs crontab CronTabList crontabs.stable.example.com v1",
		"stable.example.com/v1beta1, Kind=CronTab crontabs crontab CronTabList crontabs.stable.example.com v1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kinds = %q, want %q (served versions only, defaults filled)", got, want)
	}
	v1, beta := kinds[0], kinds[1]
	if !v1.Namespaced || !v1.StatusSubresource || beta.StatusSubresource || !v1.Unstructured {
		t.Errorf("v1 namespaced %v status %v, v1beta1 status %v, unstructured %v", v1.Namespaced, v1.StatusSubresource, beta.StatusSubresource, v1.Unstructured)
	}
	if !reflect.DeepEqual(v1.ShortNames, []string{"ct"}) || !reflect.DeepEqual(v1.Categories, []string{"all"}) {
		t.Errorf("shortNames %v categories %v", v1.ShortNames, v1.Categories)
	}
	if v1.DeprecationWarning != "" || beta.DeprecationWarning != "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab" {
		t.Errorf("deprecation warnings %q, %q", v1.DeprecationWarning, beta.DeprecationWarning)
	}
	if got := v1.InternalTypeName(true); got != "*unstructured.UnstructuredList" {
		t.Errorf("InternalTypeName(true) = %q", got)
	}
	if want := []string{"metadata.name", "metadata.namespace", "spec.image"}; !reflect.DeepEqual(v1.FieldSelectorKeys, want) {
		t.Errorf("FieldSelectorKeys = %v, want %v", v1.FieldSelectorKeys, want)
	}
	if err := v1.CheckFieldSelectorKey("spec.replicas"); err == nil || err.Error() != "field label not supported: spec.replicas" {
		t.Errorf("CheckFieldSelectorKey(spec.replicas) = %v", err)
	}
}

func TestCustomResourceKinds_Refused(t *testing.T) {
	tests := []struct{ name, from, to, wantErr string }{
		{"unknown conversion", "  scope: Namespaced\n", "  scope: Namespaced\n  conversion: {strategy: Magic}\n", `conversion strategy "Magic" is not supported`},
		{"two storage versions", "    served: true\n    storage: false\n    deprecated", "    served: true\n    storage: true\n    deprecated", "more than one storage version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(testCRD, tt.from, tt.to, 1)
			if doc == testCRD {
				t.Fatalf("the test's replacement %q matched nothing", tt.from)
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
				t.Fatal(err)
			}
			_, err := CustomResourceKinds(&crd)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestKind_DecodeJSON_CustomResource(t *testing.T) {
	v1 := testCRKinds(t, testCRD)[0]
	obj, gvk, strictErrs, err := v1.DecodeJSON([]byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","bogus":1},"spec":{"image":"i","extra":{"x":1}},"other":true}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if *gvk != (schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}) {
		t.Errorf("gvk = %v", gvk)
	}
	var msgs []string
	for _, e := range strictErrs {
		msgs = append(msgs, e.Error())
	}
	if want := []string{`unknown field "metadata.bogus"`, `unknown field "other"`, `unknown field "spec.extra"`}; !reflect.DeepEqual(msgs, want) {
		t.Errorf("strict errors = %q, want %q", msgs, want)
	}
	v1.NormalizeOnDecode(obj)
	want := map[string]interface{}{
		"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]interface{}{"name": "a"},
		"spec":     map[string]interface{}{"image": "i", "replicas": int64(1)},
	}
	if got := obj.(*unstructured.Unstructured).Object; !reflect.DeepEqual(got, want) {
		t.Errorf("decoded = %v, want %v (pruned, defaulted)", got, want)
	}

	_, gvk, _, err = v1.DecodeJSON([]byte(`{"apiVersion":"stable.example.com/v1","metadata":{"name":"a"}}`), true)
	if err == nil || !strings.HasPrefix(err.Error(), "Object 'Kind' is missing in '") || gvk.Kind != "" {
		t.Errorf("no kind: err %v gvk %v", err, gvk)
	}
}

func TestCRStrategy_PrepareForUpdate(t *testing.T) {
	v1 := testCRKinds(t, testCRD)[0]
	old := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","generation":4},"spec":{"image":"i"},"status":{"phase":"Old"}}`)
	tests := []struct {
		name, body string
		wantGen    int64
		wantStatus interface{}
	}{
		{"labels only", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"image":"i"}}`, 4, map[string]interface{}{"phase": "Old"}},
		{"spec change", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"image":"j"}}`, 5, map[string]interface{}{"phase": "Old"}},
		{"status change ignored", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"image":"i"},"status":{"phase":"New"}}`, 4, map[string]interface{}{"phase": "Old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeCR(t, v1, tt.body)
			obj.SetGeneration(old.GetGeneration())
			v1.Strategy.PrepareForUpdate(obj, old)
			if obj.GetGeneration() != tt.wantGen {
				t.Errorf("generation = %d, want %d", obj.GetGeneration(), tt.wantGen)
			}
			if got := obj.Object["status"]; !reflect.DeepEqual(got, tt.wantStatus) {
				t.Errorf("status = %v, want %v", got, tt.wantStatus)
			}
		})
	}

	st := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"image":"changed"},"status":{"phase":"New"}}`)
	v1.Strategy.(StatusStrategy).PrepareForStatusUpdate(st, old)
	if img, _, _ := unstructured.NestedString(st.Object, "spec", "image"); img != "i" || st.Object["status"].(map[string]interface{})["phase"] != "New" || st.GetGeneration() != 4 {
		t.Errorf("status update kept spec.image %q status %v generation %d, want i, New, 4", img, st.Object["status"], st.GetGeneration())
	}
}

func TestCRStrategy_Validate(t *testing.T) {
	v1 := testCRKinds(t, testCRD)[0]
	obj := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"Bad_Name","namespace":"ns1"},"spec":{"image":3,"ports":[{"name":"a"},{"name":"a"}]}}`)
	v1.Strategy.PrepareForCreate(obj)
	var got []string
	for _, e := range v1.Strategy.Validate(obj) {
		got = append(got, e.Error())
	}
	want := []string{
		`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`spec.image: Invalid value: "integer": spec.image in body must be of type string: "integer"`,
		`spec.ports[1]: Duplicate value: {"name":"a"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate =\n%q\nwant\n%q", got, want)
	}
	if obj.GetGeneration() != 1 {
		t.Errorf("PrepareForCreate: generation %d, want 1", obj.GetGeneration())
	}

	ok := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"good","namespace":"ns1","finalizers":["unqualified"]},"spec":{"image":"x"}}`)
	if errs := v1.Strategy.Validate(ok); len(errs) != 0 {
		t.Errorf("Validate of a valid object: %v", errs)
	}
	warnings := v1.Strategy.(WarningStrategy).WarningsOnCreate(ok)
	if want := []string{`metadata.finalizers: "unqualified": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`}; !reflect.DeepEqual(warnings, want) {
		t.Errorf("WarningsOnCreate = %q, want %q", warnings, want)
	}
}

func TestKind_TableRow_CustomResource(t *testing.T) {
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC) }
	kinds := testCRKinds(t, testCRD)
	v1, beta := kinds[0], kinds[1]
	var cols []string
	for _, c := range v1.TableColumns {
		cols = append(cols, c.Name+"/"+c.Type+"/"+string(rune('0'+c.Priority)))
	}
	if want := []string{"Name/string/0", "Image/string/0", "Replicas/integer/1"}; !reflect.DeepEqual(cols, want) {
		t.Errorf("v1 columns %v, want %v", cols, want)
	}
	obj := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"replicas":3}}`)
	row, err := v1.TableRow(obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"a", nil, int64(3)}; !reflect.DeepEqual(row, want) {
		t.Errorf("v1 row %#v, want %#v", row, want)
	}
	// Without additionalPrinterColumns: Name and Age.
	if len(beta.TableColumns) != 2 || beta.TableColumns[1].Name != "Age" || beta.TableColumns[1].Type != "date" ||
		beta.TableColumns[1].Description != (metav1.ObjectMeta{}).SwaggerDoc()["creationTimestamp"] {
		t.Errorf("v1beta1 columns %+v, want Name and the default Age", beta.TableColumns)
	}
	obj.SetAPIVersion("stable.example.com/v1beta1")
	row, err = beta.TableRow(obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"a", "60m"}; !reflect.DeepEqual(row, want) {
		t.Errorf("v1beta1 row %#v, want %#v", row, want)
	}
	if got := v1.FieldSet(obj); !reflect.DeepEqual(map[string]string(got), map[string]string{"metadata.name": "a", "metadata.namespace": "", "spec.image": ""}) {
		t.Errorf("FieldSet = %v", got)
	}
}

func TestKind_DecodeStored_CustomResource(t *testing.T) {
	kinds := testCRKinds(t, testCRD)
	v1, beta := kinds[0], kinds[1]
	obj := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","resourceVersion":"7"},"spec":{"image":"i"}}`)
	value, err := v1.EncodeStorage(obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"name":"a"},"spec":{"image":"i","replicas":1}}`; string(value) != want {
		t.Errorf("stored %s, want %s", value, want)
	}
	// A stored object without the default (written before the schema had
	// it) is defaulted on read; the other version serves the same object.
	for _, k := range []*Kind{v1, beta} {
		got, err := k.DecodeStored([]byte(`{"metadata":{"name":"a"},"spec":{"image":"i"}}`))
		if err != nil {
			t.Fatal(err)
		}
		u := got.(*unstructured.Unstructured)
		if u.GetAPIVersion() != k.GVK.GroupVersion().String() || u.Object["spec"].(map[string]interface{})["replicas"] != int64(1) {
			t.Errorf("%s: DecodeStored = %v, want apiVersion %s and replicas 1", k.GVK.Version, u.Object, k.GVK.GroupVersion())
		}
	}
}

// TestCRStrategy_ValidateUpdate_Ratcheting: an update may keep a value
// that breaks the schema (written before the schema tightened) but not
// introduce one.
func TestCRStrategy_ValidateUpdate_Ratcheting(t *testing.T) {
	v1 := testCRKinds(t, testCRD)[0]
	old := decodeCR(t, v1, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"ns1","resourceVersion":"3"},"spec":{"image":"too-long-already"}}`)
	tests := []struct {
		name, body string
		want       []string
	}{
		{"unchanged invalid value", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"ns1","resourceVersion":"3","labels":{"x":"y"}},"spec":{"image":"too-long-already"}}`, nil},
		{"changed to another invalid value", `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"ns1","resourceVersion":"3"},"spec":{"image":"still-too-long"}}`,
			[]string{"spec.image: Too long: may not be more than 5 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeCR(t, v1, tt.body)
			var got []string
			for _, e := range v1.Strategy.ValidateUpdate(obj, old) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ValidateUpdate = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCustomResourceKinds_WebhookConversion: the storage version is
// served; another version answers with an error instead of calling the
// webhook.
func TestCustomResourceKinds_WebhookConversion(t *testing.T) {
	doc := strings.Replace(testCRD, "  scope: Namespaced\n", "  scope: Namespaced\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {url: \"https://conv.example.com\"}\n", 1)
	kinds := testCRKinds(t, doc)
	v1, beta := kinds[0], kinds[1]
	stored := []byte(`{"metadata":{"name":"a"},"spec":{"image":"i"}}`)
	if _, err := v1.DecodeStored(stored); err != nil {
		t.Errorf("storage version: DecodeStored: %v", err)
	}
	wantErr := "conversion webhook for stable.example.com/v1beta1, Kind=CronTab failed: edgeapi does not call conversion webhooks"
	if _, err := beta.DecodeStored(stored); err == nil || err.Error() != wantErr {
		t.Errorf("v1beta1 DecodeStored: %v, want %q", err, wantErr)
	}
	obj := decodeCR(t, beta, `{"apiVersion":"stable.example.com/v1beta1","kind":"CronTab","metadata":{"name":"a"}}`)
	if _, err := beta.EncodeStorage(obj); err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("v1beta1 EncodeStorage: %v, want %q", err, wantErr)
	}
}

// cronTabV1 is a CronTab body of v1 with an unknown field, a field the
// schema defaults left out, and an image too long for the schema.
const cronTabV1 = `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"ns1"},"spec":{"image":"toolong","extra":1,"ports":[{"name":"p"}]}}`

// crAnswers is what a fresh kind answers about one object: decoding
// (pruning, defaulting, unknown fields), validation causes, reading the
// stored form back through the other version, and the apply schema.
func crAnswers(t *testing.T, v1, beta *Kind) []string {
	t.Helper()
	obj, _, strictErrs, err := v1.DecodeJSON([]byte(cronTabV1), true)
	if err != nil {
		t.Fatalf("DecodeJSON: %v", err)
	}
	v1.NormalizeOnDecode(obj)
	out := []string{fmt.Sprint(obj.(*unstructured.Unstructured).Object), fmt.Sprint(strictErrs)}
	v1.Strategy.PrepareForCreate(obj)
	for _, e := range v1.Strategy.Validate(obj) {
		out = append(out, e.Error())
	}
	read, err := beta.DecodeStored([]byte(`{"metadata":{"name":"a"},"spec":{"image":"i"}}`))
	if err != nil {
		t.Fatalf("DecodeStored: %v", err)
	}
	out = append(out, fmt.Sprint(read.(*unstructured.Unstructured).Object))
	js, err := json.Marshal(v1.ApplySchema())
	if err != nil {
		t.Fatal(err)
	}
	return append(out, string(js))
}

// TestCustomResourceKinds_Lazy: a kind keeps its schema as JSON until a
// request needs it, and the first requests, however many come at once,
// get the answers every later request gets.
func TestCustomResourceKinds_Lazy(t *testing.T) {
	kinds := testCRKinds(t, testCRD)
	for _, k := range kinds {
		if s := k.Strategy.(*crStrategy).schema; s.parts != nil || s.cel != nil {
			t.Fatalf("%s: schema built before any request", k.GVK)
		}
	}
	want := crAnswers(t, kinds[0], kinds[1])
	if want[1] != `[unknown field "spec.extra"]` || !strings.Contains(want[0], "replicas:1") || !strings.Contains(want[3], "replicas:1") {
		t.Fatalf("answers %q: want spec.extra unknown and replicas defaulted on decode and on read", want)
	}
	if want[2] != "spec.image: Too long: may not be more than 5 bytes" {
		t.Fatalf("Validate causes %q", want[2:len(want)-2])
	}
	// Fresh kinds, whose first requests all come at once.
	for round := 0; round < 20; round++ {
		kinds := testCRKinds(t, testCRD)
		got := make([][]string, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = crAnswers(t, kinds[0], kinds[1])
			}()
		}
		wg.Wait()
		for i := range got {
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("round %d, request %d: %q, want %q", round, i, got[i], want)
			}
		}
	}
}

// TestCustomResourceKinds_SharedSchema: versions with the same schema
// share what it is built into; versions with another do not.
func TestCustomResourceKinds_SharedSchema(t *testing.T) {
	doc := strings.Replace(testCRD, "      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}", "      openAPIV3Schema: {type: object}", 1)
	doc = strings.Replace(doc, "  - name: v1alpha1\n    served: false", "  - name: v1alpha1\n    served: true", 1)
	kinds := testCRKinds(t, doc)
	if len(kinds) != 3 {
		t.Fatalf("%d kinds, want 3", len(kinds))
	}
	schemaOf := func(k *Kind) *crSchema { return k.Strategy.(*crStrategy).schema }
	if schemaOf(kinds[1]) != schemaOf(kinds[2]) {
		t.Errorf("v1beta1 and v1alpha1 have the same schema but do not share it")
	}
	if schemaOf(kinds[0]) == schemaOf(kinds[1]) {
		t.Errorf("v1 and v1beta1 share a schema they do not have in common")
	}
}

// TestCustomResourceKinds_SchemaNotBuilt: a schema that cannot be built
// (CRD validation refuses it: only a CRD stored by a laxer version could
// have one) still gives kinds, as kube-apiserver serves its discovery, and
// every request that needs the schema gets kube-apiserver's 500.
func TestCustomResourceKinds_SchemaNotBuilt(t *testing.T) {
	kinds := testCRKinds(t, strings.Replace(testCRD, "replicas: {type: integer, default: 1}", "replicas: {default: 1}", 1))
	v1 := kinds[0]
	_, _, _, err := v1.DecodeJSON([]byte(cronTabV1), true)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "the server could not properly serve the CR schema: schema is not structural") {
		t.Errorf("DecodeJSON: %v, want a 500 naming the schema", err)
	}
	if _, err := v1.DecodeStored([]byte(`{"metadata":{"name":"a"}}`)); !apierrors.IsInternalError(err) {
		t.Errorf("DecodeStored: %v, want the 500", err)
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]interface{}{"name": "a"}}}
	if errs := v1.Strategy.Validate(obj); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("Validate: %v, want one internal error", errs)
	}
}

// TestHasDefaultsV1 compares the kind's cheap look for defaults with the
// structural schema's.
func TestHasDefaultsV1(t *testing.T) {
	for _, doc := range []string{
		`{type: object}`,
		`{type: object, properties: {a: {type: string, default: x}}}`,
		`{type: object, properties: {a: {type: array, items: {type: object, properties: {b: {type: integer, default: 1}}}}}}`,
		`{type: object, properties: {a: {type: object, additionalProperties: {type: string, default: y}}}}`,
		`{type: object, properties: {a: {type: object, additionalProperties: {type: string}}, b: {type: array, items: {type: string}}}}`,
		`{type: object, properties: {a: {type: object, default: {}, properties: {b: {type: string}}}}}`,
	} {
		var v1 apiextensionsv1.JSONSchemaProps
		if err := yaml.UnmarshalStrict([]byte(doc), &v1); err != nil {
			t.Fatal(err)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
			t.Fatal(err)
		}
		st, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := hasDefaultsV1(&v1), hasDefaults(st); got != want {
			t.Errorf("%s: hasDefaultsV1 %v, structural %v", doc, got, want)
		}
	}
}

// hasDefaults reports whether any node of s has a default.
func hasDefaults(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil {
		return true
	}
	if s.Items != nil && hasDefaults(s.Items) {
		return true
	}
	if s.AdditionalProperties != nil && hasDefaults(s.AdditionalProperties.Structural) {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(&p) {
			return true
		}
	}
	return false
}

// TestCustomResourceKinds_InputUnchanged: the kinds are built with the
// API server's defaults without writing them into the caller's CRD.
func TestCustomResourceKinds_InputUnchanged(t *testing.T) {
	doc := strings.Replace(testCRD, "  scope: Namespaced\n", "  scope: Namespaced\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {service: {namespace: ns, name: conv}}\n", 1)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	crd.Status.StoredVersions = make([]string, 0, 4)
	before := crd.DeepCopy()
	kinds, err := CustomResourceKinds(&crd)
	if err != nil {
		t.Fatal(err)
	}
	// storedVersions is empty with room to grow: a default appended to it
	// must not land in the caller's array.
	if !reflect.DeepEqual(&crd, before) || crd.Status.StoredVersions[:1][0] != "" {
		t.Errorf("CustomResourceKinds changed its argument:\n%+v\nwas\n%+v", crd, before)
	}
	if kinds[0].ListKind != "CronTabList" || kinds[0].Singular != "crontab" {
		t.Errorf("list kind %q, singular %q: want the defaults CronTabList, crontab", kinds[0].ListKind, kinds[0].Singular)
	}
}

// TestCustomResourceKinds_OpenAPISchema: the schema a kind keeps
// (compressed) is published as the CRD version's schema.
func TestCustomResourceKinds_OpenAPISchema(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(testCRD), &crd); err != nil {
		t.Fatal(err)
	}
	kinds, err := CustomResourceKinds(&crd)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range kinds {
		want, err := json.Marshal(crd.Spec.Versions[i].Schema.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := k.OpenAPISchema()
			if err != nil || string(got) != string(want) {
				t.Errorf("%s: OpenAPISchema() = %s, %v; want %s", k.GVK, got, err, want)
			}
		}
	}
}

// TestCoercedSimpleMetadata: where coercedSimpleMetadata answers, it is
// what apiextensions-apiserver's ObjectMeta round trip gives, with no
// unknown field.
func TestCoercedSimpleMetadata(t *testing.T) {
	tests := []struct {
		metadata string
		simple   bool
	}{
		{`{"name":"a"}`, true},
		{`{"name":"a","namespace":"ns","generateName":"g-","labels":{"a":"b","c":""},"annotations":{"x/y":"<z>"},"finalizers":["f","g"]}`, true},
		{`{"name":"","labels":{},"annotations":{},"finalizers":[]}`, true},
		{`{}`, true},
		{`{"name":1}`, false},
		{`{"labels":{"a":1}}`, false},
		{`{"labels":{"a":null}}`, false},
		{`{"labels":null}`, false},
		{`{"finalizers":[1]}`, false},
		{`{"finalizers":"f"}`, false},
		{`{"uid":"u"}`, false},
		{`{"creationTimestamp":null}`, false},
		{`{"unknownField":1}`, false},
		{`"string"`, false},
		{`null`, false},
	}
	for _, tt := range tests {
		var md interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(tt.metadata), &md); err != nil {
			t.Fatal(err)
		}
		got, simple := coercedSimpleMetadata(md)
		if simple != tt.simple {
			t.Errorf("%s: simple = %v, want %v", tt.metadata, simple, tt.simple)
		}
		if !simple {
			continue
		}
		obj := map[string]interface{}{"metadata": runtime.DeepCopyJSONValue(md)}
		om, found, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
		if err != nil || !found || len(unknown) > 0 {
			t.Fatalf("%s: GetObjectMetaWithOptions: %v %v %v", tt.metadata, found, unknown, err)
		}
		if err := schemaobjectmeta.SetObjectMeta(obj, om); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, obj["metadata"]) {
			t.Errorf("%s: coercedSimpleMetadata = %#v, want %#v", tt.metadata, got, obj["metadata"])
		}
	}
}

// TestValidationMeta_GetManagedFields: object-meta validation finds the
// same errors in managedFields through validationMeta as through the
// Unstructured, and plain entries convert as the unstructured converter
// converts them (fieldsV1 aside).
func TestValidationMeta_GetManagedFields(t *testing.T) {
	for _, mf := range []string{
		`[{"manager":"m","operation":"Update","apiVersion":"a/v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]`,
		`[{"manager":"m","operation":"Apply","subresource":"status"},{"manager":"n","operation":"Bad","fieldsType":"FieldsV2"}]`,
		`[{"manager":"m","operation":"Bad","time":"yesterday"}]`,
		`[{"manager":"m","operation":"Bad","fieldsV1":"x"}]`,
		`[{"manager":"m","operation":"Bad","unknown":1}]`,
		`[{"manager":1,"operation":"Bad"}]`,
		`["x"]`,
		`[]`,
		`"x"`,
		`null`,
	} {
		var v interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(mf), &v); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"managedFields": v}}}
		want := u.GetManagedFields()
		got := validationMeta{u}.GetManagedFields()
		if w, g := metav1validation.ValidateManagedFields(want, field.NewPath("m")), metav1validation.ValidateManagedFields(got, field.NewPath("m")); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: validation through validationMeta %v, want %v", mf, g, w)
		}
		for i := range want {
			want[i].FieldsV1 = nil
		}
		for i := range got {
			got[i].FieldsV1 = nil
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s: GetManagedFields = %+v, want %+v", mf, got, want)
		}
	}
}
