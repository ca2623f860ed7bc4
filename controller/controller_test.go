package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/store"
)

func TestManager_ObserveNamespaces(t *testing.T) {
	ns := func(typ store.EventType, resource, value string) store.Event {
		return store.Event{Type: typ, Object: store.Object{Key: store.Key{Resource: resource, Name: "n"}, Value: []byte(value)}}
	}
	terminating := `{"metadata":{"name":"n","deletionTimestamp":"2026-01-01T00:00:00Z"}}`
	tests := []struct {
		name   string
		events []store.Event
		want   bool
	}{
		{"namespace marked for deletion", []store.Event{ns(store.Modified, "namespaces", terminating)}, true},
		{"namespace created", []store.Event{ns(store.Added, "namespaces", `{"metadata":{"name":"n"}}`)}, false},
		{"namespace removed", []store.Event{ns(store.Deleted, "namespaces", terminating)}, false},
		{"other kind marked", []store.Event{ns(store.Modified, "configmaps", terminating)}, false},
		{"marked among others", []store.Event{ns(store.Added, "configmaps", `{}`), ns(store.Modified, "namespaces", terminating)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Config{})
			m.observeNamespaces(tt.events)
			got := len(m.nsKick) == 1
			if got != tt.want {
				t.Errorf("kicked = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventLastWrite(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := created.Add(time.Hour)
	tests := []struct {
		name string
		mf   []metav1.ManagedFieldsEntry
		want time.Time
	}{
		{"no managed fields", nil, created},
		{"a later write", []metav1.ManagedFieldsEntry{{Time: &metav1.Time{Time: later}}}, later},
		{"an entry without time", []metav1.ManagedFieldsEntry{{}}, created},
		{"the latest of several", []metav1.ManagedFieldsEntry{{Time: &metav1.Time{Time: later}}, {Time: &metav1.Time{Time: created.Add(time.Minute)}}}, later},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}, ManagedFields: tt.mf}}
			if got := eventLastWrite(ev); !got.Equal(tt.want) {
				t.Errorf("eventLastWrite() = %v, want %v", got, tt.want)
			}
		})
	}
}
