package pki

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// reloadCheckInterval is the shortest time between two looks at the
// files of a CertReloader. A var so that tests can set it to 0.
var reloadCheckInterval = time.Second

// CertReloader serves a certificate and key read from files, and reads
// them again when they change on disk, so that a rotated certificate is
// served without a restart. Its GetCertificate goes in tls.Config.
type CertReloader struct {
	certPath, keyPath string
	// onError is told when changed files cannot be loaded; the last good
	// certificate is still served.
	onError func(error)

	// mu guards the fields below.
	mu        sync.Mutex
	cert      *tls.Certificate
	checked   time.Time
	certStamp fileStamp
	keyStamp  fileStamp
}

// fileStamp identifies a version of a file.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: st.ModTime(), size: st.Size()}
}

// NewCertReloader loads the pair once; an error means it cannot be served.
// onError (may be nil) is told about later failed reloads.
func NewCertReloader(certPath, keyPath string, onError func(error)) (*CertReloader, error) {
	r := &CertReloader{certPath: certPath, keyPath: keyPath, onError: onError}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = time.Now()
	return r, nil
}

// load reads the pair; the caller holds mu or owns r.
func (r *CertReloader) load() error {
	// The stamps move on even when loading fails, so a bad pair is
	// reported once; writing the missing half changes a stamp again.
	r.certStamp, r.keyStamp = stamp(r.certPath), stamp(r.keyPath)
	cert, err := tls.LoadX509KeyPair(r.certPath, r.keyPath)
	if err != nil {
		return fmt.Errorf("load certificate %s: %w", r.certPath, err)
	}
	r.cert = &cert
	return nil
}

// Certificate returns the pair to serve, read again first when a file
// changed since the last look (at most every reloadCheckInterval).
func (r *CertReloader) Certificate() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= reloadCheckInterval {
		r.checked = now
		if stamp(r.certPath) != r.certStamp || stamp(r.keyPath) != r.keyStamp {
			// A writer may have replaced one file and not yet the other:
			// a mismatched pair fails and is tried again at the next look.
			if err := r.load(); err != nil && r.onError != nil {
				r.onError(err)
			}
		}
	}
	return r.cert
}

// GetCertificate is for tls.Config.GetCertificate.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Certificate(), nil
}
