package authn

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestParseTokenFile(t *testing.T) {
	tests := []struct {
		name         string
		csv          string
		want         map[string]identity
		wantWarnings int
		wantErr      string
	}{
		{name: "groups quoted in the fourth column",
			csv:  "t1,alice,u1,\"system:masters,dev\"\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1", Groups: []string{"system:masters", "dev"}}}},
		{name: "three columns has no groups",
			csv:  "t1,alice,u1\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1"}}},
		{name: "one unquoted group",
			csv:  "t1,alice,u1,dev\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}},
		{name: "empty fourth column is one empty group",
			csv:  "t1,alice,u1,\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1", Groups: []string{""}}}},
		{name: "columns after the fourth are ignored",
			csv:  "t1,alice,u1,dev,extra,more\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}},
		{name: "blank lines are skipped and lines may differ in length",
			csv:  "t1,alice,u1\n\n\nt2,bob,u2,\"a,b\"\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1"}, "t2": {Name: "bob", UID: "u2", Groups: []string{"a", "b"}}}},
		{name: "spaces are part of the values",
			csv:  " t1 , alice ,u1\n",
			want: map[string]identity{" t1 ": {Name: " alice ", UID: "u1"}}},
		{name: "empty user name and uid are accepted",
			csv:  "t1,,\n",
			want: map[string]identity{"t1": {}}},
		{name: "a hash is not a comment",
			csv:  "#t1,alice,u1\n",
			want: map[string]identity{"#t1": {Name: "alice", UID: "u1"}}},
		{name: "CRLF line ends",
			csv:  "t1,alice,u1\r\nt2,bob,u2\r\n",
			want: map[string]identity{"t1": {Name: "alice", UID: "u1"}, "t2": {Name: "bob", UID: "u2"}}},
		{name: "empty token is skipped with a warning",
			csv:          ",alice,u1\nt2,bob,u2\n",
			want:         map[string]identity{"t2": {Name: "bob", UID: "u2"}},
			wantWarnings: 1},
		{name: "duplicate token keeps the last record with a warning",
			csv:          "t1,alice,u1\nt1,bob,u2\n",
			want:         map[string]identity{"t1": {Name: "bob", UID: "u2"}},
			wantWarnings: 1},
		{name: "empty file has no tokens", csv: "", want: map[string]identity{}},
		{name: "two columns refuse the file", csv: "t1,alice,u1\nt2,bob\n", wantErr: "line 2: want at least 3 columns (token, user name, user uid), found 2"},
		{name: "one column refuses the file", csv: "justatoken\n", wantErr: "found 1"},
		{name: "a bare quote refuses the file", csv: "t\"1,alice,u1\n", wantErr: "bare \" in non-quoted-field"},
		{name: "an unterminated quote refuses the file", csv: "t1,alice,u1,\"dev\n", wantErr: "extraneous or missing \" in quoted-field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf, err := ParseTokenFile(strings.NewReader(tt.csv), "tokens.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "tokens.csv") {
					t.Fatalf("got error %v, want one naming tokens.csv and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]identity{}
			for token := range tt.want {
				u, ok, err := tf.AuthenticateToken(context.Background(), token)
				if err != nil || !ok {
					t.Fatalf("got ok=%v err=%v for token %q, want its user", ok, err, token)
				}
				got[token] = *identityOf(u)
			}
			if !reflect.DeepEqual(got, tt.want) || tf.Len() != len(tt.want) {
				t.Errorf("got %d tokens %+v, want %+v", tf.Len(), got, tt.want)
			}
			if len(tf.Warnings) != tt.wantWarnings {
				t.Errorf("got warnings %q, want %d", tf.Warnings, tt.wantWarnings)
			}
			for _, w := range tf.Warnings {
				for token := range tt.want {
					if strings.Contains(w, token) {
						t.Errorf("got warning %q holding token %q, want no token in logs", w, token)
					}
				}
			}
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("secret,alice,u1,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, _ := tf.AuthenticateToken(context.Background(), "secret"); !ok || u.GetName() != "alice" {
		t.Errorf("got %v %v, want alice", u, ok)
	}
	if _, err := LoadTokenFile(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("got no error for a missing file, want one")
	}
}

func TestBearerToken_AuthenticateRequest(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("good,alice,u1,dev\n"), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		headers  []string // Authorization values; none means no header
		wantUser string
		wantOK   bool
		wantErr  error
		wantWarn bool
	}{
		{name: "valid token", headers: []string{"Bearer good"}, wantUser: "alice", wantOK: true},
		{name: "scheme without case", headers: []string{"bEaReR good"}, wantUser: "alice", wantOK: true},
		{name: "surrounding spaces are trimmed", headers: []string{"  Bearer good  "}, wantUser: "alice", wantOK: true},
		{name: "text after a second space is ignored", headers: []string{"Bearer good trailing words"}, wantUser: "alice", wantOK: true},
		{name: "only the first header counts", headers: []string{"Bearer good", "Bearer bad"}, wantUser: "alice", wantOK: true},
		{name: "unknown token is invalid", headers: []string{"Bearer bad"}, wantErr: ErrInvalidBearerToken},
		{name: "token in the wrong case is invalid", headers: []string{"Bearer GOOD"}, wantErr: ErrInvalidBearerToken},
		{name: "token with a trailing comma is invalid", headers: []string{"Bearer good,"}, wantErr: ErrInvalidBearerToken},
		{name: "no header has no opinion"},
		{name: "empty header has no opinion", headers: []string{""}},
		{name: "scheme alone has no opinion", headers: []string{"Bearer"}},
		{name: "scheme and spaces have no opinion", headers: []string{"Bearer    "}},
		{name: "two spaces before the token have no opinion and a warning", headers: []string{"Bearer  good"}, wantWarn: true},
		{name: "three spaces before the token have no opinion and a warning", headers: []string{"Bearer   good"}, wantWarn: true},
		{name: "tab instead of space has no opinion", headers: []string{"Bearer\tgood"}},
		{name: "basic auth has no opinion", headers: []string{"Basic YWxpY2U6c2VjcmV0"}},
		{name: "token without a scheme has no opinion", headers: []string{"good"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			var warnings []string
			warn := func(_ *http.Request, text string) { warnings = append(warnings, text) }
			u, ok, err := (&BearerToken{Tokens: tf, Warn: warn}).AuthenticateRequest(r)
			if got := len(warnings) > 0; got != tt.wantWarn {
				t.Errorf("got warnings %q, want a warning %v", warnings, tt.wantWarn)
			}
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) || ok != tt.wantOK {
				t.Fatalf("got ok=%v err=%v, want ok=%v err=%v", ok, err, tt.wantOK, tt.wantErr)
			}
			if ok && u.GetName() != tt.wantUser {
				t.Errorf("got user %q, want %q", u.GetName(), tt.wantUser)
			}
		})
	}
}

func TestChain_BearerToken(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("good,alice,u1,dev\n"), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	chain := &Chain{Authenticators: Union{&BearerToken{Tokens: tf}}, Anonymous: true}
	tests := []struct {
		header     string
		wantUser   string
		wantGroups []string
		wantErr    bool
	}{
		{"Bearer good", "alice", []string{"dev", "system:authenticated"}, false},
		{"Bearer expired-or-unknown", "", nil, true},
		{"Bearer  good", "system:anonymous", []string{"system:unauthenticated"}, false},
		{"Basic YWxpY2U6c2VjcmV0", "system:anonymous", []string{"system:unauthenticated"}, false},
		{"", "system:anonymous", []string{"system:unauthenticated"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := chain.AuthenticateRequest(r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			var got *identity
			if ok {
				got = identityOf(u)
			}
			var want *identity
			if tt.wantUser != "" {
				want = &identity{Name: tt.wantUser, Groups: tt.wantGroups}
				if tt.wantUser == "alice" {
					want.UID = "u1"
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestTokenUnion_AuthenticateToken(t *testing.T) {
	a, _ := ParseTokenFile(strings.NewReader("ta,alice,1\n"), "a")
	b, _ := ParseTokenFile(strings.NewReader("tb,bob,2\n"), "b")
	failing := tokenFunc(func(context.Context, string) (user.Info, bool, error) { return nil, false, errors.New("expired") })
	u := TokenUnion{failing, a, b}
	tests := []struct {
		token    string
		wantUser string
		wantErr  bool
	}{
		{"ta", "alice", false},
		{"tb", "bob", false},
		{"tc", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			got, ok, err := u.AuthenticateToken(context.Background(), tt.token)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			name := ""
			if ok {
				name = got.GetName()
			}
			if name != tt.wantUser {
				t.Errorf("got %q, want %q", name, tt.wantUser)
			}
		})
	}
}

// tokenFunc adapts a function to TokenAuthenticator.
type tokenFunc func(context.Context, string) (user.Info, bool, error)

func (f tokenFunc) AuthenticateToken(ctx context.Context, token string) (user.Info, bool, error) {
	return f(ctx, token)
}
