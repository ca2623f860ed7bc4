package authn

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestClientCert_AuthenticateRequest(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	other := newTestCA(t, "other-ca")
	intermediateTmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "intermediate"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	intermediate := &testCA{}
	{
		// The intermediate needs its key to sign, so build it by hand.
		sub := newTestCA(t, "intermediate")
		intermediateTmpl.PublicKey = sub.key.Public()
		intermediate.key = sub.key
		intermediate.cert = issueWithKey(t, ca, intermediateTmpl, sub.key.Public())
	}
	uidName := func(uids ...string) pkix.Name {
		n := pkix.Name{CommonName: "carol", Organization: []string{"dev"}}
		for _, u := range uids {
			n.ExtraNames = append(n.ExtraNames, pkix.AttributeTypeAndValue{Type: uidOID, Value: u})
		}
		return n
	}
	now := time.Now()

	tests := []struct {
		name       string
		roots      *x509.CertPool
		peers      []*x509.Certificate
		noTLS      bool
		wantName   string
		wantUID    string
		wantGroups []string
		wantOK     bool
		wantErr    string
	}{
		{name: "CN is the user, O the groups", roots: ca.pool(),
			peers:    []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:masters", "dev"}}})},
			wantName: "alice", wantGroups: []string{"dev", "system:masters"}, wantOK: true}, // DER sorts the one RDN SET that holds both
		{name: "UID attribute is the uid", roots: ca.pool(),
			peers:    []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: uidName("u-1")})},
			wantName: "carol", wantUID: "u-1", wantGroups: []string{"dev"}, wantOK: true},
		{name: "two UID attributes are refused", roots: ca.pool(),
			peers:   []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: uidName("u-1", "u-2")})},
			wantErr: "want one, found 2"},
		{name: "an empty UID attribute is refused", roots: ca.pool(),
			peers:   []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: uidName("")})},
			wantErr: "uid: empty"},
		{name: "chain through an intermediate sent by the client", roots: ca.pool(),
			peers:    []*x509.Certificate{intermediate.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "dave"}}), intermediate.cert},
			wantName: "dave", wantOK: true},
		{name: "intermediate not sent", roots: ca.pool(),
			peers:   []*x509.Certificate{intermediate.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "dave"}})},
			wantErr: "unknown authority"},
		{name: "certificate from another CA", roots: ca.pool(),
			peers:   []*x509.Certificate{other.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}})},
			wantErr: "unknown authority"},
		{name: "expired certificate", roots: ca.pool(),
			peers:   []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotBefore: now.Add(-3 * time.Hour), NotAfter: now.Add(-2 * time.Hour)})},
			wantErr: "expired"},
		{name: "not yet valid certificate", roots: ca.pool(),
			peers:   []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotBefore: now.Add(2 * time.Hour)})},
			wantErr: "not yet valid"},
		{name: "server-only certificate", roots: ca.pool(),
			peers:   []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})},
			wantErr: "incompatible key usage"},
		{name: "the CA certificate itself", roots: ca.pool(),
			peers:   []*x509.Certificate{other.cert},
			wantErr: "unknown authority"},
		{name: "verified certificate without CN has no opinion", roots: ca.pool(),
			peers: []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{Organization: []string{"system:masters"}}})}},
		{name: "no client CA configured has no opinion", roots: nil,
			peers: []*x509.Certificate{ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}})}},
		{name: "no certificate has no opinion", roots: ca.pool()},
		{name: "plain HTTP has no opinion", roots: ca.pool(), noTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots := tt.roots
			a := &ClientCert{Roots: func() *x509.CertPool { return roots }}
			r := httptest.NewRequest("GET", "/api", nil)
			if tt.noTLS {
				r.TLS = nil
			} else {
				r.TLS = &tls.ConnectionState{PeerCertificates: tt.peers}
			}
			got, ok, err := a.AuthenticateRequest(r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				if ok {
					t.Errorf("got ok with error %v", err)
				}
				return
			}
			if err != nil || ok != tt.wantOK {
				t.Fatalf("got ok=%v err=%v, want ok=%v", ok, err, tt.wantOK)
			}
			if !ok {
				return
			}
			if got.GetName() != tt.wantName || got.GetUID() != tt.wantUID || !reflect.DeepEqual(got.GetGroups(), tt.wantGroups) {
				t.Errorf("got %q uid %q groups %v, want %q uid %q groups %v", got.GetName(), got.GetUID(), got.GetGroups(), tt.wantName, tt.wantUID, tt.wantGroups)
			}
			if ids := got.GetExtra()["authentication.kubernetes.io/credential-id"]; len(ids) != 1 || !strings.HasPrefix(ids[0], "X509SHA256=") || len(ids[0]) != len("X509SHA256=")+64 {
				t.Errorf("got credential-id %v, want one X509SHA256=<64 hex>", ids)
			}
		})
	}
}

func TestClientCert_RootsSwapped(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old"), newTestCA(t, "new")
	cert := newCA.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}})
	roots := oldCA.pool()
	a := &ClientCert{Roots: func() *x509.CertPool { return roots }}
	r := httptest.NewRequest("GET", "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	if _, _, err := a.AuthenticateRequest(r); err == nil {
		t.Fatal("got no error before the CA was swapped, want unknown authority")
	}
	roots = newCA.pool()
	if u, ok, err := a.AuthenticateRequest(r); err != nil || !ok || u.GetName() != "alice" {
		t.Fatalf("got %v %v %v after the swap, want alice", u, ok, err)
	}
}

func TestChain_ClientCertThenToken(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	tokens := &TokenFile{tokens: map[string]*user.DefaultInfo{"good": {Name: "bob"}}}
	chain := &Chain{Authenticators: Union{&ClientCert{Roots: ca.pool}, &BearerToken{Tokens: tokens}}, Anonymous: true}
	tests := []struct {
		name     string
		cert     *x509.Certificate
		header   string
		wantUser string
		wantErr  bool
	}{
		{"valid certificate wins over a token", ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}}), "Bearer good", "alice", false},
		{"certificate from another CA with a valid token is the token's user", other.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}}), "Bearer good", "bob", false},
		{"certificate from another CA alone is refused, not anonymous", other.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}}), "", "", true},
		{"certificate without CN falls through to anonymous", ca.issue(t, &x509.Certificate{Subject: pkix.Name{Organization: []string{"system:masters"}}}), "", "system:anonymous", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tt.cert}}
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := chain.AuthenticateRequest(r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			got := ""
			if ok {
				got = u.GetName()
			}
			if got != tt.wantUser {
				t.Errorf("got user %q, want %q", got, tt.wantUser)
			}
		})
	}
}

func TestLoadCertPool(t *testing.T) {
	ca := newTestCA(t, "ca")
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		wantErr string
	}{
		{good, ""},
		{empty, "no PEM certificates"},
		{filepath.Join(dir, "missing.crt"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			pool, err := LoadCertPool(tt.path)
			if tt.wantErr == "" {
				if err != nil || pool == nil {
					t.Fatalf("got %v, %v, want a pool", pool, err)
				}
				cert := ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "x"}})
				if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
					t.Errorf("got %v verifying against the loaded pool, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestClientCert_CachedVerification(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	now := time.Now()
	leafTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	cert := ca.issue(t, leafTmpl)
	caPool, otherPool := ca.pool(), other.pool()

	roots, clock := caPool, now
	a := &ClientCert{Roots: func() *x509.CertPool { return roots }, Now: func() time.Time { return clock }}
	r := httptest.NewRequest("GET", "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	steps := []struct {
		name    string
		roots   *x509.CertPool
		clock   time.Time
		wantErr string
	}{
		{"first request verifies", caPool, now, ""},
		{"second request is the same", caPool, now.Add(time.Minute), ""},
		{"a pool without the CA refuses the cached certificate", otherPool, now, "unknown authority"},
		{"the CA's pool again", caPool, now, ""},
		{"past the certificate's end it is expired", caPool, now.Add(2 * time.Hour), "expired"},
		{"before the certificate's start it is not yet valid", caPool, now.Add(-2 * time.Hour), "not yet valid"},
	}
	for _, st := range steps {
		roots, clock = st.roots, st.clock
		u, ok, err := a.AuthenticateRequest(r)
		if st.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), st.wantErr) || ok {
				t.Errorf("%s: got %v %v, want an error containing %q", st.name, ok, err, st.wantErr)
			}
			continue
		}
		if err != nil || !ok || u.GetName() != "alice" {
			t.Errorf("%s: got %v %v %v, want alice", st.name, u, ok, err)
		}
	}
}

func TestClientCert_CacheExpiresWithTheCA(t *testing.T) {
	// A CA that ends before its leaf: the cached entry must end with the CA.
	now := time.Now()
	ca := newTestCA(t, "ca")
	sub := newTestCA(t, "short-lived intermediate")
	sub.cert = issueWithKey(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "short"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}, sub.key.Public())
	leaf := sub.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotAfter: now.Add(10 * time.Hour)})
	pool, clock := ca.pool(), now
	a := &ClientCert{Roots: func() *x509.CertPool { return pool }, Now: func() time.Time { return clock }}
	r := httptest.NewRequest("GET", "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf, sub.cert}}
	if _, ok, err := a.AuthenticateRequest(r); !ok || err != nil {
		t.Fatalf("got %v %v, want alice", ok, err)
	}
	clock = now.Add(2 * time.Hour)
	if _, ok, err := a.AuthenticateRequest(r); ok || err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("got %v %v after the intermediate expired, want an expired error", ok, err)
	}
}
