package bootstrap

import (
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// Reconciliation as kube-apiserver does it for its bootstrap policy at
// every start (component-helpers' auth/rbac/reconciliation in union mode,
// rewritten here because that package links client-go's typed clients):
// a missing object is created; an object annotated
// rbac.authorization.kubernetes.io/autoupdate=false is left alone;
// otherwise what the default lacks is added and nothing is removed, so a
// user's additions stay.

// ReconcileClusterRole returns the ClusterRole to write for expected
// given existing (nil when absent), or nil when nothing is to be
// written. The result is a copy.
func ReconcileClusterRole(existing *rbacv1.ClusterRole, expected *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	if existing == nil {
		return expected.DeepCopy()
	}
	if protected(existing.Annotations) {
		return nil
	}
	out := existing.DeepCopy()
	out.Annotations = merge(expected.Annotations, existing.Annotations)
	out.Labels = merge(expected.Labels, existing.Labels)
	if _, missing := rbacvalidation.Covers(existing.Rules, expected.Rules); len(missing) > 0 {
		out.Rules = append(out.Rules, missing...)
	}
	switch {
	case expected.AggregationRule == nil && existing.AggregationRule != nil:
		out.AggregationRule = nil
	case expected.AggregationRule != nil:
		var missing []metav1.LabelSelector
		for _, want := range expected.AggregationRule.ClusterRoleSelectors {
			found := false
			if existing.AggregationRule != nil {
				for _, have := range existing.AggregationRule.ClusterRoleSelectors {
					if equality.Semantic.DeepEqual(have, want) {
						found = true
						break
					}
				}
			}
			if !found {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			if out.AggregationRule == nil {
				out.AggregationRule = &rbacv1.AggregationRule{}
			}
			out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, missing...)
		}
	}
	if reflect.DeepEqual(out, existing) {
		return nil
	}
	return out
}

// ReconcileClusterRoleBinding returns the ClusterRoleBinding to write for
// expected given existing (nil when absent), or nil when nothing is to be
// written; recreate reports that existing must be deleted first (its
// roleRef, which is immutable, differs).
func ReconcileClusterRoleBinding(existing *rbacv1.ClusterRoleBinding, expected *rbacv1.ClusterRoleBinding) (out *rbacv1.ClusterRoleBinding, recreate bool) {
	if existing == nil {
		return expected.DeepCopy(), false
	}
	if protected(existing.Annotations) {
		return nil, false
	}
	if existing.RoleRef != expected.RoleRef {
		return expected.DeepCopy(), true
	}
	out = existing.DeepCopy()
	out.Annotations = merge(expected.Annotations, existing.Annotations)
	out.Labels = merge(expected.Labels, existing.Labels)
	for _, s := range expected.Subjects {
		found := false
		for _, have := range existing.Subjects {
			if have == s {
				found = true
				break
			}
		}
		if !found {
			out.Subjects = append(out.Subjects, s)
		}
	}
	if reflect.DeepEqual(out, existing) {
		return nil, false
	}
	return out, false
}

func protected(annotations map[string]string) bool {
	return annotations[rbacv1.AutoUpdateAnnotationKey] == "false"
}

// merge returns the union of the maps, later ones winning; nil when all
// are nil.
func merge(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		if m != nil && out == nil {
			out = map[string]string{}
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
