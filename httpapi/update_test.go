package httpapi

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestEqualButManagedTimes(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Hour))
	typed := func(data string, at metav1.Time) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}}},
			Data:       map[string]string{"k": data},
		}
	}
	unstr := func(data string, at metav1.Time) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]interface{}{"name": "t", "managedFields": []interface{}{
				map[string]interface{}{"manager": "m", "operation": "Update", "time": at.UTC().Format(time.RFC3339)},
			}},
			"spec": map[string]interface{}{"k": data},
		}}
	}
	tests := []struct {
		name     string
		obj, old runtime.Object
		want     bool
	}{
		{"typed, times differ", typed("a", t2), typed("a", t1), true},
		{"typed, data differs", typed("b", t2), typed("a", t1), false},
		{"unstructured, times differ", unstr("a", t2), unstr("a", t1), true},
		{"unstructured, spec differs", unstr("b", t2), unstr("a", t1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objBefore, oldBefore := tt.obj.DeepCopyObject(), tt.old.DeepCopyObject()
			if got := equalButManagedTimes(tt.obj, tt.old); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// Both objects keep their times.
			if !equalObjects(tt.obj, objBefore) || !equalObjects(tt.old, oldBefore) {
				t.Errorf("the objects changed:\n%+v\n%+v", tt.obj, tt.old)
			}
		})
	}
}

// equalObjects compares two objects exactly, managedFields times included.
func equalObjects(a, b runtime.Object) bool {
	return reflect.DeepEqual(a, b)
}
