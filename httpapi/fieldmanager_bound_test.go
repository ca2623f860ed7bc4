package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOversized(t *testing.T) {
	const max = 3
	tests := []struct {
		name     string
		obj      any
		wantPath string
		wantN    int
	}{
		{"small", &corev1.ConfigMap{Data: map[string]string{"a": "b"}}, "", 0},
		{"finalizers", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"a", "b", "c", "d"}}}, "metadata.finalizers", 4},
		{"data", &corev1.ConfigMap{Data: map[string]string{"a": "", "b": "", "c": "", "d": ""}}, "data", 4},
		{"bytes are scalars", &corev1.ConfigMap{BinaryData: map[string][]byte{"a": []byte("0123456789")}}, "", 0},
		{"unstructured nested", map[string]interface{}{"spec": map[string]interface{}{"items": []interface{}{1, 2, 3, 4}}}, "spec.items", 4},
		{"in a list", map[string]interface{}{"l": []interface{}{map[string]interface{}{"m": []interface{}{1, 2, 3, 4}}}}, "l[0].m", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, n, ok := oversized(reflect.ValueOf(tt.obj), max)
			got := strings.TrimPrefix(strings.Join(path, ""), ".")
			if ok != (tt.wantPath != "") || got != tt.wantPath || n != tt.wantN {
				t.Errorf("got %q, %d, %v, want %q, %d", got, n, ok, tt.wantPath, tt.wantN)
			}
		})
	}
}

// BenchmarkOversized measures the bound's cost on a typical object, which
// every field-manager conversion pays.
func BenchmarkOversized(b *testing.B) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", Labels: map[string]string{"app": "x", "tier": "y"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Data: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"},
	}
	v := reflect.ValueOf(cm)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, ok := oversized(v, maxTrackedEntries); ok {
			b.Fatal("oversized")
		}
	}
}

// BenchmarkOversized_CRD measures the bound on a CustomResourceDefinition
// with a schema of 40 properties (about 11 KB of JSON), which each of its
// writes converts twice.
func BenchmarkOversized_CRD(b *testing.B) {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range 40 {
		props[fmt.Sprintf("field%02d", i)] = apiextensionsv1.JSONSchemaProps{Type: "object", Description: "A nested block of settings.",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"enabled": {Type: "boolean"}, "mode": {Type: "string"}, "limit": {Type: "integer"}}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}},
		}}},
	}
	v := reflect.ValueOf(crd)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, ok := oversized(v, maxTrackedEntries); ok {
			b.Fatal("oversized")
		}
	}
}
