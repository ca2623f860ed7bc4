package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/edgeapi/edgeapi/auth/authn"
)

// blockingHandler answers 200 to every request, but a request whose path
// is blockPath waits until release is closed, after telling entered.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

const blockPath = "/api/v1/namespaces/default/configmaps/block"

func (h *blockingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == blockPath {
		h.entered <- struct{}{}
		<-h.release
	}
	w.WriteHeader(http.StatusOK)
}

// fillLimit starts n requests of method that wait in next, and returns
// once all of them are in next.
func fillLimit(t *testing.T, h http.Handler, next *blockingHandler, method string, n int) {
	t.Helper()
	for range n {
		go h.ServeHTTP(httptest.NewRecorder(), withUser(httptest.NewRequest(method, blockPath, nil), alice))
		<-next.entered
	}
}

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}

func withUser(r *http.Request, u user.Info) *http.Request {
	return r.WithContext(authn.WithUser(r.Context(), u))
}

// TestInFlightLimit_ServeHTTP: past the limit of its kind a request gets
// kube-apiserver's 429 (plain text, Retry-After: 1) whatever it accepts;
// the read-only and mutating limits are separate; watches and members of
// system:masters are served past the limits; a freed slot serves again.
func TestInFlightLimit_ServeHTTP(t *testing.T) {
	next := &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
	h := withMaxInFlight(next, 2, 1)
	fillLimit(t, h, next, http.MethodGet, 2)
	fillLimit(t, h, next, http.MethodPut, 1)

	serve := func(method, target, accept string, u user.Info) *httptest.ResponseRecorder {
		r := withUser(httptest.NewRequest(method, target, nil), u)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const list = "/api/v1/namespaces/default/configmaps"
	for _, tt := range []struct {
		method, target, accept string
	}{
		{http.MethodGet, list, "application/json"},
		{http.MethodGet, list, "application/vnd.kubernetes.protobuf"},
		{http.MethodHead, list + "/x", ""},
		{http.MethodGet, list + "?watch=false", ""},
		{http.MethodGet, list + "?watch=0", ""},
		{http.MethodGet, list + "?resourceVersion=0&fieldSelector=metadata.name%3Dwatch", ""},
		{http.MethodGet, "/api/v1/namespaces/watch/configmaps", ""},
		{http.MethodPost, list, "application/json"},
		{http.MethodPatch, list + "/x", "application/vnd.kubernetes.protobuf"},
		{http.MethodDelete, list + "?watch=true", ""},
		{http.MethodHead, "/healthz", ""},
		{http.MethodHead, "/apis/apps/v1", ""},
	} {
		w := serve(tt.method, tt.target, tt.accept, alice)
		if w.Code != http.StatusTooManyRequests {
			t.Errorf("%s %s: code = %d, want 429", tt.method, tt.target, w.Code)
			continue
		}
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s %s: Retry-After = %q, want 1", tt.method, tt.target, got)
		}
		if got := w.Header().Get("Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("%s %s: Content-Type = %q, want text/plain; charset=utf-8", tt.method, tt.target, got)
		}
		if got, want := w.Body.String(), "Too many requests, please try again later.\n"; got != want {
			t.Errorf("%s %s: body = %q, want %q", tt.method, tt.target, got, want)
		}
	}

	masters := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	for _, tt := range []struct {
		method, target string
		u              user.Info
	}{
		{http.MethodGet, list + "?watch=true", alice},
		{http.MethodGet, list + "?watch", alice},
		{http.MethodGet, list + "?labelSelector=a&watch=1", alice},
		{http.MethodGet, "/api/v1/watch/namespaces/default/configmaps", alice},
		{http.MethodGet, "/apis/apps/v1/watch/deployments", alice},
		{http.MethodGet, list, masters},
		{http.MethodPost, list, masters},
		{http.MethodGet, "/healthz", masters},
	} {
		if w := serve(tt.method, tt.target, "", tt.u); w.Code != http.StatusOK {
			t.Errorf("%s %s as %s: code = %d, want 200", tt.method, tt.target, tt.u.GetName(), w.Code)
		}
	}

	close(next.release)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		// The slots free as the blocked requests return.
		for {
			if w := serve(m, list, "", alice); w.Code == http.StatusOK {
				break
			}
		}
	}
}

// TestWithMaxInFlight_Off: with both limits 0 the handler is next itself.
func TestWithMaxInFlight_Off(t *testing.T) {
	next := http.NotFoundHandler()
	if got := withMaxInFlight(next, 0, 0); got == nil {
		t.Fatal("withMaxInFlight(next, 0, 0) = nil")
	} else if _, limited := got.(*inFlightLimit); limited {
		t.Errorf("withMaxInFlight(next, 0, 0) = %T, want next", got)
	}
	if _, limited := withMaxInFlight(next, 0, 1).(*inFlightLimit); !limited {
		t.Errorf("withMaxInFlight(next, 0, 1) is not limited")
	}
}

// TestInFlightLimit_Allocs: a request that takes and frees a slot
// allocates nothing in the filter.
func TestInFlightLimit_Allocs(t *testing.T) {
	h := withMaxInFlight(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), 4, 4)
	r := withUser(httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps?limit=500", nil), alice)
	w := httptest.NewRecorder()
	if got := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); got != 0 {
		t.Errorf("allocations per request = %v, want 0", got)
	}
}

// TestResourcePath: which paths kube-apiserver's request info takes for
// resources, which decides whether a HEAD is read-only.
func TestResourcePath(t *testing.T) {
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"/api/v1/pods", true},
		{"/api/v1/namespaces/default/configmaps/x", true},
		{"/apis/apps/v1/deployments", true},
		{"/api/v1", false},
		{"/api/v1/", false},
		{"/apis/apps/v1", false},
		{"/apis/apps", false},
		{"/healthz", false},
		{"/", false},
		{"/openapi/v2/x/y", false},
	} {
		if got := resourcePath(tt.path); got != tt.want {
			t.Errorf("resourcePath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// BenchmarkInFlightLimit measures the filter's cost per request, against
// the bare handler.
func BenchmarkInFlightLimit(b *testing.B) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r := withUser(httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps?limit=500", nil), alice)
	w := httptest.NewRecorder()
	for _, bb := range []struct {
		name string
		h    http.Handler
	}{{"bare", next}, {"limited", withMaxInFlight(next, 400, 200)}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bb.h.ServeHTTP(w, r)
				}
			})
		})
	}
}
