package authn

import (
	"errors"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// ErrInvalidBearerToken is returned for a bearer token that no token
// authenticator recognizes.
var ErrInvalidBearerToken = errors.New("authn: invalid bearer token")

// BearerToken authenticates a request by the token in its Authorization
// header, read the way kube-apiserver reads it:
//   - the header value is trimmed of surrounding spaces; an empty header has
//     no opinion;
//   - the scheme is the text before the first space, compared without case
//     ("bearer", "BEARER"); another scheme ("Basic ...") or no space at all
//     has no opinion, so such a request can still be anonymous;
//   - the token is the text between the first and the second space, so
//     "Bearer a b" presents "a", and "Bearer  a" (two spaces) presents an
//     empty token, which has no opinion;
//   - a presented token that Tokens does not recognize is
//     ErrInvalidBearerToken, which is a 401 and never anonymous.
type BearerToken struct {
	Tokens TokenAuthenticator
	// Warn, if set, is called with kube-apiserver's warning text for a
	// request whose token is ignored because of the extra space; the HTTP
	// layer sends it as a Warning header (299).
	Warn func(r *http.Request, text string)
}

// ExtraSpaceWarning is kube-apiserver's warning for "Bearer  <token>".
const ExtraSpaceWarning = "the provided Authorization header contains extra space before the bearer token, and is ignored"

// AuthenticateRequest implements Authenticator.
func (b *BearerToken) AuthenticateRequest(r *http.Request) (user.Info, bool, error) {
	token, extraSpace, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		if extraSpace && b.Warn != nil {
			b.Warn(r, ExtraSpaceWarning)
		}
		return nil, false, nil
	}
	u, ok, err := b.Tokens.AuthenticateToken(r.Context(), token)
	if err == nil && !ok {
		err = ErrInvalidBearerToken
	}
	if err != nil {
		return nil, false, err
	}
	return u, true, nil
}

// bearerToken returns the token of an Authorization header value and whether
// it presents one (see BearerToken); extraSpace reports a bearer header
// whose token is empty because a second space follows the scheme.
func bearerToken(header string) (token string, extraSpace, ok bool) {
	header = strings.TrimSpace(header)
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false, false
	}
	token, _, more := strings.Cut(rest, " ")
	if token == "" {
		return "", more, false
	}
	return token, false, true
}
