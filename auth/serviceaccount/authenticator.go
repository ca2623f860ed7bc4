package serviceaccount

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/store"
)

// Defaults of the Authenticator.
const (
	// DefaultVerifiedCacheSize bounds how many verified tokens the
	// Authenticator remembers, so that a client sending the same token
	// pays for the signature check once, not on every request.
	DefaultVerifiedCacheSize = 4096
	// maxTokenBytes bounds the tokens the Authenticator parses; kube's are
	// under 2 KiB.
	maxTokenBytes = 16 << 10
)

// signatureAlgorithms are the algorithms accepted in a token's header;
// anything else ("none", HMAC) is refused before any key is tried.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256}

// ObjectReader reads stored objects (*store.DB).
type ObjectReader interface {
	Get(ctx context.Context, key store.Key) (store.Object, error)
}

// AuthenticatorConfig configures an Authenticator.
type AuthenticatorConfig struct {
	// Issuers are the "iss" values accepted (--service-account-issuer,
	// every value). Required.
	Issuers []string
	// Keys verify signatures: the signing key's public half and any
	// --service-account-key-file keys. Required.
	Keys []crypto.PublicKey
	// APIAudiences are the API server's audiences (--api-audiences): a
	// token must name at least one. Empty means Issuers[0].
	APIAudiences []string
	// Objects reads the ServiceAccount and the bound object of a token.
	// Required.
	Objects ObjectReader
	// VerifiedCacheSize bounds the cache of verified tokens
	// (DefaultVerifiedCacheSize when zero, none when negative).
	VerifiedCacheSize int
}

// Authenticator authenticates ServiceAccount tokens: it implements
// authn.TokenAuthenticator. A token whose issuer is not one of Issuers (or
// that is no JWT) gets no opinion, so that other authenticators may know
// it. A token with a known issuer is verified as kube-apiserver's
// ServiceAccount token authenticator does: signature, issuer, audience,
// exp/nbf/iat with one minute of leeway, and then the ServiceAccount and
// the bound Secret, Pod or Node must still exist with the uid in the token
// and not be marked for deletion for more than that minute. Any failure is
// an error, which the caller answers with 401.
//
// The signature and claims of a verified token are cached by the token's
// SHA-256 (the cache holds no token); the time and object checks run on
// every request, so a deleted ServiceAccount's tokens stop working at
// once. kube-apiserver instead caches the whole answer for 10 s.
// Safe for concurrent use.
type Authenticator struct {
	issuers map[string]bool
	// keys maps a key id to its keys; all holds every key, for tokens
	// without a kid.
	keys    map[string][]crypto.PublicKey
	all     []crypto.PublicKey
	auds    []string
	objects ObjectReader
	// now is time.Now; tests replace it.
	now func() time.Time

	cacheSize int
	// mu guards verified.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]*claims
}

// NewAuthenticator returns an Authenticator for cfg.
func NewAuthenticator(cfg AuthenticatorConfig) (*Authenticator, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("serviceaccount: at least one issuer is required")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("serviceaccount: at least one public key is required")
	}
	if cfg.Objects == nil {
		return nil, errors.New("serviceaccount: an object reader is required")
	}
	a := &Authenticator{
		issuers:   make(map[string]bool, len(cfg.Issuers)),
		keys:      make(map[string][]crypto.PublicKey, len(cfg.Keys)),
		all:       cfg.Keys,
		auds:      cfg.APIAudiences,
		objects:   cfg.Objects,
		now:       time.Now,
		cacheSize: cfg.VerifiedCacheSize,
	}
	for _, iss := range cfg.Issuers {
		a.issuers[iss] = true
	}
	if len(a.auds) == 0 {
		a.auds = []string{cfg.Issuers[0]}
	}
	for _, k := range cfg.Keys {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("serviceaccount: %w", err)
		}
		kid, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		a.keys[kid] = append(a.keys[kid], k)
	}
	if a.cacheSize == 0 {
		a.cacheSize = DefaultVerifiedCacheSize
	}
	if a.cacheSize > 0 {
		a.verified = make(map[[sha256.Size]byte]*claims)
	}
	return a, nil
}

// AuthenticateToken implements authn.TokenAuthenticator.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (user.Info, bool, error) {
	if len(token) > maxTokenBytes {
		return nil, false, nil
	}
	c, known, err := a.verify(token)
	if !known {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	info, err := a.validate(ctx, c)
	if err != nil {
		return nil, false, err
	}
	return info.UserInfo(), true, nil
}

// hasKnownIssuer reports whether token is a compact JWS whose unverified
// payload names one of the issuers, as kube-apiserver checks before it
// parses a token: other tokens are none of this authenticator's business.
func (a *Authenticator) hasKnownIssuer(token string) bool {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return false
	}
	_, rest, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return false
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(b, &unverified); err != nil {
		return false
	}
	return a.issuers[unverified.Issuer]
}

// verify returns the claims of token once its signature, issuer and
// audience are checked, from the cache when it was verified before. known
// is false for tokens that are none of this authenticator's business.
func (a *Authenticator) verify(token string) (c *claims, known bool, err error) {
	var sum [sha256.Size]byte
	if a.verified != nil {
		sum = sha256.Sum256([]byte(token))
		a.mu.Lock()
		c = a.verified[sum]
		a.mu.Unlock()
		if c != nil {
			return c, true, nil
		}
	}
	if !a.hasKnownIssuer(token) {
		return nil, false, nil
	}
	if c, err = a.verifySignature(token); err != nil {
		return nil, true, err
	}
	if a.verified != nil {
		a.mu.Lock()
		if len(a.verified) >= a.cacheSize {
			// Drop everything: a full cache means more distinct tokens
			// than clients, and a re-verification costs one signature.
			clear(a.verified)
		}
		a.verified[sum] = c
		a.mu.Unlock()
	}
	return c, true, nil
}

// verifySignature parses token and checks its signature, issuer and
// audience; the errors are kube-apiserver's.
func (a *Authenticator) verifySignature(token string) (*claims, error) {
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("parse service account token: %w", err)
	}
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	keys := a.all
	if kid != "" {
		keys = a.keys[kid]
	}
	if len(keys) == 0 {
		return nil, errors.New("invalid signature, no keys found")
	}
	var errs []error
	for _, k := range keys {
		c := new(claims)
		if err := tok.Claims(k, c); err != nil {
			errs = append(errs, err)
			continue
		}
		if !a.issuers[c.Issuer] {
			return nil, fmt.Errorf("token issuer %q is invalid", c.Issuer)
		}
		// A token without audiences is a legacy one, for the API server
		// alone.
		auds := []string(c.Audience)
		if len(auds) > 0 && !intersects(auds, a.auds) {
			return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", auds, a.auds)
		}
		return c, nil
	}
	return nil, errors.Join(errs...)
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// leeway is how far exp, nbf and iat may be off, and how long an object
// marked for deletion still backs its tokens (go-jose's and
// kube-apiserver's one minute).
const leeway = jwt.DefaultLeeway

// validate checks c's times and objects now, as kube-apiserver's
// ServiceAccount token validator does, and returns the user.
func (a *Authenticator) validate(ctx context.Context, c *claims) (*apiserverserviceaccount.ServiceAccountInfo, error) {
	now := a.now()
	switch err := c.Claims.ValidateWithLeeway(jwt.Expected{Time: now}, leeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("service account token is issued in the future")
	default:
		return nil, errors.New("service account token claims could not be validated due to unexpected validation error")
	}
	k := &c.Kubernetes
	ns, sa := k.Namespace, k.ServiceAccount
	if ns == "" || sa.Name == "" {
		return nil, errors.New("service account token has no service account claim")
	}
	deletedBefore := now.Add(-leeway)
	o, err := a.read(ctx, "serviceaccounts", ns, sa.Name)
	if err != nil {
		return nil, err
	}
	if o.uid != sa.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", o.uid, sa.UID)
	}
	if o.deletedBefore(deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, sa.Name)
	}
	info := &apiserverserviceaccount.ServiceAccountInfo{Namespace: ns, Name: sa.Name, UID: sa.UID}
	if c.ID != "" {
		info.CredentialID = "JTI=" + c.ID
	}
	if s := k.Secret; s != nil {
		o, err := a.read(ctx, "secrets", ns, s.Name)
		if err != nil {
			return nil, errors.New("service account token has been invalidated")
		}
		if o.uid != s.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", o.uid, s.UID)
		}
		if o.deletedBefore(deletedBefore) {
			return nil, errors.New("service account token has been invalidated")
		}
	}
	if p := k.Pod; p != nil {
		// edgeapi serves no Pods: kube-apiserver's lookup would fail.
		o, err := a.read(ctx, "pods", ns, p.Name)
		if err != nil {
			return nil, errors.New("service account token has been invalidated")
		}
		if o.uid != p.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", o.uid, p.UID)
		}
		if o.deletedBefore(deletedBefore) {
			return nil, errors.New("service account token has been invalidated")
		}
		info.PodName, info.PodUID = p.Name, p.UID
		if n := k.Node; n != nil {
			info.NodeName, info.NodeUID = n.Name, n.UID
		}
	} else if n := k.Node; n != nil {
		o, err := a.read(ctx, "nodes", "", n.Name)
		if err != nil {
			return nil, errors.New("service account token has been invalidated")
		}
		if o.uid != n.UID {
			return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", o.uid, n.UID)
		}
		if o.deletedBefore(deletedBefore) {
			return nil, errors.New("service account token has been invalidated")
		}
		info.NodeName, info.NodeUID = n.Name, n.UID
	}
	return info, nil
}

// object is what validate needs of a stored object.
type object struct {
	uid string
	// deletion is metadata.deletionTimestamp, zero when not set.
	deletion time.Time
}

func (o object) deletedBefore(t time.Time) bool {
	return !o.deletion.IsZero() && o.deletion.Before(t)
}

// deletionKey marks a stored value that may carry a deletionTimestamp;
// values without it (nearly all) are never decoded.
var deletionKey = []byte(`"deletionTimestamp"`)

// read returns the uid and deletion time of the stored object, with the
// store's error (kube-apiserver's getter returns a NotFound) when it is
// missing. The uid is the store's column; the value is decoded only when
// it mentions a deletionTimestamp.
func (a *Authenticator) read(ctx context.Context, resource, namespace, name string) (object, error) {
	obj, err := a.objects.Get(ctx, store.Key{Resource: resource, Namespace: namespace, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return object{}, fmt.Errorf("%s %q not found", resource, name)
	}
	if err != nil {
		return object{}, fmt.Errorf("get %s %s/%s: %w", resource, namespace, name, err)
	}
	o := object{uid: obj.UID}
	if bytes.Contains(obj.Value, deletionKey) {
		var v struct {
			Metadata struct {
				DeletionTimestamp *time.Time `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(obj.Value, &v); err != nil {
			return object{}, fmt.Errorf("decode %s %s/%s: %w", resource, namespace, name, err)
		}
		if v.Metadata.DeletionTimestamp != nil {
			o.deletion = *v.Metadata.DeletionTimestamp
		}
	}
	return o, nil
}
