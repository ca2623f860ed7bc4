package serviceaccount

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/go-jose/go-jose/v4"
)

// The paths of kube-apiserver's ServiceAccount issuer discovery, which
// lets a relying party outside the cluster verify the tokens.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
	// discoveryMaxAge is the documents' Cache-Control max-age, in seconds
	// (kube-apiserver's for static keys).
	discoveryMaxAge = 3600
)

// openIDMetadata is the OpenID provider metadata kube-apiserver serves.
type openIDMetadata struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// DiscoveryDocuments returns the OpenID configuration and the JSON Web Key
// Set kube-apiserver serves for issuer and keys: the keys with their key
// ids, "use":"sig" and their algorithms. Like kube-apiserver it refuses an
// issuer that is not an https URL without query or fragment (it then
// serves no discovery), and a jwksURI that is not https.
func DiscoveryDocuments(issuer, jwksURI string, keys []crypto.PublicKey) (config, keyset []byte, err error) {
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("issuer discovery: %w", err)
	}
	if iss.Scheme != "https" || iss.RawQuery != "" || iss.Fragment != "" {
		return nil, nil, fmt.Errorf("issuer discovery: issuer URL %q must be https, without query or fragment", issuer)
	}
	if u, err := url.Parse(jwksURI); err != nil || u.Scheme != "https" {
		return nil, nil, fmt.Errorf("issuer discovery: jwks URI %q must be https", jwksURI)
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("issuer discovery: no keys")
	}
	var set jose.JSONWebKeySet
	algs := map[string]bool{}
	for _, k := range keys {
		alg, err := algorithmFor(k)
		if err != nil {
			return nil, nil, err
		}
		kid, err := KeyID(k)
		if err != nil {
			return nil, nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(alg), Use: "sig"})
		algs[string(alg)] = true
	}
	md := openIDMetadata{
		Issuer:        issuer,
		JWKSURI:       jwksURI,
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
	}
	for a := range algs {
		md.SigningAlgs = append(md.SigningAlgs, a)
	}
	sort.Strings(md.SigningAlgs)
	if config, err = json.Marshal(md); err != nil {
		return nil, nil, fmt.Errorf("issuer discovery: %w", err)
	}
	if keyset, err = json.Marshal(set); err != nil {
		return nil, nil, fmt.Errorf("issuer discovery: %w", err)
	}
	return config, keyset, nil
}

// DiscoveryHandlers returns handlers for OpenIDConfigPath and JWKSPath
// serving the DiscoveryDocuments as kube-apiserver does: GET only, with
// "Cache-Control: public, max-age=3600", the keyset as
// application/jwk-set+json.
func DiscoveryHandlers(issuer, jwksURI string, keys []crypto.PublicKey) (map[string]http.Handler, error) {
	config, keyset, err := DiscoveryDocuments(issuer, jwksURI, keys)
	if err != nil {
		return nil, err
	}
	serve := func(body []byte, contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", discoveryMaxAge))
			_, _ = w.Write(body)
		})
	}
	return map[string]http.Handler{
		OpenIDConfigPath: serve(config, "application/json"),
		JWKSPath:         serve(keyset, "application/jwk-set+json"),
	}, nil
}
