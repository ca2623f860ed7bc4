package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/auth/authz"
	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/httpapi"
	"github.com/edgeapi/edgeapi/pki"
)

// daemonAuth is who may do what: the authenticator of the TLS listener,
// the authorizer of every request, and the RBAC authorizer behind it
// (nil unless --authorization-mode has RBAC).
type daemonAuth struct {
	authenticator authn.Authenticator
	// peer authenticates the requests of the --unix-socket listener by
	// their peer's credentials.
	peer       authn.Authenticator
	authorizer authorizer.Authorizer
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
// default), bearer tokens of --token-auth-file, then ServiceAccount tokens
// (saTokens), anonymous requests unless --anonymous-auth=false, and the
// authorizer of --authorization-mode.
func setupAuth(cfg serveConfig, st *servingTLS, saTokens authn.TokenAuthenticator, log *zap.Logger) (*daemonAuth, error) {
	caFile := cfg.ClientCAFile
	if caFile == "" {
		caFile = st.bundle.Path(pki.CACertFile)
	}
	var extraTokens []authn.TokenAuthenticator
	if saTokens != nil {
		extraTokens = append(extraTokens, saTokens)
	}
	chain, warnings, err := authn.New(authn.Config{
		ClientCAFile:  caFile,
		TokenAuthFile: cfg.TokenAuthFile,
		Anonymous:     cfg.AnonymousAuth,
		ExtraTokens:   extraTokens,
	})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("token-auth-file", zap.String("warning", w))
	}
	a := &daemonAuth{authenticator: chain}
	if a.peer, err = peerAuthenticator(cfg, log); err != nil {
		return nil, err
	}
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

// connContext marks the connections of the insecure listener (those whose
// local address is its address) and those of the --unix-socket listener
// (every Unix connection: the server serves no other Unix listener) with
// their peer's credentials. TLS connections have their own. Connections
// of finished watches come back through the handoff listener wrapped,
// with the same local address, and are marked again the same way.
func (d *daemon) connContext(ctx context.Context, c net.Conn) context.Context {
	if c.LocalAddr().Network() == "unix" {
		return unixConnContext(ctx, c)
	}
	if d.insecureLn != nil && c.LocalAddr().String() == d.insecureLn.Addr().String() && c.LocalAddr().Network() == d.insecureLn.Addr().Network() {
		if _, tls := c.(interface{ ConnectionState() }); !tls {
			return context.WithValue(ctx, insecureConnKey{}, true)
		}
	}
	return ctx
}

// authenticated returns h behind authentication and impersonation: a
// request over TLS is authenticated by its certificate or token, one on
// the Unix socket by its peer's credentials, one on the insecure listener
// is unsecuredUser, and any other gets 401.
//
// With --audit-log-path, the audit filter is outermost, so that it sees
// the 401s too, and two small filters tell it the authenticated user
// (right inside authentication) and the impersonated one (right inside
// impersonation). Without it there is no audit filter at all.
//
// Outside authentication is the request deadline of --request-timeout
// (withRequestDeadline). Right inside impersonation, as in kube-apiserver, is the max-in-flight
// filter of --max-requests-inflight and --max-mutating-requests-inflight,
// so that it counts the impersonated user.
func (d *daemon) authenticated(h http.Handler) http.Handler {
	writeError := d.api.WriteError
	// As in kube-apiserver, max-in-flight sees the impersonated user.
	h = withMaxInFlight(h, d.cfg.MaxRequestsInflight, d.cfg.MaxMutatingRequestsInflight)
	if l, ok := h.(*inFlightLimit); ok {
		l.dropped = d.api.RecordDroppedRequest
	}
	unauthorized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, authn.Unauthorized())
	})
	if d.audit != nil {
		h = audit.WithImpersonatedUser(h, authn.UserFrom)
	}
	inner := authn.WithImpersonation(h, d.auth.impersonator, writeError)
	if d.audit != nil {
		inner = audit.WithUser(inner, authn.UserFrom)
	}
	secure := authn.WithAuthentication(inner, d.auth.authenticator, unauthorized)
	peer := authn.WithAuthentication(inner, d.auth.peer, unauthorized)
	insecure := authn.WithAuthentication(inner, authn.AuthenticatorFunc(func(*http.Request) (user.Info, bool, error) {
		return unsecuredUser, true, nil
	}), unauthorized)
	var chain http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.TLS != nil:
			secure.ServeHTTP(w, r)
		case authn.IsPeerConn(r.Context()):
			peer.ServeHTTP(w, r)
		case r.Context().Value(insecureConnKey{}) != nil:
			insecure.ServeHTTP(w, r)
		default:
			unauthorized.ServeHTTP(w, r)
		}
	})
	// As in kube-apiserver, the request deadline is outside
	// authentication and inside the audit filter.
	chain = withRequestDeadline(chain, time.Duration(d.cfg.RequestTimeout), writeError)
	if d.audit != nil {
		chain = d.audit.WithAudit(chain)
	}
	return chain
}

// setupAudit opens the audit log of --audit-log-path; nil without it.
func setupAudit(cfg serveConfig, log *zap.Logger) (*audit.Logger, error) {
	if cfg.AuditLogPath == "" {
		return nil, nil
	}
	l, err := audit.New(audit.Config{
		Path:       cfg.AuditLogPath,
		MaxSize:    int64(cfg.AuditLogMaxSize) << 20,
		MaxBackups: cfg.AuditLogMaxBackup,
		MaxAge:     time.Duration(cfg.AuditLogMaxAge) * 24 * time.Hour,
		Attributes: httpapi.RequestAttributes,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("writing the audit log", zap.String("path", cfg.AuditLogPath))
	return l, nil
}

// admitWrite returns the RBAC escalation check for the API's writes, or
// nil without RBAC.
func (a *daemonAuth) admitWrite() func(ctx context.Context, u user.Info, obj, old runtime.Object) error {
	if a.rbac == nil {
		return nil
	}
	return a.rbac.AdmitWrite
}
