package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// defaultIssuer is edgeapi's default --service-account-issuer.
const defaultIssuer = "https://kubernetes.default.svc.cluster.local"

// jwtParts decodes the header and the claims of a compact JWT.
func jwtParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts, want 3", token, len(parts))
	}
	decode := func(s string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("decode token part %q: %v", s, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("decode token part %s: %v", b, err)
		}
		return m
	}
	return decode(parts[0]), decode(parts[1])
}

// lifetime is a token's exp minus its iat, in seconds.
func lifetime(t *testing.T, claims map[string]any) int64 {
	t.Helper()
	exp, ok1 := claims["exp"].(float64)
	iat, ok2 := claims["iat"].(float64)
	if !ok1 || !ok2 || claims["nbf"] != claims["iat"] {
		t.Fatalf("exp %v iat %v nbf %v", claims["exp"], claims["iat"], claims["nbf"])
	}
	return int64(exp - iat)
}

// TestServiceAccount_Kubectl creates ServiceAccounts and tokens with
// kubectl (create sa, get sa, create token with its flags) and decodes the
// tokens' claims.
func TestServiceAccount_Kubectl(t *testing.T) {
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "team")

	d.MustKubectl("create", "sa", "bot", "-n", "team")
	sa, err := cs.CoreV1().ServiceAccounts("team").Get(ctx, "bot", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get sa: %v", err)
	}

	t.Run("get sa", func(t *testing.T) {
		out := d.MustKubectl("get", "sa", "-n", "team").Stdout
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// kube-apiserver 1.36 prints NAME and AGE.
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME AGE" || strings.Fields(lines[1])[0] != "bot" {
			t.Errorf("kubectl get sa:\n%s", out)
		}
		out = d.MustKubectl("api-resources", "--api-group=", "--no-headers").Stdout
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "serviceaccounts sa v1 true ServiceAccount") {
			t.Errorf("api-resources lacks serviceaccounts:\n%s", out)
		}
	})

	t.Run("invalid name", func(t *testing.T) {
		res := d.Kubectl("create", "sa", "Bad_Name", "-n", "team")
		want := `ServiceAccount "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("got %s, want an error containing %q", res, want)
		}
	})

	t.Run("create token", func(t *testing.T) {
		tok := d.MustKubectl("create", "token", "bot", "-n", "team").Stdout
		header, claims := jwtParts(t, tok)
		if header["alg"] != "ES256" || header["kid"] == "" || header["kid"] == nil {
			t.Errorf("header %v, want alg ES256 and a kid", header)
		}
		if lifetime(t, claims) != 3600 {
			t.Errorf("lifetime %d s, want 3600", lifetime(t, claims))
		}
		jti, _ := claims["jti"].(string)
		if len(jti) != 36 {
			t.Errorf("jti %q, want a UUID", jti)
		}
		want := map[string]any{
			"iss": defaultIssuer,
			"sub": "system:serviceaccount:team:bot",
			"aud": []any{defaultIssuer},
			"kubernetes.io": map[string]any{
				"namespace":      "team",
				"serviceaccount": map[string]any{"name": "bot", "uid": string(sa.UID)},
			},
		}
		for k, v := range want {
			if !reflect.DeepEqual(claims[k], v) {
				t.Errorf("claim %s = %v, want %v", k, claims[k], v)
			}
		}
	})

	t.Run("audiences and duration", func(t *testing.T) {
		tok := d.MustKubectl("create", "token", "bot", "-n", "team", "--audience", "vault", "--audience", "db", "--duration", "2h").Stdout
		_, claims := jwtParts(t, tok)
		if !reflect.DeepEqual(claims["aud"], []any{"vault", "db"}) || lifetime(t, claims) != 7200 {
			t.Errorf("aud %v lifetime %d, want [vault db] and 7200", claims["aud"], lifetime(t, claims))
		}
	})

	t.Run("bound to a secret", func(t *testing.T) {
		d.MustKubectl("create", "secret", "generic", "creds", "-n", "team", "--from-literal=k=v")
		s, err := cs.CoreV1().Secrets("team").Get(ctx, "creds", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tok := d.MustKubectl("create", "token", "bot", "-n", "team", "--bound-object-kind", "Secret", "--bound-object-name", "creds").Stdout
		_, claims := jwtParts(t, tok)
		k8s, _ := claims["kubernetes.io"].(map[string]any)
		if want := map[string]any{"name": "creds", "uid": string(s.UID)}; !reflect.DeepEqual(k8s["secret"], want) {
			t.Errorf("kubernetes.io.secret = %v, want %v", k8s["secret"], want)
		}
		res := d.Kubectl("create", "token", "bot", "-n", "team", "--bound-object-kind", "Secret", "--bound-object-name", "creds", "--bound-object-uid", "0000")
		want := `Operation cannot be fulfilled on Secret "creds": the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated`
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("got %s, want an error containing %q", res, want)
		}
		res = d.Kubectl("create", "token", "bot", "-n", "team", "--bound-object-kind", "Secret", "--bound-object-name", "gone")
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, `secrets "gone" not found`) {
			t.Errorf("got %s, want secrets \"gone\" not found", res)
		}
	})

	t.Run("too short", func(t *testing.T) {
		res := d.Kubectl("create", "token", "bot", "-n", "team", "--duration", "5m")
		want := `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes`
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("got %s, want an error containing %q", res, want)
		}
	})

	t.Run("missing service account", func(t *testing.T) {
		res := d.Kubectl("create", "token", "nobody", "-n", "team")
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, `serviceaccounts "nobody" not found`) {
			t.Errorf("got %s, want serviceaccounts \"nobody\" not found", res)
		}
	})
}

// TestServiceAccount_TokenRequest sends TokenRequests over raw HTTP and
// checks kube-apiserver's answers: the 201 and its fields, then each
// error's code, reason and message.
func TestServiceAccount_TokenRequest(t *testing.T) {
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "team")
	sa, err := cs.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := cs.CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/namespaces/team/serviceaccounts/bot/token"

	t.Run("created", func(t *testing.T) {
		res := doRaw(t, d, http.MethodPost, path, "application/json", "application/json",
			[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":700,"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"creds"}}}`))
		if res.Status != http.StatusCreated {
			t.Fatalf("got %d %s, want 201", res.Status, res.Body)
		}
		var tr authenticationv1.TokenRequest
		if err := json.Unmarshal(res.Body, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Kind != "TokenRequest" || tr.APIVersion != "authentication.k8s.io/v1" || tr.Name != "bot" || tr.Namespace != "team" || tr.UID != sa.UID {
			t.Errorf("got %+v %+v, want TokenRequest bot in team with the ServiceAccount's uid", tr.TypeMeta, tr.ObjectMeta)
		}
		if !reflect.DeepEqual(tr.Spec.Audiences, []string{defaultIssuer}) || tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != 700 {
			t.Errorf("spec %+v, want the default audience and 700 s", tr.Spec)
		}
		if got := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time); got != 700*time.Second {
			t.Errorf("expirationTimestamp - creationTimestamp = %v, want 700s", got)
		}
		_, claims := jwtParts(t, tr.Status.Token)
		if int64(claims["exp"].(float64)) != tr.Status.ExpirationTimestamp.Unix() {
			t.Errorf("exp %v, want status.expirationTimestamp %v", claims["exp"], tr.Status.ExpirationTimestamp)
		}
		k8s := claims["kubernetes.io"].(map[string]any)
		if want := map[string]any{"name": "creds", "uid": string(secret.UID)}; !reflect.DeepEqual(k8s["secret"], want) {
			t.Errorf("secret claim %v, want %v", k8s["secret"], want)
		}
	})

	t.Run("client-go with protobuf", func(t *testing.T) {
		exp := int64(900)
		tr, err := protoClientset(t, d).CoreV1().ServiceAccounts("team").CreateToken(ctx, "bot",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"a"}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		_, claims := jwtParts(t, tr.Status.Token)
		if !reflect.DeepEqual(claims["aud"], []any{"a"}) || lifetime(t, claims) != 900 {
			t.Errorf("aud %v lifetime %d", claims["aud"], lifetime(t, claims))
		}
	})

	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		code    int
		reason  metav1.StatusReason
		message string
	}{
		{"too short", "POST", path, `{"spec":{"expirationSeconds":599}}`, 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"too long", "POST", path, `{"spec":{"expirationSeconds":4294967297}}`, 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{"another name", "POST", path, `{"metadata":{"name":"other"}}`, 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "bot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"another namespace", "POST", path, `{"metadata":{"namespace":"other"}}`, 400, metav1.StatusReasonBadRequest,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"another uid", "POST", path, `{"metadata":{"uid":"0000"}}`, 409, metav1.StatusReasonConflict,
			fmt.Sprintf(`Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "bot": the UID in the token request (0000) does not match the UID of the service account (%s)`, sa.UID)},
		{"missing service account", "POST", "/api/v1/namespaces/team/serviceaccounts/nobody/token", `{}`, 404, metav1.StatusReasonNotFound,
			`serviceaccounts "nobody" not found`},
		{"bound to a missing secret", "POST", path, `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"gone"}}}`, 404, metav1.StatusReasonNotFound,
			`secrets "gone" not found`},
		{"bound to a secret with another uid", "POST", path, `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"creds","uid":"0000"}}}`, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on Secret "creds": the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated`},
		// edgeapi serves no Pods or Nodes: kube-apiserver's answer for a
		// missing one.
		{"bound to a pod", "POST", path, `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}}}`, 404, metav1.StatusReasonNotFound,
			`pods "p" not found`},
		{"bound to a node", "POST", path, `{"spec":{"boundObjectRef":{"kind":"Node","apiVersion":"v1","name":"n"}}}`, 404, metav1.StatusReasonNotFound,
			`nodes "n" not found`},
		{"bound to a configmap", "POST", path, `{"spec":{"boundObjectRef":{"kind":"ConfigMap","apiVersion":"v1","name":"c"}}}`, 400, metav1.StatusReasonBadRequest,
			"cannot bind token to object of type /v1, Kind=ConfigMap"},
		{"not JSON", "POST", path, `{`, 400, metav1.StatusReasonBadRequest, ""},
		{"another kind", "POST", path, `{"apiVersion":"v1","kind":"ServiceAccount"}`, 400, metav1.StatusReasonBadRequest, ""},
		{"get", "GET", path, ``, 405, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource"},
		{"put", "PUT", path, `{}`, 405, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource"},
		{"configmaps have no token", "POST", "/api/v1/namespaces/team/configmaps/c/token", `{}`, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := doRaw(t, d, tt.method, tt.path, "application/json", "application/json", []byte(tt.body))
			var s metav1.Status
			if err := json.Unmarshal(res.Body, &s); err != nil || s.Kind != "Status" {
				t.Fatalf("got %d %s, want a Status", res.Status, res.Body)
			}
			if res.Status != tt.code || int(s.Code) != tt.code || s.Reason != tt.reason {
				t.Errorf("got %d %d %s, want %d %s: %s", res.Status, s.Code, s.Reason, tt.code, tt.reason, s.Message)
			}
			if tt.message != "" && s.Message != tt.message {
				t.Errorf("message\n got %q\nwant %q", s.Message, tt.message)
			}
		})
	}
}

// TestServiceAccount_Flags checks --service-account-issuer,
// --api-audiences and --service-account-max-token-expiration, and that the
// signing key generated on first start (mode 0600) is kept across restarts.
func TestServiceAccount_Flags(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--service-account-issuer", "https://edge.example", "--service-account-issuer", "https://old.example",
		"--api-audiences", "api-a,api-b", "--service-account-max-token-expiration", "1h"}
	d := StartDaemon(t, DaemonOptions{DataDir: dir, Args: args})
	createNamespace(t, d.Clientset(), "team")
	d.MustKubectl("create", "sa", "bot", "-n", "team")

	res := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/team/serviceaccounts/bot/token", "application/json", "application/json",
		[]byte(`{"spec":{"expirationSeconds":7200}}`))
	if res.Status != http.StatusCreated {
		t.Fatalf("got %d %s, want 201", res.Status, res.Body)
	}
	if got, want := res.Header.Get("Warning"), `299 - "requested expiration of 7200 seconds shortened to 3600 seconds"`; got != want {
		t.Errorf("Warning %q, want %q", got, want)
	}
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(res.Body, &tr); err != nil {
		t.Fatal(err)
	}
	header1, claims := jwtParts(t, tr.Status.Token)
	if *tr.Spec.ExpirationSeconds != 3600 || lifetime(t, claims) != 3600 {
		t.Errorf("expirationSeconds %d lifetime %d, want 3600", *tr.Spec.ExpirationSeconds, lifetime(t, claims))
	}
	if claims["iss"] != "https://edge.example" || !reflect.DeepEqual(claims["aud"], []any{"api-a", "api-b"}) || !reflect.DeepEqual(tr.Spec.Audiences, []string{"api-a", "api-b"}) {
		t.Errorf("iss %v aud %v spec.audiences %v", claims["iss"], claims["aud"], tr.Spec.Audiences)
	}

	keyPath := filepath.Join(dir, "pki", "sa.key")
	fi, err := os.Stat(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %o, want 600", keyPath, fi.Mode().Perm())
	}
	key1, _ := os.ReadFile(keyPath)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	d = StartDaemon(t, DaemonOptions{DataDir: dir})
	header2, _ := jwtParts(t, d.MustKubectl("create", "token", "bot", "-n", "team").Stdout)
	if key2, _ := os.ReadFile(keyPath); !bytes.Equal(key1, key2) || header1["kid"] != header2["kid"] {
		t.Errorf("the signing key changed across a restart (kid %v, then %v)", header1["kid"], header2["kid"])
	}
}

// tokenKubeconfig writes a kubeconfig for d (over TLS) that authenticates
// with token alone, and returns its path.
func tokenKubeconfig(t *testing.T, d *Daemon, token string) string {
	t.Helper()
	ca := base64.StdEncoding.EncodeToString(d.RESTConfig().CAData)
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: edgeapi
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: sa
  user: {token: %q}
contexts:
- name: sa
  context: {cluster: edgeapi, user: sa}
current-context: sa
`, d.URL, ca, strings.TrimSpace(token))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlAs runs kubectl with the kubeconfig at path.
func kubectlAs(t *testing.T, d *Daemon, path string, args ...string) KubectlResult {
	t.Helper()
	stdout, stderr, code := runTool(t, kubectlBin.Path(t), append([]string{"--kubeconfig", path}, args...), []string{"HOME=" + t.TempDir(), "KUBECONFIG="}, "")
	return KubectlResult{Args: args, Stdout: stdout, Stderr: stderr, ExitCode: code}
}

// getWithToken sends GET path to d with the bearer token and no client
// certificate (none at all when token is empty: anonymous), and returns
// the status code and the Status, if any.
func getWithToken(t *testing.T, d *Daemon, path, token string) (int, metav1.Status) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(d.RESTConfig())
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var s metav1.Status
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &s)
	return resp.StatusCode, s
}

// TestServiceAccount_Authenticates uses tokens from `kubectl create token`
// over TLS: the ServiceAccount is its user for RBAC (403 naming it until a
// RoleBinding, 200 after), and its tokens get 401 once it, or the Secret a
// token is bound to, is deleted, or when they are for another audience.
func TestServiceAccount_Authenticates(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{TLS: true})
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "team")
	d.MustKubectl("create", "sa", "bot", "-n", "team")
	d.MustKubectl("create", "secret", "generic", "creds", "-n", "team", "--from-literal=k=v")
	token := d.MustKubectl("create", "token", "bot", "-n", "team").Stdout
	kc := tokenKubeconfig(t, d, token)
	const listCMs = "/api/v1/namespaces/team/configmaps"

	t.Run("forbidden until bound", func(t *testing.T) {
		res := kubectlAs(t, d, kc, "get", "configmaps", "-n", "team")
		want := `configmaps is forbidden: User "system:serviceaccount:team:bot" cannot list resource "configmaps" in API group "" in the namespace "team"`
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Fatalf("got %s, want an error containing %q", res, want)
		}
		if code, s := getWithToken(t, d, listCMs, token); code != http.StatusForbidden || s.Message != want {
			t.Errorf("got %d %q, want 403 %q", code, s.Message, want)
		}
	})

	t.Run("allowed by a RoleBinding", func(t *testing.T) {
		d.MustKubectl("create", "role", "cm-reader", "-n", "team", "--verb=get,list", "--resource=configmaps")
		d.MustKubectl("create", "rolebinding", "bot-reads", "-n", "team", "--role=cm-reader", "--serviceaccount=team:bot")
		// The authorizer follows the store's watch: wait for it.
		deadline := time.Now().Add(30 * time.Second)
		for {
			res := kubectlAs(t, d, kc, "get", "configmaps", "-n", "team", "-o", "name")
			if res.ExitCode == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still refused after the RoleBinding: %s", res)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if code, s := getWithToken(t, d, listCMs, token); code != http.StatusOK {
			t.Errorf("got %d %q, want 200", code, s.Message)
		}
		// Only what the Role grants.
		if code, _ := getWithToken(t, d, "/api/v1/namespaces/team/secrets", token); code != http.StatusForbidden {
			t.Errorf("list secrets: got %d, want 403", code)
		}
	})

	t.Run("another audience", func(t *testing.T) {
		tok := d.MustKubectl("create", "token", "bot", "-n", "team", "--audience", "vault").Stdout
		if code, s := getWithToken(t, d, listCMs, tok); code != http.StatusUnauthorized || s.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("got %d %s, want 401 Unauthorized", code, s.Reason)
		}
	})

	t.Run("another server's key", func(t *testing.T) {
		other := StartDaemon(t)
		other.MustKubectl("create", "sa", "bot", "-n", "default")
		tok := other.MustKubectl("create", "token", "bot", "-n", "default").Stdout
		if code, _ := getWithToken(t, d, "/api/v1/namespaces/default/configmaps", tok); code != http.StatusUnauthorized {
			t.Errorf("got %d, want 401", code)
		}
	})

	t.Run("bound secret deleted", func(t *testing.T) {
		tok := d.MustKubectl("create", "token", "bot", "-n", "team", "--bound-object-kind", "Secret", "--bound-object-name", "creds").Stdout
		if code, _ := getWithToken(t, d, listCMs, tok); code != http.StatusOK {
			t.Fatalf("before the delete: got %d, want 200", code)
		}
		d.MustKubectl("delete", "secret", "creds", "-n", "team")
		if code, _ := getWithToken(t, d, listCMs, tok); code != http.StatusUnauthorized {
			t.Errorf("after the delete: got %d, want 401", code)
		}
		// The unbound token still works.
		if code, _ := getWithToken(t, d, listCMs, token); code != http.StatusOK {
			t.Errorf("unbound token: got %d, want 200", code)
		}
	})

	t.Run("service account deleted and recreated", func(t *testing.T) {
		d.MustKubectl("delete", "sa", "bot", "-n", "team")
		res := kubectlAs(t, d, kc, "get", "configmaps", "-n", "team")
		// kubectl's wording of a 401.
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "You must be logged in to the server (the server has asked for the client to provide credentials)") {
			t.Errorf("after the delete: got %s, want kubectl's 401 error", res)
		}
		if code, _ := getWithToken(t, d, listCMs, token); code != http.StatusUnauthorized {
			t.Errorf("after the delete: got %d, want 401", code)
		}
		// A new ServiceAccount of the same name has another uid: the
		// old token stays refused, a new one works.
		if _, err := cs.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if code, _ := getWithToken(t, d, listCMs, token); code != http.StatusUnauthorized {
			t.Errorf("after the re-create: got %d, want 401", code)
		}
		tok := d.MustKubectl("create", "token", "bot", "-n", "team").Stdout
		if code, _ := getWithToken(t, d, listCMs, tok); code != http.StatusOK {
			t.Errorf("new token: got %d, want 200", code)
		}
	})
}

// TestServiceAccount_IssuerDiscovery reads the OpenID configuration and
// the key set kube-apiserver publishes for its ServiceAccount issuer, and
// verifies a token from kubectl create token with the published key.
func TestServiceAccount_IssuerDiscovery(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{TLS: true})
	res := doRaw(t, d, http.MethodGet, "/.well-known/openid-configuration", "", "", nil)
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Fatalf("got %d %v %s", res.Status, res.Header, res.Body)
	}
	want := fmt.Sprintf(`{"issuer":%q,"jwks_uri":"https://%s/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}`, defaultIssuer, d.Addr)
	if string(res.Body) != want {
		t.Errorf("openid-configuration:\n got %s\nwant %s", res.Body, want)
	}

	res = doRaw(t, d, http.MethodGet, "/openid/v1/jwks", "", "", nil)
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("got %d %v %s", res.Status, res.Header, res.Body)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(res.Body, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || !set.Keys[0].IsPublic() || set.Keys[0].Use != "sig" || set.Keys[0].Algorithm != "ES256" {
		t.Fatalf("keys %s", res.Body)
	}

	createNamespace(t, d.Clientset(), "team")
	d.MustKubectl("create", "sa", "bot", "-n", "team")
	token := strings.TrimSpace(d.MustKubectl("create", "token", "bot", "-n", "team").Stdout)
	header, _ := jwtParts(t, token)
	if header["kid"] != set.Keys[0].KeyID {
		t.Errorf("token kid %v, published kid %s", header["kid"], set.Keys[0].KeyID)
	}
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(set.Keys[0].Key); err != nil {
		t.Errorf("the token does not verify with the published key: %v", err)
	}

	// Anonymous requests are refused, as by kube-apiserver, whose
	// system:service-account-issuer-discovery binding names only
	// system:serviceaccounts.
	if code, s := getWithToken(t, d, "/openid/v1/jwks", ""); code != http.StatusForbidden || s.Message != `forbidden: User "system:anonymous" cannot get path "/openid/v1/jwks"` {
		t.Errorf("anonymous: got %d %q, want 403", code, s.Message)
	}
	// Every ServiceAccount may read them (the bootstrapped
	// system:service-account-issuer-discovery binding).
	for _, p := range []string{"/openid/v1/jwks", "/.well-known/openid-configuration"} {
		if code, s := getWithToken(t, d, p, token); code != http.StatusOK {
			t.Errorf("GET %s as a ServiceAccount: %d %q, want 200", p, code, s.Message)
		}
	}
}

// TestServiceAccount_Informer runs a client-go ConfigMap informer as a
// ServiceAccount that may only list and watch ConfigMaps in its
// namespace: it syncs and sees a ConfigMap created afterwards, while the
// same token is refused elsewhere.
func TestServiceAccount_Informer(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{TLS: true})
	admin := d.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createNamespace(t, admin, "apps")
	createNamespace(t, admin, "other")
	d.MustKubectl("create", "sa", "watcher", "-n", "apps")
	d.MustKubectl("create", "role", "cm-watch", "-n", "apps", "--verb=list,watch", "--resource=configmaps")
	d.MustKubectl("create", "rolebinding", "watcher", "-n", "apps", "--role=cm-watch", "--serviceaccount=apps:watcher")
	tr, err := admin.CoreV1().ServiceAccounts("apps").CreateToken(ctx, "watcher", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	cfg := rest.AnonymousClientConfig(d.RESTConfig())
	cfg.BearerToken = tr.Status.Token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	seen := make(chan string, 16)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("apps"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			seen <- cm.Name
		}
	}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if _, err := admin.CoreV1().ConfigMaps("apps").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-seen:
		if name != "settings" {
			t.Errorf("informer saw %q, want settings", name)
		}
	case <-ctx.Done():
		t.Fatal("the informer did not see the new ConfigMap")
	}

	_, err = cs.CoreV1().ConfigMaps("other").List(ctx, metav1.ListOptions{})
	if s := apiStatus(t, err); s.Code != http.StatusForbidden {
		t.Errorf("list in another namespace: got %d, want 403", s.Code)
	}
	_, err = cs.CoreV1().ConfigMaps("apps").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if s := apiStatus(t, err); s.Code != http.StatusForbidden || s.Message != `configmaps is forbidden: User "system:serviceaccount:apps:watcher" cannot create resource "configmaps" in API group "" in the namespace "apps"` {
		t.Errorf("create: got %d %q, want kube's 403", s.Code, s.Message)
	}
}
