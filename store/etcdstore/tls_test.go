//go:build etcd

package etcdstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeCert writes a certificate for cn signed by parent (self-signed when
// nil) and its key as PEM files in dir, and returns them with the paths.
func writeCert(t *testing.T, dir, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, certFile, keyFile
}

// TestClientTLS runs a store against an etcd that serves TLS and asks
// for client certificates.
func TestClientTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca", nil, nil, true)
	_, _, serverCert, serverKey := writeCert(t, dir, "server", ca, caKey, false)
	_, _, clientCert, clientKey := writeCert(t, dir, "client", ca, caKey, false)

	e := newEtcdTLS(t, caFile, serverCert, serverKey)
	tlsCfg, err := ClientTLS(caFile, clientCert, clientKey)
	if err != nil {
		t.Fatalf("ClientTLS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: []string{e.url}, TLS: tlsCfg})
	if err != nil {
		t.Fatalf("New over TLS: %v", err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, key("ns", "a"), "", cm("ns", "a", "", "1")); err != nil {
		t.Errorf("Create over TLS: %v", err)
	}
	if _, err := s.Get(ctx, key("ns", "a")); err != nil {
		t.Errorf("Get over TLS: %v", err)
	}

	t.Run("NoClientCert", func(t *testing.T) {
		cfg, err := ClientTLS(caFile, "", "")
		if err != nil {
			t.Fatalf("ClientTLS: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		s, err := New(ctx, Config{Endpoints: []string{e.url}, TLS: cfg, DialTimeout: 2 * time.Second})
		if err == nil {
			s.Close()
			t.Errorf("New without a client certificate: no error")
		}
	})
	t.Run("Errors", func(t *testing.T) {
		if _, err := ClientTLS(filepath.Join(dir, "missing"), "", ""); err == nil {
			t.Errorf("missing CA: no error")
		}
		if _, err := ClientTLS("", clientCert, ""); err == nil {
			t.Errorf("certificate without key: no error")
		}
	})
}
