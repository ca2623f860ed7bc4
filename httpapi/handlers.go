package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

// request is one parsed resource request.
type request struct {
	c    echo.Context
	ri   requestInfo
	kind *registry.Kind
	rep  representation
	// kinds is the registry snapshot the request started with: it sees
	// the same kinds to its end, whatever CRDs change meanwhile.
	kinds *registry.Snapshot
}

// gr is the request's group/resource, for error messages.
func (r *request) gr() schema.GroupResource {
	return schema.GroupResource{Group: r.kind.GVK.Group, Resource: r.kind.Resource}
}

// serveResource handles every request below /api/ and /apis/: resolve
// checks it, and its verb's handler serves it. The checks are a function
// of their own so that their frame (kilobytes: every refusal builds its
// Status in it) is not under a watch's frames for as long as it runs (see
// handleWatch).
func (s *Server) serveResource(c echo.Context) error {
	r, err := s.resolve(c)
	if r == nil {
		return err
	}
	return s.dispatch(r)
}

// resolve parses and checks a resource request and returns it; a request
// it answered itself (discovery, or a refusal) gives a nil request and
// the answer's error.
//
//go:noinline
func (s *Server) resolve(c echo.Context) (*request, error) {
	req := c.Request()
	if req.Method == http.MethodHead {
		// kube-apiserver's resource routes are GET-only (go-restful):
		// HEAD is 405, and a HEAD on a watch must not stream.
		return nil, s.writeError(c, errMethodNotAllowed())
	}
	ri, ok := parseRequestInfo(req.Method, req.URL.Path, req.URL.RawQuery != "" && watchParam(req.URL.Query()))
	if !ok {
		trimmed := strings.Trim(req.URL.Path, "/")
		switch {
		case req.Method != http.MethodGet:
		case trimmed == "api":
			return nil, s.serveAPIVersions(c)
		case trimmed == "apis":
			return nil, s.serveAPIGroupList(c)
		}
		if g, found := strings.CutPrefix(trimmed, "apis/"); found && !strings.Contains(g, "/") && req.Method == http.MethodGet {
			return nil, s.serveAPIGroup(c, g)
		}
		return nil, s.notFound(c)
	}
	gv := schema.GroupVersion{Group: ri.Group, Version: ri.Version}
	kinds := s.cfg.Registry.Snapshot()
	if ri.Prefix == "apis" && !kinds.HasGroup(ri.Group) {
		return nil, s.notFound(c)
	}
	if ri.Parts == 0 {
		if req.Method != http.MethodGet {
			return nil, s.writeError(c, errMethodNotAllowed())
		}
		return nil, s.serveAPIResourceList(c, kinds, gv)
	}
	k := kinds.Lookup(gv.WithResource(ri.Resource))
	if k == nil {
		return nil, s.writeError(c, errNotFoundResource())
	}
	switch ri.Subresource {
	case "":
	case "status":
		if !k.StatusSubresource {
			return nil, s.writeError(c, errNotFoundResource())
		}
	case "scale":
		if k.Scale == nil {
			return nil, s.writeError(c, errNotFoundResource())
		}
	case "token":
		if !k.TokenSubresource || s.cfg.Tokens == nil {
			return nil, s.writeError(c, errNotFoundResource())
		}
	case "finalize":
		if !k.FinalizeSubresource {
			return nil, s.writeError(c, errNotFoundResource())
		}
		if ri.Verb != "update" {
			return nil, s.writeError(c, errMethodNotAllowed())
		}
	default:
		return nil, s.writeError(c, errNotFoundResource())
	}
	if !routed(k, ri) {
		return nil, s.writeError(c, errNotFoundResource())
	}
	if !k.Namespaced && ri.Resource != "namespaces" {
		if ri.Namespace != "" {
			return nil, s.writeError(c, errNotFoundResource())
		}
	}
	if err := checkScope(k, ri); err != nil {
		return nil, s.writeError(c, err)
	}
	if k.DeprecationWarning != "" {
		addWarnings(c, []string{k.DeprecationWarning})
	}
	if k.Unstructured {
		// kube-apiserver writes a custom resource's errors with its
		// serializers, which have no Protobuf: a Status asked for only in
		// Protobuf comes back as JSON (responsewriters.ErrorNegotiated
		// falls back to raw JSON).
		c.Set(ctxStatusNoProtobuf, true)
	}
	rep, ok := negotiateOutputFor(req.Header.Get("Accept"), k.Unstructured)
	if !ok {
		if k.Unstructured {
			return nil, s.writeError(c, errNotAcceptableCR())
		}
		return nil, s.writeError(c, errNotAcceptable())
	}
	r := &request{c: c, ri: ri, kind: k, rep: rep, kinds: kinds}
	if k.Resource == "namespaces" {
		// A Namespace is named by its path, not namespaced by it.
		r.ri.Namespace = ""
	}
	if ri.Subresource == "token" {
		return r, nil
	}
	if ri.Subresource != "" && ri.Verb != "get" && ri.Verb != "update" && ri.Verb != "patch" {
		return nil, s.writeError(c, errMethodNotAllowed())
	}
	if !k.HasVerb(ri.Verb) {
		return nil, s.writeError(c, errMethodNotAllowed())
	}
	if ri.Subresource == "scale" {
		return r, nil
	}
	switch ri.Verb {
	case "get", "list", "delete", "deletecollection":
	case "watch":
		if rep.enc == encYAML {
			return nil, s.writeError(c, errNotAcceptableStream())
		}
	case "create":
		if ri.Name != "" {
			return nil, s.writeError(c, errMethodNotAllowed())
		}
	case "update", "patch":
		if ri.Name == "" {
			return nil, s.writeError(c, errMethodNotAllowed())
		}
	default:
		return nil, s.writeError(c, errMethodNotAllowed())
	}
	return r, nil
}

// dispatch serves a resolved request with its verb's handler.
func (s *Server) dispatch(r *request) error {
	switch {
	case r.ri.Subresource == "token":
		return s.handleToken(r)
	case r.ri.Subresource == "scale":
		return s.handleScale(r)
	}
	switch r.ri.Verb {
	case "get":
		return s.handleGet(r)
	case "list":
		return s.handleList(r)
	case "watch":
		return s.handleWatch(r)
	case "create":
		return s.handleCreate(r)
	case "update":
		return s.handleUpdate(r)
	case "patch":
		return s.handlePatch(r)
	case "delete":
		return s.handleDelete(r)
	}
	return s.handleDeleteCollection(r) // the one verb resolve lets through that is left
}

// routed reports whether kube-apiserver has a route for ri's path (the
// method aside) for kind k. Its routes come from the kind's verbs: an
// object's path exists with get, update, patch or delete; a namespaced
// kind's path outside /namespaces/ with list or watch; a /watch/ path
// with watch; a collection's path with list, create or deletecollection.
// A path without a route is 404, a route without the method 405: a
// review (create only) answers GET on its collection with 405, and any
// request for a named object with 404.
func routed(k *registry.Kind, ri requestInfo) bool {
	switch {
	case ri.WatchPath:
		return k.HasVerb("watch")
	case ri.Name != "":
		return k.HasVerb("get") || k.HasVerb("update") || k.HasVerb("patch") || k.HasVerb("delete")
	case k.Namespaced && !ri.NamespacePath:
		return k.HasVerb("list") || k.HasVerb("watch")
	}
	return k.HasVerb("list") || k.HasVerb("create") || k.HasVerb("deletecollection")
}

// checkScope refuses what the path of a namespaced kind does not allow, as
// kube-apiserver's routes and storage keys do: below /namespaces/ the
// namespace must not be empty ("//" would otherwise mean every namespace,
// and a deletecollection there would empty them all); outside it only list
// and watch of the whole collection are served; and an object name must be
// a valid path segment.
func checkScope(k *registry.Kind, ri requestInfo) error {
	if k.Namespaced {
		switch {
		case ri.NamespacePath && ri.Namespace == "":
			return apierrors.NewBadRequest("Namespace parameter required.")
		case !ri.NamespacePath && ri.Name != "":
			return errNotFoundResource()
		case !ri.NamespacePath && ri.Verb != "list" && ri.Verb != "watch":
			return errMethodNotAllowed()
		}
	}
	if ri.Name != "" {
		if msgs := path.IsValidPathSegmentName(ri.Name); len(msgs) > 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", ri.Name, strings.Join(msgs, ";")))
		}
	}
	return nil
}

// notFound is the plain-text 404 kube-apiserver gives for paths outside
// any served group.
func (s *Server) notFound(c echo.Context) error {
	return c.Blob(http.StatusNotFound, "text/plain; charset=utf-8", []byte("404 page not found\n"))
}

// readBody reads the request body up to the configured limit: 413 beyond.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	body := c.Request().Body
	if body == nil {
		return nil, nil
	}
	limit := s.cfg.MaxRequestBodyBytes
	n := c.Request().ContentLength
	if n < 0 || n > limit {
		n = limit + 1 // unknown until read, or too large: what is read
	}
	if err := s.reserveBody(c, n); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if !errors.Is(c.Request().Context().Err(), context.DeadlineExceeded) {
			// Past the request's deadline, instrumentAndAuthorize
			// counts the 504.
			s.recordTermination(c.Request(), http.StatusGatewayTimeout)
		}
		return nil, errRequestTimeout() // see Server.withBodyDeadline
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("read request body: " + err.Error())
	}
	if int64(len(b)) > limit {
		return nil, errRequestEntityTooLarge(limit)
	}
	if g, ok := c.Get(bodyMemoryKey).(int64); ok && g > int64(len(b)) {
		s.bodyMemory.shrink(&g, int64(len(b)))
		c.Set(bodyMemoryKey, g)
	}
	if len(b) > largeBodyBytes {
		// Only once the body is here: a client trickling a large body
		// must not hold the slot while it does.
		if err := s.admitLargeBody(c); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// largeBodyBytes is the body size above which a request counts as large.
// Decoding, validating, patching and tracking the fields of a body of a
// few MiB takes around a hundred times its size in memory (a 2.7 MB
// Event PUT peaked at 270 MiB), so large requests are processed
// MaxLargeRequests at a time; together, a few of them took the daemon
// past 1 GiB.
const largeBodyBytes = 256 << 10

// largeBodyKey marks, in the echo context, a request that holds a
// large-request slot; boundLargeBodies releases it when the request ends.
const largeBodyKey = "edgeapi.largeBody"

// admitLargeBody waits for a large-request slot, for at most
// largeBodyWait: then the request gets kube-apiserver's 429 for
// overload, with Retry-After. A request takes at most one slot.
func (s *Server) admitLargeBody(c echo.Context) error {
	if c.Get(largeBodyKey) != nil {
		return nil
	}
	t := time.NewTimer(largeBodyWait)
	defer t.Stop()
	select {
	case s.largeBodies <- struct{}{}:
		c.Set(largeBodyKey, true)
		return nil
	case <-c.Request().Context().Done():
		return s.waitedTooLong(c)
	case <-t.C:
		return s.waitedTooLong(c)
	}
}

// waitedTooLong is the answer to a request that gave up waiting for a
// large-request slot or a memory gate: 504 once its deadline passed,
// else kube-apiserver's 429 for overload, with Retry-After, counted as a
// termination like the max-in-flight limit's.
func (s *Server) waitedTooLong(c echo.Context) error {
	if c.Request().Context().Err() != nil {
		return errRequestTimeout()
	}
	s.recordTermination(c.Request(), http.StatusTooManyRequests)
	return apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
}

// largeBodyWait bounds how long a large request waits for a slot.
const largeBodyWait = 10 * time.Second

// bodyMemoryKey holds, in the echo context, the bytes of Config.
// BodyMemoryBytes a request's body holds; boundLargeBodies releases them
// when the request ends.
const bodyMemoryKey = "edgeapi.bodyMemory"

// reserveBody waits until n more bytes of request bodies may be held, for
// at most largeBodyWait (then kube-apiserver's 429, as for a large-request
// slot). Bodies are read only once reserved: without this, 200 clients
// sending 2.9 MB each took a daemon with a 128 MiB budget to 650 MiB of
// RSS with their bodies alone. A request reserves once.
func (s *Server) reserveBody(c echo.Context, n int64) error {
	if n <= 0 || c.Get(bodyMemoryKey) != nil {
		return nil
	}
	g, err := s.bodyMemory.acquire(c.Request().Context(), n, n, largeBodyWait)
	if err != nil {
		return s.waitedTooLong(c)
	}
	c.Set(bodyMemoryKey, g)
	return nil
}

// boundLargeBodies releases the large-request slot and the body memory of
// a request that took them, when it ends.
func (s *Server) boundLargeBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if c.Get(largeBodyKey) != nil {
			<-s.largeBodies
		}
		if g, ok := c.Get(bodyMemoryKey).(int64); ok {
			s.bodyMemory.release(g)
		}
		return err
	}
}

// watchParam reports whether q asks for a watch, as kube-apiserver decodes
// ListOptions' watch: present and neither "0" nor "false" in any case
// ("?watch" and "?watch=yes" are watches).
func watchParam(q url.Values) bool {
	vs := q["watch"]
	return len(vs) > 0 && vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}
