package main

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggRole is an aggregated ClusterRole selecting label=true.
func aggRole(name, label string, own map[string]string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: own},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}}
}

func rule(resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"get"}}
}

func TestAggregatedRules(t *testing.T) {
	const toEdit, toView = "aggregate-to-edit", "aggregate-to-view"
	// As kube-apiserver bootstraps them: view is aggregated and itself
	// aggregated into edit.
	roles := []rbacv1.ClusterRole{
		aggRole("edit", toEdit, nil),
		aggRole("view", toView, map[string]string{toEdit: "true"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{toEdit: "true"}},
			Rules: []rbacv1.PolicyRule{rule("configmaps"), rule("secrets")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{toView: "true"}},
			Rules: []rbacv1.PolicyRule{rule("pods"), rule("configmaps")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}, Rules: []rbacv1.PolicyRule{rule("nodes")}},
	}
	resources := func(rules []rbacv1.PolicyRule) string {
		var r []string
		for _, p := range rules {
			r = append(r, strings.Join(p.Resources, "+"))
		}
		return strings.Join(r, ",")
	}
	for _, tc := range []struct {
		name, want, wantErr string
		roles               []rbacv1.ClusterRole
	}{
		{name: "edit", roles: roles, want: "pods,configmaps,secrets"},
		{name: "view", roles: roles, want: "pods,configmaps"},
		{name: "unrelated", roles: roles, want: "nodes"},
		{name: "missing", roles: roles, wantErr: "not found"},
		{name: "a", roles: []rbacv1.ClusterRole{aggRole("a", "x", map[string]string{"y": "true"}), aggRole("b", "y", map[string]string{"x": "true"})}, wantErr: "cycle"},
	} {
		got, err := aggregatedRules(tc.roles, tc.name)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("aggregatedRules(%s) error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("aggregatedRules(%s): %v", tc.name, err)
			continue
		}
		if g := resources(got); g != tc.want {
			t.Errorf("aggregatedRules(%s) = %s, want %s", tc.name, g, tc.want)
		}
	}
}
