package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/store"
)

const testIssuer = "https://kubernetes.default.svc.cluster.local"

// objects is an in-memory ObjectReader.
type objects map[store.Key]store.Object

func (o objects) Get(_ context.Context, k store.Key) (store.Object, error) {
	obj, ok := o[k]
	if !ok {
		return store.Object{}, store.ErrNotFound
	}
	return obj, nil
}

func (o objects) put(resource, ns, name, uid string, deletion *time.Time) {
	meta := map[string]any{"name": name, "namespace": ns, "uid": uid}
	if deletion != nil {
		meta["deletionTimestamp"] = deletion.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(map[string]any{"metadata": meta})
	k := store.Key{Resource: resource, Namespace: ns, Name: name}
	o[k] = store.Object{Key: k, UID: uid, Value: b}
}

func (o objects) del(resource, ns, name string) {
	delete(o, store.Key{Resource: resource, Namespace: ns, Name: name})
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fixture is an issuer and an authenticator over the same key and store,
// with the ServiceAccount ns1/sa1 (uid sa-uid) and the Secret ns1/s1
// (uid secret-uid) stored.
type fixture struct {
	key  crypto.Signer
	iss  *Issuer
	auth *Authenticator
	objs objects
	now  time.Time
}

func newFixture(t *testing.T, key crypto.Signer) *fixture {
	t.Helper()
	f := &fixture{key: key, objs: objects{}, now: t0}
	var err error
	f.iss, err = NewIssuer(IssuerConfig{Issuer: testIssuer, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	f.iss.now = func() time.Time { return f.now }
	f.iss.newID = func() string { return "0d5b5a2c-1111-4222-8333-444455556666" }
	f.auth, err = NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{key.Public()}, Objects: f.objs})
	if err != nil {
		t.Fatal(err)
	}
	f.auth.now = func() time.Time { return f.now }
	f.objs.put("serviceaccounts", "ns1", "sa1", "sa-uid", nil)
	f.objs.put("secrets", "ns1", "s1", "secret-uid", nil)
	return f
}

func (f *fixture) issue(t *testing.T, r Request) string {
	t.Helper()
	if r.ServiceAccount == (ServiceAccount{}) {
		r.ServiceAccount = ServiceAccount{Namespace: "ns1", Name: "sa1", UID: "sa-uid"}
	}
	if r.ExpirationSeconds == 0 {
		r.ExpirationSeconds = DefaultExpirationSeconds
	}
	out, err := f.iss.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	return out.Token
}

// decodePart decodes the JSON of one part of a compact JWS.
func decodePart(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIssuer_IssueAt(t *testing.T) {
	f := newFixture(t, newKey(t))
	tok := f.issue(t, Request{Audiences: []string{"vault"}, ExpirationSeconds: 600, Secret: &Ref{Name: "s1", UID: "secret-uid"}})

	kid, _ := KeyID(f.key.Public())
	if got, want := decodePart(t, tok, 0), map[string]any{"alg": "ES256", "kid": kid}; !reflect.DeepEqual(got, want) {
		t.Errorf("header: got %v, want %v", got, want)
	}
	now := float64(t0.Unix())
	want := map[string]any{
		"iss": testIssuer,
		"sub": "system:serviceaccount:ns1:sa1",
		"aud": []any{"vault"},
		"iat": now, "nbf": now, "exp": now + 600,
		"jti": "0d5b5a2c-1111-4222-8333-444455556666",
		"kubernetes.io": map[string]any{
			"namespace":      "ns1",
			"serviceaccount": map[string]any{"name": "sa1", "uid": "sa-uid"},
			"secret":         map[string]any{"name": "s1", "uid": "secret-uid"},
		},
	}
	if got := decodePart(t, tok, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("claims:\n got  %v\n want %v", got, want)
	}

	t.Run("default audiences are the API audiences", func(t *testing.T) {
		tok := f.issue(t, Request{})
		if got, want := decodePart(t, tok, 1)["aud"], []any{testIssuer}; !reflect.DeepEqual(got, want) {
			t.Errorf("aud: got %v, want %v", got, want)
		}
		if _, ok := decodePart(t, tok, 1)["kubernetes.io"].(map[string]any)["secret"]; ok {
			t.Error("an unbound token names a secret")
		}
	})
	t.Run("two bound objects", func(t *testing.T) {
		_, err := f.iss.Issue(Request{ServiceAccount: ServiceAccount{Namespace: "ns1", Name: "sa1"}, ExpirationSeconds: 600,
			Secret: &Ref{Name: "s1"}, Pod: &Ref{Name: "p"}})
		if err == nil {
			t.Error("got no error")
		}
	})
}

func TestAuthenticator_AuthenticateToken(t *testing.T) {
	ctx := context.Background()
	wantUser := &user.DefaultInfo{
		Name:   "system:serviceaccount:ns1:sa1",
		UID:    "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"},
		Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=0d5b5a2c-1111-4222-8333-444455556666"}},
	}
	for name, key := range map[string]crypto.Signer{"ES256": newKey(t), "RS256": mustRSA(t)} {
		t.Run("roundtrip "+name, func(t *testing.T) {
			f := newFixture(t, key)
			for _, r := range []Request{{}, {Secret: &Ref{Name: "s1", UID: "secret-uid"}}, {Audiences: []string{"x", testIssuer}}} {
				u, ok, err := f.auth.AuthenticateToken(ctx, f.issue(t, r))
				if err != nil || !ok {
					t.Fatalf("got ok %v err %v, want the user", ok, err)
				}
				if !reflect.DeepEqual(u, wantUser) {
					t.Errorf("got %#v, want %#v", u, wantUser)
				}
			}
		})
	}

	// Each case issues a token from the fixture, changes something, and
	// wants the token refused with an error (401) containing wantErr.
	tests := []struct {
		name    string
		req     Request
		change  func(f *fixture)
		wantErr string
	}{
		{"expired", Request{ExpirationSeconds: 600}, func(f *fixture) { f.now = t0.Add(600*time.Second + leeway + time.Second) }, "service account token has expired"},
		{"not yet valid", Request{}, func(f *fixture) { f.now = t0.Add(-leeway - time.Second) }, "not valid yet"},
		{"wrong audience", Request{Audiences: []string{"vault"}}, nil, `token audiences ["vault"] is invalid for the target audiences`},
		{"service account deleted", Request{}, func(f *fixture) { f.objs.del("serviceaccounts", "ns1", "sa1") }, `serviceaccounts "sa1" not found`},
		{"service account recreated", Request{}, func(f *fixture) { f.objs.put("serviceaccounts", "ns1", "sa1", "new-uid", nil) }, "service account UID (new-uid) does not match claim (sa-uid)"},
		{"service account being deleted", Request{}, func(f *fixture) {
			d := t0.Add(-2 * leeway)
			f.objs.put("serviceaccounts", "ns1", "sa1", "sa-uid", &d)
		}, "service account ns1/sa1 has been deleted"},
		{"bound secret deleted", Request{Secret: &Ref{Name: "s1", UID: "secret-uid"}}, func(f *fixture) { f.objs.del("secrets", "ns1", "s1") }, "service account token has been invalidated"},
		{"bound secret recreated", Request{Secret: &Ref{Name: "s1", UID: "secret-uid"}}, func(f *fixture) { f.objs.put("secrets", "ns1", "s1", "other", nil) }, "secret UID (other) does not match service account secret ref claim (secret-uid)"},
		{"bound secret being deleted", Request{Secret: &Ref{Name: "s1", UID: "secret-uid"}}, func(f *fixture) {
			d := t0.Add(-2 * leeway)
			f.objs.put("secrets", "ns1", "s1", "secret-uid", &d)
		}, "service account token has been invalidated"},
		{"bound pod (none are served)", Request{Pod: &Ref{Name: "p", UID: "pod-uid"}}, nil, "service account token has been invalidated"},
		{"bound node (none are served)", Request{Node: &Ref{Name: "n", UID: "node-uid"}}, nil, "service account token has been invalidated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, newKey(t))
			tok := f.issue(t, tt.req)
			if tt.change != nil {
				// Authenticate once first, where the token is still
				// good, so that the refusal below comes with the
				// signature cached.
				if _, ok, err := f.auth.AuthenticateToken(ctx, tok); tt.req.Audiences == nil && tt.req.Pod == nil && tt.req.Node == nil && (!ok || err != nil) {
					t.Fatalf("before the change: ok %v err %v", ok, err)
				}
				tt.change(f)
			}
			u, ok, err := f.auth.AuthenticateToken(ctx, tok)
			if ok || u != nil || err == nil {
				t.Fatalf("got user %v ok %v err %v, want an error", u, ok, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}

	t.Run("marked for deletion less than a minute ago", func(t *testing.T) {
		// kube-apiserver's leeway: still valid.
		f := newFixture(t, newKey(t))
		d := t0.Add(-leeway / 2)
		f.objs.put("serviceaccounts", "ns1", "sa1", "sa-uid", &d)
		if _, ok, err := f.auth.AuthenticateToken(ctx, f.issue(t, Request{})); !ok || err != nil {
			t.Errorf("got ok %v err %v, want the user", ok, err)
		}
	})

	t.Run("another key", func(t *testing.T) {
		f := newFixture(t, newKey(t))
		other := newFixture(t, newKey(t))
		_, ok, err := f.auth.AuthenticateToken(ctx, other.issue(t, Request{}))
		if ok || err == nil || !strings.Contains(err.Error(), "invalid signature, no keys found") {
			t.Errorf("got ok %v err %v, want no keys found", ok, err)
		}
	})

	t.Run("another key with the same kid", func(t *testing.T) {
		f := newFixture(t, newKey(t))
		other := newFixture(t, newKey(t))
		kid, _ := KeyID(f.key.Public())
		forged := withHeader(t, other.issue(t, Request{}), fmt.Sprintf(`{"alg":"ES256","kid":%q}`, kid))
		if _, ok, err := f.auth.AuthenticateToken(ctx, forged); ok || err == nil {
			t.Errorf("got ok %v err %v, want an error", ok, err)
		}
	})

	t.Run("rotated key still verifies", func(t *testing.T) {
		old := newFixture(t, newKey(t))
		tok := old.issue(t, Request{})
		newKey := newKey(t)
		a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{newKey.Public(), old.key.Public()}, Objects: old.objs})
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return t0 }
		if _, ok, err := a.AuthenticateToken(ctx, tok); !ok || err != nil {
			t.Errorf("got ok %v err %v, want the user", ok, err)
		}
	})

	t.Run("another issuer is no opinion", func(t *testing.T) {
		f := newFixture(t, newKey(t))
		otherIss, err := NewIssuer(IssuerConfig{Issuer: "https://other.example", Key: f.key})
		if err != nil {
			t.Fatal(err)
		}
		out, err := otherIss.IssueAt(Request{ServiceAccount: ServiceAccount{Namespace: "ns1", Name: "sa1", UID: "sa-uid"}, ExpirationSeconds: 600}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok, err := f.auth.AuthenticateToken(ctx, out.Token); ok || u != nil || err != nil {
			t.Errorf("got user %v ok %v err %v, want no opinion", u, ok, err)
		}
	})

	t.Run("a second accepted issuer", func(t *testing.T) {
		f := newFixture(t, newKey(t))
		a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{"https://new.example", testIssuer}, Keys: []crypto.PublicKey{f.key.Public()},
			APIAudiences: []string{testIssuer}, Objects: f.objs})
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return t0 }
		if _, ok, err := a.AuthenticateToken(ctx, f.issue(t, Request{})); !ok || err != nil {
			t.Errorf("got ok %v err %v, want the user", ok, err)
		}
	})
}

// withHeader replaces the header of a compact JWS.
func withHeader(t *testing.T, token, header string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	parts[0] = base64.RawURLEncoding.EncodeToString([]byte(header))
	return strings.Join(parts, ".")
}

// withPayload replaces the payload of a compact JWS (the signature no
// longer matches).
func withPayload(token, payload string) string {
	parts := strings.Split(token, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(payload))
	return strings.Join(parts, ".")
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAuthenticator_Malformed feeds tokens of every broken shape: none may
// panic or authenticate; those that do not name the issuer get no opinion.
func TestAuthenticator_Malformed(t *testing.T) {
	f := newFixture(t, newKey(t))
	good := f.issue(t, Request{})
	parts := strings.Split(good, ".")
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	issPayload := b64(fmt.Sprintf(`{"iss":%q}`, testIssuer))
	tokens := map[string]string{
		"empty":                   "",
		"dots":                    "..",
		"one part":                parts[0],
		"two parts":               parts[0] + "." + parts[1],
		"four parts":              good + ".x",
		"five parts (JWE shape)":  good + ".x.y",
		"json":                    `{"iss":"` + testIssuer + `"}`,
		"spaces":                  "   ",
		"not base64":              "a.%%%.c",
		"payload not json":        parts[0] + "." + b64("not json") + "." + parts[2],
		"iss a number":            parts[0] + "." + b64(`{"iss":1}`) + "." + parts[2],
		"payload null":            parts[0] + "." + b64(`null`) + "." + parts[2],
		"garbage signature":       parts[0] + "." + parts[1] + ".AAAA",
		"empty signature":         parts[0] + "." + parts[1] + ".",
		"empty header":            "." + parts[1] + "." + parts[2],
		"header not json":         b64("{") + "." + parts[1] + "." + parts[2],
		"alg none":                withHeader(t, good, `{"alg":"none"}`),
		"alg HS256":               withHeader(t, good, `{"alg":"HS256"}`),
		"alg missing":             withHeader(t, good, `{"kid":"x"}`),
		"unknown kid":             withHeader(t, good, `{"alg":"ES256","kid":"nope"}`),
		"changed payload":         withPayload(good, `{"iss":"`+testIssuer+`","sub":"system:serviceaccount:kube-system:admin"}`),
		"only iss, bad signature": parts[0] + "." + issPayload + "." + parts[2],
		"huge":                    parts[0] + "." + b64(`{"iss":"`+testIssuer+`","x":"`+strings.Repeat("a", 1<<20)+`"}`) + "." + parts[2],
		"kubernetes.io a string":  withPayload(good, `{"iss":"`+testIssuer+`","kubernetes.io":"x"}`),
		"aud an object":           withPayload(good, `{"iss":"`+testIssuer+`","aud":{}}`),
		"exp a string":            withPayload(good, `{"iss":"`+testIssuer+`","exp":"soon"}`),
		"nul bytes":               "\x00.\x00.\x00",
		"unicode":                 "ü.ü.ü",
		"padding":                 parts[0] + "==." + parts[1] + "." + parts[2],
	}
	for name, tok := range tokens {
		t.Run(name, func(t *testing.T) {
			u, ok, err := f.auth.AuthenticateToken(context.Background(), tok)
			if ok || u != nil {
				t.Fatalf("authenticated as %v (err %v)", u, err)
			}
		})
	}

	t.Run("signed but without the kubernetes.io claim", func(t *testing.T) {
		// A token this key signed for something else: refused, not a
		// user with an empty name.
		out, err := f.iss.IssueAt(Request{ServiceAccount: ServiceAccount{}, ExpirationSeconds: 600}, t0)
		if err != nil {
			t.Fatal(err)
		}
		u, ok, err := f.auth.AuthenticateToken(context.Background(), out.Token)
		if ok || u != nil || err == nil {
			t.Errorf("got user %v ok %v err %v, want an error", u, ok, err)
		}
	})
}

// FuzzAuthenticator_AuthenticateToken checks that no input panics or
// authenticates except the tokens the issuer signed.
func FuzzAuthenticator_AuthenticateToken(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	iss, _ := NewIssuer(IssuerConfig{Issuer: testIssuer, Key: key})
	out, _ := iss.Issue(Request{ServiceAccount: ServiceAccount{Namespace: "ns1", Name: "sa1", UID: "sa-uid"}, ExpirationSeconds: 600})
	objs := objects{}
	objs.put("serviceaccounts", "ns1", "sa1", "sa-uid", nil)
	a, _ := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{key.Public()}, Objects: objs})
	f.Add(out.Token)
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		_, ok, _ := a.AuthenticateToken(context.Background(), tok)
		if ok && tok != out.Token {
			t.Errorf("authenticated %q", tok)
		}
	})
}

func TestEnsureKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pki", KeyFileName)
	k1, created, err := EnsureKey(path)
	if err != nil || !created {
		t.Fatalf("first call: created %v err %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("key mode %o, want 600", got)
	}
	if _, ok := k1.(*ecdsa.PrivateKey); !ok {
		t.Errorf("got a %T, want an ECDSA key", k1)
	}
	k2, created, err := EnsureKey(path)
	if err != nil || created {
		t.Fatalf("second call: created %v err %v", created, err)
	}
	if !k1.Public().(*ecdsa.PublicKey).Equal(k2.Public()) {
		t.Error("second call returned another key")
	}

	t.Run("a damaged file is an error, not replaced", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.key")
		if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := EnsureKey(bad); err == nil {
			t.Error("got no error")
		}
		if b, _ := os.ReadFile(bad); string(b) != "not a key" {
			t.Error("the file was replaced")
		}
	})

	t.Run("public keys", func(t *testing.T) {
		keys, err := LoadPublicKeys(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || !k1.Public().(*ecdsa.PublicKey).Equal(keys[0]) {
			t.Errorf("got %v", keys)
		}
	})
}

func TestDiscoveryDocuments(t *testing.T) {
	ec := newKey(t)
	rs := mustRSA(t)
	config, keyset, err := DiscoveryDocuments(testIssuer, "https://127.0.0.1:6443/openid/v1/jwks", []crypto.PublicKey{ec.Public(), rs.Public()})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://127.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","RS256"]}`
	if string(config) != want {
		t.Errorf("config:\n got %s\nwant %s", config, want)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(keyset, &set); err != nil {
		t.Fatal(err)
	}
	ecKid, _ := KeyID(ec.Public())
	if len(set.Keys) != 2 || set.Keys[0]["kid"] != ecKid || set.Keys[0]["alg"] != "ES256" || set.Keys[0]["use"] != "sig" || set.Keys[0]["kty"] != "EC" ||
		set.Keys[1]["kty"] != "RSA" || set.Keys[1]["alg"] != "RS256" {
		t.Errorf("keyset %s", keyset)
	}
	if _, ok := set.Keys[0]["d"]; ok {
		t.Error("the keyset holds a private key")
	}

	t.Run("a token verifies with the published key", func(t *testing.T) {
		f := newFixture(t, ec)
		tok := f.issue(t, Request{})
		var pub struct {
			Keys []json.RawMessage `json:"keys"`
		}
		_ = json.Unmarshal(keyset, &pub)
		a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{parseJWK(t, pub.Keys[0])}, Objects: f.objs})
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return t0 }
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok || err != nil {
			t.Errorf("got ok %v err %v", ok, err)
		}
	})

	for _, tt := range []struct{ iss, jwks string }{
		{"http://insecure.example", "https://x/openid/v1/jwks"},
		{"https://a.example?q=1", "https://x/openid/v1/jwks"},
		{"https://a.example#f", "https://x/openid/v1/jwks"},
		{"kubernetes", "https://x/openid/v1/jwks"},
		{testIssuer, "http://x/openid/v1/jwks"},
	} {
		if _, _, err := DiscoveryDocuments(tt.iss, tt.jwks, []crypto.PublicKey{ec.Public()}); err == nil {
			t.Errorf("DiscoveryDocuments(%q, %q): got no error", tt.iss, tt.jwks)
		}
	}
}

func parseJWK(t *testing.T, b []byte) crypto.PublicKey {
	t.Helper()
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return k.Key
}
