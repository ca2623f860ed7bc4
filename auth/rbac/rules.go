package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleAllows reports whether rule allows the request: for a resource
// request its verb, API group, resource (with subresource) and name; for
// any other its verb and path.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule, attrs.GetPath())
	}
	resource, sub := attrs.GetResource(), attrs.GetSubresource()
	if sub != "" {
		resource += "/" + sub
	}
	return apiGroupMatches(rule, attrs.GetAPIGroup()) &&
		resourceMatches(rule, resource, sub) &&
		resourceNameMatches(rule, attrs.GetName())
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches matches resource ("pods" or "pods/log") against the
// rule's resources: "*", the same string, or "*/<sub>" when the request
// names subresource sub.
func resourceMatches(rule *rbacv1.PolicyRule, resource, sub string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == resource {
			return true
		}
		if sub != "" && strings.HasPrefix(r, "*/") && r[2:] == sub {
			return true
		}
	}
	return false
}

// resourceNameMatches: a rule without resourceNames matches every name
// (and requests without one, such as list and create); a rule with them
// only those names.
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches path against "*", the same path, or a
// prefix followed by "*" ("/healthz/*" matches "/healthz/etcd" and
// "/healthz/", not "/healthz").
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
