package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// res is a resource request for the rule tests.
func res(verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func path(verb, p string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, Path: p}
}

func TestRuleAllows(t *testing.T) {
	rule := func(verbs, groups, resources, names, urls []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names, NonResourceURLs: urls}
	}
	l := func(s ...string) []string { return s }
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"exact", rule(l("get"), l(""), l("configmaps"), nil, nil), res("get", "", "configmaps", "", "ns", "a"), true},
		{"other verb", rule(l("get"), l(""), l("configmaps"), nil, nil), res("list", "", "configmaps", "", "ns", ""), false},
		{"verb *", rule(l("*"), l(""), l("configmaps"), nil, nil), res("deletecollection", "", "configmaps", "", "ns", ""), true},
		{"other group", rule(l("get"), l(""), l("configmaps"), nil, nil), res("get", "apps", "configmaps", "", "ns", "a"), false},
		{"group *", rule(l("get"), l("*"), l("leases"), nil, nil), res("get", "coordination.k8s.io", "leases", "", "ns", "a"), true},
		{"other resource", rule(l("get"), l(""), l("configmaps"), nil, nil), res("get", "", "secrets", "", "ns", "a"), false},
		{"resource *", rule(l("get"), l(""), l("*"), nil, nil), res("get", "", "secrets", "", "ns", "a"), true},
		{"resource * covers subresources", rule(l("get"), l(""), l("*"), nil, nil), res("get", "", "pods", "log", "ns", "a"), true},
		{"resource does not cover its subresource", rule(l("get"), l(""), l("pods"), nil, nil), res("get", "", "pods", "log", "ns", "a"), false},
		{"resource/subresource", rule(l("get"), l(""), l("pods/log"), nil, nil), res("get", "", "pods", "log", "ns", "a"), true},
		{"resource/subresource not the resource", rule(l("get"), l(""), l("pods/log"), nil, nil), res("get", "", "pods", "", "ns", "a"), false},
		{"*/subresource", rule(l("update"), l("*"), l("*/status"), nil, nil), res("update", "apps", "deployments", "status", "ns", "a"), true},
		{"*/subresource other subresource", rule(l("update"), l("*"), l("*/status"), nil, nil), res("update", "apps", "deployments", "scale", "ns", "a"), false},
		{"*/subresource not the resource", rule(l("update"), l("*"), l("*/status"), nil, nil), res("update", "apps", "deployments", "", "ns", "a"), false},
		{"*/subresource suffix only", rule(l("update"), l("*"), l("*/status"), nil, nil), res("update", "", "pods", "xstatus", "ns", "a"), false},
		{"resourceNames hit", rule(l("get"), l(""), l("configmaps"), l("a", "b"), nil), res("get", "", "configmaps", "", "ns", "b"), true},
		{"resourceNames miss", rule(l("get"), l(""), l("configmaps"), l("a"), nil), res("get", "", "configmaps", "", "ns", "c"), false},
		{"resourceNames and list", rule(l("list"), l(""), l("configmaps"), l("a"), nil), res("list", "", "configmaps", "", "ns", ""), false},
		{"resource rule and a path", rule(l("get"), l("*"), l("*"), nil, nil), path("get", "/healthz"), false},
		{"url exact", rule(l("get"), nil, nil, nil, l("/healthz")), path("get", "/healthz"), true},
		{"url other verb", rule(l("get"), nil, nil, nil, l("/healthz")), path("post", "/healthz"), false},
		{"url other path", rule(l("get"), nil, nil, nil, l("/healthz")), path("get", "/healthz/etcd"), false},
		{"url prefix *", rule(l("get"), nil, nil, nil, l("/healthz/*")), path("get", "/healthz/etcd"), true},
		{"url prefix * and the bare prefix", rule(l("get"), nil, nil, nil, l("/healthz/*")), path("get", "/healthz"), false},
		{"url prefix * without slash", rule(l("get"), nil, nil, nil, l("/api*")), path("get", "/apis/x"), true},
		{"url *", rule(l("get"), nil, nil, nil, l("*")), path("get", "/version"), true},
		{"url rule and a resource", rule(l("get"), nil, nil, nil, l("*")), res("get", "", "configmaps", "", "ns", "a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleAllows(tt.attrs, &tt.rule); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
