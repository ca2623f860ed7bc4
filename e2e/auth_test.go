package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/edgeapi/edgeapi/pki"
)

// The users of the token file the authentication tests start the daemon
// with: an admin in system:masters, alice with no groups, and bob in
// "devs".
const (
	adminToken = "admin-token-0123456789"
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
)

// startAuthDaemon starts a daemon over TLS with RBAC and a token file for
// admin, alice and bob, plus args.
func startAuthDaemon(t *testing.T, args ...string) *Daemon {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	csv := adminToken + ",admin,admin-uid,\"system:masters\"\n" +
		aliceToken + ",alice,alice-uid\n" +
		bobToken + ",bob,bob-uid,\"devs\"\n"
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	return StartDaemon(t, DaemonOptions{TLS: true, Args: append([]string{"--token-auth-file", tokens}, args...)})
}

// tlsClient returns an HTTP client that trusts d's CA and presents no
// client certificate: its requests carry whatever credentials the test
// puts in their headers.
func tlsClient(t *testing.T, d *Daemon) *http.Client {
	t.Helper()
	cfg := d.RESTConfig()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("no CA in the daemon's kubeconfig")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
}

// authReq is a request with its own headers (Authorization,
// Impersonate-*), sent with c.
func authReq(t *testing.T, c *http.Client, d *Daemon, method, path string, header http.Header, body []byte) httpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// wantStatus checks that r is a Status with code, reason and message.
func wantAuthStatus(t *testing.T, what string, r httpResult, code int, reason metav1.StatusReason, message string) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.Body, &st); err != nil || st.Kind != "Status" {
		t.Errorf("%s: status %d, body %s: want a Status (%v)", what, r.Status, r.Body, err)
		return st
	}
	if r.Status != code || st.Code != int32(code) || st.Reason != reason || st.Message != message {
		t.Errorf("%s:\n got %d %s %q\nwant %d %s %q", what, st.Code, st.Reason, st.Message, code, reason, message)
	}
	return st
}

// TestAuth_Requests: who a request is (a token, no credentials, an invalid
// token) and what RBAC lets them do, over raw HTTPS, with
// kube-apiserver's codes and messages. Authorization comes before
// existence (403, never 404), and a refused write changes nothing.
func TestAuth_Requests(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	c := tlsClient(t, d)
	admin, alice, bob := bearer(adminToken), bearer(aliceToken), bearer(bobToken)
	createNamespace(t, d.Clientset(), "team")
	if r := authReq(t, c, d, "POST", "/api/v1/namespaces/team/configmaps", admin, []byte(`{"metadata":{"name":"keep"},"data":{"k":"v"}}`)); r.Status != http.StatusCreated {
		t.Fatalf("admin create: %d %s", r.Status, r.Body)
	}

	t.Run("anonymous", func(t *testing.T) {
		r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps", nil, nil)
		st := wantAuthStatus(t, "anonymous list", r, 403, metav1.StatusReasonForbidden,
			`configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "team"`)
		if st.Details == nil || st.Details.Kind != "configmaps" {
			t.Errorf("details = %+v, want kind configmaps", st.Details)
		}
		// system:public-info-viewer is bound to system:unauthenticated.
		for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
			if r := authReq(t, c, d, "GET", p, nil, nil); r.Status != http.StatusOK {
				t.Errorf("anonymous GET %s: %d %s, want 200", p, r.Status, r.Body)
			}
		}
		// system:discovery is bound to system:authenticated only.
		wantAuthStatus(t, "anonymous GET /api", authReq(t, c, d, "GET", "/api", nil, nil), 403, metav1.StatusReasonForbidden,
			`forbidden: User "system:anonymous" cannot get path "/api"`)
		// "Bearer  token" (two spaces) presents no token: anonymous.
		r = authReq(t, c, d, "GET", "/api", http.Header{"Authorization": {"Bearer  " + adminToken}}, nil)
		if r.Status != http.StatusForbidden {
			t.Errorf("GET /api with an extra space before the token: %d %s, want 403 as anonymous", r.Status, r.Body)
		}
	})

	t.Run("invalid token", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/api", "/api/v1/namespaces/team/configmaps/keep"} {
			wantAuthStatus(t, "GET "+p+" with an invalid token", authReq(t, c, d, "GET", p, bearer("nope"), nil),
				401, metav1.StatusReasonUnauthorized, "Unauthorized")
		}
		// In the representation asked for.
		h := bearer("nope")
		h.Set("Accept", "application/vnd.kubernetes.protobuf")
		r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps", h, nil)
		if r.Status != 401 || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
			t.Errorf("protobuf 401: %d %q", r.Status, r.Header.Get("Content-Type"))
		}
		// A refused write changes nothing.
		r = authReq(t, c, d, "DELETE", "/api/v1/namespaces/team/configmaps/keep", bearer("nope"), nil)
		if r.Status != 401 {
			t.Errorf("DELETE with an invalid token: %d, want 401", r.Status)
		}
	})

	t.Run("no bindings", func(t *testing.T) {
		if r := authReq(t, c, d, "GET", "/api", alice, nil); r.Status != http.StatusOK {
			t.Errorf("alice GET /api: %d %s, want 200 (system:discovery)", r.Status, r.Body)
		}
		st := wantAuthStatus(t, "alice get missing", authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps/missing", alice, nil),
			403, metav1.StatusReasonForbidden,
			`configmaps "missing" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team"`)
		if st.Details == nil || st.Details.Name != "missing" || st.Details.Kind != "configmaps" {
			t.Errorf("details = %+v", st.Details)
		}
		wantAuthStatus(t, "alice create", authReq(t, c, d, "POST", "/api/v1/namespaces/team/configmaps", alice, []byte(`{"metadata":{"name":"evil"}}`)),
			403, metav1.StatusReasonForbidden,
			`configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "team"`)
		wantAuthStatus(t, "alice delete", authReq(t, c, d, "DELETE", "/api/v1/namespaces/team/configmaps/keep", alice, nil),
			403, metav1.StatusReasonForbidden,
			`configmaps "keep" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "team"`)
		wantAuthStatus(t, "alice deletecollection", authReq(t, c, d, "DELETE", "/api/v1/namespaces/team/configmaps", alice, nil),
			403, metav1.StatusReasonForbidden,
			`configmaps is forbidden: User "alice" cannot deletecollection resource "configmaps" in API group "" in the namespace "team"`)
		wantAuthStatus(t, "alice watch", authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps?watch=1", alice, nil),
			403, metav1.StatusReasonForbidden,
			`configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "team"`)
		wantAuthStatus(t, "alice cluster list", authReq(t, c, d, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", alice, nil),
			403, metav1.StatusReasonForbidden,
			`clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`)
		wantAuthStatus(t, "alice status", authReq(t, c, d, "GET", "/api/v1/namespaces/team/status", alice, nil),
			403, metav1.StatusReasonForbidden,
			`namespaces "team" is forbidden: User "alice" cannot get resource "namespaces/status" in API group "" in the namespace "team"`)
		// Nothing changed.
		r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps", admin, nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"keep"`) || strings.Contains(string(r.Body), `"evil"`) {
			t.Errorf("after the refused writes: %d %s", r.Status, r.Body)
		}
	})

	t.Run("resource names", func(t *testing.T) {
		// A Role naming one ConfigMap: bob (group devs) may get it, and
		// list or watch it by a metadata.name field selector, as in
		// kube-apiserver; not the whole collection.
		d.MustKubectl("create", "role", "one", "-n", "team", "--verb=get,list,watch", "--resource=configmaps", "--resource-name=keep")
		d.MustKubectl("create", "rolebinding", "one", "-n", "team", "--role=one", "--group=devs")
		waitFor(t, "bob may get keep", func() bool {
			return authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps/keep", bob, nil).Status == 200
		})
		if r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dkeep", bob, nil); r.Status != 200 {
			t.Errorf("bob list by field selector: %d %s", r.Status, r.Body)
		}
		if r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps", bob, nil); r.Status != 403 {
			t.Errorf("bob list all: %d %s, want 403", r.Status, r.Body)
		}
		if r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps/other", bob, nil); r.Status != 403 {
			t.Errorf("bob get other: %d %s, want 403", r.Status, r.Body)
		}
	})

	t.Run("impersonation", func(t *testing.T) {
		h := bearer(adminToken)
		h.Set("Impersonate-User", "alice")
		wantAuthStatus(t, "admin as alice", authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps/keep", h, nil),
			403, metav1.StatusReasonForbidden,
			`configmaps "keep" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team"`)
		h = bearer(aliceToken)
		h.Set("Impersonate-User", "admin")
		wantAuthStatus(t, "alice as admin", authReq(t, c, d, "GET", "/api/v1/namespaces", h, nil),
			403, metav1.StatusReasonForbidden,
			`users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`)
		h = bearer(aliceToken)
		h.Set("Impersonate-Group", "system:masters")
		wantAuthStatus(t, "group without user", authReq(t, c, d, "GET", "/api/v1/namespaces", h, nil),
			400, metav1.StatusReasonBadRequest,
			`requested [{Group  system:masters    }] without impersonating a user`)
		// Huge and repeated values: bounded, and still refused.
		h = bearer(aliceToken)
		h.Set("Impersonate-User", "admin")
		for i := 0; i < 2000; i++ {
			h.Add("Impersonate-Group", strings.Repeat("g", 100))
		}
		if r := authReq(t, c, d, "GET", "/api/v1/namespaces", h, nil); r.Status != 403 {
			t.Errorf("alice with 2,000 impersonated groups: %d %s, want 403", r.Status, r.Body)
		}
	})
}

// TestAuth_AnonymousOff: with --anonymous-auth=false a request without
// credentials is 401, even for /healthz.
func TestAuth_AnonymousOff(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t, "--anonymous-auth=false")
	c := tlsClient(t, d)
	for _, p := range []string{"/healthz", "/api/v1/namespaces"} {
		wantAuthStatus(t, "GET "+p, authReq(t, c, d, "GET", p, nil, nil), 401, metav1.StatusReasonUnauthorized, "Unauthorized")
	}
	if r := authReq(t, c, d, "GET", "/api/v1/namespaces", bearer(adminToken), nil); r.Status != 200 {
		t.Errorf("admin: %d %s", r.Status, r.Body)
	}
}

// userKubeconfig writes a kubeconfig for d's server and CA with token.
func userKubeconfig(t *testing.T, d *Daemon, name, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(d.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, token
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuth_KubectlRBAC: roles and bindings made with kubectl decide what a
// token user may do with kubectl; escalation through a Role or a binding
// is refused with kube-apiserver's message; impersonation with --as.
func TestAuth_KubectlRBAC(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	alice := userKubeconfig(t, d, "alice", aliceToken)
	bob := userKubeconfig(t, d, "bob", bobToken)
	asAlice := func(args ...string) KubectlResult {
		t.Helper()
		return d.Kubectl(append([]string{"--kubeconfig", alice}, args...)...)
	}
	d.MustKubectl("create", "namespace", "team")
	d.MustKubectl("create", "configmap", "c1", "-n", "team", "--from-literal=k=v")

	if r := asAlice("get", "configmaps", "-n", "team"); r.ExitCode == 0 || !strings.Contains(r.Stderr,
		`Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team"`) {
		t.Errorf("alice before any binding: %s", r)
	}
	d.MustKubectl("create", "role", "cm-reader", "-n", "team", "--verb=get,list,watch", "--resource=configmaps")
	d.MustKubectl("create", "rolebinding", "alice-reads", "-n", "team", "--role=cm-reader", "--user=alice")
	waitFor(t, "alice may list configmaps", func() bool { return asAlice("get", "configmaps", "-n", "team").ExitCode == 0 })
	if r := asAlice("get", "configmap", "c1", "-n", "team", "-o", "jsonpath={.data.k}"); r.ExitCode != 0 || r.Stdout != "v" {
		t.Errorf("alice get c1: %s", r)
	}
	if r := asAlice("create", "configmap", "c2", "-n", "team"); r.ExitCode == 0 || !strings.Contains(r.Stderr, `cannot create resource "configmaps"`) {
		t.Errorf("alice create: %s", r)
	}
	if r := asAlice("get", "configmaps", "-n", "default"); r.ExitCode == 0 || !strings.Contains(r.Stderr, `in the namespace "default"`) {
		t.Errorf("alice in default: %s", r)
	}

	t.Run("escalation", func(t *testing.T) {
		// alice administers "team" (the aggregated admin ClusterRole).
		d.MustKubectl("create", "rolebinding", "alice-admin", "-n", "team", "--clusterrole=admin", "--user=alice")
		waitFor(t, "alice may create roles", func() bool {
			return asAlice("create", "role", "small", "-n", "team", "--verb=get", "--resource=configmaps").ExitCode == 0
		})
		r := asAlice("create", "role", "big", "-n", "team", "--verb=get", "--resource=customresourcedefinitions.apiextensions.k8s.io")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, `roles.rbac.authorization.k8s.io "big" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) ||
			!strings.Contains(r.Stderr, `{APIGroups:["apiextensions.k8s.io"], Resources:["customresourcedefinitions"], Verbs:["get"]}`) {
			t.Errorf("alice grants customresourcedefinitions: %s", r)
		}
		r = asAlice("create", "rolebinding", "root", "-n", "team", "--clusterrole=cluster-admin", "--user=alice")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, `rolebindings.rbac.authorization.k8s.io "root" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) {
			t.Errorf("alice binds cluster-admin: %s", r)
		}
		if r := d.Kubectl("get", "rolebinding", "root", "-n", "team"); r.ExitCode == 0 {
			t.Errorf("the refused binding exists: %s", r)
		}
		// What alice holds she may grant: bob gets view in team.
		if r := asAlice("create", "rolebinding", "bob-view", "-n", "team", "--clusterrole=view", "--user=bob"); r.ExitCode != 0 {
			t.Errorf("alice binds view for bob: %s", r)
		}
		waitFor(t, "bob may list configmaps in team", func() bool {
			return d.Kubectl("--kubeconfig", bob, "get", "configmaps", "-n", "team").ExitCode == 0
		})
	})

	t.Run("impersonation", func(t *testing.T) {
		if r := d.Kubectl("--as", "alice", "get", "configmaps", "-n", "team", "-o", "name"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "configmap/c1") {
			t.Errorf("admin --as alice in team: %s", r)
		}
		if r := d.Kubectl("--as", "alice", "get", "secrets", "-n", "default"); r.ExitCode == 0 || !strings.Contains(r.Stderr, `User "alice" cannot list resource "secrets"`) {
			t.Errorf("admin --as alice secrets: %s", r)
		}
		if r := asAlice("--as", "admin", "get", "namespaces"); r.ExitCode == 0 || !strings.Contains(r.Stderr, `users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`) {
			t.Errorf("alice --as admin: %s", r)
		}
	})
}

// TestAuth_ClientCertificates: `edgeapi kubeconfig --user --group` issues
// a certificate whose CN and O are the user and groups RBAC sees; a
// certificate of another CA is 401.
func TestAuth_ClientCertificates(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	kc := filepath.Join(t.TempDir(), "carol.kubeconfig")
	out, err := exec.Command(edgeapiBin.Path(t), "kubeconfig", "--data-dir", d.DataDir, "--user", "carol", "--group", "devs", "--group", "ops", "-o", kc).CombinedOutput()
	if err != nil {
		t.Fatalf("edgeapi kubeconfig: %v\n%s", err, out)
	}
	if st, err := os.Stat(kc); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v, mode %v; want 0600", err, st.Mode())
	}
	if r := d.Kubectl("--kubeconfig", kc, "get", "configmaps", "-A"); r.ExitCode == 0 || !strings.Contains(r.Stderr, `User "carol" cannot list resource "configmaps"`) {
		t.Errorf("carol before a binding: %s", r)
	}
	d.MustKubectl("create", "clusterrolebinding", "ops-view", "--clusterrole=view", "--group=ops")
	waitFor(t, "carol may list configmaps through her group ops", func() bool {
		return d.Kubectl("--kubeconfig", kc, "get", "configmaps", "-A").ExitCode == 0
	})

	// A certificate signed by another CA: 401, not a failed handshake,
	// and not anonymous.
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "other"), []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.X509KeyPair(other.AdminCert, other.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(d.RESTConfig().CAData)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign, nil }}}}
	wantAuthStatus(t, "another CA's certificate", authReq(t, c, d, "GET", "/healthz", nil, nil), 401, metav1.StatusReasonUnauthorized, "Unauthorized")
}

// TestAuth_Bootstrap: the default ClusterRoles and ClusterRoleBindings are
// there at start, aggregated, and reconciled at every start without
// undoing a user's additions; autoupdate=false leaves one alone.
func TestAuth_Bootstrap(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	r := rawGet(t, d, "/readyz?verbose")
	for _, want := range []string{"[+]poststarthook/rbac/bootstrap-roles ok", "[+]informer-sync-rbac ok"} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("readyz?verbose lacks %q:\n%s", want, r.Body)
		}
	}
	cs := d.Clientset()
	ctx := context.Background()
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery", "system:public-info-viewer"} {
		if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	waitFor(t, "the admin ClusterRole aggregates edit's rules", func() bool {
		r, err := cs.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if res == "configmaps" && strings.Contains(strings.Join(rule.Verbs, ","), "create") {
					return true
				}
			}
		}
		return false
	})

	// A user's additions.
	basic, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/extra"}}
	basic.Rules = append(basic.Rules, extra)
	basic.Labels = map[string]string{"mine": "yes"}
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	disc, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disc.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	disc.Rules = nil
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, disc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "system:public-info-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	d = StartDaemon(t, DaemonOptions{TLS: true, DataDir: d.DataDir})
	cs = d.Clientset()
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted default binding after a restart: %v", err)
	}
	basic, err = cs.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range basic.Rules {
		if len(r.NonResourceURLs) == 1 && r.NonResourceURLs[0] == "/extra" {
			found = true
		}
	}
	if !found || basic.Labels["mine"] != "yes" || len(basic.Rules) < 2 {
		t.Errorf("system:basic-user after a restart: labels %v rules %+v; want the added rule and label kept, and the defaults", basic.Labels, basic.Rules)
	}
	disc, err = cs.RbacV1().ClusterRoles().Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(disc.Rules) != 0 {
		t.Errorf("system:discovery with autoupdate=false got its rules back: %+v", disc.Rules)
	}
}
