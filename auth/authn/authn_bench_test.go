package authn

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http/httptest"
	"strings"
	"testing"
)

func BenchmarkChain_ClientCert(b *testing.B) {
	t := &testing.T{}
	ca := newTestCA(t, "ca")
	cert := ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:masters"}}})
	pool := ca.pool()
	chain := &Chain{Authenticators: Union{&ClientCert{Roots: func() *x509.CertPool { return pool }}}, Anonymous: true}
	r := httptest.NewRequest("GET", "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := chain.AuthenticateRequest(r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkChain_Token(b *testing.B) {
	tf, err := ParseTokenFile(strings.NewReader("good,alice,1,dev\n"), "tokens.csv")
	if err != nil {
		b.Fatal(err)
	}
	chain := &Chain{Authenticators: Union{&ClientCert{}, &BearerToken{Tokens: tf}}, Anonymous: true}
	r := httptest.NewRequest("GET", "/api", nil)
	r.Header.Set("Authorization", "Bearer good")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := chain.AuthenticateRequest(r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkChain_ClientCertParallel(b *testing.B) {
	t := &testing.T{}
	ca := newTestCA(t, "ca")
	certs := make([]*x509.Certificate, 8)
	for i := range certs {
		certs[i] = ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "user"}})
	}
	pool := ca.pool()
	chain := &Chain{Authenticators: Union{&ClientCert{Roots: func() *x509.CertPool { return pool }}}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{certs[i%len(certs)]}}
			i++
			if _, ok, err := chain.AuthenticateRequest(r); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
