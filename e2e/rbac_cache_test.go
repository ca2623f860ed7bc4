package e2e

import (
	"net/http"
	"testing"
)

// TestRBAC_DecisionCacheForgets: the daemon remembers the requests RBAC
// allowed (auth/rbac/decisions.go); a user who read a ConfigMap many
// times (over HTTP/2, in Protobuf, as client-go does) is refused as soon
// as the change that takes the right away reaches the index: the
// RoleBinding deleted, then (bound again) the Role narrowed. Once refused,
// every later try is refused: no remembered decision answers for the old
// RBAC objects.
func TestRBAC_DecisionCacheForgets(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	c := tlsClient(t, d)
	admin := bearer(adminToken)
	alice := bearer(aliceToken)
	alice.Set("Accept", "application/vnd.kubernetes.protobuf,application/json")
	createNamespace(t, d.Clientset(), "team")
	const cm = "/api/v1/namespaces/team/configmaps/c1"
	mustAdmin := func(method, path, body string) {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		if r := authReq(t, c, d, method, path, admin, b); r.Status >= 300 {
			t.Fatalf("admin %s %s: %d %s", method, path, r.Status, r.Body)
		}
	}
	aliceGet := func() int {
		t.Helper()
		r := authReq(t, c, d, "GET", cm, alice, nil)
		if r.Status == http.StatusOK && r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
			t.Errorf("alice's GET: Content-Type %q, want Protobuf", r.Header.Get("Content-Type"))
		}
		return r.Status
	}
	mustAdmin("POST", "/api/v1/namespaces/team/configmaps", `{"metadata":{"name":"c1"},"data":{"k":"v"}}`)
	role := `{"metadata":{"name":"reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]}]}`
	binding := `{"metadata":{"name":"alice-reads"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},` +
		`"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"}]}`
	const roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles"
	const bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings"
	mustAdmin("POST", roles, role)
	mustAdmin("POST", bindings, binding)

	allowedThenRefused := func(what string, take func()) {
		t.Helper()
		waitFor(t, "alice may get c1", func() bool { return aliceGet() == http.StatusOK })
		for i := range 50 {
			if got := aliceGet(); got != http.StatusOK {
				t.Fatalf("%s: alice's GET %d while bound: %d, want 200", what, i, got)
			}
		}
		take()
		waitFor(t, "alice refused after "+what, func() bool { return aliceGet() == http.StatusForbidden })
		for i := range 50 {
			if got := aliceGet(); got != http.StatusForbidden {
				t.Fatalf("%s: alice's GET %d after: %d, want 403", what, i, got)
			}
		}
	}
	allowedThenRefused("the RoleBinding is deleted", func() { mustAdmin("DELETE", bindings+"/alice-reads", "") })
	mustAdmin("POST", bindings, binding)
	allowedThenRefused("the Role is narrowed", func() {
		mustAdmin("PUT", roles+"/reader", `{"metadata":{"name":"reader"},"rules":[{"verbs":["list"],"apiGroups":[""],"resources":["configmaps"]}]}`)
	})
}
