package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/edgeapi/edgeapi/httpapi"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// newWriteError returns the negotiated error writer of an API server on
// a fresh store.
func newWriteError(t *testing.T) func(http.ResponseWriter, *http.Request, error) {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "test.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := httpapi.New(httpapi.Config{Store: db, Registry: registry.Builtin()})
	if err != nil {
		t.Fatal(err)
	}
	return s.WriteError
}

// TestWatchLimit_Admit: past the total or the per-user bound a watch
// gets 429 TooManyRequests as a Status, in JSON or protobuf as asked,
// with Retry-After: 1 and details.retryAfterSeconds 1; system:masters is
// bounded too; other requests are not counted; an ended watch frees its
// place.
func TestWatchLimit_Admit(t *testing.T) {
	next := &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
	l := newWatchLimit(3, 2, newWriteError(t))
	// h is the API as it uses l: every watch asks admit.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWatch(r) {
			release, ok := l.admit(w, r)
			if !ok {
				return
			}
			defer release()
		}
		next.ServeHTTP(w, r)
	})
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.SystemPrivilegedGroup}}
	const watch = blockPath + "?watch=true"
	hold := func(u user.Info) {
		go h.ServeHTTP(httptest.NewRecorder(), withUser(httptest.NewRequest(http.MethodGet, watch, nil), u))
		<-next.entered
	}
	serve := func(target, accept string, u user.Info) *httptest.ResponseRecorder {
		r := withUser(httptest.NewRequest(http.MethodGet, target, nil), u)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	check := func(name string, w *httptest.ResponseRecorder, accept, wantMessage string) {
		t.Helper()
		if ct := w.Header().Get("Content-Type"); ct != accept {
			t.Errorf("%s: Content-Type = %q, want %q", name, ct, accept)
		}
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("%s: code = %d, want 429", name, w.Code)
		}
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After = %q, want 1", name, got)
		}
		var got metav1.Status
		switch ct := w.Header().Get("Content-Type"); ct {
		case "application/json":
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("%s: decode: %v", name, err)
			}
		case "application/vnd.kubernetes.protobuf":
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(w.Body.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("%s: decode: %v", name, err)
			}
			st, ok := obj.(*metav1.Status)
			if !ok {
				t.Fatalf("%s: decoded %T, want *metav1.Status", name, obj)
			}
			got = *st
		default:
			t.Fatalf("%s: Content-Type = %q", name, ct)
		}
		if got.Status != metav1.StatusFailure || got.Code != 429 || got.Reason != metav1.StatusReasonTooManyRequests ||
			got.Message != wantMessage || got.Details == nil || got.Details.RetryAfterSeconds != 1 {
			t.Errorf("%s: status = %+v, details %+v; want Failure 429 TooManyRequests %q, retryAfterSeconds 1", name, got, got.Details, wantMessage)
		}
	}

	hold(alice)
	hold(alice)
	const perUser = `Too many watches of user "alice": at most 2 at once, please try again later.`
	check("alice's third, JSON", serve(watch, "application/json", alice), "application/json", perUser)
	check("alice's third, protobuf", serve(watch, "application/vnd.kubernetes.protobuf", alice), "application/vnd.kubernetes.protobuf", perUser)
	check("alice's third, old path", serve("/api/v1/watch/namespaces/default/configmaps", "application/json", alice), "application/json", perUser)
	if w := serve("/api/v1/namespaces/default/configmaps", "application/json", alice); w.Code != http.StatusOK {
		t.Errorf("alice's list: code = %d, want 200", w.Code)
	}
	hold(bob)
	const total = `Too many watches: the server serves at most 3 at once, please try again later.`
	check("bob's second, of system:masters", serve(watch, "application/json", bob), "application/json", total)

	close(next.release)
	for serve("/api/v1/namespaces/default/configmaps?watch=1", "application/json", bob).Code != http.StatusOK {
		// The held watches end.
	}
}

// TestNewWatchLimit_Off: with both bounds 0 there is no watchLimit, and
// the API asks nothing.
func TestNewWatchLimit_Off(t *testing.T) {
	if l := newWatchLimit(0, 0, nil); l != nil {
		t.Errorf("newWatchLimit(0, 0) = %v, want nil", l)
	}
	if l := newWatchLimit(0, 1, nil); l == nil {
		t.Errorf("newWatchLimit(0, 1) = nil, want a bound")
	}
}
