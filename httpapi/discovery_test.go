package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

// Expected documents and entries are copied from kube-apiserver 1.36.3's
// s33-discovery transcript (/work/shared/apidiff/golden).

// assertJSON fails unless got, encoded as the handlers encode it
// (encoding/json), equals the JSON document want.
func assertJSON(t *testing.T, what string, got interface{}, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w interface{}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", what, b, want)
	}
}

func TestAPIVersions(t *testing.T) {
	assertJSON(t, "/api", apiVersions("127.0.0.1:6453"),
		`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6453"}]}`)
}

func TestAPIResourceList(t *testing.T) {
	reg := registry.Builtin()

	t.Run("core", func(t *testing.T) {
		l := apiResourceList(reg.Snapshot(), schema.GroupVersion{Version: "v1"})
		if l == nil {
			t.Fatal("no /api/v1")
		}
		if l.Kind != "APIResourceList" || l.APIVersion != "" || l.GroupVersion != "v1" {
			t.Errorf("got %+v, want kind APIResourceList, no apiVersion, groupVersion v1", l.TypeMeta)
		}
		want := map[string]string{
			"configmaps":          `{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cm"],"storageVersionHash":"qFsyl6wFWjQ="}`,
			"events":              `{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="}`,
			"namespaces":          `{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="}`,
			"namespaces/finalize": `{"name":"namespaces/finalize","singularName":"","namespaced":false,"kind":"Namespace","verbs":["update"]}`,
			"namespaces/status":   `{"name":"namespaces/status","singularName":"","namespaced":false,"kind":"Namespace","verbs":["get","patch","update"]}`,
			"secrets":             `{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"S6u1pOWzb84="}`,
			// s33 api-v1: kube-apiserver's serviceaccounts and its token
			// subresource.
			"serviceaccounts":       `{"name":"serviceaccounts","singularName":"serviceaccount","namespaced":true,"kind":"ServiceAccount","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sa"],"storageVersionHash":"pbx9ZvyFpBE="}`,
			"serviceaccounts/token": `{"name":"serviceaccounts/token","singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]}`,
			"services":              `{"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],"storageVersionHash":"0/CO1lhkEBI="}`,
			"services/status":       `{"name":"services/status","singularName":"","namespaced":true,"kind":"Service","verbs":["get","patch","update"]}`,
		}
		var names []string
		for _, r := range l.APIResources {
			names = append(names, r.Name)
			if w, ok := want[r.Name]; ok {
				assertJSON(t, r.Name, r, w)
				delete(want, r.Name)
			}
		}
		for name := range want {
			t.Errorf("missing %s", name)
		}
		if wantNames := []string{"configmaps", "events", "namespaces", "namespaces/finalize", "namespaces/status", "secrets", "serviceaccounts", "serviceaccounts/token", "services", "services/status"}; !reflect.DeepEqual(names, wantNames) {
			t.Errorf("order %v, want %v", names, wantNames)
		}
	})

	t.Run("coordination.k8s.io/v1", func(t *testing.T) {
		assertJSON(t, "/apis/coordination.k8s.io/v1", apiResourceList(reg.Snapshot(), schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}),
			`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"coordination.k8s.io/v1","resources":[{"name":"leases","singularName":"lease","namespaced":true,"kind":"Lease","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"gqkMMb/YqFM="}]}`)
	})

	t.Run("authorization.k8s.io/v1 reviews have no storage hash", func(t *testing.T) {
		assertJSON(t, "/apis/authorization.k8s.io/v1", apiResourceList(reg.Snapshot(), schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}),
			`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authorization.k8s.io/v1","resources":[`+
				`{"name":"localsubjectaccessreviews","singularName":"localsubjectaccessreview","namespaced":true,"kind":"LocalSubjectAccessReview","verbs":["create"]},`+
				`{"name":"selfsubjectaccessreviews","singularName":"selfsubjectaccessreview","namespaced":false,"kind":"SelfSubjectAccessReview","verbs":["create"]},`+
				`{"name":"selfsubjectrulesreviews","singularName":"selfsubjectrulesreview","namespaced":false,"kind":"SelfSubjectRulesReview","verbs":["create"]},`+
				`{"name":"subjectaccessreviews","singularName":"subjectaccessreview","namespaced":false,"kind":"SubjectAccessReview","verbs":["create"]}]}`)
	})

	t.Run("events.k8s.io/v1 shares the core events' storage hash", func(t *testing.T) {
		assertJSON(t, "/apis/events.k8s.io/v1", apiResourceList(reg.Snapshot(), schema.GroupVersion{Group: "events.k8s.io", Version: "v1"}),
			`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"events.k8s.io/v1","resources":[{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="}]}`)
	})

	for _, gv := range []schema.GroupVersion{{Version: "v2"}, {Group: "coordination.k8s.io", Version: "v9"}, {Group: "nope.example.com", Version: "v1"}} {
		if l := apiResourceList(reg.Snapshot(), gv); l != nil {
			t.Errorf("%v: got %+v, want nil", gv, l)
		}
	}
}

func TestAPIGroupList(t *testing.T) {
	reg := registry.Builtin()
	// kube-apiserver lists events.k8s.io, authentication.k8s.io,
	// authorization.k8s.io, rbac.authorization.k8s.io,
	// apiextensions.k8s.io, then coordination.k8s.io (s33 apis-groups).
	assertJSON(t, "/apis", apiGroupList(reg.Snapshot()), `{"kind":"APIGroupList","apiVersion":"v1","groups":[`+
		`{"name":"events.k8s.io","versions":[{"groupVersion":"events.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"events.k8s.io/v1","version":"v1"}},`+
		`{"name":"authentication.k8s.io","versions":[{"groupVersion":"authentication.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"authentication.k8s.io/v1","version":"v1"}},`+
		`{"name":"authorization.k8s.io","versions":[{"groupVersion":"authorization.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"authorization.k8s.io/v1","version":"v1"}},`+
		`{"name":"rbac.authorization.k8s.io","versions":[{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}},`+
		`{"name":"apiextensions.k8s.io","versions":[{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}},`+
		`{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}]}`)

	t.Run("CRD groups follow, by name, GA version preferred", func(t *testing.T) {
		reg := registry.Builtin()
		for _, gvk := range []schema.GroupVersionKind{
			{Group: "zeta.example.com", Version: "v1", Kind: "Z"},
			{Group: "alpha.example.com", Version: "v1beta1", Kind: "A"},
			{Group: "alpha.example.com", Version: "v1", Kind: "A"},
			{Group: "alpha.example.com", Version: "v2alpha1", Kind: "A"},
		} {
			reg.Add(&registry.Kind{GVK: gvk, Resource: "things"})
		}
		var got []string
		for _, g := range apiGroupList(reg.Snapshot()).Groups {
			var versions []string
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
			got = append(got, g.Name+":"+g.PreferredVersion.Version+":"+join(versions))
		}
		// Kube-aware version order: GA, then beta, then alpha.
		want := []string{
			"events.k8s.io:v1:v1",
			"authentication.k8s.io:v1:v1",
			"authorization.k8s.io:v1:v1",
			"rbac.authorization.k8s.io:v1:v1",
			"apiextensions.k8s.io:v1:v1",
			"coordination.k8s.io:v1:v1",
			"alpha.example.com:v1:v1,v1beta1,v2alpha1",
			"zeta.example.com:v1:v1",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func TestAPIGroup(t *testing.T) {
	reg := registry.Builtin()
	assertJSON(t, "/apis/coordination.k8s.io", apiGroup(reg.Snapshot(), "coordination.k8s.io"),
		`{"kind":"APIGroup","apiVersion":"v1","name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}`)
	for _, g := range []string{"", "nope.example.com"} {
		if got := apiGroup(reg.Snapshot(), g); got != nil {
			t.Errorf("%q: got %+v, want nil", g, got)
		}
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	reg := registry.Builtin()

	t.Run("/api", func(t *testing.T) {
		l := aggregatedDiscovery(reg.Snapshot(), true)
		if len(l.Items) != 1 {
			t.Fatalf("got %d items, want 1", len(l.Items))
		}
		top := *l
		top.Items = nil
		assertJSON(t, "list", top, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":null}`)
		item := l.Items[0]
		assertJSON(t, "items[0].metadata", item.ObjectMeta, `{}`)
		if len(item.Versions) != 1 || item.Versions[0].Version != "v1" || item.Versions[0].Freshness != "Current" {
			t.Fatalf("versions %+v", item.Versions)
		}
		want := map[string]string{
			"configmaps": `{"resource":"configmaps","responseKind":{"group":"","version":"","kind":"ConfigMap"},"scope":"Namespaced","singularResource":"configmap","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cm"]}`,
			"events":     `{"resource":"events","responseKind":{"group":"","version":"","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"]}`,
			"namespaces": `{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"subresources":[{"subresource":"finalize","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["get","patch","update"]}]}`,
			"secrets":    `{"resource":"secrets","responseKind":{"group":"","version":"","kind":"Secret"},"scope":"Namespaced","singularResource":"secret","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]}`,
			// s33 aggregated-discovery-api.
			"serviceaccounts": `{"resource":"serviceaccounts","responseKind":{"group":"","version":"","kind":"ServiceAccount"},"scope":"Namespaced","singularResource":"serviceaccount","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sa"],"subresources":[{"subresource":"token","responseKind":{"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest"},"verbs":["create"]}]}`,
		}
		for _, r := range item.Versions[0].Resources {
			if w, ok := want[r.Resource]; ok {
				assertJSON(t, r.Resource, r, w)
				delete(want, r.Resource)
			}
		}
		for name := range want {
			t.Errorf("missing %s", name)
		}
	})

	t.Run("/apis", func(t *testing.T) {
		l := aggregatedDiscovery(reg.Snapshot(), false)
		assertJSON(t, "items", l.Items, `[`+
			`{"metadata":{"name":"events.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"events","responseKind":{"group":"","version":"","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"]}],"freshness":"Current"}]},`+
			// kube-apiserver's item, without its tokenreviews.
			`{"metadata":{"name":"authentication.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"selfsubjectreviews","responseKind":{"group":"","version":"","kind":"SelfSubjectReview"},"scope":"Cluster","singularResource":"selfsubjectreview","verbs":["create"]}],"freshness":"Current"}]},`+
			// s33 aggregated-discovery-apis, kube-apiserver's item.
			`{"metadata":{"name":"authorization.k8s.io"},"versions":[{"version":"v1","resources":[`+
			`{"resource":"localsubjectaccessreviews","responseKind":{"group":"","version":"","kind":"LocalSubjectAccessReview"},"scope":"Namespaced","singularResource":"localsubjectaccessreview","verbs":["create"]},`+
			`{"resource":"selfsubjectaccessreviews","responseKind":{"group":"","version":"","kind":"SelfSubjectAccessReview"},"scope":"Cluster","singularResource":"selfsubjectaccessreview","verbs":["create"]},`+
			`{"resource":"selfsubjectrulesreviews","responseKind":{"group":"","version":"","kind":"SelfSubjectRulesReview"},"scope":"Cluster","singularResource":"selfsubjectrulesreview","verbs":["create"]},`+
			`{"resource":"subjectaccessreviews","responseKind":{"group":"","version":"","kind":"SubjectAccessReview"},"scope":"Cluster","singularResource":"subjectaccessreview","verbs":["create"]}],"freshness":"Current"}]},`+
			// kube-apiserver's rbac.authorization.k8s.io item: no short
			// names or categories, resources by name.
			`{"metadata":{"name":"rbac.authorization.k8s.io"},"versions":[{"version":"v1","resources":[`+
			`{"resource":"clusterrolebindings","responseKind":{"group":"","version":"","kind":"ClusterRoleBinding"},"scope":"Cluster","singularResource":"clusterrolebinding","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},`+
			`{"resource":"clusterroles","responseKind":{"group":"","version":"","kind":"ClusterRole"},"scope":"Cluster","singularResource":"clusterrole","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},`+
			`{"resource":"rolebindings","responseKind":{"group":"","version":"","kind":"RoleBinding"},"scope":"Namespaced","singularResource":"rolebinding","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},`+
			`{"resource":"roles","responseKind":{"group":"","version":"","kind":"Role"},"scope":"Namespaced","singularResource":"role","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]}],"freshness":"Current"}]},`+
			// s33 aggregated-discovery-apis, kube-apiserver's item.
			`{"metadata":{"name":"apiextensions.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"customresourcedefinitions","responseKind":{"group":"","version":"","kind":"CustomResourceDefinition"},"scope":"Cluster","singularResource":"customresourcedefinition","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["crd","crds"],"categories":["api-extensions"],"subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"CustomResourceDefinition"},"verbs":["get","patch","update"]}]}],"freshness":"Current"}]},`+
			`{"metadata":{"name":"coordination.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"leases","responseKind":{"group":"","version":"","kind":"Lease"},"scope":"Namespaced","singularResource":"lease","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]}],"freshness":"Current"}]}]`)
		if l.Kind != "APIGroupDiscoveryList" || l.APIVersion != "apidiscovery.k8s.io/v2" {
			t.Errorf("got %+v", l.TypeMeta)
		}
	})
}

func TestStorageVersionHash(t *testing.T) {
	tests := []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "qFsyl6wFWjQ="},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "gqkMMb/YqFM="},
		// s33's apiextensions.k8s.io/v1 list: kube-apiserver still stores
		// CRDs as v1beta1.
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition"}, "jfWCUB31mvA="},
		{schema.GroupVersionKind{}, ""},
	}
	for _, tt := range tests {
		if got := storageVersionHash(tt.gvk); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.gvk, got, tt.want)
		}
	}
}
