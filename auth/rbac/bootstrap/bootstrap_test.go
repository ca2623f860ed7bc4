package bootstrap_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap"
	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap/extract"
)

// TestPolicy_Fresh fails when policy.json no longer equals what `go
// generate` extracts (skipped when the Kubernetes module cannot be
// downloaded).
func TestPolicy_Fresh(t *testing.T) {
	if _, err := extract.Download(); err != nil {
		t.Skipf("no %s: %v", bootstrap.Module, err)
	}
	want, err := extract.Extract()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("policy.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("policy.json is stale: run go generate ./auth/rbac/bootstrap")
	}
}

func TestLoad(t *testing.T) {
	p, err := bootstrap.Load()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range p.ClusterRoles {
		names = append(names, r.Name)
		if r.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || r.Annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
			t.Errorf("%s: labels %v annotations %v", r.Name, r.Labels, r.Annotations)
		}
	}
	if len(names) != len(bootstrap.ClusterRoleNames) {
		t.Errorf("got roles %v, want %v", names, bootstrap.ClusterRoleNames)
	}
	subjects := map[string][]rbacv1.Subject{}
	for _, b := range p.ClusterRoleBindings {
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != b.Name {
			t.Errorf("%s: roleRef %+v", b.Name, b.RoleRef)
		}
		subjects[b.Name] = b.Subjects
	}
	group := func(names ...string) []rbacv1.Subject {
		var out []rbacv1.Subject
		for _, n := range names {
			out = append(out, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: n})
		}
		return out
	}
	for name, want := range map[string][]rbacv1.Subject{
		"cluster-admin":             group("system:masters"),
		"system:basic-user":         group("system:authenticated"),
		"system:discovery":          group("system:authenticated"),
		"system:public-info-viewer": group("system:authenticated", "system:unauthenticated"),
	} {
		if got := subjects[name]; len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("%s: subjects %+v, want %+v", name, got, want)
		}
	}
}

// TestPolicy_Authorize feeds the bootstrap policy, with aggregation
// applied, to the authorizer and checks what kube-apiserver's defaults
// allow.
func TestPolicy_Authorize(t *testing.T) {
	p, err := bootstrap.Load()
	if err != nil {
		t.Fatal(err)
	}
	a := rbac.New()
	for i := range p.ClusterRoles {
		r := p.ClusterRoles[i]
		r.Rules = rbac.AggregateRules(&r, p.ClusterRoles)
		a.Apply(&r)
	}
	for i := range p.ClusterRoleBindings {
		a.Apply(&p.ClusterRoleBindings[i])
	}
	for _, name := range []string{"view", "edit"} {
		a.Apply(&rbacv1.RoleBinding{ObjectMeta: metaOf("team", name+"-user"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: name + "-user"}}})
	}
	authed := func(name string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}
	}
	anon := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	res := func(u user.Info, verb, group, resource, ns string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns, ResourceRequest: true}
	}
	path := func(u user.Info, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "get", Path: p}
	}
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"anonymous /version", path(anon, "/version"), true},
		{"anonymous /healthz", path(anon, "/healthz"), true},
		{"anonymous /api", path(anon, "/api"), false},
		{"authenticated /apis/coordination.k8s.io", path(authed("u"), "/apis/coordination.k8s.io"), true},
		{"authenticated /openapi/v3", path(authed("u"), "/openapi/v3"), true},
		{"authenticated self subject access review", res(authed("u"), "create", "authorization.k8s.io", "selfsubjectaccessreviews", ""), true},
		{"authenticated configmaps", res(authed("u"), "list", "", "configmaps", "team"), false},
		{"view configmaps", res(authed("view-user"), "list", "", "configmaps", "team"), true},
		{"view secrets", res(authed("view-user"), "get", "", "secrets", "team"), false},
		{"view roles", res(authed("view-user"), "list", rbacv1.GroupName, "roles", "team"), false},
		{"view leases elsewhere", res(authed("view-user"), "list", "", "configmaps", "other"), false},
		{"edit secrets", res(authed("edit-user"), "create", "", "secrets", "team"), true},
		{"edit rolebindings", res(authed("edit-user"), "create", rbacv1.GroupName, "rolebindings", "team"), false},
		{"system:masters anything", res(&user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}, "delete", "", "namespaces", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := a.Authorize(context.Background(), tt.attrs)
			if got := d == authorizer.DecisionAllow; got != tt.want {
				t.Errorf("allowed %v, want %v", got, tt.want)
			}
		})
	}
}

func metaOf(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
