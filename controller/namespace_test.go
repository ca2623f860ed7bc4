package controller

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// TestManager_removeNamespace: the controller removes the terminating
// namespace it emptied, and leaves alone a namespace of the same name
// created after that one was gone, before the controller's pass read it
// again. The emulated armv7 daemon lost such a recreated namespace in the
// API replay (s30-namespace-lifecycle).
func TestManager_removeNamespace(t *testing.T) {
	terminating := metav1.Now()
	tests := []struct {
		name       string
		stored     corev1.Namespace
		uid        string // the terminating namespace the controller emptied
		wantExists bool
	}{
		{"the terminating namespace", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "old", DeletionTimestamp: &terminating}}, "old", false},
		{"a new namespace of the same name", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "new"}}, "old", true},
		{"a new one, itself terminating", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "new", DeletionTimestamp: &terminating}}, "old", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			reg := registry.Builtin()
			m := New(Config{Store: db, Registry: reg})
			nk := m.namespaceKind()
			tt.stored.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
			tt.stored.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
			value, err := json.Marshal(&tt.stored)
			if err != nil {
				t.Fatal(err)
			}
			key := nk.StoreKey("", "n")
			if _, err := db.Create(ctx, key, string(tt.stored.UID), value); err != nil {
				t.Fatal(err)
			}
			if err := m.removeNamespace(ctx, nk, "n", "old"); err != nil {
				t.Fatalf("removeNamespace: %v", err)
			}
			_, err = db.Get(ctx, key)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			if got := err == nil; got != tt.wantExists {
				t.Errorf("namespace %s exists after removeNamespace = %v, want %v", tt.stored.UID, got, tt.wantExists)
			}
		})
	}
}
