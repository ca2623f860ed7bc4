package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// quiet is AuthorizeQuiet's decision: "allow" or "deny".
func quiet(t *testing.T, a *Authorizer, attrs authorizer.Attributes) string {
	t.Helper()
	d, _, err := a.AuthorizeQuiet(context.Background(), attrs)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	if d == authorizer.DecisionAllow {
		return "allow"
	}
	return "deny"
}

// TestAuthorizer_AuthorizeQuiet_cachedAllowForgotten: a request allowed
// (and so remembered) is refused right after any change that takes its
// right away: the RoleBinding deleted, the Role deleted, the Role's rules
// narrowed, the binding's subject changed; and allowed again once the
// right is back.
func TestAuthorizer_AuthorizeQuiet_cachedAllowForgotten(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: meta("team", "reader"),
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta("team", "alice-reader"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}}
	get := with(res("get", "", "configmaps", "", "team", "cm"), as("alice", "system:authenticated"))
	tests := []struct {
		name   string
		take   func(a *Authorizer) // takes the right away
		giveBk func(a *Authorizer) // gives it back
	}{
		{"RoleBinding deleted", func(a *Authorizer) { a.Delete(binding) }, func(a *Authorizer) { a.Apply(binding) }},
		{"Role deleted", func(a *Authorizer) { a.Delete(role) }, func(a *Authorizer) { a.Apply(role) }},
		{"Role narrowed", func(a *Authorizer) {
			narrowed := role.DeepCopy()
			narrowed.Rules[0].Verbs = []string{"list"}
			a.Apply(narrowed)
		}, func(a *Authorizer) { a.Apply(role) }},
		{"subject changed", func(a *Authorizer) {
			other := binding.DeepCopy()
			other.Subjects[0].Name = "bob"
			a.Apply(other)
		}, func(a *Authorizer) { a.Apply(binding) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New()
			a.Apply(role)
			a.Apply(binding)
			for i := range 2 {
				if got := quiet(t, a, get); got != "allow" {
					t.Fatalf("before, call %d: got %s, want allow", i, got)
				}
			}
			tt.take(a)
			if got := quiet(t, a, get); got != "deny" {
				t.Fatalf("after: got %s, want deny", got)
			}
			tt.giveBk(a)
			if got := quiet(t, a, get); got != "allow" {
				t.Fatalf("given back: got %s, want allow", got)
			}
		})
	}
}

// TestAuthorizer_AuthorizeQuiet_cacheKey: a remembered decision answers
// only the same user with the same groups asking the same thing.
func TestAuthorizer_AuthorizeQuiet_cacheKey(t *testing.T) {
	a := New()
	a.Apply(&rbacv1.Role{ObjectMeta: meta("team", "reader"),
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cm"}}}})
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "readers"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "readers"}}})
	allowed := with(res("get", "", "configmaps", "", "team", "cm"), as("alice", "readers"))
	if got := quiet(t, a, allowed); got != "allow" {
		t.Fatalf("allowed: got %s, want allow", got)
	}
	for name, attrs := range map[string]authorizer.AttributesRecord{
		"other user":       with(res("get", "", "configmaps", "", "team", "cm"), as("bob")),
		"no group":         with(res("get", "", "configmaps", "", "team", "cm"), as("alice")),
		"other verb":       with(res("delete", "", "configmaps", "", "team", "cm"), as("alice", "readers")),
		"other name":       with(res("get", "", "configmaps", "", "team", "cm2"), as("alice", "readers")),
		"other namespace":  with(res("get", "", "configmaps", "", "other", "cm"), as("alice", "readers")),
		"other resource":   with(res("get", "", "secrets", "", "team", "cm"), as("alice", "readers")),
		"other group":      with(res("get", "apps", "configmaps", "", "team", "cm"), as("alice", "readers")),
		"subresource":      with(res("get", "", "configmaps", "status", "team", "cm"), as("alice", "readers")),
		"non-resource URL": with(authorizer.AttributesRecord{Verb: "get", Path: "/api/v1/namespaces/team/configmaps/cm"}, as("alice", "readers")),
	} {
		if got := quiet(t, a, attrs); got != "deny" {
			t.Errorf("%s: got %s, want deny", name, got)
		}
	}
	// More decisions than the cache has slots: they replace each other, and still
	// decides right.
	for i := range decisionSlots + 10 {
		u := as(fmt.Sprintf("user-%d", i), "readers")
		if got := quiet(t, a, with(res("get", "", "configmaps", "", "team", "cm"), u)); got != "allow" {
			t.Fatalf("user %d: got %s, want allow", i, got)
		}
	}
	if got := quiet(t, a, allowed); got != "allow" {
		t.Errorf("allowed after more decisions than slots: got %s, want allow", got)
	}
}
