package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsure_CreatesPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	hosts := []string{"localhost", "127.0.0.1", "::1", "edge-1"}
	b, err := Ensure(dir, hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("modes", func(t *testing.T) {
		for name, want := range map[string]os.FileMode{
			CAKeyFile: 0o600, ServingKeyFile: 0o600, AdminKeyFile: 0o600,
			CACertFile: 0o644, ServingCertFile: 0o644, AdminCertFile: 0o644,
		} {
			st, err := os.Stat(b.Path(name))
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != want {
				t.Errorf("%s mode = %v, want %v", name, got, want)
			}
		}
	})
	ca := parseCert(t, b.Path(CACertFile))
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	t.Run("serving", func(t *testing.T) {
		c := parseCert(t, b.Path(ServingCertFile))
		for _, h := range hosts {
			if _, err := c.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
				t.Errorf("serving certificate for %q: %v", h, err)
			}
		}
		if _, err := c.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
			t.Error("serving certificate verifies for example.com, want an error")
		}
		if got, want := c.PublicKeyAlgorithm, x509.ECDSA; got != want {
			t.Errorf("key algorithm = %v, want %v", got, want)
		}
	})
	t.Run("admin", func(t *testing.T) {
		c := parseCert(t, b.Path(AdminCertFile))
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("admin certificate as a client: %v", err)
		}
		if got, want := c.Subject.CommonName, AdminUser; got != want {
			t.Errorf("CN = %q, want %q", got, want)
		}
		if got, want := c.Subject.Organization, []string{AdminGroup}; !slices.Equal(got, want) {
			t.Errorf("O = %q, want %q", got, want)
		}
		if string(b.AdminCert) != string(pemCert(c.Raw)) {
			t.Error("Bundle.AdminCert differs from admin.crt")
		}
	})
}

func TestEnsure_Reuses(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"localhost", "127.0.0.1"}
	first, err := Ensure(dir, hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	second, err := Ensure(dir, hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Created) != 0 {
		t.Errorf("second Ensure created %v, want nothing", second.Created)
	}
	if string(first.CACert) != string(second.CACert) || string(first.AdminKey) != string(second.AdminKey) {
		t.Error("second Ensure returned other certificates")
	}
}

func TestEnsure_ReissuesServingForNewHost(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, []string{"localhost", "127.0.0.1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	caBefore := parseCert(t, filepath.Join(dir, CACertFile))
	b, err := Ensure(dir, []string{"localhost", "127.0.0.1", "10.1.2.3"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := b.Created
	want := []string{b.Path(ServingCertFile), b.Path(ServingKeyFile)}
	if !slices.Equal(got, want) {
		t.Errorf("created %v, want %v", got, want)
	}
	if err := parseCert(t, b.Path(ServingCertFile)).VerifyHostname("10.1.2.3"); err != nil {
		t.Errorf("new serving certificate: %v", err)
	}
	if !parseCert(t, b.Path(CACertFile)).Equal(caBefore) {
		t.Error("the CA changed, want it kept")
	}
}

func TestEnsure_RenewsExpiringLeaves(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"localhost"}
	if _, err := Ensure(dir, hosts, time.Now()); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(DefaultLeafValidity - DefaultRenewBefore + time.Hour)
	b, err := Ensure(dir, hosts, later)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(b.Created), 4; got != want {
		t.Errorf("created %d files (%v), want %d (serving and admin pairs)", got, b.Created, want)
	}
}

func TestEnsure_UnreadableCAIsAnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, []string{"localhost"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, []string{"localhost"}, time.Now()); err == nil {
		t.Fatal("Ensure with a garbage CA key succeeded, want an error")
	}
}

func TestCertReloader_Certificate(t *testing.T) {
	old := reloadCheckInterval
	reloadCheckInterval = 0
	t.Cleanup(func() { reloadCheckInterval = old })

	dir := t.TempDir()
	if _, err := Ensure(dir, []string{"localhost"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var errs []error
	r, err := NewCertReloader(filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile), func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Fatal(err)
	}
	before := r.Certificate().Leaf
	// Issue a new serving certificate (another host) in place.
	if _, err := Ensure(dir, []string{"localhost", "192.0.2.7"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	after := r.Certificate().Leaf
	if after.Equal(before) {
		t.Fatal("certificate not reloaded after the files changed")
	}
	if err := after.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("reloaded certificate: %v", err)
	}
	// A broken key keeps the last good pair and reports the error.
	if err := os.WriteFile(filepath.Join(dir, ServingKeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := r.Certificate().Leaf; !got.Equal(after) {
		t.Error("a broken key replaced the served certificate")
	}
	if len(errs) != 1 {
		t.Errorf("reload errors = %v, want one", errs)
	}
}
