package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
)

// uidOID is the X.500 attribute "UID" (RFC 4519), which kube-apiserver reads
// as the user's UID from a client certificate's subject.
var uidOID = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}

// ClientCert authenticates a request by the client certificate presented in
// its TLS handshake, as kube-apiserver's --client-ca-file does: the
// certificate must chain to a root in the pool and allow client
// authentication, the subject's CommonName is the user name, its
// Organizations are the groups, and a UID attribute is the user's UID.
//
// It verifies the chain itself, so the TLS listener should request but not
// verify client certificates (tls.RequestClientCert): then a bad certificate
// is a 401 Status rather than a failed handshake, and a request without one
// can still use a token.
type ClientCert struct {
	// Roots returns the client CA pool at the time of the request, so a CA
	// file rotated on disk can be swapped in. A nil pool means client
	// certificates are not configured: no opinion. A pool must not be
	// changed once returned (verifications are cached per pool): return a
	// new pool instead, as CertPoolFile does.
	Roots func() *x509.CertPool
	// Now returns the time certificates are checked against; nil means
	// time.Now. Tests set it.
	Now func() time.Time

	// mu guards verified.
	mu sync.RWMutex
	// verified caches the users of chains that verified, so a client that
	// sends the same certificate on every request (kubectl with the
	// admin kubeconfig) pays a map lookup instead of a signature check
	// (about 80 µs). Keyed by the DER of the presented certificates; an
	// entry counts only for the pool it was verified against and inside
	// the validity of every certificate in its chain. Only verified chains
	// enter, and the map is emptied when it reaches maxVerifiedChains.
	verified map[string]verifiedChain
}

// maxVerifiedChains bounds ClientCert's cache of verified chains.
const maxVerifiedChains = 4096

// verifiedChain is a cached verification: the user, the pool it was
// verified against, and when it stops (or starts) being valid.
type verifiedChain struct {
	user      user.Info
	roots     *x509.CertPool
	notBefore time.Time
	notAfter  time.Time
}

// AuthenticateRequest implements Authenticator. A request without TLS or
// without a peer certificate gets no opinion; a certificate that does not
// verify, or whose subject holds a malformed UID, is an error; a verified
// certificate without a CommonName gets no opinion, as in kube-apiserver.
func (c *ClientCert) AuthenticateRequest(r *http.Request) (user.Info, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	var roots *x509.CertPool
	if c.Roots != nil {
		roots = c.Roots()
	}
	if roots == nil {
		return nil, false, nil
	}
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	peers := r.TLS.PeerCertificates
	var key string
	if len(peers) == 1 {
		key = string(peers[0].Raw)
	} else {
		var b []byte
		for _, cert := range peers {
			b = append(b, cert.Raw...)
		}
		key = string(b)
	}
	c.mu.RLock()
	hit, ok := c.verified[key]
	c.mu.RUnlock()
	if ok && hit.roots == roots && !now.Before(hit.notBefore) && !now.After(hit.notAfter) {
		return hit.user, true, nil
	}

	leaf := peers[0]
	opts := x509.VerifyOptions{
		Roots:       roots,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime: now,
	}
	if len(peers) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, cert := range peers[1:] {
			opts.Intermediates.AddCert(cert)
		}
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return nil, false, fmt.Errorf("verify client certificate %s: %w", certificateID(leaf), err)
	}
	u, ok, err := certificateUser(leaf)
	if err != nil || !ok {
		return nil, false, err
	}
	entry := verifiedChain{user: u, roots: roots, notBefore: leaf.NotBefore, notAfter: leaf.NotAfter}
	// Any verified chain will do for as long as all of its certificates
	// are valid; take the one that stays valid longest.
	best := -1
	for i, chain := range chains {
		from, until := chainValidity(chain)
		if best < 0 || until.After(entry.notAfter) {
			best, entry.notBefore, entry.notAfter = i, from, until
		}
	}
	c.mu.Lock()
	if c.verified == nil || len(c.verified) >= maxVerifiedChains {
		c.verified = make(map[string]verifiedChain)
	}
	c.verified[key] = entry
	c.mu.Unlock()
	return u, true, nil
}

// chainValidity returns the time range in which every certificate of chain
// is valid.
func chainValidity(chain []*x509.Certificate) (notBefore, notAfter time.Time) {
	for i, cert := range chain {
		if i == 0 || cert.NotBefore.After(notBefore) {
			notBefore = cert.NotBefore
		}
		if i == 0 || cert.NotAfter.Before(notAfter) {
			notAfter = cert.NotAfter
		}
	}
	return notBefore, notAfter
}

// certificateUser returns the user a verified certificate names.
func certificateUser(cert *x509.Certificate) (user.Info, bool, error) {
	if cert.Subject.CommonName == "" {
		return nil, false, nil
	}
	uid, err := subjectUID(cert)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(cert.Raw)
	return &user.DefaultInfo{
		Name:   cert.Subject.CommonName,
		UID:    uid,
		Groups: cert.Subject.Organization,
		Extra:  map[string][]string{user.CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}},
	}, true, nil
}

// subjectUID returns the single UID attribute of the certificate's subject,
// "" if there is none, and an error if there are several, if one is empty or
// if one is not a string.
func subjectUID(cert *x509.Certificate) (string, error) {
	var uids []string
	for _, atv := range cert.Subject.Names {
		if !atv.Type.Equal(uidOID) {
			continue
		}
		s, ok := atv.Value.(string)
		if !ok {
			return "", errors.New("read certificate uid: not a string")
		}
		uids = append(uids, s)
	}
	switch {
	case len(uids) == 0:
		return "", nil
	case len(uids) > 1:
		return "", fmt.Errorf("read certificate uid: want one, found %d: %v", len(uids), uids)
	case uids[0] == "":
		return "", errors.New("read certificate uid: empty")
	}
	return uids[0], nil
}

// certificateID names a certificate in logs without its subject: serial
// number and key identifiers, as kube-apiserver's log lines do.
func certificateID(cert *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", cert.SerialNumber, colonHex(cert.SubjectKeyId), colonHex(cert.AuthorityKeyId))
}

// colonHex formats b as upper-case hex bytes separated by colons.
func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}

// LoadCertPool reads the PEM certificates in path (a --client-ca-file) into a
// pool. A file without any certificate is an error.
func LoadCertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("read client CA file %s: no PEM certificates", path)
	}
	return pool, nil
}
