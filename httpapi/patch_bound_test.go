package httpapi

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
