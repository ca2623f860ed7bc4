package main

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/auth/authn"
)

// Overload protection: the limits of --max-requests-inflight and
// --max-mutating-requests-inflight, as kube-apiserver's max-in-flight
// filter applies them.

const (
	// DefaultMaxRequestsInflight is kube-apiserver's default of
	// --max-requests-inflight.
	DefaultMaxRequestsInflight = 400
	// DefaultMaxMutatingRequestsInflight is kube-apiserver's default of
	// --max-mutating-requests-inflight.
	DefaultMaxMutatingRequestsInflight = 200
)

// tooManyRequestsMessage is the body of kube-apiserver's max-in-flight
// 429, which is plain text, not a Status.
const tooManyRequestsMessage = "Too many requests, please try again later."

// inFlightLimit serves at most cap(readOnly) GET requests and HEAD
// requests of resources, and at most cap(mutating) others at once (as in
// kube-apiserver, whose verb for a HEAD of a path outside the resources,
// such as /healthz, is "head", which it counts as mutating); past that it answers 429 with
// Retry-After: 1, which client-go retries by itself. Watches are not
// counted, and members of system:masters are served past the limit, as
// kube-apiserver does. A nil channel means no limit for its kind.
type inFlightLimit struct {
	next     http.Handler
	readOnly chan struct{}
	mutating chan struct{}
	// dropped, when set, counts each request refused (the API's
	// RecordDroppedRequest: kube-apiserver's metrics of a 429).
	dropped func(*http.Request)
}

// withMaxInFlight returns next behind inFlightLimit; a limit of 0 is no
// limit, and next itself is returned when both are 0.
func withMaxInFlight(next http.Handler, readOnly, mutating int) http.Handler {
	if readOnly == 0 && mutating == 0 {
		return next
	}
	l := &inFlightLimit{next: next}
	if readOnly > 0 {
		l.readOnly = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		l.mutating = make(chan struct{}, mutating)
	}
	return l
}

// ServeHTTP implements http.Handler.
func (l *inFlightLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := l.mutating
	if r.Method == http.MethodGet || (r.Method == http.MethodHead && resourcePath(r.URL.Path)) {
		if isWatch(r) {
			l.next.ServeHTTP(w, r)
			return
		}
		c = l.readOnly
	}
	if c == nil {
		l.next.ServeHTTP(w, r)
		return
	}
	select {
	case c <- struct{}{}:
		defer func() { <-c }()
		l.next.ServeHTTP(w, r)
	default:
		if privileged(r) {
			l.next.ServeHTTP(w, r)
			return
		}
		if l.dropped != nil {
			l.dropped(r)
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, tooManyRequestsMessage, http.StatusTooManyRequests)
	}
}

// privileged reports whether r's user is in system:masters.
func privileged(r *http.Request) bool {
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		return false
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// isWatch reports whether r is a watch as kube-apiserver's request info
// sees one: a path with a "watch" segment right after the API version
// (the deprecated /watch/ paths) or a watch query parameter that is
// neither "0" nor "false". It allocates only when the query mentions
// "watch".
func isWatch(r *http.Request) bool {
	if strings.Contains(r.URL.RawQuery, "watch") {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		if vs := q["watch"]; len(vs) > 0 && vs[0] != "0" && !strings.EqualFold(vs[0], "false") {
			return true
		}
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/"):
		p = p[len("/api/"):] // v1/watch/...
	case strings.HasPrefix(p, "/apis/"):
		p = p[len("/apis/"):] // group/version/watch/...
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[i+1:]
	default:
		return false
	}
	i := strings.IndexByte(p, '/')
	return i >= 0 && strings.HasPrefix(p[i+1:], "watch/")
}

// resourcePath reports whether kube-apiserver's request info would take
// path for a resource request: /api/VERSION/... or
// /apis/GROUP/VERSION/..., counting the segments between slashes after
// trimming the outer ones.
func resourcePath(path string) bool {
	p := strings.Trim(path, "/")
	if p == "" {
		return false
	}
	n := strings.Count(p, "/") + 1
	switch {
	case strings.HasPrefix(p, "api/"):
		return n >= 3
	case strings.HasPrefix(p, "apis/"):
		return n >= 4
	}
	return false
}
