package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func h2Request(target string) *http.Request {
	r := httptest.NewRequest("GET", target, nil)
	r.ProtoMajor, r.ProtoMinor, r.Proto = 2, 0, "HTTP/2.0"
	return r
}

// TestH2Workers_ServeHTTP: short HTTP/2 requests are served (on a worker
// while one is idle), watches and HTTP/1.1 requests where they are, and a
// handler's panic reaches the request's own goroutine.
func TestH2Workers_ServeHTTP(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	p := newH2Workers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic(http.ErrAbortHandler)
		}
		mu.Lock()
		served[r.URL.String()]++
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	p.start()
	defer p.stop()

	targets := []string{"/api/v1/namespaces/a/configmaps/x", "/api/v1/configmaps?watch=1", "/api/v1/watch/configmaps"}
	for _, target := range targets {
		for range 100 {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, h2Request(target))
			if w.Code != http.StatusTeapot {
				t.Fatalf("%s: code %d", target, w.Code)
			}
		}
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/http1", nil))
	var wg sync.WaitGroup
	for range 4 * h2WorkerCount { // more than the workers: some run in place
		wg.Go(func() {
			p.ServeHTTP(httptest.NewRecorder(), h2Request("/concurrent"))
		})
	}
	wg.Wait()
	for _, target := range append(targets, "/http1") {
		want := 100
		if target == "/http1" {
			want = 1
		}
		if got := served[target]; got != want {
			t.Errorf("%s served %d times, want %d", target, got, want)
		}
	}
	if got := served["/concurrent"]; got != 4*h2WorkerCount {
		t.Errorf("/concurrent served %d times, want %d", got, 4*h2WorkerCount)
	}

	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		p.ServeHTTP(httptest.NewRecorder(), h2Request("/panic"))
	}()
	// The worker that ran it still serves.
	for range 2 * h2WorkerCount {
		p.ServeHTTP(httptest.NewRecorder(), h2Request("/after"))
	}
	if got := served["/after"]; got != 2*h2WorkerCount {
		t.Errorf("/after served %d times, want %d", got, 2*h2WorkerCount)
	}
}

// TestLongRunning: watches are told apart from other requests.
func TestLongRunning(t *testing.T) {
	tests := []struct {
		target string
		want   bool
	}{
		{"/api/v1/namespaces/a/configmaps", false},
		{"/api/v1/namespaces/a/configmaps?watch=true", true},
		{"/api/v1/namespaces/a/configmaps?allowWatchBookmarks=true&watch=1", true},
		{"/api/v1/watch/namespaces/a/configmaps", true},
		{"/apis/coordination.k8s.io/v1/namespaces/a/leases/x", false},
	}
	for _, tt := range tests {
		if got := longRunning(httptest.NewRequest("GET", tt.target, nil)); got != tt.want {
			t.Errorf("longRunning(%s) = %v, want %v", tt.target, got, tt.want)
		}
	}
}
