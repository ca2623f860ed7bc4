package httpapi

import (
	"encoding/json"
	goruntime "runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema"
	"github.com/edgeapi/edgeapi/registry"
)

// testConfigMap decodes a ConfigMap and sets its kind.
func testConfigMap(t *testing.T, js string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(js), &cm); err != nil {
		t.Fatal(err)
	}
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	return &cm
}

// TestSourcedTypeConverter_TypedToObject: the object of a typed value the
// converter made is a copy of the typed object it was made of, with the
// content of the scheme converter's unstructured answer; other values get
// that answer, and an entry goes once its typed value is collected.
func TestSourcedTypeConverter_TypedToObject(t *testing.T) {
	base := applyschema.NewTypeConverter(registry.Scheme)
	tc := newSourcedTypeConverter(base)
	cm := testConfigMap(t, `{"metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}},"data":{"k":"v"},"binaryData":{"b":"AAE="}}`)
	tv, err := tc.ObjectToTyped(cm)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tc.TypedToObject(tv)
	if err != nil {
		t.Fatal(err)
	}
	gotCM, ok := got.(*corev1.ConfigMap)
	if !ok || gotCM == cm {
		t.Fatalf("TypedToObject = %T %p, want a copy of the *v1.ConfigMap %p", got, got, cm)
	}
	want, err := base.TypedToObject(tv)
	if err != nil {
		t.Fatal(err)
	}
	gotU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(gotU, want.(runtime.Unstructured).UnstructuredContent()) {
		t.Errorf("TypedToObject content\n%v\nwant the scheme converter's\n%v", gotU, want)
	}
	if got.GetObjectKind().GroupVersionKind() != want.GetObjectKind().GroupVersionKind() {
		t.Errorf("kind %v, want %v", got.GetObjectKind().GroupVersionKind(), want.GetObjectKind().GroupVersionKind())
	}

	// A typed value it did not make gets the scheme converter's answer.
	tv2, err := base.ObjectToTyped(cm)
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := tc.TypedToObject(tv2); err != nil {
		t.Fatal(err)
	} else if _, isCM := obj.(*corev1.ConfigMap); isCM {
		t.Errorf("TypedToObject of a value made elsewhere = %T, want the unstructured answer", obj)
	}
	if n := tc.len(); n != 1 {
		t.Errorf("%d values remembered, want 1", n)
	}

	tv = nil
	for i := 0; i < 100 && tc.len() > 0; i++ {
		goruntime.GC()
		goruntime.Gosched()
	}
	if n := tc.len(); n != 0 {
		t.Errorf("%d values remembered after their typed values were collected, want 0", n)
	}
}

// TestSourcedTypeConverter_FieldManager: updates and applies through a
// field manager with the converter give the managedFields one with the
// scheme's converter gives, with live managers of the object's apiVersion
// and of one the scheme does not have.
func TestSourcedTypeConverter_FieldManager(t *testing.T) {
	k := registry.Builtin().Snapshot().ByGVK(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if k == nil {
		t.Fatal("no ConfigMap kind")
	}
	newFM := func(tc managedfields.TypeConverter) *managedfields.FieldManager {
		fm, err := managedfields.NewDefaultFieldManager(tc, runtime.UnsafeObjectConvertor(registry.Scheme), registry.Scheme, registry.Scheme,
			k.GVK, k.GVK.GroupVersion(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return fm
	}
	base := applyschema.NewTypeConverter(registry.Scheme)
	sourced := newSourcedTypeConverter(base)
	plain, fast := newFM(base), newFM(boundedTypeConverter{sourced})
	live := `{"metadata":{"name":"a","namespace":"ns","managedFields":[` +
		`{"manager":"a","operation":"Update","apiVersion":"v1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}},` +
		`{"manager":"b","operation":"Apply","apiVersion":"v1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:j":{}}}},` +
		`{"manager":"c","operation":"Update","apiVersion":"v1beta1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:old":{}}}}` +
		`]},"data":{"k":"v","j":"w","old":"o"}}`
	update := `{"metadata":{"name":"a","namespace":"ns"},"data":{"k":"v2","j":"w","n":"new"}}`
	for _, manager := range []string{"a", "b", "d"} {
		want := plain.UpdateNoErrors(testConfigMap(t, live), testConfigMap(t, update), manager)
		got := fast.UpdateNoErrors(testConfigMap(t, live), testConfigMap(t, update), manager)
		if g, w := typedWithoutTimes(t, got), typedWithoutTimes(t, want); g != w {
			t.Errorf("update by %s:\n%s\nwant\n%s", manager, g, w)
		}
	}
	patch := testConfigMap(t, `{"metadata":{"name":"a","namespace":"ns"},"data":{"j":"w2"}}`)
	patchU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(patch)
	if err != nil {
		t.Fatal(err)
	}
	for _, manager := range []string{"b", "e"} {
		want, werr := plain.Apply(testConfigMap(t, live), unstructuredOf(patchU), manager, true)
		got, gerr := fast.Apply(testConfigMap(t, live), unstructuredOf(patchU), manager, true)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("apply by %s: error %v, want %v", manager, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if g, w := typedWithoutTimes(t, got), typedWithoutTimes(t, want); g != w {
			t.Errorf("apply by %s:\n%s\nwant\n%s", manager, g, w)
		}
	}
}

// unstructuredOf wraps a copy of content.
func unstructuredOf(content map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}
}
