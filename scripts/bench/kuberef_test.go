package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadKubeRefVars(t *testing.T) {
	in := "noise\nKUBE_REF_URL=https://127.0.0.1:1234\nKUBE_REF_TOKEN=tok\nKUBE_REF_CA=/x/ca.crt\n" +
		"KUBE_REF_KUBECONFIG=/x/kubeconfig\nKUBE_REF_APISERVER_PID=10\nKUBE_REF_ETCD_PID=11\nKUBE_REF_ETCD_URL=http://127.0.0.1:2379\nKUBE_REF_READY=4.20\nnot read\n"
	got, err := readKubeRefVars(bufio.NewReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"KUBE_REF_URL": "https://127.0.0.1:1234", "KUBE_REF_TOKEN": "tok", "KUBE_REF_ETCD_PID": "11", "KUBE_REF_ETCD_URL": "http://127.0.0.1:2379", "KUBE_REF_READY": "4.20"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}

	_, err = readKubeRefVars(bufio.NewReader(strings.NewReader("KUBE_REF_URL=https://x\n")))
	if err == nil || !strings.Contains(err.Error(), "KUBE_REF_TOKEN") {
		t.Errorf("truncated output: %v, want an error naming KUBE_REF_TOKEN", err)
	}
}

// TestStartKubeRef: the bench takes the reference's address from the
// start script's output and stops the script with SIGTERM.
func TestStartKubeRef(t *testing.T) {
	dir := t.TempDir()
	stopped := filepath.Join(dir, "stopped")
	script := filepath.Join(dir, "start")
	body := "#!/bin/sh\ntrap 'echo yes > " + stopped + "; exit 0' TERM\n" +
		"echo starting >&2\n" +
		"printf 'KUBE_REF_URL=https://127.0.0.1:1\\nKUBE_REF_TOKEN=t\\nKUBE_REF_CA=/ca\\nKUBE_REF_APISERVER_PID=2\\nKUBE_REF_ETCD_PID=3\\nKUBE_REF_ETCD_URL=http://127.0.0.1:4\\nKUBE_REF_READY=1.5\\n'\n" +
		"while :; do sleep 0.05; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := startKubeRef(context.Background(), script, filepath.Join(dir, "log"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if k.vars["KUBE_REF_URL"] != "https://127.0.0.1:1" || k.pid("KUBE_REF_ETCD_PID") != 3 {
		t.Errorf("vars = %v", k.vars)
	}
	k.stop()
	if b, err := os.ReadFile(stopped); err != nil || strings.TrimSpace(string(b)) != "yes" {
		t.Errorf("the script did not see SIGTERM: %q %v", b, err)
	}

	failing := filepath.Join(dir, "fail")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'etcd exited' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = startKubeRef(context.Background(), failing, filepath.Join(dir, "log2"), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "etcd exited") {
		t.Errorf("failing script: %v, want an error with its stderr", err)
	}
}

// TestNewServerClient_TLS: over TLS the shared client trusts the given CA
// and sends the token; an https server without a CA is refused.
func TestNewServerClient_TLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sesame" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"proto":"` + r.Proto + `"}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := newServerClient(srv.URL, &serverTLS{caFile: ca, token: "sesame"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	code, body, err := c.doSimple(context.Background(), http.MethodGet, "/", "")
	if err != nil || code != http.StatusOK || string(body) != `{"proto":"HTTP/1.1"}` {
		t.Errorf("GET = %d %q %v, want 200 over HTTP/1.1", code, body, err)
	}

	// httptest's servers share one certificate: make another.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.crt")
	if err := os.WriteFile(other, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	c2, err := newServerClient(srv.URL, &serverTLS{caFile: other, token: "sesame"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	if _, _, err := c2.doSimple(context.Background(), http.MethodGet, "/", ""); err == nil {
		t.Error("GET with another CA succeeded, want a certificate error")
	}

	if _, err := newServerClient(srv.URL, nil, 4); err == nil {
		t.Error("newServerClient(https, no CA) succeeded, want an error")
	}
}

func TestParseFlags_KubeRef(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mainTLS bool
		wantErr string
	}{
		{args: nil, mainTLS: false},
		{args: []string{"--kube-ref"}, mainTLS: true},
		{args: []string{"--kube-ref", "--main-tls=false"}, mainTLS: false},
		{args: []string{"--main-tls=true"}, mainTLS: true},
		{args: []string{"--main-tls=yes"}, wantErr: "--main-tls"},
		{args: []string{"--kube-ref", "--server", "http://127.0.0.1:1"}, wantErr: "--server"},
		{args: []string{"--kube-ref", "--client", "clientgo"}, mainTLS: true},
		{args: []string{"--kube-ref", "--client", "clientgo", "--tls-rbac-bindings", "0"}, mainTLS: true},
		{args: []string{"--kube-ref", "--client", "clientgo", "--kubeconfig", "/tmp/kc"}, wantErr: "--kubeconfig"},
		{args: []string{"--server", "https://127.0.0.1:1"}, wantErr: "--ca"},
		{args: []string{"--informer-objects", "0"}, wantErr: "positive"},
	} {
		cfg, err := parseFlags(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseFlags(%q) error %v, want one naming %s", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tc.args, err)
			continue
		}
		if cfg.mainTLS != tc.mainTLS {
			t.Errorf("parseFlags(%q).mainTLS = %v, want %v", tc.args, cfg.mainTLS, tc.mainTLS)
		}
	}
}

func TestCompareReports(t *testing.T) {
	edge := &Report{Results: []Result{
		{Workload: "create-64", OpsPerSec: 6000, Latency: &Latency{P50MS: 5, P99MS: 20}},
		{Workload: "list-10k", Value: 13.4, Unit: "MiB", Latency: &Latency{P50MS: 50, P99MS: 80}},
		{Workload: "informer-100k", Value: 2, Unit: "s", ServerCPU: 0.5},
		{Workload: "rss-idle", Value: 30, Unit: "MiB"},
		{Workload: "sqlite-ref", OpsPerSec: 10000, Latency: &Latency{P50MS: 4}},
	}}
	kube := &Report{Results: []Result{
		{Workload: "startup", Value: 5, Unit: "s"},
		{Workload: "create-64", OpsPerSec: 1500, Latency: &Latency{P50MS: 30, P99MS: 110}},
		{Workload: "list-10k", Value: 14, Unit: "MiB", Latency: &Latency{P50MS: 130, P99MS: 140}},
		{Workload: "informer-100k", Value: 8, Unit: "s", ServerCPU: 0.5},
		{Workload: "rss-idle", Value: 300, Unit: "MiB"},
		{Workload: "sqlite-ref", OpsPerSec: 12000, Latency: &Latency{P50MS: 3}},
	}}
	got := map[string]float64{}
	for _, c := range compareReports(edge, kube) {
		got[c.workload] = c.ratio
	}
	want := map[string]float64{"create-64": 4, "list-10k": 2.6, "informer-100k": 4, "informer-100k server CPU": 4, "rss-idle": 10,
		"sqlite-ref": 0} // no server: both printed, no ratio
	if len(got) != len(want) {
		t.Errorf("compared %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g < w-1e-9 || g > w+1e-9 {
			t.Errorf("ratio %s = %v, want %v", k, g, w)
		}
	}
}

func TestDescribeRequest(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"/api/v1/namespaces/a/configmaps?limit=500&resourceVersion=0", "list (resourceVersion=0 limit=500)"},
		{"/api/v1/namespaces/a/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "watch-list (resourceVersionMatch=NotOlderThan)"},
		{"/api/v1/namespaces/a/configmaps?watch=true&resourceVersion=42", "watch (resourceVersion=42)"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.url, nil)
		if got := describeRequest(req); got != tc.want {
			t.Errorf("describeRequest(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestKubeRefJSONPath(t *testing.T) {
	if got := kubeRefJSONPath("/tmp/b.json"); got != "/tmp/b.kube-ref.json" {
		t.Errorf("kubeRefJSONPath = %q", got)
	}
}

func TestSplitClientGo(t *testing.T) {
	cs := []comparison{
		{workload: "create-64"}, {workload: "create-64 clientgo"}, {workload: "create-64 clientgo/plain"},
		{workload: "create-64 vs sqlite-ref"}, {workload: "create-64 clientgo vs sqlite-ref"}, {workload: "get-16"},
	}
	plain, cg := splitClientGo(cs)
	names := func(cs []comparison) string {
		var n []string
		for _, c := range cs {
			n = append(n, c.workload)
		}
		return strings.Join(n, ",")
	}
	if got, want := names(plain), "create-64,create-64 vs sqlite-ref,get-16"; got != want {
		t.Errorf("plain = %s, want %s", got, want)
	}
	if got, want := names(cg), "create-64 clientgo,create-64 clientgo/plain,create-64 clientgo vs sqlite-ref"; got != want {
		t.Errorf("client-go = %s, want %s", got, want)
	}
}

func TestCompareReports_ClientGo(t *testing.T) {
	edge := &Report{Results: []Result{
		{Workload: "get-16", OpsPerSec: 8000, Latency: &Latency{P99MS: 5}},
		{Workload: "get-16 clientgo", OpsPerSec: 6000, Latency: &Latency{P99MS: 6}, ServerCPU: 0.6},
		{Workload: "get-16 clientgo/plain", Value: 75, Unit: "%"},
	}}
	kube := &Report{Results: []Result{
		{Workload: "get-16", OpsPerSec: 4000, Latency: &Latency{P99MS: 9}},
		{Workload: "get-16 clientgo", OpsPerSec: 2000, Latency: &Latency{P99MS: 20}, ServerCPU: 1},
		{Workload: "get-16 clientgo/plain", Value: 50, Unit: "%"},
	}}
	_, cg := splitClientGo(compareReports(edge, kube))
	got := map[string]float64{}
	for _, c := range cg {
		got[c.workload] = c.ratio
	}
	// CPU per op: 100 µs against 500 µs.
	want := map[string]float64{"get-16 clientgo": 3, "get-16 clientgo server CPU/op": 5, "get-16 clientgo/plain": 0}
	if len(got) != len(want) {
		t.Fatalf("client-go lines %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g < w-1e-9 || g > w+1e-9 {
			t.Errorf("ratio %s = %v, want %v", k, g, w)
		}
	}
}

func TestTokenOf(t *testing.T) {
	for _, tc := range []struct {
		code    int
		body    string
		want    string
		wantErr bool
	}{
		{code: 201, body: `{"kind":"TokenRequest","status":{"token":"eyJ.abc","expirationTimestamp":"2026-11-27T00:00:00Z"}}`, want: "eyJ.abc"},
		{code: 201, body: `{"kind":"TokenRequest","status":{}}`, wantErr: true},
		{code: 404, body: `{"kind":"Status","reason":"NotFound"}`, wantErr: true},
		{code: 201, body: `not json`, wantErr: true},
	} {
		got, err := tokenOf(tc.code, []byte(tc.body))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("tokenOf(%d, %s) = %q, %v; want %q, error %v", tc.code, tc.body, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestBench_ServerTarget(t *testing.T) {
	var bindings []string
	var editPut string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer masters" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		n := len(body)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/apis/rbac.authorization.k8s.io/v1/clusterroles":
			w.Write([]byte(`{"items":[{"metadata":{"name":"edit"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"to-edit":"true"}}]}},` +
				`{"metadata":{"name":"cm","labels":{"to-edit":"true"}},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["*"]}]}]}`))
		case r.Method == http.MethodPut && r.URL.Path == "/apis/rbac.authorization.k8s.io/v1/clusterroles/edit":
			editPut = string(body)
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.URL.Path == "/api/v1/namespaces/bench/serviceaccounts/bench-user/token":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"status":{"token":"issued"}}`))
		case strings.HasSuffix(r.URL.Path, "/rolebindings"):
			bindings = append(bindings, string(body[:n]))
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	st := &serverTLS{caFile: ca, token: "masters"}
	c, err := newServerClient(srv.URL, st, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()

	t.Run("rbac", func(t *testing.T) {
		bindings = nil
		b := &bench{cfg: config{tlsRBACBindings: 3, quiet: true}, c: c, base: srv.URL, serverTLS: st}
		tt, err := b.tlsTarget()
		if err != nil {
			t.Fatal(err)
		}
		if tt.rest.BearerToken != "issued" || b.rbacUserName() != "system:serviceaccount:bench:bench-user" {
			t.Errorf("token %q user %q, want the issued token of system:serviceaccount:bench:bench-user", tt.rest.BearerToken, b.rbacUserName())
		}
		if len(bindings) != 3 || !strings.Contains(bindings[0], `"name":"system:serviceaccount:bench:bench-user"`) {
			t.Errorf("rolebindings %q, want 3, the first naming the ServiceAccount", bindings)
		}
		if !strings.Contains(editPut, `"resources":["configmaps"]`) {
			t.Errorf("edit ClusterRole put %q, want the aggregated configmaps rule", editPut)
		}
		if tt.base != srv.URL || tt.tls.RootCAs == nil {
			t.Errorf("target %s (RootCAs %v), want %s with the CA", tt.base, tt.tls.RootCAs, srv.URL)
		}
	})
	t.Run("masters", func(t *testing.T) {
		bindings = nil
		b := &bench{cfg: config{tlsRBACBindings: 0, quiet: true}, c: c, base: srv.URL, serverTLS: st}
		tt, err := b.tlsTarget()
		if err != nil {
			t.Fatal(err)
		}
		if tt.rest.BearerToken != "masters" || len(bindings) != 0 {
			t.Errorf("token %q with %d rolebindings, want the masters token and none", tt.rest.BearerToken, len(bindings))
		}
	})
}

func TestRefWorkloads(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"create", "list", "list-ref", "watch"}, []string{"create", "list", "watch"}},
		{[]string{"list-ref"}, nil},
		{[]string{"sqlite-ref", "get"}, []string{"sqlite-ref", "get"}},
		{nil, nil},
	} {
		if got := refWorkloads(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("refWorkloads(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
