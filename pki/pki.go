// Package pki creates and keeps the certificates edgeapi serves with: a
// self-signed CA, a serving certificate signed by it, and an admin client
// certificate in the group system:masters for the generated kubeconfig.
//
// All keys are ECDSA P-256 and written with mode 0600; certificates are
// 0644. Files that exist and are still good are reused, so clients that
// trust the CA keep working across restarts.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Validity periods and the renewal margin.
const (
	// DefaultCAValidity is how long the generated CA is valid.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// DefaultLeafValidity is how long the serving and admin certificates
	// are valid.
	DefaultLeafValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore: a leaf certificate that expires sooner than this
	// is issued again at start.
	DefaultRenewBefore = 30 * 24 * time.Hour
	// AdminUser and AdminGroup are the admin client certificate's CN and O,
	// the user and group an x509 authenticator maps it to.
	AdminUser  = "edgeapi-admin"
	AdminGroup = "system:masters"
)

// File names inside the PKI directory.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
)

// Bundle is what Ensure leaves on disk, as PEM, for the kubeconfig and the
// TLS configuration.
type Bundle struct {
	// Dir holds the files named by the *File constants.
	Dir string
	// CACert is the CA certificate (PEM).
	CACert []byte
	// AdminCert and AdminKey are the admin client certificate and key
	// (PEM). AdminKey is a secret: never log it.
	AdminCert, AdminKey []byte
	// Created names the files written by this call (empty when every
	// file was reused).
	Created []string
}

// Path returns the path of name inside the bundle's directory.
func (b *Bundle) Path(name string) string { return filepath.Join(b.Dir, name) }

// Ensure makes dir hold a CA, a serving certificate valid for hosts (DNS
// names or IP addresses) and an admin client certificate, creating what is
// missing. It reuses existing files, except that it issues the serving
// certificate again when it does not cover every host, is not signed by
// the CA or expires within DefaultRenewBefore, and the admin certificate
// again when it is not signed by the CA or expires soon. A CA that cannot
// be read is an error, not a reason to make a new one: clients trust it.
func Ensure(dir string, hosts []string, now time.Time) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	b := &Bundle{Dir: dir}
	ca, caKey, err := b.ensureCA(now)
	if err != nil {
		return nil, err
	}
	b.CACert = pemCert(ca.Raw)

	serving, err := loadLeaf(b.Path(ServingCertFile), b.Path(ServingKeyFile), ca, now)
	if err != nil || !coversHosts(serving, hosts) {
		tmpl := leafTemplate("edgeapi", now)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if !slices.Contains(tmpl.DNSNames, h) {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		if _, _, err := b.issue(tmpl, ca, caKey, ServingCertFile, ServingKeyFile); err != nil {
			return nil, err
		}
	}

	if _, err := loadLeaf(b.Path(AdminCertFile), b.Path(AdminKeyFile), ca, now); err != nil {
		tmpl := leafTemplate(AdminUser, now)
		tmpl.Subject.Organization = []string{AdminGroup}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if _, _, err := b.issue(tmpl, ca, caKey, AdminCertFile, AdminKeyFile); err != nil {
			return nil, err
		}
	}
	if b.AdminCert, err = os.ReadFile(b.Path(AdminCertFile)); err != nil {
		return nil, fmt.Errorf("read admin certificate: %w", err)
	}
	if b.AdminKey, err = os.ReadFile(b.Path(AdminKeyFile)); err != nil {
		return nil, fmt.Errorf("read admin key: %w", err)
	}
	return b, nil
}

// ensureCA loads the CA, or creates it when neither its certificate nor
// its key exists.
func (b *Bundle) ensureCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := b.Path(CACertFile), b.Path(CAKeyFile)
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	if errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("generate ca key: %w", err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          serial(),
			Subject:               pkix.Name{CommonName: fmt.Sprintf("edgeapi-ca@%d", now.Unix())},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(DefaultCAValidity),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, fmt.Errorf("create ca certificate: %w", err)
		}
		if err := b.write(keyPath, certPath, der, key); err != nil {
			return nil, nil, err
		}
		cert, _ := x509.ParseCertificate(der)
		return cert, key, nil
	}
	cert, key, err := LoadPair(certPath, keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("load ca: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("load ca: %s is not a CA certificate", certPath)
	}
	if now.After(cert.NotAfter) {
		return nil, nil, fmt.Errorf("load ca: %s expired on %s", certPath, cert.NotAfter.Format(time.RFC3339))
	}
	return cert, key, nil
}

// issue signs tmpl with a new key and writes both files.
func (b *Bundle) issue(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certName, keyName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %s: %w", certName, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate %s: %w", certName, err)
	}
	if err := b.write(b.Path(keyName), b.Path(certName), der, key); err != nil {
		return nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key, nil
}

// write writes the key (0600) before the certificate (0644), each through
// a temporary file and a rename.
func (b *Bundle) write(keyPath, certPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key: %w", err)
	}
	if err := WriteFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := WriteFileAtomic(certPath, pemCert(der), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", certPath, err)
	}
	b.Created = append(b.Created, certPath, keyPath)
	return nil
}

// loadLeaf loads a certificate and its key and checks that the CA signed
// it and that it is valid for longer than DefaultRenewBefore.
func loadLeaf(certPath, keyPath string, ca *x509.Certificate, now time.Time) (*x509.Certificate, error) {
	cert, _, err := LoadPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("check %s: %w", certPath, err)
	}
	if now.Add(DefaultRenewBefore).After(cert.NotAfter) || now.Before(cert.NotBefore) {
		return nil, fmt.Errorf("check %s: valid only from %s to %s", certPath, cert.NotBefore, cert.NotAfter)
	}
	return cert, nil
}

// LoadPair reads a PEM certificate and its PEM ECDSA key (SEC 1 or PKCS #8)
// and checks that they belong together.
func LoadPair(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("read key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("read certificate %s: no PEM certificate", certPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate %s: %w", certPath, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("read key %s: no PEM key", keyPath)
	}
	var key *ecdsa.PrivateKey
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "PRIVATE KEY":
		var k any
		if k, err = x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
			var ok bool
			if key, ok = k.(*ecdsa.PrivateKey); !ok {
				err = errors.New("not an ECDSA key")
			}
		}
	default:
		err = fmt.Errorf("unexpected PEM block %q", kb.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("parse key %s: %w", keyPath, err)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("load %s: key %s does not match it", certPath, keyPath)
	}
	return cert, key, nil
}

// coversHosts reports whether cert is valid for every host.
func coversHosts(cert *x509.Certificate, hosts []string) bool {
	if cert == nil {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func leafTemplate(cn string, now time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(DefaultLeafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// WriteFileAtomic writes data to path with mode perm through a temporary
// file in the same directory, synced and renamed, so a reader never sees a
// partial file and a key is never readable by others, even briefly.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// IssueClient signs a new client certificate for user (its CN) in groups
// (its O) with the CA in dir, valid for validity from now, and returns it
// and its new key as PEM; nothing is written. The key is a secret: never
// log it. The CA must exist (the daemon creates it at its first start).
func IssueClient(dir, user string, groups []string, validity time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("issue client certificate: the user name is empty")
	}
	b := &Bundle{Dir: dir}
	ca, caKey, err := LoadPair(b.Path(CACertFile), b.Path(CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("load ca: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, fmt.Errorf("load ca: %s is not a CA certificate", b.Path(CACertFile))
	}
	tmpl := leafTemplate(user, now)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	tmpl.Subject.Organization = groups
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate client key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode client key: %w", err)
	}
	return pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
