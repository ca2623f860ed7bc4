package bootstrap

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

func TestReconcileClusterRole(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var view, basic *rbacv1.ClusterRole
	for i := range p.ClusterRoles {
		switch p.ClusterRoles[i].Name {
		case "view":
			view = &p.ClusterRoles[i]
		case "system:basic-user":
			basic = &p.ClusterRoles[i]
		}
	}
	userRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}

	t.Run("missing is created", func(t *testing.T) {
		if got := ReconcileClusterRole(nil, basic); !reflect.DeepEqual(got, basic) {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("unchanged is not written", func(t *testing.T) {
		if got := ReconcileClusterRole(basic.DeepCopy(), basic); got != nil {
			t.Errorf("got %+v, want nil", got)
		}
	})
	t.Run("user additions stay, removed defaults return", func(t *testing.T) {
		existing := basic.DeepCopy()
		existing.Rules = []rbacv1.PolicyRule{userRule}
		existing.Labels["mine"] = "yes"
		existing.Annotations = nil
		got := ReconcileClusterRole(existing, basic)
		if got == nil {
			t.Fatal("got nil, want an update")
		}
		// The missing rules are added as Covers reports them: one rule per
		// resource, as kube-apiserver's reconciliation adds them.
		covered, _ := rbacvalidation.Covers(got.Rules, basic.Rules)
		if !reflect.DeepEqual(got.Rules[0], userRule) || !covered || got.Labels["mine"] != "yes" || got.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("got rules %+v labels %v annotations %v", got.Rules, got.Labels, got.Annotations)
		}
	})
	t.Run("autoupdate=false is left alone", func(t *testing.T) {
		existing := basic.DeepCopy()
		existing.Rules = nil
		existing.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		if got := ReconcileClusterRole(existing, basic); got != nil {
			t.Errorf("got %+v, want nil", got)
		}
	})
	t.Run("aggregation selectors are added, aggregated rules kept", func(t *testing.T) {
		existing := view.DeepCopy()
		mine := metav1.LabelSelector{MatchLabels: map[string]string{"mine": "true"}}
		existing.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{mine}
		existing.Rules = []rbacv1.PolicyRule{userRule}
		got := ReconcileClusterRole(existing, view)
		if got == nil {
			t.Fatal("got nil, want an update")
		}
		want := append([]metav1.LabelSelector{mine}, view.AggregationRule.ClusterRoleSelectors...)
		if !reflect.DeepEqual(got.AggregationRule.ClusterRoleSelectors, want) || !reflect.DeepEqual(got.Rules, existing.Rules) {
			t.Errorf("got selectors %+v rules %+v", got.AggregationRule.ClusterRoleSelectors, got.Rules)
		}
	})
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	expected := &p.ClusterRoleBindings[0] // cluster-admin → system:masters
	mine := rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "me"}

	if got, recreate := ReconcileClusterRoleBinding(nil, expected); !reflect.DeepEqual(got, expected) || recreate {
		t.Errorf("missing: got %+v %v", got, recreate)
	}
	if got, _ := ReconcileClusterRoleBinding(expected.DeepCopy(), expected); got != nil {
		t.Errorf("unchanged: got %+v, want nil", got)
	}
	existing := expected.DeepCopy()
	existing.Subjects = []rbacv1.Subject{mine}
	got, recreate := ReconcileClusterRoleBinding(existing, expected)
	if want := append([]rbacv1.Subject{mine}, expected.Subjects...); got == nil || recreate || !reflect.DeepEqual(got.Subjects, want) {
		t.Errorf("added subject: got %+v %v, want subjects %+v", got, recreate, want)
	}
	existing = expected.DeepCopy()
	existing.RoleRef.Name = "view"
	if got, recreate := ReconcileClusterRoleBinding(existing, expected); !recreate || got.RoleRef != expected.RoleRef {
		t.Errorf("other roleRef: got %+v %v, want a recreate", got, recreate)
	}
	existing.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	if got, _ := ReconcileClusterRoleBinding(existing, expected); got != nil {
		t.Errorf("autoupdate=false: got %+v, want nil", got)
	}
}
