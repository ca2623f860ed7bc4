package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/auth/authz"
	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// BenchmarkServer_GetHTTP2 measures GET by name as client-go makes it:
// one HTTP/2 connection over TLS, 16 concurrent streams, Accept Protobuf,
// by a user whose right to read comes from one of 1,000 RoleBindings
// and the bootstrap policy (the daemon's token authentication is replaced by a handler that puts
// the user in the request's context). The allocations and server CPU per
// operation include the client's, which runs in the same process; compare
// versions, not with BenchmarkServer_Get.
func BenchmarkServer_GetHTTP2(b *testing.B) {
	benchmarkGetHTTP2(b, "application/vnd.kubernetes.protobuf,application/json")
}

// BenchmarkServer_GetHTTP2JSON is BenchmarkServer_GetHTTP2 asking for
// JSON.
func BenchmarkServer_GetHTTP2JSON(b *testing.B) {
	benchmarkGetHTTP2(b, "application/json")
}

func benchmarkGetHTTP2(b *testing.B, accept string) {
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	a := rbac.New()
	loadBootstrapPolicy(b, a)
	a.Apply(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "editor"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch", "create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	for i := range 1000 {
		ns := fmt.Sprintf("ns-%d", i%100)
		a.Apply(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b-%d", i)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "editor"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("u-%d", i)}}})
	}
	z, err := authz.New([]string{authz.ModeRBAC}, a)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: registry.Builtin(), Authorizer: z})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	u := &user.DefaultInfo{Name: "u-420", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	var seeding atomic.Bool // the seeding requests are admin's
	seeding.Store(true)
	h := s.Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := u
		if seeding.Load() {
			who = admin
		}
		h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), who)))
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	b.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
		_ = db.Close()
	})
	client := ts.Client()
	base := ts.URL + "/api/v1/namespaces/ns-20/configmaps"
	resp, err := client.Post(ts.URL+"/api/v1/namespaces", "application/json", bytes.NewReader([]byte(`{"metadata":{"name":"ns-20"}}`)))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	const objects = 1000
	for i := range objects {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, benchPayload)
		resp, err := client.Post(base, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("create: status %d", resp.StatusCode)
		}
	}
	seeding.Store(false)
	var n atomic.Int64
	b.SetParallelism(8) // 16 clients on the 2-core machine
	b.ReportAllocs()
	cpu := startCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodGet, base, nil)
		req.Header.Set("Accept", accept)
		buf := make([]byte, 4096)
		for pb.Next() {
			i := n.Add(1) % objects
			r := req.Clone(context.Background())
			r.URL.Path = fmt.Sprintf("/api/v1/namespaces/ns-20/configmaps/cm-%d", i)
			resp, err := client.Do(r)
			if err != nil {
				b.Error(err)
				return
			}
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					if err != io.EOF {
						b.Error(err)
					}
					break
				}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
				b.Errorf("status %d over %s", resp.StatusCode, resp.Proto)
				return
			}
		}
	})
	b.StopTimer()
	cpu.report()
}
