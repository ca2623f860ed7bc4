//go:build etcd

package etcdstore

import (
	"testing"

	"github.com/edgeapi/edgeapi/store"
)

func TestResourcePath(t *testing.T) {
	tests := []struct{ resource, want string }{
		{"configmaps", "configmaps"},
		{"secrets", "secrets"},
		{"namespaces", "namespaces"},
		{"serviceaccounts", "serviceaccounts"},
		{"events", "events"},
		{"events.events.k8s.io", "events"},
		{"services", "services/specs"},
		{"leases.coordination.k8s.io", "leases"},
		{"roles.rbac.authorization.k8s.io", "roles"},
		{"rolebindings.rbac.authorization.k8s.io", "rolebindings"},
		{"clusterroles.rbac.authorization.k8s.io", "clusterroles"},
		{"clusterrolebindings.rbac.authorization.k8s.io", "clusterrolebindings"},
		{"customresourcedefinitions.apiextensions.k8s.io", "apiextensions.k8s.io/customresourcedefinitions"},
		{"widgets.example.com", "example.com/widgets"},
		{"pods", "pods"},
	}
	for _, tt := range tests {
		if got := resourcePath(tt.resource); got != tt.want {
			t.Errorf("resourcePath(%q) = %q, want %q", tt.resource, got, tt.want)
		}
	}
}

func TestKeyer_Key(t *testing.T) {
	k := keyer{prefix: "/registry"}
	tests := []struct {
		key  store.Key
		want string
	}{
		{store.Key{Resource: "configmaps", Namespace: "default", Name: "a"}, "/registry/configmaps/default/a"},
		{store.Key{Resource: "namespaces", Name: "default"}, "/registry/namespaces/default"},
		{store.Key{Resource: "services", Namespace: "ns", Name: "svc"}, "/registry/services/specs/ns/svc"},
		{store.Key{Resource: "leases.coordination.k8s.io", Namespace: "kube-system", Name: "l"}, "/registry/leases/kube-system/l"},
		{store.Key{Resource: "clusterroles.rbac.authorization.k8s.io", Name: "admin"}, "/registry/clusterroles/admin"},
		{store.Key{Resource: "customresourcedefinitions.apiextensions.k8s.io", Name: "widgets.example.com"}, "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"},
		{store.Key{Resource: "widgets.example.com", Namespace: "ns", Name: "w"}, "/registry/example.com/widgets/ns/w"},
		{store.Key{Resource: "gadgets.example.com", Name: "g"}, "/registry/example.com/gadgets/g"},
	}
	for _, tt := range tests {
		got := k.key(tt.key)
		if got != tt.want {
			t.Errorf("key(%+v) = %q, want %q", tt.key, got, tt.want)
		}
		back, ok := k.parse(got)
		if !ok || back != tt.key {
			t.Errorf("parse(%q) = %+v, %v, want %+v", got, back, ok, tt.key)
		}
	}
}

func TestKeyer_Parse(t *testing.T) {
	k := keyer{prefix: "/registry"}
	tests := []struct {
		etcdKey string
		want    store.Key
		ok      bool
	}{
		{"/registry/events/ns/e", store.Key{Resource: "events", Namespace: "ns", Name: "e"}, true},
		{"/registry/roles/ns/r", store.Key{Resource: "roles.rbac.authorization.k8s.io", Namespace: "ns", Name: "r"}, true},
		{"/other/configmaps/ns/a", store.Key{}, false},
		{"/registry/configmaps/", store.Key{}, false},
		{"/registry/configmaps/a/b/c", store.Key{}, false},
	}
	for _, tt := range tests {
		got, ok := k.parse(tt.etcdKey)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parse(%q) = %+v, %v, want %+v, %v", tt.etcdKey, got, ok, tt.want, tt.ok)
		}
	}
}
