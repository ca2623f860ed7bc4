package main

import (
	"context"
	"net"
	"net/http"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/auth/authz"
	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/pki"
)

// daemonAuth is who may do what: the authenticator of the TLS listener,
// the authorizer of every request, and the RBAC authorizer behind it
// (nil unless --authorization-mode has RBAC).
type daemonAuth struct {
	authenticator authn.Authenticator
	authorizer    authorizer.Authorizer
	// ruleResolver lists a user's rules for SelfSubjectRulesReview.
	ruleResolver authorizer.RuleResolver
	rbac         *rbac.Authorizer
	impersonator *authn.Impersonator
}

// unsecuredUser is who requests on the --insecure-listen listener are, as
// on kube-apiserver's old insecure port: unauthenticated, and in
// system:masters.
var unsecuredUser = &user.DefaultInfo{Name: "system:unsecured", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}

// setupAuth builds authentication and authorization from cfg: client
// certificates verified against --client-ca-file (the generated CA by
// default), bearer tokens of --token-auth-file, anonymous requests unless
// --anonymous-auth=false, and the authorizer of --authorization-mode.
func setupAuth(cfg serveConfig, st *servingTLS, log *zap.Logger) (*daemonAuth, error) {
	caFile := cfg.ClientCAFile
	if caFile == "" {
		caFile = st.bundle.Path(pki.CACertFile)
	}
	chain, warnings, err := authn.New(authn.Config{
		ClientCAFile:  caFile,
		TokenAuthFile: cfg.TokenAuthFile,
		Anonymous:     cfg.AnonymousAuth,
	})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("token-auth-file", zap.String("warning", w))
	}
	a := &daemonAuth{authenticator: chain}
	if cfg.hasAuthorizationMode(modeRBAC) {
		a.rbac = rbac.New()
	}
	var rbacAuthz authorizer.Authorizer
	var rbacRules authz.PolicyRules
	if a.rbac != nil {
		rbacAuthz, rbacRules = a.rbac, a.rbac
	}
	if a.authorizer, err = authz.New(cfg.authorizationModes(), rbacAuthz); err != nil {
		return nil, err
	}
	if a.ruleResolver, err = authz.NewRuleResolver(cfg.authorizationModes(), rbacRules); err != nil {
		return nil, err
	}
	a.impersonator = &authn.Impersonator{Authorizer: a.authorizer}
	return a, nil
}

// insecureConnKey marks, in a connection's context, a connection accepted
// on the --insecure-listen listener (or handed back to the server after a
// watch on one).
type insecureConnKey struct{}

// connContext marks the connections of the insecure listener: those whose
// local address is its address. TLS connections have their own.
func (d *daemon) connContext(ctx context.Context, c net.Conn) context.Context {
	if d.insecureLn != nil && c.LocalAddr().String() == d.insecureLn.Addr().String() && c.LocalAddr().Network() == d.insecureLn.Addr().Network() {
		if _, tls := c.(interface{ ConnectionState() }); !tls {
			return context.WithValue(ctx, insecureConnKey{}, true)
		}
	}
	return ctx
}

// authenticated returns h behind authentication and impersonation: a
// request over TLS is authenticated by its certificate or token, one on
// the insecure listener is unsecuredUser, and any other gets 401.
func (d *daemon) authenticated(h http.Handler) http.Handler {
	writeError := d.api.WriteError
	unauthorized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, authn.Unauthorized())
	})
	inner := authn.WithImpersonation(h, d.auth.impersonator, writeError)
	secure := authn.WithAuthentication(inner, d.auth.authenticator, unauthorized)
	insecure := authn.WithAuthentication(inner, authn.AuthenticatorFunc(func(*http.Request) (user.Info, bool, error) {
		return unsecuredUser, true, nil
	}), unauthorized)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.TLS != nil:
			secure.ServeHTTP(w, r)
		case r.Context().Value(insecureConnKey{}) != nil:
			insecure.ServeHTTP(w, r)
		default:
			unauthorized.ServeHTTP(w, r)
		}
	})
}

// admitWrite returns the RBAC escalation check for the API's writes, or
// nil without RBAC.
func (a *daemonAuth) admitWrite() func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
	if a.rbac == nil {
		return nil
	}
	return a.rbac.AdmitWrite
}
