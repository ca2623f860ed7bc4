package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCAReloadInterval is how often a client CA file is checked for
// changes; kube-apiserver's dynamic CA file watcher polls once a minute too.
const DefaultCAReloadInterval = time.Minute

// Config holds kube-apiserver's authentication flags.
type Config struct {
	// ClientCAFile is --client-ca-file; empty turns client certificates off.
	ClientCAFile string
	// TokenAuthFile is --token-auth-file; empty turns static tokens off.
	TokenAuthFile string
	// Anonymous is --anonymous-auth (kube-apiserver's default is true).
	Anonymous bool
	// ExtraTokens are further token authenticators (ServiceAccount tokens),
	// tried after the token file.
	ExtraTokens []TokenAuthenticator
	// Warn, if set, receives the warnings kube-apiserver sends with a
	// response (see BearerToken.Warn).
	Warn func(r *http.Request, text string)
}

// New builds the authenticator kube-apiserver builds from c: client
// certificates, then bearer tokens, then anonymous. The warnings are lines
// of the token file that were skipped or replaced, for the daemon to log.
func New(c Config) (auth *Chain, warnings []string, err error) {
	chain := &Chain{Anonymous: c.Anonymous}
	if c.ClientCAFile != "" {
		pool, err := NewCertPoolFile(c.ClientCAFile, DefaultCAReloadInterval)
		if err != nil {
			return nil, nil, err
		}
		chain.Authenticators = append(chain.Authenticators, &ClientCert{Roots: pool.Pool})
	}
	var tokens TokenUnion
	if c.TokenAuthFile != "" {
		tf, err := LoadTokenFile(c.TokenAuthFile)
		if err != nil {
			return nil, nil, err
		}
		warnings = tf.Warnings
		tokens = append(tokens, tf)
	}
	tokens = append(tokens, c.ExtraTokens...)
	if len(tokens) > 0 {
		chain.Authenticators = append(chain.Authenticators, &BearerToken{Tokens: tokens, Warn: c.Warn})
	}
	return chain, warnings, nil
}

// CertPoolFile is a PEM certificate file (--client-ca-file) read again when
// it changes on disk, so a rotated CA is used without a restart. A file that
// becomes unreadable or empty keeps the last good pool.
type CertPoolFile struct {
	path     string
	interval time.Duration

	pool      atomic.Pointer[x509.CertPool]
	nextCheck atomic.Int64 // unix nanoseconds of the next stat

	// mu guards modTime and size, and makes one caller at a time reload.
	mu      sync.Mutex
	modTime time.Time
	size    int64
}

// NewCertPoolFile reads path, and checks it again at most once per
// interval, on a call to Pool. The first read must succeed.
func NewCertPoolFile(path string, interval time.Duration) (*CertPoolFile, error) {
	f := &CertPoolFile{path: path, interval: interval}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read client CA file: %w", err)
	}
	pool, err := LoadCertPool(path)
	if err != nil {
		return nil, err
	}
	f.pool.Store(pool)
	f.modTime, f.size = fi.ModTime(), fi.Size()
	f.nextCheck.Store(time.Now().Add(interval).UnixNano())
	return f, nil
}

// Pool returns the current pool. It costs one atomic load except once per
// interval, when one caller stats the file and reloads it if its size or
// modification time changed.
func (f *CertPoolFile) Pool() *x509.CertPool {
	now := time.Now()
	if now.UnixNano() >= f.nextCheck.Load() && f.mu.TryLock() {
		f.nextCheck.Store(now.Add(f.interval).UnixNano())
		f.reloadLocked()
		f.mu.Unlock()
	}
	return f.pool.Load()
}

// reloadLocked reads the file again if it changed. f.mu must be held.
func (f *CertPoolFile) reloadLocked() {
	fi, err := os.Stat(f.path)
	if err != nil || (fi.ModTime().Equal(f.modTime) && fi.Size() == f.size) {
		return
	}
	pool, err := LoadCertPool(f.path)
	if err != nil {
		return
	}
	f.pool.Store(pool)
	f.modTime, f.size = fi.ModTime(), fi.Size()
}
