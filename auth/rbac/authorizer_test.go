package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/store"
)

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func as(name string, groups ...string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: groups}
}

func with(a authorizer.AttributesRecord, u user.Info) authorizer.AttributesRecord {
	a.User = u
	return a
}

// decide returns "allow", or "deny" and the reason (see
// TestAuthorizer_AllowReason for the reasons of allowed requests). It
// also checks that AuthorizeQuiet decides the same, with the same reason
// when it does not allow.
func decide(t *testing.T, a *Authorizer, attrs authorizer.Attributes) string {
	t.Helper()
	d, reason, err := a.Authorize(context.Background(), attrs)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	qd, qreason, qerr := a.AuthorizeQuiet(context.Background(), attrs)
	if qd != d || qerr != nil || (d != authorizer.DecisionAllow && qreason != reason) {
		t.Errorf("AuthorizeQuiet = %v %q %v, Authorize = %v %q", qd, qreason, qerr, d, reason)
	}
	if d == authorizer.DecisionAllow {
		return "allow"
	}
	if reason != "" {
		return "deny " + reason
	}
	return "deny"
}

func TestAuthorizer_AllowReason(t *testing.T) {
	a := fixture()
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  string
	}{
		{"RoleBinding to a user", with(res("list", "", "configmaps", "", "team", ""), as("alice")),
			`RBAC: allowed by RoleBinding "alice-cm/team" of Role "cm-reader" to User "alice"`},
		{"RoleBinding to a service account of the binding's namespace", with(res("list", "", "configmaps", "", "team", ""), as("system:serviceaccount:team:bot")),
			`RBAC: allowed by RoleBinding "alice-cm/team" of Role "cm-reader" to ServiceAccount "bot/team"`},
		{"ClusterRoleBinding to a group", with(path("get", "/healthz"), as("x", "system:authenticated")),
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated"`},
		{"system:masters", with(path("get", "/healthz"), as("x", "system:masters")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, _ := a.Authorize(context.Background(), tt.attrs)
			if d != authorizer.DecisionAllow || reason != tt.want {
				t.Errorf("got %v %q, want allow %q", d, reason, tt.want)
			}
		})
	}
}

func fixture() *Authorizer {
	a := New()
	a.Apply(&rbacv1.Role{ObjectMeta: meta("team", "cm-reader"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	a.Apply(&rbacv1.ClusterRole{ObjectMeta: meta("", "secret-reader"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}})
	a.Apply(&rbacv1.ClusterRole{ObjectMeta: meta("", "health"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz/*"}}}})
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "alice-cm"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "bot"}}})
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "devs-secrets"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "secret-reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "devs"}}})
	a.Apply(&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "health"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "health"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}, {Kind: "ServiceAccount", Name: "nobody-without-namespace"}}})
	return a
}

func TestAuthorizer_Authorize(t *testing.T) {
	a := fixture()
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  string
	}{
		{"user by Role in namespace", with(res("list", "", "configmaps", "", "team", ""), as("alice")), "allow"},
		{"user in another namespace", with(res("list", "", "configmaps", "", "other", ""), as("alice")), "deny"},
		{"user at cluster scope", with(res("list", "", "configmaps", "", "", ""), as("alice")), "deny"},
		{"user, verb not granted", with(res("delete", "", "configmaps", "", "team", "a"), as("alice")), "deny"},
		{"other user", with(res("get", "", "configmaps", "", "team", "a"), as("bob")), "deny"},
		{"service account of the binding's namespace", with(res("get", "", "configmaps", "", "team", "a"), as("system:serviceaccount:team:bot")), "allow"},
		{"service account of another namespace", with(res("get", "", "configmaps", "", "team", "a"), as("system:serviceaccount:other:bot")), "deny"},
		{"group by ClusterRole in a RoleBinding", with(res("get", "", "secrets", "", "team", "s"), as("carol", "devs")), "allow"},
		{"RoleBinding grants nothing elsewhere", with(res("get", "", "secrets", "", "other", "s"), as("carol", "devs")), "deny"},
		{"ClusterRoleBinding by group, non-resource URL", with(path("get", "/readyz/ping"), as("dave", "system:authenticated")), "allow"},
		{"non-resource URL not granted", with(path("get", "/metrics"), as("dave", "system:authenticated")), "deny"},
		{"ClusterRoleBinding service account without namespace matches nobody", with(path("get", "/healthz"), as("system:serviceaccount::nobody-without-namespace")), "deny"},
		{"system:masters", with(res("delete", "", "namespaces", "", "", "kube-system"), as("admin", "system:masters")), "allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(t, a, tt.attrs); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAuthorizer_MissingRole(t *testing.T) {
	a := New()
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "b1"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "gone"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}})
	attrs := with(res("get", "", "configmaps", "", "team", "a"), as("u"))
	if got, want := decide(t, a, attrs), `deny RBAC: role.rbac.authorization.k8s.io "gone" not found`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	a.Apply(&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "b0"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone-too"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}})
	if got, want := decide(t, a, attrs), `deny RBAC: [clusterrole.rbac.authorization.k8s.io "gone-too" not found, role.rbac.authorization.k8s.io "gone" not found]`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The role arriving later (as a watch may deliver it) takes effect.
	a.Apply(&rbacv1.Role{ObjectMeta: meta("team", "gone"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	if got := decide(t, a, attrs); got != "allow" {
		t.Errorf("after the role: got %q, want allow", got)
	}
}

func TestAuthorizer_Updates(t *testing.T) {
	a := fixture()
	alice := with(res("get", "", "configmaps", "", "team", "a"), as("alice"))
	bob := with(res("get", "", "configmaps", "", "team", "a"), as("bob"))

	// Replacing the binding's subjects unindexes the old ones.
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "alice-cm"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
	if got := decide(t, a, alice); got != "deny" {
		t.Errorf("alice after rebinding: got %q, want deny", got)
	}
	if got := decide(t, a, bob); got != "allow" {
		t.Errorf("bob after rebinding: got %q, want allow", got)
	}
	// Changing the role's rules takes effect.
	a.Apply(&rbacv1.Role{ObjectMeta: meta("team", "cm-reader"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	if got := decide(t, a, bob); got != "deny" {
		t.Errorf("bob after narrowing the role: got %q, want deny", got)
	}
	// Deleting the binding removes it from the index entirely.
	a.Delete(&rbacv1.RoleBinding{ObjectMeta: meta("team", "alice-cm")})
	if got := decide(t, a, with(res("list", "", "configmaps", "", "team", ""), as("bob"))); got != "deny" {
		t.Errorf("bob after deleting the binding: got %q, want deny", got)
	}
	a.Delete(&rbacv1.RoleBinding{ObjectMeta: meta("team", "devs-secrets")})
	if _, ok := a.bindings["team"]; ok {
		t.Errorf("namespace index kept after its last binding went: %v", a.bindings["team"])
	}
	// Deleting the role makes its bindings report it missing.
	a.Delete(&rbacv1.ClusterRole{ObjectMeta: meta("", "health")})
	if got, want := decide(t, a, with(path("get", "/healthz"), as("x", "system:authenticated"))), `deny RBAC: clusterrole.rbac.authorization.k8s.io "health" not found`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAuthorizer_HandleEvent(t *testing.T) {
	a := New()
	ev := func(typ store.EventType, resource, ns, name, value string) store.Event {
		return store.Event{Type: typ, Object: store.Object{Key: store.Key{Resource: resource, Namespace: ns, Name: name}, Value: []byte(value)}}
	}
	events := []store.Event{
		ev(store.Added, ResourceClusterRoles, "", "r", `{"metadata":{"name":"r"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]}]}`),
		ev(store.Added, ResourceRoleBindings, "ns", "b", `{"metadata":{"name":"b","namespace":"ns"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r"},"subjects":[{"kind":"User","name":"u"}]}`),
		ev(store.Added, "configmaps", "ns", "x", `not json, not ours`),
	}
	for _, e := range events {
		if err := a.HandleEvent(e); err != nil {
			t.Fatalf("handle %v: %v", e.Object.Key, err)
		}
	}
	attrs := with(res("get", "", "configmaps", "", "ns", "x"), as("u"))
	if got := decide(t, a, attrs); got != "allow" {
		t.Errorf("got %q, want allow", got)
	}
	if err := a.HandleEvent(ev(store.Deleted, ResourceRoleBindings, "ns", "b", `{"metadata":{"name":"b","namespace":"ns"}}`)); err != nil {
		t.Fatal(err)
	}
	if got := decide(t, a, attrs); got != "deny" {
		t.Errorf("after delete: got %q, want deny", got)
	}
	if err := a.HandleEvent(ev(store.Added, ResourceRoles, "ns", "bad", `{`)); err == nil {
		t.Errorf("got no error for a value that does not decode")
	}
}

func TestForbidden(t *testing.T) {
	u := as("jane")
	tests := []struct {
		name   string
		attrs  authorizer.AttributesRecord
		reason string
		want   string
	}{
		{"named object in a namespace", with(res("get", "", "configmaps", "", "team", "a"), u), "",
			`configmaps "a" is forbidden: User "jane" cannot get resource "configmaps" in API group "" in the namespace "team"`},
		{"collection in a group", with(res("list", "coordination.k8s.io", "leases", "", "team", ""), u), "",
			`leases.coordination.k8s.io is forbidden: User "jane" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "team"`},
		{"cluster scope", with(res("list", "", "namespaces", "", "", ""), u), "",
			`namespaces is forbidden: User "jane" cannot list resource "namespaces" in API group "" at the cluster scope`},
		{"subresource", with(res("update", "", "namespaces", "finalize", "", "x"), u), "",
			`namespaces "x" is forbidden: User "jane" cannot update resource "namespaces/finalize" in API group "" at the cluster scope`},
		{"path", with(path("get", "/metrics"), u), "",
			`forbidden: User "jane" cannot get path "/metrics"`},
		{"with a reason", with(res("get", "", "secrets", "", "team", "s"), u), `RBAC: role.rbac.authorization.k8s.io "x" not found`,
			`secrets "s" is forbidden: User "jane" cannot get resource "secrets" in API group "" in the namespace "team": RBAC: role.rbac.authorization.k8s.io "x" not found`},
		{"escaped", with(path("get", "/<script>&"), as("<b>")), "",
			`forbidden: User "&lt;b&gt;" cannot get path "/&lt;script&gt;&amp;"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Forbidden(tt.attrs, tt.reason)
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			s := err.Status()
			if s.Code != 403 || s.Reason != metav1.StatusReasonForbidden || s.Details.Name != tt.attrs.Name || s.Details.Kind != tt.attrs.Resource || s.Details.Group != tt.attrs.APIGroup {
				t.Errorf("got status %d %s %+v", s.Code, s.Reason, s.Details)
			}
		})
	}
}

// BenchmarkAuthorizer_Authorize measures a decision among many bindings
// of other users: the cost follows the user's own bindings, not their
// total.
func BenchmarkAuthorizer_Authorize(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			a := fixture()
			for i := range n {
				a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", fmt.Sprint("b", i)), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-reader"},
					Subjects: []rbacv1.Subject{{Kind: "User", Name: fmt.Sprint("user", i)}}})
				a.Apply(&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", fmt.Sprint("c", i)), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "health"},
					Subjects: []rbacv1.Subject{{Kind: "Group", Name: fmt.Sprint("group", i)}}})
			}
			attrs := with(res("get", "", "configmaps", "", "team", "a"), as("alice", "system:authenticated", "devs"))
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := a.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow {
					b.Fatal("denied")
				}
			}
		})
	}
}
