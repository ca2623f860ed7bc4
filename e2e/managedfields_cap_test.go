package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestManagedFields_Cap checks that many Update managers do not make
// managedFields grow without bound: kube-apiserver keeps the ten most
// recent Update managers and merges older ones into "ancient-changes".
func TestManagedFields_Cap(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "crowded"},
		Data:       map[string]string{"init": "v"},
	}, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	const managers = 25
	for i := 0; i < managers; i++ {
		patch := fmt.Appendf(nil, `{"data":{"k%d":"v"}}`, i)
		if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "crowded", types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: fmt.Sprintf("manager-%d", i)}); err != nil {
			t.Fatalf("patch by manager-%d: %v", i, err)
		}
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "crowded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cm.Data); got != managers+1 {
		t.Errorf("data keys = %d, want %d", got, managers+1)
	}
	names := map[string]bool{}
	for _, e := range cm.ManagedFields {
		names[e.Manager] = true
	}
	if got, max := len(cm.ManagedFields), 11; got > max {
		t.Errorf("managedFields entries = %d (%v), want at most %d", got, names, max)
	}
	if !names["ancient-changes"] {
		t.Errorf("managedFields managers = %v, want the oldest merged into \"ancient-changes\"", names)
	}
	if want := fmt.Sprintf("manager-%d", managers-1); !names[want] {
		t.Errorf("managedFields managers = %v, want the newest (%s) kept", names, want)
	}
}
