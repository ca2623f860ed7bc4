//go:build etcd

package etcdstore

import (
	"context"
	"testing"
)

func TestStore_withTypeMeta(t *testing.T) {
	s := &Store{typeMeta: func(resource string) (string, string) {
		if resource == "configmaps" {
			return "v1", "ConfigMap"
		}
		return "", ""
	}}
	for _, tc := range []struct {
		resource, value, want string
	}{
		{"configmaps", `{"metadata":{"name":"a"}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
		{"configmaps", `{}`, `{"apiVersion":"v1","kind":"ConfigMap"}`},
		{"configmaps", `{ }`, `{"apiVersion":"v1","kind":"ConfigMap" }`},
		{"widgets.example.com", `{"metadata":{}}`, `{"metadata":{}}`},
		{"configmaps", `[]`, `[]`},
		// Already first: kept as given, never twice.
		{"configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
	} {
		if got := string(s.withTypeMeta(tc.resource, []byte(tc.value))); got != tc.want {
			t.Errorf("withTypeMeta(%s, %s) = %s, want %s", tc.resource, tc.value, got, tc.want)
		}
	}
}

func TestStripTypeMeta(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{`{"apiVersion":"example.com/v1","kind":"Widget","spec":{}}`, `{"spec":{}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, `{}`},
		// As given: not the form withTypeMeta writes.
		{`{"metadata":{"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}`, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}`},
		{`{"apiVersion":"v1","metadata":{}}`, `{"apiVersion":"v1","metadata":{}}`},
		{`{"apiVersion":"v1`, `{"apiVersion":"v1`},
		{`{"apiVersion":"v1","kind":"X`, `{"apiVersion":"v1","kind":"X`},
	} {
		if got := string(stripTypeMeta([]byte(tc.value))); got != tc.want {
			t.Errorf("stripTypeMeta(%s) = %s, want %s", tc.value, got, tc.want)
		}
	}
}

// TestStore_TypeMeta checks that values are stored with apiVersion and
// kind, as kube-apiserver reads them, and read back as they were given.
func TestStore_TypeMeta(t *testing.T) {
	url := startEtcd(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Endpoints: []string{url}, TypeMeta: func(string) (string, string) { return "v1", "ConfigMap" }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	// As the registry gives values: without apiVersion and kind.
	given := []byte(`{"metadata":{"name":"a","namespace":"ns","uid":"u1"},"data":{"v":"x"}}`)
	created, err := s.Create(ctx, key("ns", "a"), "u1", given)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	raw, err := s.client.Get(ctx, "/registry/configmaps/ns/a")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v", err)
	}
	if got, want := string(raw.Kvs[0].Value), `{"apiVersion":"v1","kind":"ConfigMap",`+string(given[1:]); got != want {
		t.Errorf("stored %s, want %s", got, want)
	}
	got, err := s.Get(ctx, key("ns", "a"))
	if err != nil || string(got.Value) != string(created.Value) || got.UID != "u1" {
		t.Errorf("Get = %s uid %q, %v; want %s uid u1", got.Value, got.UID, err, created.Value)
	}
}
