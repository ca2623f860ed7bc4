package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

// routes wires the echo router: discovery, health, version, and every
// resource request through serveResource.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.routeError
	// The middleware is applied here, once per route, and around the
	// router in chain, rather than with echo's Pre and Use, which wrap
	// every request's handler anew (four closures allocated per request).
	mw := func(h echo.HandlerFunc) echo.HandlerFunc { return s.logRequests(s.boundLargeBodies(h)) }
	e.Any("/api", mw(getOnly(s.serveAPIVersions)))
	e.Any("/apis", mw(getOnly(s.serveAPIGroupList)))
	e.Any("/api/*", mw(s.serveResource))
	e.Any("/apis/*", mw(s.serveResource))
	e.Any("/version", mw(getOnly(s.serveVersion)))
	e.Any("/version/", mw(getOnly(s.serveVersion)))
	e.Any("/openapi/v2", mw(getOnly(s.serveOpenAPIV2)))
	e.Any("/openapi/v3", mw(getOnly(s.serveOpenAPIV3)))
	e.Any("/openapi/v3/*", mw(getOnly(s.serveOpenAPIV3)))
	e.Any("/healthz", mw(s.serveHealth))
	e.Any("/livez", mw(s.serveHealth))
	e.Any("/readyz", mw(s.serveHealth))
	e.Any("/healthz/*", mw(s.serveHealth))
	e.Any("/livez/*", mw(s.serveHealth))
	e.Any("/readyz/*", mw(s.serveHealth))
	for path, h := range s.cfg.Extra {
		e.Any(path, mw(echo.WrapHandler(h)))
	}
	e.RouteNotFound("/*", mw(s.notFound))
	return e
}

// routeChain returns the handler of every request (serveHTTP): metrics and
// authorization before routing, as echo's Pre middleware would run them,
// then e's router, whose handlers carry the rest of the middleware
// (routes), or echo's own for a method no route has (405), which is
// logged as before only at the route's handlers.
func (s *Server) routeChain(e *echo.Echo) echo.HandlerFunc {
	return s.instrumentAndAuthorize(func(c echo.Context) error {
		r := c.Request()
		e.Router().Find(r.Method, echo.GetPath(r), c)
		return c.Handler()(c)
	})
}

// getOnly serves GET with h and answers every other method with the 405
// Status kube-apiserver's GET-only routes give.
func getOnly(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodGet {
			return errMethodNotAllowed()
		}
		return h(c)
	}
}

// routeError answers what echo's router refuses itself (a method a route
// does not serve) with the Status kube-apiserver's go-restful container
// gives, and any other error a handler returns as a Status too.
func (s *Server) routeError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusMethodNotAllowed:
			err = errMethodNotAllowed()
		case http.StatusNotFound:
			_ = s.notFound(c)
			return
		default:
			err = statusError(int32(he.Code), "", fmt.Sprint(he.Message), false)
		}
	}
	_ = s.writeError(c, err)
}

// logRequests logs one line per request at debug level.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if ce := s.log.Check(-1, "request"); ce != nil {
			s.logRequest(c, start)
		}
		return err
	}
}

// logRequest writes logRequests' line. Its arguments take a few hundred
// bytes of stack, which stay out of the frame under a watch (see
// handleWatch).
//
//go:noinline
func (s *Server) logRequest(c echo.Context, start time.Time) {
	req := c.Request()
	s.log.Sugar().Debugw("request", "method", req.Method, "uri", req.RequestURI,
		"status", c.Response().Status, "duration", time.Since(start), "userAgent", req.UserAgent())
}

// wantsAggregated reports whether the client asked for aggregated
// discovery (apidiscovery.k8s.io/v2).
func wantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		if strings.Contains(part, "as=APIGroupDiscoveryList") && strings.Contains(part, "g=apidiscovery.k8s.io") && strings.Contains(part, "v=v2") {
			return true
		}
	}
	return false
}

const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func (s *Server) serveAPIVersions(c echo.Context) error {
	if wantsAggregated(c.Request().Header.Get("Accept")) {
		return s.writeAggregated(c, true)
	}
	return s.writeTyped(c, http.StatusOK, representation{}, apiVersions(s.cfg.ServerAddress))
}

func (s *Server) serveAPIGroupList(c echo.Context) error {
	if wantsAggregated(c.Request().Header.Get("Accept")) {
		return s.writeAggregated(c, false)
	}
	return s.writeTyped(c, http.StatusOK, representation{}, apiGroupList(s.cfg.Registry.Snapshot()))
}

func (s *Server) writeAggregated(c echo.Context, core bool) error {
	b, err := jsonMarshal(aggregatedDiscovery(s.cfg.Registry.Snapshot(), core))
	if err != nil {
		return s.writeError(c, err)
	}
	c.Response().Header().Set("Vary", "Accept")
	return c.Blob(http.StatusOK, aggregatedContentType, b)
}

func (s *Server) serveAPIGroup(c echo.Context, group string) error {
	g := apiGroup(s.cfg.Registry.Snapshot(), group)
	if g == nil {
		return s.notFound(c)
	}
	return s.writeTyped(c, http.StatusOK, representation{}, g)
}

func (s *Server) serveAPIResourceList(c echo.Context, kinds *registry.Snapshot, gv schema.GroupVersion) error {
	l := apiResourceList(kinds, gv)
	if l == nil {
		return s.writeError(c, errNotFoundResource())
	}
	return s.writeTyped(c, http.StatusOK, representation{}, l)
}

// readyCheck is a named condition of /readyz and /healthz.
type readyCheck struct {
	name  string
	ready func() bool
}

// AddReadyCheck adds a condition to /readyz and /healthz (not /livez),
// listed as name: while ready reports false they answer 500 with the
// failing checks, as kube-apiserver's post-start hooks keep its /readyz
// failing until they are done. It must be called before the server
// serves requests.
func (s *Server) AddReadyCheck(name string, ready func() bool) {
	s.readyChecks = append(s.readyChecks, readyCheck{name: name, ready: ready})
}

func (s *Server) serveHealth(c echo.Context) error {
	path := strings.TrimSuffix(c.Request().URL.Path, "/")
	endpoint, check, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	gated := endpoint == "readyz" || endpoint == "healthz"
	failed := false
	var lines strings.Builder
	lines.WriteString("[+]ping ok\n[+]store ok\n")
	for _, rc := range s.readyChecks {
		if !gated || (check != "" && check != rc.name) {
			continue
		}
		if rc.ready() {
			lines.WriteString("[+]" + rc.name + " ok\n")
		} else {
			failed = true
			lines.WriteString("[-]" + rc.name + " failed: reason withheld\n")
		}
	}
	if failed {
		lines.WriteString(endpoint + " check failed\n")
		return c.Blob(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte(lines.String()))
	}
	if _, ok := c.QueryParams()["verbose"]; ok {
		for _, line := range s.healthDetails() {
			lines.WriteString("[+]" + line + "\n")
		}
		lines.WriteString(endpoint + " check passed\n")
		return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(lines.String()))
	}
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
}
