package authz

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// fakePolicyRules returns its rules and messages, and records the
// namespace it was asked about.
type fakePolicyRules struct {
	rules     []rbacv1.PolicyRule
	msgs      []string
	namespace string
}

func (f *fakePolicyRules) RulesFor(_ user.Info, namespace string) ([]rbacv1.PolicyRule, []string) {
	f.namespace = namespace
	return f.rules, f.msgs
}

// rule is a rule info flattened for comparison.
type rule struct{ verbs, groups, resources, names, urls []string }

func flatten(rr []authorizer.ResourceRuleInfo, nr []authorizer.NonResourceRuleInfo) []rule {
	var out []rule
	for _, r := range rr {
		out = append(out, rule{verbs: r.GetVerbs(), groups: r.GetAPIGroups(), resources: r.GetResources(), names: r.GetResourceNames()})
	}
	for _, r := range nr {
		out = append(out, rule{verbs: r.GetVerbs(), urls: r.GetNonResourceURLs()})
	}
	return out
}

func TestNewRuleResolver_RulesFor(t *testing.T) {
	policy := &fakePolicyRules{
		rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz"}},
			// Neither resources nor URLs: no rule at all.
			{Verbs: []string{"get"}, APIGroups: []string{"apps"}},
		},
		msgs: []string{`role.rbac.authorization.k8s.io "x" not found`, `clusterrole.rbac.authorization.k8s.io "y" not found`, `role.rbac.authorization.k8s.io "x" not found`},
	}
	rbacWant := []rule{
		{verbs: []string{"get", "list"}, groups: []string{""}, resources: []string{"configmaps"}, names: []string{"a"}},
		{verbs: []string{"get"}, urls: []string{"/healthz", "/readyz"}},
	}
	everything := []rule{
		{verbs: []string{"*"}, groups: []string{"*"}, resources: []string{"*"}},
		{verbs: []string{"*"}, urls: []string{"*"}},
	}
	tests := []struct {
		name    string
		modes   []string
		want    []rule
		wantErr string
	}{
		{"RBAC", []string{ModeRBAC}, rbacWant,
			`[role.rbac.authorization.k8s.io "x" not found, clusterrole.rbac.authorization.k8s.io "y" not found]`},
		{"AlwaysAllow", []string{ModeAlwaysAllow}, everything, ""},
		{"AlwaysDeny", []string{ModeAlwaysDeny}, nil, ""},
		// Resource rules of every mode first, then the non-resource ones.
		{"RBAC,AlwaysAllow", []string{ModeRBAC, ModeAlwaysAllow}, []rule{rbacWant[0], everything[0], rbacWant[1], everything[1]},
			`[role.rbac.authorization.k8s.io "x" not found, clusterrole.rbac.authorization.k8s.io "y" not found]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRuleResolver(tt.modes, policy)
			if err != nil {
				t.Fatal(err)
			}
			// A member of system:masters gets no rules of its own.
			u := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
			rr, nr, incomplete, err := r.RulesFor(context.Background(), u, "team")
			if got := flatten(rr, nr); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got rules %+v, want %+v", got, tt.want)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if incomplete || gotErr != tt.wantErr {
				t.Errorf("got incomplete %v, error %q; want false, %q", incomplete, gotErr, tt.wantErr)
			}
		})
	}
	if policy.namespace != "team" {
		t.Errorf("RBAC asked for namespace %q", policy.namespace)
	}
	t.Run("errors", func(t *testing.T) {
		if _, err := NewRuleResolver([]string{"Webhook"}, nil); err == nil {
			t.Error("unknown mode: no error")
		}
		if _, err := NewRuleResolver([]string{ModeRBAC}, nil); err == nil {
			t.Error("RBAC without rules: no error")
		}
	})
}
