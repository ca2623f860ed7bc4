// Package serviceaccount issues and checks ServiceAccount tokens as
// kube-apiserver does: JWTs signed with a key kept in the data directory,
// carrying kube-apiserver's claims (iss, sub, aud, exp, iat, nbf, jti and
// the private "kubernetes.io" claim naming the ServiceAccount and the
// object the token is bound to), and valid only while that ServiceAccount
// and that object exist with the same uid.
//
// The daemon creates or loads the key with EnsureKey, issues tokens for
// the serviceaccounts/token subresource with an Issuer, and authenticates
// bearer tokens with an Authenticator (an authn.TokenAuthenticator, for
// authn.Config.ExtraTokens):
//
//	key, _, err := serviceaccount.EnsureKey(filepath.Join(dataDir, "pki", serviceaccount.KeyFileName))
//	issuer, err := serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Issuer: iss, Key: key, APIAudiences: auds})
//	tokens, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
//		Issuers: []string{iss}, Keys: []crypto.PublicKey{key.Public()}, APIAudiences: auds, Objects: db})
//
// JSON Web Signatures are go-jose's (github.com/go-jose/go-jose/v4);
// kube-apiserver uses its v2.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// Defaults of kube-apiserver's flags and of TokenRequest.
const (
	// DefaultIssuer is the --service-account-issuer that kind and k3s
	// clusters use.
	DefaultIssuer = "https://kubernetes.default.svc.cluster.local"
	// DefaultExpirationSeconds is a TokenRequest's expirationSeconds when
	// it sets none (kube-apiserver's v1 defaulting): one hour.
	DefaultExpirationSeconds = 60 * 60
	// MinExpirationSeconds and MaxExpirationSeconds bound a
	// TokenRequest's expirationSeconds (kube-apiserver's validation).
	MinExpirationSeconds = 10 * 60
	MaxExpirationSeconds = 1 << 32
)

// ServiceAccount names the ServiceAccount a token is issued for.
type ServiceAccount struct {
	Namespace, Name, UID string
}

// Ref names the object a token is bound to.
type Ref struct {
	Name, UID string
}

// Request is one token to issue.
type Request struct {
	ServiceAccount ServiceAccount
	// Audiences are the token's "aud"; empty means the issuer's
	// APIAudiences, as kube-apiserver defaults a TokenRequest's.
	Audiences []string
	// ExpirationSeconds is the token's lifetime; exp is IssuedAt plus
	// this. Callers validate it (MinExpirationSeconds and
	// MaxExpirationSeconds) and clamp it to MaxExpiration first.
	ExpirationSeconds int64
	// At most one of Secret and Pod is set: the object the token is
	// bound to (in the ServiceAccount's namespace). Node is the bound Node
	// alone, or the node of the bound Pod.
	Secret, Pod, Node *Ref
}

// Issued is what Issue returns.
type Issued struct {
	// Token is the signed JWT.
	Token string
	// ID is its "jti", a random UUID; the user's credential id is
	// "JTI=" + ID.
	ID string
	// IssuedAt and Expiry are its iat and exp (whole seconds).
	IssuedAt, Expiry time.Time
}

// IssuerConfig configures an Issuer.
type IssuerConfig struct {
	// Issuer is the "iss" claim (--service-account-issuer). Required.
	Issuer string
	// Key signs: ECDSA (ES256, ES384, ES512 by curve) or RSA (RS256).
	// Required.
	Key crypto.Signer
	// APIAudiences are the API server's audiences (--api-audiences): the
	// default "aud" of a token. Empty means {Issuer}.
	APIAudiences []string
	// MaxExpiration, when positive, caps a token's lifetime
	// (--service-account-max-token-expiration).
	MaxExpiration time.Duration
}

// Issuer signs ServiceAccount tokens. Safe for concurrent use.
type Issuer struct {
	cfg    IssuerConfig
	signer jose.Signer
	// now and newID are time.Now and uuid.NewString; tests replace them.
	now   func() time.Time
	newID func() string
}

// NewIssuer returns an Issuer for cfg.
func NewIssuer(cfg IssuerConfig) (*Issuer, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("serviceaccount: issuer is required")
	}
	if cfg.Key == nil {
		return nil, errors.New("serviceaccount: signing key is required")
	}
	if len(cfg.APIAudiences) == 0 {
		cfg.APIAudiences = []string{cfg.Issuer}
	}
	alg, err := algorithmFor(cfg.Key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(cfg.Key.Public())
	if err != nil {
		return nil, err
	}
	// The header is kube-apiserver's: alg and kid, no typ.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: &jose.JSONWebKey{Key: cfg.Key, KeyID: kid, Algorithm: string(alg), Use: "sig"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("create token signer: %w", err)
	}
	return &Issuer{cfg: cfg, signer: signer, now: time.Now, newID: uuid.NewString}, nil
}

// algorithmFor is kube-apiserver's choice of signature algorithm for a
// key: RS256 for RSA, ES256/384/512 by the ECDSA curve.
func algorithmFor(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", checkKey(pub)
}

// Issuer returns the "iss" of the tokens it signs.
func (i *Issuer) Issuer() string { return i.cfg.Issuer }

// APIAudiences returns the default audiences of a token.
func (i *Issuer) APIAudiences() []string { return i.cfg.APIAudiences }

// MaxExpirationSeconds returns the cap on a token's lifetime in seconds,
// 0 when there is none.
func (i *Issuer) MaxExpirationSeconds() int64 { return int64(i.cfg.MaxExpiration / time.Second) }

// claims is a token's payload as read: the registered claims and
// kube-apiserver's private claim.
type claims struct {
	jwt.Claims
	Kubernetes privateClaims `json:"kubernetes.io"`
}

// issuedClaims is a token's payload as written. "aud" is always an array,
// as kube-apiserver writes it (go-jose v4's Audience writes a single
// audience as a string).
type issuedClaims struct {
	Issuer     string           `json:"iss"`
	Subject    string           `json:"sub"`
	Audience   []string         `json:"aud"`
	Expiry     *jwt.NumericDate `json:"exp"`
	NotBefore  *jwt.NumericDate `json:"nbf"`
	IssuedAt   *jwt.NumericDate `json:"iat"`
	ID         string           `json:"jti"`
	Kubernetes privateClaims    `json:"kubernetes.io"`
}

// privateClaims is the "kubernetes.io" claim.
type privateClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount ref    `json:"serviceaccount"`
	Pod            *ref   `json:"pod,omitempty"`
	Secret         *ref   `json:"secret,omitempty"`
	Node           *ref   `json:"node,omitempty"`
	// WarnAfter is kube-apiserver's marker of extended pod tokens; never
	// issued here, accepted when present.
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

func refOf(r *Ref) *ref {
	if r == nil {
		return nil
	}
	return &ref{Name: r.Name, UID: r.UID}
}

// Issue signs a token for r at the current time.
func (i *Issuer) Issue(r Request) (Issued, error) {
	return i.IssueAt(r, i.now())
}

// IssueAt signs a token for r issued at now (iat and nbf; exp is now plus
// r.ExpirationSeconds).
func (i *Issuer) IssueAt(r Request, now time.Time) (Issued, error) {
	if r.Secret != nil && r.Pod != nil {
		return Issued{}, errors.New("serviceaccount: a token can only be bound to one object")
	}
	if r.ExpirationSeconds <= 0 {
		return Issued{}, fmt.Errorf("serviceaccount: expiration %d seconds is not positive", r.ExpirationSeconds)
	}
	auds := r.Audiences
	if len(auds) == 0 {
		auds = i.cfg.APIAudiences
	}
	now = now.Truncate(time.Second)
	exp := now.Add(time.Duration(r.ExpirationSeconds) * time.Second)
	sa := r.ServiceAccount
	c := issuedClaims{
		Issuer:    i.cfg.Issuer,
		Subject:   apiserverserviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Audience:  auds,
		Expiry:    jwt.NewNumericDate(exp),
		NotBefore: jwt.NewNumericDate(now),
		IssuedAt:  jwt.NewNumericDate(now),
		ID:        i.newID(),
		Kubernetes: privateClaims{
			Namespace:      sa.Namespace,
			ServiceAccount: ref{Name: sa.Name, UID: sa.UID},
			Pod:            refOf(r.Pod),
			Secret:         refOf(r.Secret),
			Node:           refOf(r.Node),
		},
	}
	tok, err := jwt.Signed(i.signer).Claims(c).Serialize()
	if err != nil {
		return Issued{}, fmt.Errorf("sign token: %w", err)
	}
	return Issued{Token: tok, ID: c.ID, IssuedAt: now, Expiry: exp}, nil
}
