package main

import (
	"crypto"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/auth/serviceaccount"
)

// serviceAccountTokens are the issuer of the serviceaccounts/token
// subresource and the authenticator of the tokens it signs.
type serviceAccountTokens struct {
	issuer *serviceaccount.Issuer
	// auth authenticates ServiceAccount bearer tokens; it belongs in
	// authn.Config.ExtraTokens.
	auth *serviceaccount.Authenticator
	// discovery serves the issuer discovery documents
	// (/.well-known/openid-configuration, /openid/v1/jwks); nil when the
	// issuer is not an https URL, as kube-apiserver then serves none.
	discovery map[string]http.Handler
}

// setupServiceAccountTokens loads the signing key (--service-account-
// signing-key-file, or <data-dir>/pki/sa.key, generated on first start)
// and the extra verification keys, and builds the issuer and the
// authenticator over db, and the issuer discovery documents, whose
// jwks_uri is on addr (host:port).
func setupServiceAccountTokens(cfg serveConfig, dataDir, addr string, db serviceaccount.ObjectReader, log *zap.Logger) (*serviceAccountTokens, error) {
	var key crypto.Signer
	var err error
	if cfg.ServiceAccountSigningKeyFile != "" {
		if key, err = serviceaccount.LoadPrivateKey(cfg.ServiceAccountSigningKeyFile); err != nil {
			return nil, err
		}
	} else {
		path := filepath.Join(dataDir, pkiDirName, serviceaccount.KeyFileName)
		var created bool
		if key, created, err = serviceaccount.EnsureKey(path); err != nil {
			return nil, err
		}
		if created {
			log.Info("wrote service account signing key", zap.String("path", path))
		}
	}
	keys := []crypto.PublicKey{key.Public()}
	for _, f := range cfg.ServiceAccountKeyFile.values {
		more, err := serviceaccount.LoadPublicKeys(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
	}
	issuers := cfg.ServiceAccountIssuer.values
	auds := cfg.APIAudiences.values
	if len(auds) == 0 {
		auds = issuers
	}
	t := &serviceAccountTokens{}
	if t.issuer, err = serviceaccount.NewIssuer(serviceaccount.IssuerConfig{
		Issuer:        issuers[0],
		Key:           key,
		APIAudiences:  auds,
		MaxExpiration: time.Duration(cfg.ServiceAccountMaxTokenExpiration),
	}); err != nil {
		return nil, fmt.Errorf("set up service account tokens: %w", err)
	}
	if t.auth, err = serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers:      issuers,
		Keys:         keys,
		APIAudiences: auds,
		Objects:      db,
	}); err != nil {
		return nil, fmt.Errorf("set up service account tokens: %w", err)
	}
	jwksURI := (&url.URL{Scheme: "https", Host: addr, Path: serviceaccount.JWKSPath}).String()
	if t.discovery, err = serviceaccount.DiscoveryHandlers(issuers[0], jwksURI, keys); err != nil {
		log.Info("service account issuer discovery not served", zap.Error(err))
		t.discovery = nil
	}
	return t, nil
}
