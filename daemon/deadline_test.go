package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimeoutParam(t *testing.T) {
	tests := []struct {
		q      string
		want   string
		wantOK bool
	}{
		{q: "", want: "", wantOK: false},
		{q: "limit=5", want: "", wantOK: false},
		{q: "timeout=5s", want: "5s", wantOK: true},
		{q: "limit=5&timeout=1m30s&timeout=1s", want: "1m30s", wantOK: true},
		{q: "timeoutSeconds=5", want: "", wantOK: false},
		{q: "timeout=", want: "", wantOK: false},
		{q: "timeout", want: "", wantOK: false},
		{q: "time%6Fut=2s", want: "2s", wantOK: true},
		{q: "timeout=1%6D", want: "1m", wantOK: true},
		{q: "timeout=%zz&timeout=3s", want: "3s", wantOK: true},
		{q: "timeout=4s;x=1&timeout=5s", want: "5s", wantOK: true},
	}
	for _, tt := range tests {
		got, ok := timeoutParam(tt.q)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("timeoutParam(%q) = %q, %v; want %q, %v", tt.q, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestWithRequestDeadline: a request that is not a watch runs under a
// deadline of --request-timeout, or of its shorter timeout parameter; a
// watch and the backup download run without one; a timeout that is not
// a duration gets kube-apiserver's 400 Status.
func TestWithRequestDeadline(t *testing.T) {
	const max = time.Minute
	var got time.Duration
	var hasDeadline bool
	h := withRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d time.Time
		d, hasDeadline = r.Context().Deadline()
		got = time.Until(d)
	}), max, newWriteError(t))
	tests := []struct {
		path         string
		wantDeadline bool
		wantAbout    time.Duration
	}{
		{path: "/api/v1/namespaces/default/configmaps", wantDeadline: true, wantAbout: max},
		{path: "/api/v1/namespaces/default/configmaps/x?timeout=5s", wantDeadline: true, wantAbout: 5 * time.Second},
		{path: "/api/v1/configmaps?timeout=2h", wantDeadline: true, wantAbout: max},
		{path: "/api/v1/configmaps?timeout=-1s", wantDeadline: true, wantAbout: max},
		{path: "/healthz?timeout=3s", wantDeadline: true, wantAbout: 3 * time.Second},
		{path: "/api/v1/configmaps?watch=true&timeout=5s", wantDeadline: false},
		{path: "/api/v1/watch/namespaces/default/configmaps", wantDeadline: false},
		{path: backupPath, wantDeadline: false},
	}
	for _, tt := range tests {
		hasDeadline, got = false, 0
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: code %d, want 200", tt.path, rec.Code)
		}
		if hasDeadline != tt.wantDeadline {
			t.Errorf("GET %s: deadline %v, want %v", tt.path, hasDeadline, tt.wantDeadline)
			continue
		}
		if tt.wantDeadline && (got > tt.wantAbout || got < tt.wantAbout-10*time.Second) {
			t.Errorf("GET %s: deadline in %v, want about %v", tt.path, got, tt.wantAbout)
		}
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?timeout=soon", nil))
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("timeout=soon: body %q: %v", rec.Body, err)
	}
	if rec.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest ||
		!strings.HasPrefix(st.Message, "invalid timeout specified in the request URL - time: invalid duration") {
		t.Errorf("timeout=soon: %d %s %q, want 400 BadRequest invalid timeout", rec.Code, st.Reason, st.Message)
	}
}

// BenchmarkWithRequestDeadline is the filter's cost on a GET.
func BenchmarkWithRequestDeadline(b *testing.B) {
	h := withRequestDeadline(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), time.Minute, nil)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps/x?labelSelector=a%3Db", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

// BenchmarkWithRequestDeadline_HTTP2 is BenchmarkWithRequestDeadline
// with a cancelable parent context, as an HTTP/2 stream's request has.
func BenchmarkWithRequestDeadline_HTTP2(b *testing.B) {
	h := withRequestDeadline(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), time.Minute, nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/namespaces/default/configmaps/x", nil)
		h.ServeHTTP(w, r)
		cancel()
	}
}
