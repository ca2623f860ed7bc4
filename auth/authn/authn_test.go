package authn

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// fixed returns an authenticator that always answers u, ok, err.
func fixed(u user.Info, ok bool, err error) Authenticator {
	return AuthenticatorFunc(func(*http.Request) (user.Info, bool, error) { return u, ok, err })
}

var (
	noOpinion = fixed(nil, false, nil)
	invalid   = fixed(nil, false, errors.New("invalid bearer token"))
	alice     = fixed(&user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}}, true, nil)
	bob       = fixed(&user.DefaultInfo{Name: "bob"}, true, nil)
)

// identity is user.Info as a comparable value.
type identity struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

func identityOf(u user.Info) *identity {
	if u == nil {
		return nil
	}
	return &identity{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

func TestChain_AuthenticateRequest(t *testing.T) {
	tests := []struct {
		name      string
		chain     Chain
		want      *identity
		wantOK    bool
		wantError bool
	}{
		{"first recognizer wins", Chain{Authenticators: Union{noOpinion, alice, bob}},
			&identity{Name: "alice", UID: "1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}}, true, false},
		{"an error before a recognizer is ignored", Chain{Authenticators: Union{invalid, bob}},
			&identity{Name: "bob", Groups: []string{"system:authenticated"}}, true, false},
		{"invalid credentials never fall back to anonymous", Chain{Authenticators: Union{invalid, noOpinion}, Anonymous: true},
			nil, false, true},
		{"no credentials is anonymous when enabled", Chain{Authenticators: Union{noOpinion}, Anonymous: true},
			&identity{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, true, false},
		{"no authenticators is anonymous when enabled", Chain{Anonymous: true},
			&identity{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, true, false},
		{"no credentials is no user when anonymous is off", Chain{Authenticators: Union{noOpinion}},
			nil, false, false},
		{"a user already in system:authenticated gets it once", Chain{Authenticators: Union{fixed(&user.DefaultInfo{Name: "c", Groups: []string{"system:authenticated"}}, true, nil)}},
			&identity{Name: "c", Groups: []string{"system:authenticated"}}, true, false},
		{"a user in system:unauthenticated does not get system:authenticated", Chain{Authenticators: Union{fixed(&user.DefaultInfo{Name: "c", Groups: []string{"system:unauthenticated"}}, true, nil)}},
			&identity{Name: "c", Groups: []string{"system:unauthenticated"}}, true, false},
		{"a credential naming system:anonymous does not get system:authenticated", Chain{Authenticators: Union{fixed(&user.DefaultInfo{Name: "system:anonymous"}, true, nil)}},
			&identity{Name: "system:anonymous"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			got, ok, err := tt.chain.AuthenticateRequest(r)
			if ok != tt.wantOK || (err != nil) != tt.wantError {
				t.Fatalf("got ok=%v err=%v, want ok=%v error=%v", ok, err, tt.wantOK, tt.wantError)
			}
			if !reflect.DeepEqual(identityOf(got), tt.want) {
				t.Errorf("got %+v, want %+v", identityOf(got), tt.want)
			}
		})
	}
}

func TestChain_DoesNotModifyUser(t *testing.T) {
	groups := make([]string, 1, 4)
	groups[0] = "dev"
	u := &user.DefaultInfo{Name: "alice", Groups: groups}
	c := Chain{Authenticators: Union{fixed(u, true, nil)}}
	if _, _, err := c.AuthenticateRequest(httptest.NewRequest("GET", "/", nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := u.Groups, []string{"dev"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got source groups %v, want %v", got, want)
	}
	if got := groups[:2][1]; got != "" {
		t.Errorf("got %q written into the source slice's spare capacity, want nothing", got)
	}
}

func TestUnauthorized(t *testing.T) {
	b, err := json.Marshal(Unauthorized().Status())
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	want := `{"metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestWithAuthentication(t *testing.T) {
	tests := []struct {
		name      string
		auth      Authenticator
		proto     int
		wantCode  int
		wantUser  string
		wantClose bool
	}{
		{"authenticated", alice, 1, 200, "alice", false},
		{"invalid credentials", invalid, 1, 401, "", false},
		{"no user", noOpinion, 1, 401, "", false},
		{"invalid credentials over HTTP/2 close the connection", invalid, 2, 401, "", true},
		{"anonymous over HTTP/2 closes the connection", &Chain{Anonymous: true}, 2, 200, "system:anonymous", true},
		{"authenticated over HTTP/2 keeps the connection", alice, 2, 200, "alice", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotUser string
			var gotHeaders http.Header
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, ok := UserFrom(r.Context())
				if !ok {
					t.Fatal("got no user in the context, want one")
				}
				gotUser = u.GetName()
				gotHeaders = r.Header.Clone()
			})
			failed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) })
			r := httptest.NewRequest("GET", "/api", nil)
			r.ProtoMajor = tt.proto
			r.Header.Set("Authorization", "Bearer secret")
			r.Header.Set("X-Remote-User", "mallory")
			r.Header.Set("X-Remote-Extra-Scopes", "all")
			r.Header.Set("Accept", "application/json")
			w := httptest.NewRecorder()
			WithAuthentication(next, tt.auth, failed).ServeHTTP(w, r)
			if w.Code != tt.wantCode || gotUser != tt.wantUser {
				t.Fatalf("got code %d user %q, want %d %q", w.Code, gotUser, tt.wantCode, tt.wantUser)
			}
			if got := w.Header().Get("Connection") == "close"; got != tt.wantClose {
				t.Errorf("got Connection: close %v, want %v", got, tt.wantClose)
			}
			if tt.wantCode == 200 {
				for _, h := range []string{"Authorization", "X-Remote-User", "X-Remote-Extra-Scopes"} {
					if v := gotHeaders.Get(h); v != "" {
						t.Errorf("got %s: %q passed on, want it removed", h, v)
					}
				}
				if got := gotHeaders.Get("Accept"); got != "application/json" {
					t.Errorf("got Accept %q, want it kept", got)
				}
			}
		})
	}
}
