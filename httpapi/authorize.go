package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/auth/rbac"
)

// Authorization, as kube-apiserver's authorization filter: every request
// is decided on what its URL names, before routing and before anything is
// read, so a request that is not allowed gets 403 whether or not the
// object exists.

// authorizeRequests is the echo pre-routing middleware that asks
// Config.Authorizer about every request. The user comes from the request's
// context (authn.UserFrom), put there by the authentication in front of
// Handler; a request without one gets 401.
func (s *Server) authorizeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error { return s.authorize(c, next) }
}

// authorize serves c with next if Config.Authorizer allows it (see
// authorizeRequests). The decision is made in a function of its own, whose
// frame is gone by the time next runs (see handleWatch).
func (s *Server) authorize(c echo.Context, next echo.HandlerFunc) error {
	if s.cfg.Authorizer == nil {
		return next(c)
	}
	if ok, err := s.authorized(c); !ok {
		return err
	}
	return next(c)
}

// authorized reports whether Config.Authorizer allows c's request; when it
// does not, the refusal is written and err is what writing it returned.
//
//go:noinline
func (s *Server) authorized(c echo.Context) (bool, error) {
	req := c.Request()
	u, ok := authn.UserFrom(req.Context())
	if !ok {
		return false, s.writeError(c, authn.Unauthorized())
	}
	attrs := requestAttributes(req, u)
	var d authorizer.Decision
	var reason string
	var err error
	// The reason of an allowed request is wanted only by the audit
	// log, and costs more than the decision.
	if q, ok := s.cfg.Authorizer.(quietAuthorizer); ok && !audit.Audited(req.Context()) {
		d, reason, err = q.AuthorizeQuiet(req.Context(), &attrs)
	} else {
		d, reason, err = s.cfg.Authorizer.Authorize(req.Context(), &attrs)
	}
	audit.SetAuthorizationDecision(req.Context(), d == authorizer.DecisionAllow, reason)
	if d == authorizer.DecisionAllow {
		return true, nil
	}
	if err != nil {
		// kube-apiserver answers an authorizer error with a 500; a
		// 403 tells the client as much without blaming the server.
		s.log.Warn("authorize request", zap.String("user", u.GetName()), zap.String("path", req.URL.Path), zap.Error(err))
	}
	return false, s.writeError(c, rbac.Forbidden(&attrs, reason))
}

// RequestAttributes describes req as the authorizer sees it, without a
// user: the verb, and for a resource request the object it names. The
// audit log takes its verb and objectRef from it.
func RequestAttributes(req *http.Request) authorizer.AttributesRecord {
	return requestAttributes(req, nil)
}

// quietAuthorizer is an authorizer that can skip building the reason of an
// allowed decision, which a request's authorization discards unless the
// request is audited (authz.QuietAuthorizer).
type quietAuthorizer interface {
	AuthorizeQuiet(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

// requestAttributes describes req as kube-apiserver's RequestInfoFactory
// does for its authorizer. A path below /api/VERSION/ or
// /apis/GROUP/VERSION/ is a resource request: its verb comes from the
// method (GET with a name is "get", without one "list" or "watch"; DELETE
// without a name is "deletecollection"), or from a /watch/ segment; the
// namespace and name from the path; a list or watch whose field selector
// names one object (metadata.name=NAME) carries that name. Any other path
// is a non-resource request, with the lowercased method as its verb.
func requestAttributes(req *http.Request, u user.Info) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{User: u, Verb: lowerMethod(req.Method), Path: req.URL.Path}
	var buf [8]string
	parts := splitPath(req.URL.Path, buf[:0])
	if len(parts) < 3 {
		return a
	}
	switch parts[0] {
	case "api":
		parts = parts[1:]
	case "apis":
		parts = parts[1:]
		if len(parts) < 3 {
			return a
		}
		a.APIGroup, parts = parts[0], parts[1:]
	default:
		return a
	}
	a.ResourceRequest = true
	a.APIVersion, parts = parts[0], parts[1:]
	if parts[0] == "watch" {
		if len(parts) < 2 {
			// kube-apiserver fails such a request with a 500 before
			// authorizing it; here it is a non-resource request, and 404s
			// later if allowed.
			return authorizer.AttributesRecord{User: u, Verb: lowerMethod(req.Method), Path: req.URL.Path}
		}
		a.Verb, parts = "watch", parts[1:]
	} else {
		switch req.Method {
		case http.MethodPost:
			a.Verb = "create"
		case http.MethodGet, http.MethodHead:
			a.Verb = "get"
		case http.MethodPut:
			a.Verb = "update"
		case http.MethodPatch:
			a.Verb = "patch"
		case http.MethodDelete:
			a.Verb = "delete"
		default:
			a.Verb = ""
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		a.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	a.Resource = parts[0]
	if len(parts) >= 2 {
		a.Name = parts[1]
	}
	if len(parts) >= 3 {
		a.Subresource = parts[2]
	}
	if a.Name == "" && a.Verb == "get" {
		q := req.URL.Query()
		a.Verb = "list"
		if watchParam(q) {
			a.Verb = "watch"
		}
		if fs := q.Get("fieldSelector"); fs != "" {
			if sel, err := fields.ParseSelector(fs); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(path.IsValidPathSegmentName(name)) == 0 {
					a.Name = name
				}
			}
		}
	}
	if a.Name == "" && a.Verb == "delete" {
		a.Verb = "deletecollection"
	}
	return a
}

// admitWrite asks Config.AdmitWrite about a create (old nil) or update of
// obj made by a user's request.
func (s *Server) admitWrite(ctx context.Context, obj, old runtime.Object) error {
	if s.cfg.AdmitWrite == nil {
		return nil
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil
	}
	return s.cfg.AdmitWrite(ctx, u, obj, old)
}

// splitPath is strings.Split(strings.Trim(p, "/"), "/") appended to parts,
// which a caller gives room on its stack.
func splitPath(p string, parts []string) []string {
	p = strings.Trim(p, "/")
	for {
		seg, rest, found := strings.Cut(p, "/")
		parts = append(parts, seg)
		if !found {
			return parts
		}
		p = rest
	}
}

// lowerMethod is strings.ToLower(method), without an allocation for the
// methods clients send.
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	}
	return strings.ToLower(method)
}

// WriteError writes err as a metav1.Status in the representation req asks
// for, as the API's own handlers do. It is for the handlers in front of
// the API (authentication, impersonation), so that their 401 and 403 read
// like the API's.
func (s *Server) WriteError(w http.ResponseWriter, req *http.Request, err error) {
	_ = s.writeError(s.echo.NewContext(req, w), err)
}
