package rbac

import (
	"context"
	"net/http"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestAuthorizer_CheckRoleWrite(t *testing.T) {
	a := fixture()
	// erin may write roles in team and escalate the one named "open".
	a.Apply(&rbacv1.Role{ObjectMeta: meta("team", "role-admin"), Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"create", "update"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}},
		{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, ResourceNames: []string{"open"}},
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
	}})
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "erin"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "role-admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "erin"}}})
	erin := as("erin", "system:authenticated")
	cm := func(verbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{Verbs: verbs, APIGroups: []string{""}, Resources: []string{"configmaps"}}}
	}
	tests := []struct {
		name        string
		namespace   string
		role        string
		rules       []rbacv1.PolicyRule
		aggregation bool
		want        string // "" for allowed
	}{
		{"subset of held rules", "team", "r", cm("get"), false, ""},
		{"more than held", "team", "r", append(cm("get", "delete", "watch"), rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}), false,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["delete" "watch"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{"escalate on that name", "team", "open", cm("*"), false, ""},
		{"held rules in another namespace", "other", "r", cm("get"), false,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}`},
		{"aggregation needs full authority", "", "agg", nil, true,
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.CheckRoleWrite(context.Background(), erin, tt.namespace, tt.role, tt.rules, tt.aggregation)
			got := ""
			if err != nil {
				got = err.Error()
				if !apierrors.IsForbidden(err) {
					t.Errorf("got %v, want a 403", err)
				}
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if err := a.CheckRoleWrite(context.Background(), as("root", "system:masters"), "", "agg", fullAuthority, true); err != nil {
		t.Errorf("system:masters: %v", err)
	}
}

func TestAuthorizer_CheckBindingWrite(t *testing.T) {
	a := fixture()
	// frank holds cm-reader's rules in team through his own binding, and
	// may bind the ClusterRole secret-reader without holding it.
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "frank"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "frank"}}})
	a.Apply(&rbacv1.ClusterRole{ObjectMeta: meta("", "binder"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"secret-reader"}}}})
	a.Apply(&rbacv1.RoleBinding{ObjectMeta: meta("team", "frank-binder"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "binder"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "frank"}}})
	frank := as("frank")
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	tests := []struct {
		name      string
		namespace string
		ref       rbacv1.RoleRef
		wantCode  int
		want      string
	}{
		{"role whose rules are held", "team", ref("Role", "cm-reader"), 0, ""},
		{"bind permission", "team", ref("ClusterRole", "secret-reader"), 0, ""},
		{"bind permission is per namespace", "other", ref("ClusterRole", "secret-reader"), http.StatusForbidden,
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "frank" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		// Covers splits the missing rules into one URL each, and
		// CompactRules leaves non-resource rules alone.
		{"cluster-wide binding of a role held in one namespace", "", ref("ClusterRole", "health"), http.StatusForbidden,
			`clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "frank" (groups=[]) is attempting to grant RBAC permissions not currently held:
{NonResourceURLs:["/healthz"], Verbs:["get"]}
{NonResourceURLs:["/readyz/*"], Verbs:["get"]}`},
		{"missing role", "team", ref("Role", "nope"), http.StatusNotFound, `role.rbac.authorization.k8s.io "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.CheckBindingWrite(context.Background(), frank, tt.namespace, "b", tt.ref)
			got, code := "", 0
			if err != nil {
				got = err.Error()
				code = int(err.(apierrors.APIStatus).Status().Code)
			}
			if got != tt.want || code != tt.wantCode {
				t.Errorf("got  %d %s\nwant %d %s", code, got, tt.wantCode, tt.want)
			}
		})
	}
}
