package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/edgeapi/edgeapi/auth/authz"
	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap"
)

// kubeAttributes is what kube-apiserver's authorization filter asks its
// authorizer for req: its RequestInfoFactory, then
// GetAuthorizerAttributes' copy into an AttributesRecord. It is the
// oracle of requestAttributes.
func kubeAttributes(t testing.TB, req *http.Request, u user.Info) (authorizer.AttributesRecord, bool) {
	f := &genericrequest.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	info, err := f.NewRequestInfo(req)
	if err != nil {
		return authorizer.AttributesRecord{}, false // kube-apiserver answers 500
	}
	a := authorizer.AttributesRecord{User: u, ResourceRequest: info.IsResourceRequest, Path: req.URL.Path, Verb: info.Verb}
	if info.IsResourceRequest {
		a.Path = ""
		a.APIGroup, a.APIVersion = info.APIGroup, info.APIVersion
		a.Resource, a.Subresource, a.Name, a.Namespace = info.Resource, info.Subresource, info.Name, info.Namespace
	}
	return a, true
}

// ours is requestAttributes with the path dropped from resource requests,
// as kube-apiserver's attributes carry it only for non-resource ones.
func ours(req *http.Request, u user.Info) authorizer.AttributesRecord {
	a := requestAttributes(req, u)
	if a.ResourceRequest {
		a.Path = ""
	}
	return a
}

// TestRequestAttributes: the attributes authorized for a request are
// kube-apiserver's, for the paths and methods clients send.
func TestRequestAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice"}
	tests := []struct{ method, target string }{
		{"GET", "/api"},
		{"GET", "/api/v1"},
		{"GET", "/apis"},
		{"GET", "/apis/apps"},
		{"GET", "/apis/apps/v1"},
		{"GET", "/healthz"},
		{"GET", "/readyz/ping"},
		{"POST", "/version"},
		{"GET", "/openapi/v3/api/v1"},
		{"GET", "/api/v1/namespaces"},
		{"GET", "/api/v1/namespaces/team"},
		{"PUT", "/api/v1/namespaces/team/finalize"},
		{"PATCH", "/api/v1/namespaces/team/status"},
		{"GET", "/api/v1/namespaces/team/configmaps"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch=true"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch=yes"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch=FALSE"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch=0&watch=1"},
		{"GET", "/api/v1/namespaces/team/configmaps?watch=1&fieldSelector=metadata.name%3Dx"},
		{"GET", "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dx"},
		{"GET", "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3D..."},
		{"GET", "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name!%3Dx"},
		{"GET", "/api/v1/configmaps"},
		{"GET", "/api/v1/watch/namespaces/team/configmaps"},
		{"GET", "/api/v1/watch/namespaces/team/configmaps/x"},
		{"GET", "/api/v1/watch/configmaps"},
		{"GET", "/api/v1/namespaces/team/configmaps/x"},
		{"GET", "/api/v1/namespaces/team/configmaps/x?watch=true"},
		{"HEAD", "/api/v1/namespaces/team/configmaps/x"},
		{"POST", "/api/v1/namespaces/team/configmaps"},
		{"PUT", "/api/v1/namespaces/team/configmaps/x"},
		{"PATCH", "/api/v1/namespaces/team/configmaps/x"},
		{"DELETE", "/api/v1/namespaces/team/configmaps/x"},
		{"DELETE", "/api/v1/namespaces/team/configmaps"},
		{"OPTIONS", "/api/v1/namespaces/team/configmaps"},
		{"GET", "/api/v1/namespaces/team/serviceaccounts/sa/token"},
		{"POST", "/api/v1/namespaces/team/serviceaccounts/sa/token"},
		{"GET", "/api/v1/namespaces/team/configmaps/x/status/extra/parts"},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"},
		{"GET", "/apis/stable.example.com/v1/namespaces/team/crontabs/c/scale"},
		{"GET", "/apis/stable.example.com/v1/watch/crontabs"},
		{"GET", "/api/v1/namespaces//configmaps"},
		{"GET", "//api//v1/namespaces/team/configmaps/"},
		{"GET", "/api/v1/watch"},
		{"GET", "/"},
		{"GET", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://x"+tt.target, nil)
			want, ok := kubeAttributes(t, req, u)
			got := ours(req, u)
			if !ok {
				// kube-apiserver fails the request (500); ours must be a
				// non-resource request.
				if got.ResourceRequest {
					t.Errorf("got %+v, want a non-resource request where kube-apiserver fails", got)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// FuzzRequestAttributes: for any method and URL, requestAttributes does
// not panic and agrees with kube-apiserver's RequestInfoFactory.
func FuzzRequestAttributes(f *testing.F) {
	for _, s := range []string{"/api/v1/namespaces/a/configmaps/b", "/apis/g/v/watch/x", "/api/v1/namespaces/a/status?watch=1&fieldSelector=metadata.name%3Dq"} {
		f.Add("GET", s)
	}
	u := &user.DefaultInfo{Name: "u"}
	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.NewRequest(method, "http://x/"+target, nil)
		if err != nil {
			return
		}
		got := ours(req, u)
		want, ok := kubeAttributes(t, req, u)
		if !ok {
			if got.ResourceRequest {
				t.Errorf("%s %s: got %+v, want a non-resource request", method, target, got)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", method, target, got, want)
		}
	})
}

// BenchmarkAuthorize_Get is what authorization adds to a GET of a user
// bound by one of 1,000 RoleBindings across 100 namespaces: the request's
// attributes and the RBAC decision (system:masters first, as the daemon
// builds it). Compare with BenchmarkServer_Get.
func BenchmarkAuthorize_Get(b *testing.B) { benchmarkAuthorizeGet(b, false) }

// BenchmarkAuthorize_GetBootstrap is BenchmarkAuthorize_Get with the
// bootstrap policy the daemon writes, whose ClusterRoleBindings to
// system:authenticated every decision of the user reads.
func BenchmarkAuthorize_GetBootstrap(b *testing.B) { benchmarkAuthorizeGet(b, true) }

// loadBootstrapPolicy applies the daemon's bootstrap ClusterRoles and
// ClusterRoleBindings to a.
func loadBootstrapPolicy(b testing.TB, a *rbac.Authorizer) {
	p, err := bootstrap.Load()
	if err != nil {
		b.Fatal(err)
	}
	for i := range p.ClusterRoles {
		r := p.ClusterRoles[i]
		r.Rules = rbac.AggregateRules(&r, p.ClusterRoles)
		a.Apply(&r)
	}
	for i := range p.ClusterRoleBindings {
		a.Apply(&p.ClusterRoleBindings[i])
	}
}

func benchmarkAuthorizeGet(b *testing.B, withBootstrap bool) {
	a := rbac.New()
	if withBootstrap {
		loadBootstrapPolicy(b, a)
	}
	a.Apply(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	for i := 0; i < 1000; i++ {
		ns := fmt.Sprintf("ns-%d", i%100)
		a.Apply(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b-%d", i)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("u-%d", i)}}})
	}
	z, err := authz.New([]string{authz.ModeRBAC}, a)
	if err != nil {
		b.Fatal(err)
	}
	u := &user.DefaultInfo{Name: "u-420", Groups: []string{user.AllAuthenticated}}
	req := httptest.NewRequest("GET", "http://x/api/v1/namespaces/ns-20/configmaps/x", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		attrs := requestAttributes(req, u)
		if d, _, _ := z.(quietAuthorizer).AuthorizeQuiet(req.Context(), &attrs); d != authorizer.DecisionAllow {
			b.Fatalf("decision %v", d)
		}
	}
}
