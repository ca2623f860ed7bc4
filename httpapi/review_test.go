package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/registry"
)

func TestRouted(t *testing.T) {
	reg := registry.Builtin()
	tests := []struct {
		method, path string
		want         bool
	}{
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true},
		{"GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true}, // then 405
		{"GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x", false},
		{"DELETE", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x", false},
		{"GET", "/apis/authorization.k8s.io/v1/watch/selfsubjectaccessreviews", false},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews", true},
		{"POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", false},
		// Every path of a kind with all the verbs is routed.
		{"GET", "/api/v1/configmaps", true},
		{"POST", "/api/v1/configmaps", true}, // then 405
		{"GET", "/api/v1/namespaces/a/configmaps/b", true},
		{"GET", "/api/v1/watch/namespaces/a/configmaps", true},
		{"GET", "/api/v1/namespaces/a", true},
		{"PUT", "/api/v1/namespaces/a/finalize", true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			ri, ok := parseRequestInfo(tt.method, tt.path, false)
			if !ok {
				t.Fatal("not a resource path")
			}
			k := reg.Snapshot().Lookup(schema.GroupVersionResource{Group: ri.Group, Version: ri.Version, Resource: ri.Resource})
			if k == nil {
				t.Fatalf("no kind for %+v", ri)
			}
			if got := routed(k, ri); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestServer_Review runs reviews through a server without an authorizer
// or rule resolver, which allows everything, with and without a user in
// the request's context.
func TestServer_Review(t *testing.T) {
	db := openTestStore(t)
	s, err := New(Config{Store: db, Registry: registry.Builtin()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-User") != "" {
			r = r.WithContext(authn.WithUser(r.Context(), alice))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
	})
	stamps := regexp.MustCompile(`"(time|creationTimestamp)":"[^"]*"`)
	const (
		ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
		ssrr = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
		ssr  = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	)
	tests := []struct {
		name        string
		path        string
		withUser    bool
		contentType string
		accept      string
		body        string
		wantCode    int
		want        string
	}{
		{
			name: "no user", path: ssar, body: `{"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, wantCode: 400,
			want: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"no user present on request","reason":"BadRequest","code":400}`,
		},
		{
			name: "no authorizer allows", path: ssar, withUser: true, body: `{"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, wantCode: 201,
			want: `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"t","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{},"f:verb":{}}}}}]},` +
				`"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}},"status":{"allowed":true}}`,
		},
		{
			// System metadata a client sets is wiped before validation.
			name: "system metadata wiped", path: ssar, withUser: true,
			body:     `{"metadata":{"uid":"u","creationTimestamp":"2020-01-01T00:00:00Z","namespace":"x"},"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`,
			wantCode: 201,
			want: `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"t","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{},"f:verb":{}}}}}]},` +
				`"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}},"status":{"allowed":true}}`,
		},
		{
			name: "no rule resolver lists everything", path: ssrr, withUser: true, body: `{"spec":{"namespace":"a"}}`, wantCode: 201,
			want: `{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{},"status":{"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}],"incomplete":false}}`,
		},
		{
			name: "yaml", path: ssr, withUser: true, contentType: "application/yaml", accept: "application/yaml", body: "apiVersion: authentication.k8s.io/v1\nkind: SelfSubjectReview\n", wantCode: 201,
			want: "apiVersion: authentication.k8s.io/v1\nkind: SelfSubjectReview\nmetadata:\n  creationTimestamp: T\nstatus:\n  userInfo:\n    groups:\n    - system:authenticated\n    username: alice\n",
		},
		{
			name: "table", path: ssr, withUser: true, accept: "application/json;as=Table;v=v1;g=meta.k8s.io", body: `{}`, wantCode: 201,
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"`,
		},
		{
			name: "wrong kind", path: ssr, withUser: true, body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview"}`, wantCode: 400,
			want: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"TokenReview in version \"v1\" cannot be handled as a SelfSubjectReview: `,
		},
		{
			name: "unsupported media type", path: ssr, withUser: true, contentType: "text/plain", body: `{}`, wantCode: 415,
			want: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: `,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, ts.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			req.Header.Set("User-Agent", "t")
			if tt.withUser {
				req.Header.Set("X-Test-User", "1")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			got := stamps.ReplaceAllString(strings.TrimSpace(string(b)), `"$1":"T"`)
			got = regexp.MustCompile(`creationTimestamp: "[^"]*"`).ReplaceAllString(got, "creationTimestamp: T")
			if resp.StatusCode != tt.wantCode || !strings.HasPrefix(got+"\n", tt.want) {
				t.Errorf("got %d %s\nwant %d %s", resp.StatusCode, got, tt.wantCode, tt.want)
			}
		})
	}
}
