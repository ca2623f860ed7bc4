package authn

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// allowOnly allows impersonate on the listed "resource/name" pairs (or
// "resource/*"), and records every question.
type allowOnly struct {
	allowed []string
	asked   []string
	err     error
}

func (a *allowOnly) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	res := attrs.GetResource()
	if attrs.GetSubresource() != "" {
		res += "/" + attrs.GetSubresource()
	}
	q := attrs.GetVerb() + " " + attrs.GetAPIGroup() + "/" + attrs.GetAPIVersion() + " " + res + " " + attrs.GetNamespace() + "/" + attrs.GetName()
	a.asked = append(a.asked, q)
	if a.err != nil {
		return authorizer.DecisionDeny, "", a.err
	}
	for _, allowed := range a.allowed {
		if allowed == res+"/"+attrs.GetName() || allowed == res+"/*" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

var everything = []string{"users/*", "groups/*", "serviceaccounts/*", "uids/*", "userextras/scopes/*", "userextras/example.com/key/*"}

func TestImpersonator_Impersonate(t *testing.T) {
	tests := []struct {
		name    string
		headers [][2]string
		allowed []string
		// want is the resulting user; nil with wantCode 0 means no impersonation.
		want      *identity
		wantCode  int32
		wantMsg   string
		wantAsked []string
	}{
		{name: "no headers is the requestor", allowed: everything},
		{name: "empty user header is no impersonation", headers: [][2]string{{"Impersonate-User", ""}}, allowed: everything},
		{name: "user", headers: [][2]string{{"Impersonate-User", "alice"}}, allowed: everything,
			want:      &identity{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{}},
			wantAsked: []string{"impersonate / users /alice"}},
		{name: "user with groups, uid and extras", allowed: everything,
			headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Group", "dev"}, {"Impersonate-Group", "ops"},
				{"Impersonate-Uid", "u-1"}, {"Impersonate-Extra-Scopes", "view"}, {"Impersonate-Extra-Scopes", "edit"}, {"Impersonate-Extra-Example.com%2fkey", "v"}},
			want: &identity{Name: "alice", UID: "u-1", Groups: []string{"dev", "ops", "system:authenticated"},
				Extra: map[string][]string{"scopes": {"view", "edit"}, "example.com/key": {"v"}}},
			wantAsked: []string{"impersonate / users /alice", "impersonate / groups /dev", "impersonate / groups /ops",
				"impersonate authentication.k8s.io/v1 userextras/example.com/key /v",
				"impersonate authentication.k8s.io/v1 userextras/scopes /view", "impersonate authentication.k8s.io/v1 userextras/scopes /edit",
				"impersonate authentication.k8s.io/v1 uids /u-1"}},
		{name: "percent-escaped extra key is unescaped after lowercasing", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Extra-Example.com%2FEscaped%E1%9B%84Scopes", "a"}}, allowed: []string{"users/*", "userextras/example.com/escapedᛄscopes/*"},
			want: &identity{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"example.com/escapedᛄscopes": {"a"}}}},
		{name: "invalid percent escape keeps the lowercased key", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Extra-Almost%zzPercent", "a"}}, allowed: []string{"users/*", "userextras/almost%zzpercent/*"},
			want: &identity{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"almost%zzpercent": {"a"}}}},
		{name: "service account gets its groups", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns1:robot"}}, allowed: everything,
			want:      &identity{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}, Extra: map[string][]string{}},
			wantAsked: []string{"impersonate / serviceaccounts ns1/robot"}},
		{name: "service account with groups gets only those", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns1:robot"}, {"Impersonate-Group", "g"}}, allowed: everything,
			want: &identity{Name: "system:serviceaccount:ns1:robot", Groups: []string{"g", "system:authenticated"}, Extra: map[string][]string{}}},
		{name: "malformed service account name is a user", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:Bad_NS:robot"}}, allowed: everything,
			want:      &identity{Name: "system:serviceaccount:Bad_NS:robot", Groups: []string{"system:authenticated"}, Extra: map[string][]string{}},
			wantAsked: []string{"impersonate / users /system:serviceaccount:Bad_NS:robot"}},
		{name: "system:authenticated given is not added twice", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Group", "system:authenticated"}}, allowed: everything,
			want: &identity{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{}}},
		{name: "system:unauthenticated given keeps system:authenticated out", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Group", "system:unauthenticated"}}, allowed: everything,
			want: &identity{Name: "alice", Groups: []string{"system:unauthenticated"}, Extra: map[string][]string{}}},
		{name: "anonymous is in system:unauthenticated", headers: [][2]string{{"Impersonate-User", "system:anonymous"}}, allowed: everything,
			want: &identity{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}, Extra: map[string][]string{}}},
		{name: "anonymous with system:authenticated given keeps it and gets system:unauthenticated", headers: [][2]string{{"Impersonate-User", "system:anonymous"}, {"Impersonate-Group", "system:authenticated"}}, allowed: everything,
			want: &identity{Name: "system:anonymous", Groups: []string{"system:authenticated", "system:unauthenticated"}, Extra: map[string][]string{}}},
		{name: "only the first user header counts", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-User", "bob"}}, allowed: everything,
			want: &identity{Name: "alice", Groups: []string{"system:authenticated"}, Extra: map[string][]string{}}},

		{name: "group without user is a 400", headers: [][2]string{{"Impersonate-Group", "system:masters"}}, allowed: everything,
			wantCode: 400, wantMsg: "requested [{Group  system:masters    }] without impersonating a user"},
		{name: "uid without user is a 400", headers: [][2]string{{"Impersonate-Uid", "123"}}, allowed: everything,
			wantCode: 400, wantMsg: "requested [{UID  123  authentication.k8s.io/v1  }] without impersonating a user"},
		{name: "extra without user is a 400", headers: [][2]string{{"Impersonate-Extra-Scopes", "v"}}, allowed: everything,
			wantCode: 400, wantMsg: "requested [{UserExtra  v  authentication.k8s.io/v1  scopes}] without impersonating a user"},
		{name: "empty group without user is a 400", headers: [][2]string{{"Impersonate-User", ""}, {"Impersonate-Group", ""}}, allowed: everything,
			wantCode: 400, wantMsg: "requested [{Group      }] without impersonating a user"},

		{name: "user not allowed", headers: [][2]string{{"Impersonate-User", "alice"}}, allowed: nil,
			wantCode: 403, wantMsg: `users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{name: "service account not allowed names its namespace", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns1:robot"}}, allowed: nil,
			wantCode: 403, wantMsg: `serviceaccounts "robot" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"`},
		{name: "group not allowed", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Group", "system:masters"}}, allowed: []string{"users/alice"},
			wantCode: 403, wantMsg: `groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		{name: "uid not allowed", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Uid", "u1"}}, allowed: []string{"users/alice"},
			wantCode: 403, wantMsg: `uids.authentication.k8s.io "u1" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "extra not allowed", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Extra-Scopes", "admin"}}, allowed: []string{"users/alice"},
			wantCode: 403, wantMsg: `userextras.authentication.k8s.io "admin" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "html in the requested name is kept as is", headers: [][2]string{{"Impersonate-User", "<b>&"}}, allowed: nil,
			wantCode: 403, wantMsg: `users "<b>&" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{name: "huge user from someone without the right is a 403", headers: [][2]string{{"Impersonate-User", strings.Repeat("a", 100<<10)}}, allowed: nil,
			wantCode: 403, wantMsg: `is forbidden: User "bob" cannot impersonate resource "users"`},
		{name: "huge user from someone with the right is a 400", headers: [][2]string{{"Impersonate-User", strings.Repeat("a", 100<<10)}}, allowed: everything,
			wantCode: 400, wantMsg: "Impersonate-User value is 102400 bytes, at most 16384"},
		{name: "huge extra is a 400", headers: [][2]string{{"Impersonate-User", "alice"}, {"Impersonate-Extra-Scopes", strings.Repeat("a", 20000)}}, allowed: everything,
			wantCode: 400, wantMsg: "Impersonate-Extra-Scopes value is 20000 bytes, at most 16384"},
		{name: "repeated groups from someone without the right is a 403 at the first", headers: append([][2]string{{"Impersonate-User", "alice"}}, repeat("Impersonate-Group", "g", 1000)...), allowed: []string{"users/alice"},
			wantCode: 403, wantMsg: `groups "g" is forbidden`, wantAsked: []string{"impersonate / users /alice", "impersonate / groups /g"}},
		{name: "repeated groups past the bound are a 400", headers: append([][2]string{{"Impersonate-User", "alice"}}, repeat("Impersonate-Group", "g", 1000)...), allowed: everything,
			wantCode: 400, wantMsg: "too many impersonation values: 1001, at most 512"},
		{name: "groups up to the bound are accepted", headers: append([][2]string{{"Impersonate-User", "alice"}}, repeat("Impersonate-Group", "g", 511)...), allowed: everything,
			want: &identity{Name: "alice", Groups: append(repeatString("g", 511), "system:authenticated"), Extra: map[string][]string{}}},
	}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, kv := range tt.headers {
				h.Add(kv[0], kv[1])
			}
			authz := &allowOnly{allowed: tt.allowed}
			im := &Impersonator{Authorizer: authz}
			got, impersonated, err := im.Impersonate(context.Background(), h, bob)
			if tt.wantCode != 0 {
				var status *apierrors.StatusError
				if !errors.As(err, &status) {
					t.Fatalf("got %v, want a %d Status", err, tt.wantCode)
				}
				if status.ErrStatus.Code != tt.wantCode || !strings.Contains(status.ErrStatus.Message, tt.wantMsg) {
					t.Errorf("got %d %q, want %d containing %q", status.ErrStatus.Code, status.ErrStatus.Message, tt.wantCode, tt.wantMsg)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if tt.want == nil {
					if impersonated || got != user.Info(bob) {
						t.Errorf("got %+v impersonated=%v, want the requestor", identityOf(got), impersonated)
					}
				} else if !impersonated || !reflect.DeepEqual(identityOf(got), tt.want) {
					t.Errorf("got %+v impersonated=%v, want %+v", identityOf(got), impersonated, tt.want)
				}
			}
			if tt.wantAsked != nil && !reflect.DeepEqual(authz.asked, tt.wantAsked) {
				t.Errorf("got questions %q, want %q", authz.asked, tt.wantAsked)
			}
		})
	}
}

func TestImpersonator_AuthorizerError(t *testing.T) {
	h := http.Header{"Impersonate-User": {"alice"}}
	im := &Impersonator{Authorizer: &allowOnly{allowed: everything, err: errors.New("rbac not ready")}}
	_, _, err := im.Impersonate(context.Background(), h, &user.DefaultInfo{Name: "bob"})
	if got := apierrors.ReasonForError(err); got != "Forbidden" {
		t.Errorf("got reason %q, want Forbidden", got)
	}
}

func TestForbidden_EscapesHTML(t *testing.T) {
	im := &Impersonator{Authorizer: &allowOnly{}}
	_, _, err := im.Impersonate(context.Background(), http.Header{"Impersonate-User": {"x"}}, &user.DefaultInfo{Name: "<script>&"})
	got := err.(*apierrors.StatusError).ErrStatus.Message
	want := `users "x" is forbidden: User "&lt;script&gt;&amp;" cannot impersonate resource "users" in API group "" at the cluster scope`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWithImpersonation(t *testing.T) {
	im := &Impersonator{Authorizer: &allowOnly{allowed: []string{"users/alice"}}}
	tests := []struct {
		name     string
		noUser   bool
		headers  http.Header
		wantCode int
		wantUser string
	}{
		{"no headers passes the requestor", false, http.Header{}, 200, "bob"},
		{"allowed user", false, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Extra-": nil}, 200, "alice"},
		{"refused user", false, http.Header{"Impersonate-User": {"carol"}}, 403, ""},
		{"group without user", false, http.Header{"Impersonate-Group": {"g"}}, 400, ""},
		{"no authenticated user", true, http.Header{"Impersonate-User": {"alice"}}, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotUser string
			var leaked []string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, _ := UserFrom(r.Context())
				gotUser = u.GetName()
				for name := range r.Header {
					if strings.HasPrefix(name, "Impersonate-") {
						leaked = append(leaked, name)
					}
				}
			})
			failed := func(w http.ResponseWriter, r *http.Request, err error) {
				var status *apierrors.StatusError
				if !errors.As(err, &status) {
					t.Fatalf("got %v, want a Status", err)
				}
				w.WriteHeader(int(status.ErrStatus.Code))
			}
			r := httptest.NewRequest("GET", "/api", nil)
			r.Header = tt.headers
			if !tt.noUser {
				r = r.WithContext(WithUser(r.Context(), &user.DefaultInfo{Name: "bob"}))
			}
			w := httptest.NewRecorder()
			WithImpersonation(next, im, failed).ServeHTTP(w, r)
			if w.Code != tt.wantCode || gotUser != tt.wantUser {
				t.Errorf("got %d %q, want %d %q", w.Code, gotUser, tt.wantCode, tt.wantUser)
			}
			if len(leaked) > 0 {
				t.Errorf("got headers %v passed on, want them removed", leaked)
			}
		})
	}
}

func repeat(header, value string, n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{header, value}
	}
	return out
}

func repeatString(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
