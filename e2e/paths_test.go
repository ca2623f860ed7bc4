package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPaths_Shapes sends every verb to odd path shapes of a daemon holding
// known ConfigMaps and Secrets in two namespaces, and checks each answer
// against kube-apiserver's and that every known object is byte-for-byte
// unchanged afterwards. `DELETE /api/v1/secrets` and
// `DELETE /api/v1/namespaces//configmaps` used to delete every object of
// the kind in every namespace.
func TestPaths_Shapes(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	namespaces := []string{"paths-a", "paths-b"}
	var known []string // paths of the known objects
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Data: map[string]string{"k": ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, StringData: map[string]string{"k": ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		known = append(known, "/api/v1/namespaces/"+ns+"/configmaps/keep", "/api/v1/namespaces/"+ns+"/secrets/keep")
	}
	snapshot := func() map[string][]byte {
		out := map[string][]byte{}
		for _, p := range known {
			got := doRaw(t, d, "GET", p, "", "application/json", nil)
			if got.Status != 200 {
				t.Errorf("GET %s: %d %s", p, got.Status, got.Body)
			}
			out[p] = got.Body
		}
		return out
	}
	before := snapshot()
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"k":"changed"}}`

	tests := []struct {
		method, path, body string
		wantCode           int
		wantReason         metav1.StatusReason
		wantMessage        string
	}{
		// The all-namespaces path of a namespaced kind serves list and
		// watch of the collection only.
		{method: "DELETE", path: "/api/v1/secrets", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "DELETE", path: "/api/v1/configmaps?labelSelector=", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "POST", path: "/api/v1/configmaps", body: cm, wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "DELETE", path: "/apis/coordination.k8s.io/v1/leases", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "GET", path: "/api/v1/configmaps/keep", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{method: "PUT", path: "/api/v1/configmaps/keep", body: cm, wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{method: "PATCH", path: "/api/v1/configmaps/keep", body: `{"data":{"k":"changed"}}`, wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{method: "DELETE", path: "/api/v1/secrets/keep", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{method: "GET", path: "/api/v1/watch/configmaps/keep", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		// An empty namespace segment names no namespace.
		{method: "DELETE", path: "/api/v1/namespaces//configmaps", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "DELETE", path: "/api/v1/namespaces//secrets", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "GET", path: "/api/v1/namespaces//configmaps", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "GET", path: "/api/v1/namespaces//configmaps/keep", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "DELETE", path: "/api/v1/namespaces//configmaps/keep", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "POST", path: "/api/v1/namespaces//configmaps", body: cm, wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		{method: "GET", path: "/api/v1/watch/namespaces//configmaps", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: "Namespace parameter required."},
		// Names that are not path segments.
		{method: "DELETE", path: "/api/v1/namespaces/paths-a/configmaps/..", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: `Name parameter invalid: "..": may not be '..'`},
		{method: "GET", path: "/api/v1/namespaces/paths-a/configmaps/.", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: `Name parameter invalid: ".": may not be '.'`},
		{method: "DELETE", path: "/api/v1/namespaces/paths-a/configmaps/keep%2Fx", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{method: "DELETE", path: "/api/v1/namespaces/paths-a//configmaps", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		// Methods the routes do not serve: a Status, never echo's text.
		{method: "HEAD", path: "/api/v1/namespaces/paths-a/configmaps?watch=1", wantCode: 405},
		{method: "HEAD", path: "/api/v1/namespaces/paths-a/configmaps/keep", wantCode: 405},
		{method: "TRACE", path: "/api/v1/namespaces/paths-a/configmaps", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "OPTIONS", path: "/api/v1/namespaces/paths-a/configmaps/keep", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "TRACE", path: "/version", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "POST", path: "/api", body: "{}", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{method: "DELETE", path: "/apis", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			ct := "application/json"
			if tt.method == "PATCH" {
				ct = "application/merge-patch+json"
			}
			got := doRaw(t, d, tt.method, tt.path, ct, "application/json", []byte(tt.body))
			if got.Status != tt.wantCode {
				t.Fatalf("got %d %s, want %d", got.Status, got.Body, tt.wantCode)
			}
			if tt.method == "HEAD" {
				if len(got.Body) != 0 {
					t.Errorf("HEAD answered with a %d-byte body", len(got.Body))
				}
				return
			}
			st := got.status(t)
			if st.Kind != "Status" || st.Reason != tt.wantReason || int(st.Code) != tt.wantCode {
				t.Errorf("got Status kind %q reason %q code %d (%q), want reason %q code %d", st.Kind, st.Reason, st.Code, st.Message, tt.wantReason, tt.wantCode)
			}
			if tt.wantMessage != "" && st.Message != tt.wantMessage {
				t.Errorf("message: got %q, want %q", st.Message, tt.wantMessage)
			}
		})
	}

	after := snapshot()
	for _, p := range known {
		if !bytes.Equal(before[p], after[p]) {
			t.Errorf("%s changed:\nbefore %s\nafter  %s", p, before[p], after[p])
		}
	}
	for _, ns := range namespaces {
		for _, kind := range []string{"configmaps", "secrets"} {
			p := fmt.Sprintf("/api/v1/namespaces/%s/%s", ns, kind)
			if got := doRaw(t, d, "GET", p, "", "application/json", nil); got.Status != 200 || len(got.cmList(t, p).Items) != 1 {
				t.Errorf("GET %s: %d, want 200 and one item: %.300s", p, got.Status, got.Body)
			}
		}
	}
}

// TestPaths_DiscoveryTrailingSlash checks that discovery, version and
// health paths answer with and without a trailing slash, as kube-apiserver
// does (the Python client's VersionApi calls /version/).
func TestPaths_DiscoveryTrailingSlash(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	tests := []struct {
		path     string
		wantKind string // "" for text
	}{
		{path: "/version"}, {path: "/version/"},
		{path: "/api", wantKind: "APIVersions"}, {path: "/api/", wantKind: "APIVersions"},
		{path: "/apis", wantKind: "APIGroupList"}, {path: "/apis/", wantKind: "APIGroupList"},
		{path: "/api/v1", wantKind: "APIResourceList"}, {path: "/api/v1/", wantKind: "APIResourceList"},
		{path: "/apis/coordination.k8s.io", wantKind: "APIGroup"}, {path: "/apis/coordination.k8s.io/", wantKind: "APIGroup"},
		{path: "/apis/coordination.k8s.io/v1", wantKind: "APIResourceList"}, {path: "/apis/coordination.k8s.io/v1/", wantKind: "APIResourceList"},
		{path: "/healthz"}, {path: "/healthz/"}, {path: "/livez"}, {path: "/livez/"}, {path: "/readyz"}, {path: "/readyz/"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := doRaw(t, d, "GET", tt.path, "", "", nil)
			if got.Status != http.StatusOK {
				t.Fatalf("GET %s: got %d %s, want 200", tt.path, got.Status, got.Body)
			}
			if tt.wantKind == "" {
				return
			}
			var tm metav1.TypeMeta
			if err := json.Unmarshal(got.Body, &tm); err != nil || tm.Kind != tt.wantKind {
				t.Errorf("GET %s: kind %q (%v), want %q", tt.path, tm.Kind, err, tt.wantKind)
			}
		})
	}
	if got := doRaw(t, d, "GET", "/version/", "", "", nil); !bytes.Contains(got.Body, []byte(`"gitVersion"`)) {
		t.Errorf("GET /version/: %s, want the version document", got.Body)
	}
}
