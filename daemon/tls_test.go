package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/pki"
)

func TestServingHosts(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want []string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}, []string{"127.0.0.1", "::1", "localhost"}},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 6443}, []string{"127.0.0.1", "192.0.2.7", "::1", "localhost"}},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 6443}, []string{"127.0.0.1", "::1", "localhost"}},
	}
	// Every interface address for a listen address without a host.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		var want []string
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
				want = append(want, ipn.IP.String())
			}
		}
		tests = append(tests, struct {
			addr net.Addr
			want []string
		}{&net.TCPAddr{IP: net.IPv4zero, Port: 6443}, want})
	}
	for _, tt := range tests {
		got := servingHosts(tt.addr)
		for _, h := range tt.want {
			if !slices.Contains(got, h) {
				t.Errorf("servingHosts(%v) = %q, want it to contain %q", tt.addr, got, h)
			}
		}
	}
}

// tlsServer is an HTTPS server started the way serve starts its own.
type tlsServer struct{ URL string }

// serveWithTLS serves, with the TLS configuration setupTLS builds for cfg,
// the authenticator setupAuth builds, and http.Server.ServeTLS as the
// daemon uses them, a handler that answers with the protocol and the user
// the request authenticated as ("anonymous" without credentials), or
// "401" when authentication failed.
func serveWithTLS(t *testing.T, cfg serveConfig, dataDir string) (*tlsServer, *servingTLS) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := setupTLS(cfg, dataDir, ln.Addr(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	auth, err := setupAuth(cfg, st, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok, err := auth.authenticator.AuthenticateRequest(r)
			switch {
			case err != nil || !ok:
				fmt.Fprintf(w, "%s 401", r.Proto)
			case u.GetName() == "system:anonymous":
				fmt.Fprintf(w, "%s anonymous", r.Proto)
			default:
				fmt.Fprintf(w, "%s %s", r.Proto, u.GetName())
			}
		}),
		TLSConfig: st.config,
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return &tlsServer{URL: "https://" + ln.Addr().String()}, st
}

func get(t *testing.T, srv *tlsServer, tlsCfg *tls.Config) (string, error) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestSetupTLS_ClientCertificates: the admin certificate of the generated
// PKI authenticates as its CN (over HTTP/2), a client without a
// certificate is anonymous, and one from another CA gets 401 (not a failed
// handshake, as in kube-apiserver).
func TestSetupTLS_ClientCertificates(t *testing.T) {
	dataDir := t.TempDir()
	srv, st := serveWithTLS(t, defaultServeConfig(), dataDir)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(st.bundle.CACert)
	admin, err := tls.X509KeyPair(st.bundle.AdminCert, st.bundle.AdminKey)
	if err != nil {
		t.Fatal(err)
	}

	got, err := get(t, srv, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/2.0 " + pki.AdminUser; got != want {
		t.Errorf("with the admin certificate: %q, want %q", got, want)
	}
	got, err = get(t, srv, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/2.0 anonymous"; got != want {
		t.Errorf("without a certificate: %q, want %q", got, want)
	}

	other, err := pki.Ensure(filepath.Join(t.TempDir(), "other"), []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.X509KeyPair(other.AdminCert, other.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	// Go's client offers only certificates the server's CA list names;
	// GetClientCertificate sends this one anyway, as other clients may.
	force := func(c tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	got, err = get(t, srv, &tls.Config{RootCAs: roots, GetClientCertificate: force(foreign)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/2.0 401"; got != want {
		t.Errorf("with a certificate of another CA: %q, want %q", got, want)
	}
}

// TestSetupTLS_CustomFiles: --tls-cert-file/--tls-private-key-file are
// served instead of the generated certificate, and --client-ca-file
// replaces the generated CA for client certificates.
func TestSetupTLS_CustomFiles(t *testing.T) {
	custom, err := pki.Ensure(filepath.Join(t.TempDir(), "custom"), []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultServeConfig()
	cfg.TLSCertFile, cfg.TLSPrivateKeyFile = custom.Path(pki.ServingCertFile), custom.Path(pki.ServingKeyFile)
	cfg.ClientCAFile = custom.Path(pki.CACertFile)
	srv, st := serveWithTLS(t, cfg, t.TempDir())
	if !st.customCert {
		t.Error("customCert = false with --tls-cert-file")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(custom.CACert)
	customAdmin, _ := tls.X509KeyPair(custom.AdminCert, custom.AdminKey)
	got, err := get(t, srv, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{customAdmin}})
	if err != nil {
		t.Fatalf("client trusting the custom CA: %v", err)
	}
	if !strings.HasSuffix(got, pki.AdminUser) {
		t.Errorf("with the custom CA's admin certificate: %q, want it verified", got)
	}
	generatedAdmin, _ := tls.X509KeyPair(st.bundle.AdminCert, st.bundle.AdminKey)
	force := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &generatedAdmin, nil }
	got, err = get(t, srv, &tls.Config{RootCAs: roots, GetClientCertificate: force})
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/2.0 401"; got != want {
		t.Errorf("the generated admin certificate with --client-ca-file naming another CA: %q, want %q", got, want)
	}
}
