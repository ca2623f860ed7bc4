// Package authn decides who sent a request, with kube-apiserver's rules:
// client certificates, bearer tokens from a token file, anonymous requests
// and impersonation headers.
//
// The package only answers questions; the HTTP layer writes the answers.
// Wiring it into the daemon, outermost first:
//
//	chain, warnings, err := authn.New(authn.Config{
//		ClientCAFile:  flags.clientCAFile,  // --client-ca-file
//		TokenAuthFile: flags.tokenAuthFile, // --token-auth-file
//		Anonymous:     flags.anonymousAuth, // --anonymous-auth, default true
//		Warn:          addWarningHeader,    // 299 Warning header
//	})
//	// log warnings (they hold no token); refuse to start on err
//	h := api.Handler()                       // the REST layer
//	h = authorize(h)                         // RBAC: 403 before 404
//	h = authn.WithImpersonation(h, &authn.Impersonator{Authorizer: rbac}, writeStatus)
//	h = authn.WithAuthentication(h, chain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		writeStatus(w, r, authn.Unauthorized())
//	}))
//
// where writeStatus writes a *apierrors.StatusError with the REST layer's
// content negotiation, and the TLS listener uses tls.RequestClientCert (not
// RequireAndVerifyClientCert) so that a bad certificate is a 401 Status and
// a request without one can use a token. Handlers read the user with
// UserFrom(r.Context()).
package authn

import (
	"errors"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Authenticator recognizes the credentials of one kind (a certificate, a
// token) on a request.
//
// It returns the user and true when it recognizes them, nil and false with a
// nil error when the request carries no credentials of its kind ("no
// opinion"), and an error when it carries credentials of its kind that are
// not valid.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user.Info, bool, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (user.Info, bool, error)

// AuthenticateRequest calls f(r).
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (user.Info, bool, error) {
	return f(r)
}

// Union tries every authenticator in order. The first that recognizes the
// request wins, even if an earlier one returned an error (a client
// certificate from an unknown CA followed by a valid token is the token's
// user). When none recognizes it, the errors are joined: a request with
// invalid credentials fails, and a request without any gets no opinion.
type Union []Authenticator

// AuthenticateRequest implements Authenticator.
func (u Union) AuthenticateRequest(r *http.Request) (user.Info, bool, error) {
	var errs []error
	for _, a := range u {
		info, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return info, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// Chain is the authenticator kube-apiserver builds from its flags: the
// credential authenticators as a Union, system:authenticated added to the
// users they return, and anonymous requests last.
type Chain struct {
	// Authenticators are tried in order; kube-apiserver puts client
	// certificates before bearer tokens.
	Authenticators Union
	// Anonymous, as --anonymous-auth, makes a request that carries no
	// credentials at all system:anonymous in system:unauthenticated. A
	// request whose credentials are invalid is never anonymous.
	Anonymous bool
}

// AuthenticateRequest implements Authenticator. It returns false with a nil
// error only when the request has no credentials and Anonymous is off.
func (c *Chain) AuthenticateRequest(r *http.Request) (user.Info, bool, error) {
	info, ok, err := c.Authenticators.AuthenticateRequest(r)
	if err != nil {
		return nil, false, err
	}
	if ok {
		return withAuthenticatedGroup(info), true, nil
	}
	if !c.Anonymous {
		return nil, false, nil
	}
	return AnonymousUser(), true, nil
}

// AnonymousUser returns the user of a request without credentials:
// system:anonymous in the group system:unauthenticated.
func AnonymousUser() user.Info {
	return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
}

// withAuthenticatedGroup adds system:authenticated to the groups of u, unless
// u is system:anonymous or already has system:authenticated or
// system:unauthenticated, as kube-apiserver's group adder does. It never
// modifies u.
func withAuthenticatedGroup(u user.Info) user.Info {
	if u.GetName() == user.Anonymous {
		return u
	}
	groups := u.GetGroups()
	for _, g := range groups {
		if g == user.AllAuthenticated || g == user.AllUnauthenticated {
			return u
		}
	}
	withGroup := make([]string, 0, len(groups)+1)
	withGroup = append(withGroup, groups...)
	withGroup = append(withGroup, user.AllAuthenticated)
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: withGroup, Extra: u.GetExtra()}
}
