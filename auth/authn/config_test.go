package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writePEM(t *testing.T, path string, certs ...*x509.Certificate) {
	t.Helper()
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	caFile := filepath.Join(dir, "ca.crt")
	writePEM(t, caFile, ca.cert)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("admintoken,admin,1,system:masters\n,nobody,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badTokens := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(badTokens, []byte("onlytoken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("bad files are refused", func(t *testing.T) {
		for _, c := range []Config{
			{TokenAuthFile: badTokens},
			{TokenAuthFile: filepath.Join(dir, "missing.csv")},
			{ClientCAFile: tokenFile},
			{ClientCAFile: filepath.Join(dir, "missing.crt")},
		} {
			if _, _, err := New(c); err == nil {
				t.Errorf("got no error for %+v, want one", c)
			}
		}
	})

	chain, warnings, err := New(Config{ClientCAFile: caFile, TokenAuthFile: tokenFile, Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("got warnings %q, want one for the empty token", warnings)
	}
	tests := []struct {
		name     string
		cert     *x509.Certificate
		header   string
		wantUser string
		wantErr  bool
	}{
		{"certificate", ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "carol"}}), "", "carol", false},
		{"token", nil, "Bearer admintoken", "admin", false},
		{"bad token", nil, "Bearer wrong", "", true},
		{"nothing", nil, "", "system:anonymous", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tt.cert != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tt.cert}}
			}
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
				t.Errorf("got %q, want %q", got, tt.wantUser)
			}
		})
	}

	t.Run("anonymous off", func(t *testing.T) {
		chain, _, err := New(Config{TokenAuthFile: tokenFile})
		if err != nil {
			t.Fatal(err)
		}
		if u, ok, err := chain.AuthenticateRequest(httptest.NewRequest("GET", "/api", nil)); ok || err != nil {
			t.Errorf("got %v %v %v, want no user and no error", u, ok, err)
		}
	})
}

func TestCertPoolFile_Pool(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.crt")
	oldCA, newCA := newTestCA(t, "old"), newTestCA(t, "new")
	writePEM(t, path, oldCA.cert)
	f, err := NewCertPoolFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := &ClientCert{Roots: f.Pool}
	cert := newCA.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}})
	r := httptest.NewRequest("GET", "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	if _, _, err := a.AuthenticateRequest(r); err == nil {
		t.Fatal("got no error before rotation, want unknown authority")
	}

	// Rotate: the new CA is added; the file's size changes, so the change
	// is seen even within the file system's time resolution.
	writePEM(t, path, oldCA.cert, newCA.cert)
	if u, ok, err := a.AuthenticateRequest(r); err != nil || !ok || u.GetName() != "alice" {
		t.Fatalf("got %v %v %v after rotation, want alice", u, ok, err)
	}

	// A broken file keeps the last good pool.
	if err := os.WriteFile(path, []byte("garbage that is longer than before, to change the size of the file for sure"), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := a.AuthenticateRequest(r); err != nil || !ok || u.GetName() != "alice" {
		t.Fatalf("got %v %v %v after a broken write, want the last good pool", u, ok, err)
	}
}

// TestWithAuthentication_TLS runs the chain behind a real TLS listener that
// requests but does not verify client certificates, as the serving side is
// meant to be set up.
func TestWithAuthentication_TLS(t *testing.T) {
	ca, other := newTestCA(t, "client-ca"), newTestCA(t, "other")
	tf, err := ParseTokenFile(strings.NewReader("good,bob,2\n"), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	chain := &Chain{Authenticators: Union{&ClientCert{Roots: ca.pool}, &BearerToken{Tokens: tf}}, Anonymous: true}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := UserFrom(r.Context())
		io.WriteString(w, u.GetName()+" "+strings.Join(u.GetGroups(), ","))
	})
	failed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := Unauthorized().Status()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Code))
		json.NewEncoder(w).Encode(&status)
	})
	srv := httptest.NewUnstartedServer(WithAuthentication(next, chain, failed))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()

	clientCert := func(ca *testCA, tmpl *x509.Certificate) []tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		cert := issueWithKey(t, ca, tmpl, key.Public())
		return []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	}
	now := time.Now()
	tests := []struct {
		name     string
		certs    []tls.Certificate
		token    string
		wantCode int
		wantBody string
	}{
		{"client certificate", clientCert(ca, &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:masters"}}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}), "", 200, "alice system:masters,system:authenticated"},
		{"token", nil, "good", 200, "bob system:authenticated"},
		{"nothing is anonymous", nil, "", 200, "system:anonymous system:unauthenticated"},
		{"certificate from another CA", clientCert(other, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}), "", 401, `"message":"Unauthorized","reason":"Unauthorized","code":401`},
		{"expired certificate", clientCert(ca, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)}), "", 401, `"code":401`},
		{"expired certificate with a valid token is the token's user", clientCert(ca, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)}), "good", 200, "bob system:authenticated"},
		{"invalid token", nil, "bad", 401, `"code":401`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transport := srv.Client().Transport.(*http.Transport).Clone()
			transport.TLSClientConfig.Certificates = tt.certs
			client := &http.Client{Transport: transport}
			req, _ := http.NewRequest("GET", srv.URL+"/api", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("got %d %s, want %d containing %s", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}
