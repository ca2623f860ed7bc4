package httpapi

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func entries(n int) []interface{} {
	l := make([]interface{}, n)
	for i := range l {
		l[i] = i
	}
	return l
}

func TestCheckStrategicListSizes(t *testing.T) {
	const max = maxStrategicListEntries
	orig := map[string]interface{}{"metadata": map[string]interface{}{"finalizers": entries(max - 10)}}
	tests := []struct {
		name  string
		patch map[string]interface{}
		want  bool // refused
	}{
		{"no lists", map[string]interface{}{"data": map[string]interface{}{"k": "v"}}, false},
		{"merge within", map[string]interface{}{"metadata": map[string]interface{}{"finalizers": entries(10)}}, false},
		{"merge past", map[string]interface{}{"metadata": map[string]interface{}{"finalizers": entries(11)}}, true},
		{"order past", map[string]interface{}{"metadata": map[string]interface{}{"$setElementOrder/finalizers": entries(11)}}, true},
		{"order and merge past", map[string]interface{}{"metadata": map[string]interface{}{
			"$setElementOrder/finalizers": entries(6), "finalizers": entries(5)}}, true},
		{"delete alone is linear", map[string]interface{}{"metadata": map[string]interface{}{
			"$deleteFromPrimitiveList/finalizers": entries(max)}}, false},
		{"delete with merge", map[string]interface{}{"metadata": map[string]interface{}{
			"$deleteFromPrimitiveList/finalizers": entries(10), "finalizers": entries(1)}}, true},
		{"new list past", map[string]interface{}{"spec": map[string]interface{}{"items": entries(max + 1)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkStrategicListSizes(orig, tt.patch, "")
			if got := err != nil; got != tt.want {
				t.Fatalf("got refused %v (%v), want %v", got, err, tt.want)
			}
			if err != nil && !apierrors.IsRequestEntityTooLargeError(err) {
				t.Errorf("got %v, want a 413", err)
			}
		})
	}
}

// TestStrategicPatch_MalformedDirectives: a strategic merge patch whose
// directives or merge keys hold lists or objects where apimachinery
// expects scalars is a 400, not a panic (which closed the connection
// without an answer).
func TestStrategicPatch_MalformedDirectives(t *testing.T) {
	cur := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{"a/b", "c/d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u1"}}},
		Data: map[string]string{"k": "v"},
	}
	gvk := cur.GroupVersionKind()
	for _, patch := range []string{
		`{"metadata":{"$retainKeys":[["x"]]}}`,
		`{"metadata":{"$retainKeys":[{}]}}`,
		`{"$retainKeys":[[]],"data":{}}`,
		`{"metadata":{"ownerReferences":[{"$retainKeys":[[]],"uid":"u1"}]}}`,
		`{"metadata":{"$setElementOrder/finalizers":[["x"]]}}`,
		`{"metadata":{"$setElementOrder/finalizers":[{}]}}`,
		`{"metadata":{"$setElementOrder/ownerReferences":[{"uid":{}}],"ownerReferences":[{"uid":{}}]}}`,
		`{"metadata":{"ownerReferences":[{"uid":["x"]}]}}`,
	} {
		t.Run(patch, func(t *testing.T) {
			_, _, err := (&Server{}).strategicPatch(gvk, []byte(patch), cur.DeepCopyObject(), "")
			if !apierrors.IsBadRequest(err) {
				t.Errorf("got %v, want a 400", err)
			}
		})
	}
}

// TestApplyPatch_JSONPatchRootWithoutValue: a JSON patch that replaces or
// tests the whole document without a value is a 422, not a panic (which
// closed the connection without an answer).
func TestApplyPatch_JSONPatchRootWithoutValue(t *testing.T) {
	cur := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for _, patch := range []string{
		`[{"op":"replace","path":""}]`,
		`[{"op":"test","path":""}]`,
		`[{"op":"replace","path":"","from":"/data"}]`,
	} {
		t.Run(patch, func(t *testing.T) {
			_, _, err := (&Server{}).applyPatch(types.JSONPatchType, []byte(patch), cur.DeepCopyObject(), "")
			if err == nil || statusOf(err).Code != http.StatusUnprocessableEntity {
				t.Errorf("got %v, want a 422", err)
			}
		})
	}
}
