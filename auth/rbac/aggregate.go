package rbac

import (
	"reflect"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregateRules returns the rules kube-apiserver's ClusterRole
// aggregation controller gives role, an aggregated ClusterRole: for each
// of its selectors in order, the rules of every other ClusterRole of all
// whose labels match, those roles in name order, each rule once. A
// selector that does not parse matches nothing. For a role without
// aggregationRule it returns the role's rules.
func AggregateRules(role *rbacv1.ClusterRole, all []rbacv1.ClusterRole) []rbacv1.PolicyRule {
	if role.AggregationRule == nil {
		return role.Rules
	}
	byName := make([]*rbacv1.ClusterRole, 0, len(all))
	for i := range all {
		byName = append(byName, &all[i])
	}
	sort.Slice(byName, func(i, j int) bool { return byName[i].Name < byName[j].Name })
	var rules []rbacv1.PolicyRule
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			continue
		}
		for _, r := range byName {
			if r.Name == role.Name || !sel.Matches(labels.Set(r.Labels)) {
				continue
			}
			for _, rule := range r.Rules {
				if !hasRule(rules, rule) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules
}

func hasRule(rules []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	for i := range rules {
		if reflect.DeepEqual(rules[i], rule) {
			return true
		}
	}
	return false
}
