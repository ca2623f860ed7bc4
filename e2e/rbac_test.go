package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRBAC_KubectlCreate creates the four RBAC kinds with kubectl's
// generators and reads them back, as kubectl shows them against
// kube-apiserver.
func TestRBAC_KubectlCreate(t *testing.T) {
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "team")

	d.MustKubectl("create", "role", "reader", "-n", "team", "--verb=get,list", "--resource=configmaps", "--resource-name=a")
	d.MustKubectl("create", "rolebinding", "reader", "-n", "team", "--role=reader", "--user=alice", "--group=devs", "--serviceaccount=team:bot")
	d.MustKubectl("create", "clusterrole", "health", "--verb=get", "--non-resource-url=/healthz", "--non-resource-url=/readyz/*")
	d.MustKubectl("create", "clusterrolebinding", "health", "--clusterrole=health", "--group=system:authenticated")

	t.Run("role", func(t *testing.T) {
		var r rbacv1.Role
		decodeJSON(t, d.MustKubectl("get", "role", "reader", "-n", "team", "-o", "json").Stdout, &r)
		want := []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}}
		if !reflect.DeepEqual(r.Rules, want) {
			t.Errorf("rules = %+v, want %+v", r.Rules, want)
		}
	})
	t.Run("rolebinding", func(t *testing.T) {
		var b rbacv1.RoleBinding
		decodeJSON(t, d.MustKubectl("get", "rolebinding", "reader", "-n", "team", "-o", "json").Stdout, &b)
		wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"}
		wantSubjects := []rbacv1.Subject{
			{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"},
			{Kind: "ServiceAccount", Name: "bot", Namespace: "team"},
		}
		if b.RoleRef != wantRef || !reflect.DeepEqual(b.Subjects, wantSubjects) {
			t.Errorf("got roleRef %+v subjects %+v, want %+v %+v", b.RoleRef, b.Subjects, wantRef, wantSubjects)
		}
		// kube-apiserver's printer: Role as Kind/name, subjects in the
		// wide columns.
		out := d.MustKubectl("get", "rolebinding", "reader", "-n", "team", "-o", "wide").Stdout
		for _, s := range []string{"ROLE", "USERS", "GROUPS", "SERVICEACCOUNTS", "Role/reader", "alice", "devs", "team/bot"} {
			if !strings.Contains(out, s) {
				t.Errorf("kubectl get -o wide lacks %q:\n%s", s, out)
			}
		}
	})
	t.Run("clusterrole", func(t *testing.T) {
		var r rbacv1.ClusterRole
		decodeJSON(t, d.MustKubectl("get", "clusterrole", "health", "-o", "json").Stdout, &r)
		want := []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz/*"}}}
		if !reflect.DeepEqual(r.Rules, want) {
			t.Errorf("rules = %+v, want %+v", r.Rules, want)
		}
		out := d.MustKubectl("get", "clusterroles").Stdout
		if !strings.Contains(out, "CREATED AT") || !strings.Contains(out, "health") {
			t.Errorf("kubectl get clusterroles:\n%s", out)
		}
	})
	t.Run("clusterrolebinding", func(t *testing.T) {
		var b rbacv1.ClusterRoleBinding
		decodeJSON(t, d.MustKubectl("get", "clusterrolebinding", "health", "-o", "json").Stdout, &b)
		want := []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}
		if b.RoleRef.Name != "health" || b.RoleRef.Kind != "ClusterRole" || !reflect.DeepEqual(b.Subjects, want) {
			t.Errorf("got %+v %+v", b.RoleRef, b.Subjects)
		}
	})
	t.Run("api-resources", func(t *testing.T) {
		out := d.MustKubectl("api-resources", "--api-group=rbac.authorization.k8s.io", "--no-headers").Stdout
		for _, s := range []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
			if !strings.Contains(out, s+" ") {
				t.Errorf("api-resources lacks %s:\n%s", s, out)
			}
		}
	})
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}

// TestRBAC_Invalid checks the 422 causes of invalid RBAC objects, as
// kube-apiserver's pkg/apis/rbac/validation words them.
func TestRBAC_Invalid(t *testing.T) {
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "team")
	rbac := cs.RbacV1()
	type cause struct{ Type, Field, Message string }
	check := func(t *testing.T, err error, want []cause) {
		t.Helper()
		if err == nil {
			t.Fatalf("got no error, want 422 %v", want)
		}
		s := apiStatus(t, err)
		if s.Code != 422 || s.Reason != metav1.StatusReasonInvalid {
			t.Fatalf("got %d %s, want 422 Invalid: %s", s.Code, s.Reason, s.Message)
		}
		var got []cause
		for _, c := range s.Details.Causes {
			got = append(got, cause{string(c.Type), c.Field, c.Message})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("causes:\n got %q\nwant %q", got, want)
		}
	}

	t.Run("role rule without verbs, groups or resources", func(t *testing.T) {
		_, err := rbac.Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{{}}}, metav1.CreateOptions{})
		check(t, err, []cause{
			{"FieldValueRequired", "rules[0].verbs", "Required value: verbs must contain at least one value"},
			{"FieldValueRequired", "rules[0].apiGroups", "Required value: resource rules must supply at least one api group"},
			{"FieldValueRequired", "rules[0].resources", "Required value: resource rules must supply at least one resource"},
		})
	})
	t.Run("role with non-resource URLs and resources", func(t *testing.T) {
		_, err := rbac.Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
		check(t, err, []cause{
			{"FieldValueInvalid", "rules[0].nonResourceURLs", `Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`},
			{"FieldValueInvalid", "rules[0].nonResourceURLs", `Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs`},
		})
	})
	t.Run("clusterrole with empty aggregation rule", func(t *testing.T) {
		_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{}}, metav1.CreateOptions{})
		check(t, err, []cause{
			{"FieldValueRequired", "aggregationRule.clusterRoleSelectors", "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"},
		})
	})
	t.Run("rolebinding with bad roleRef and subjects", func(t *testing.T) {
		_, err := rbac.RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "example.com", Kind: "Foo"},
			Subjects: []rbacv1.Subject{{Kind: "Bot", Name: "x"}, {Kind: "ServiceAccount", APIGroup: "x", Name: "Bad_Name"}, {Kind: "User", APIGroup: "x", Name: "u"}}}, metav1.CreateOptions{})
		check(t, err, []cause{
			{"FieldValueNotSupported", "roleRef.apiGroup", `Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`},
			{"FieldValueNotSupported", "roleRef.kind", `Unsupported value: "Foo": supported values: "Role", "ClusterRole"`},
			{"FieldValueRequired", "roleRef.name", "Required value"},
			{"FieldValueNotSupported", "subjects[0].kind", `Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group"`},
			{"FieldValueInvalid", "subjects[1].name", `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
			{"FieldValueNotSupported", "subjects[1].apiGroup", `Unsupported value: "x": supported values: ""`},
			{"FieldValueNotSupported", "subjects[2].apiGroup", `Unsupported value: "x": supported values: "rbac.authorization.k8s.io"`},
		})
	})
	t.Run("clusterrolebinding to a Role, service account without namespace", func(t *testing.T) {
		_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "r/x"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa"}}}, metav1.CreateOptions{})
		check(t, err, []cause{
			{"FieldValueNotSupported", "roleRef.kind", `Unsupported value: "Role": supported values: "ClusterRole"`},
			{"FieldValueInvalid", "roleRef.name", `Invalid value: "r/x": may not contain '/'`},
			{"FieldValueRequired", "subjects[0].namespace", "Required value"},
		})
	})
	t.Run("rolebinding roleRef is immutable", func(t *testing.T) {
		b, err := rbac.RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "imm"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "a"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		b.RoleRef.Name = "b"
		_, err = rbac.RoleBindings("team").Update(ctx, b, metav1.UpdateOptions{})
		check(t, err, []cause{
			{"FieldValueInvalid", "roleRef", `Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"b"}: cannot change roleRef`},
		})
	})
	t.Run("names are path segments, not DNS names", func(t *testing.T) {
		// kube-apiserver accepts "system:admin"-style names for every RBAC
		// kind.
		if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:Custom_Role"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("create clusterrole system:Custom_Role: %v", err)
		}
		_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a%b"}}, metav1.CreateOptions{})
		check(t, err, []cause{{"FieldValueInvalid", "metadata.name", `Invalid value: "a%b": may not contain '%'`}})
	})
}

// TestRBAC_Aggregation checks that an aggregated ClusterRole's rules
// follow the ClusterRoles its selector matches, as kube-controller-manager's
// aggregation controller keeps them.
func TestRBAC_Aggregation(t *testing.T) {
	d := StartDaemon(t)
	crs := d.Clientset().RbacV1().ClusterRoles()
	ctx := context.Background()
	sel := map[string]string{"example.com/aggregate-to-monitor": "true"}
	if _, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitor"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: sel}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	leases := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}
	for name, rule := range map[string]rbacv1.PolicyRule{"b-configmaps": cm, "a-leases": leases} {
		if _, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An unlabelled role contributes nothing.
	if _, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules := func(want []rbacv1.PolicyRule) {
		t.Helper()
		var got []rbacv1.PolicyRule
		for range 600 {
			r, err := crs.Get(ctx, "monitor", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = r.Rules
			if reflect.DeepEqual(got, want) || (len(got) == 0 && len(want) == 0) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("monitor's rules: got %+v, want %+v", got, want)
	}
	// Roles in name order.
	waitRules([]rbacv1.PolicyRule{leases, cm})
	if err := crs.Delete(ctx, "a-leases", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules([]rbacv1.PolicyRule{cm})
}

// TestRBAC_Protobuf writes and reads the RBAC kinds as client-go does when
// it is configured for Protobuf, as controllers usually are.
func TestRBAC_Protobuf(t *testing.T) {
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "team")
	rbac := protoClientset(t, d).RbacV1()
	ctx := context.Background()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "devs"}}}
	if _, err := rbac.RoleBindings("team").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := rbac.RoleBindings("team").Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	want := []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"}}
	if got.RoleRef.APIGroup != rbacv1.GroupName || !reflect.DeepEqual(got.Subjects, want) {
		t.Errorf("got roleRef %+v subjects %+v", got.RoleRef, got.Subjects)
	}
	list, err := rbac.RoleBindings("team").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list rolebindings: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Errorf("got %+v, want the one RoleBinding", list.Items)
	}
}
