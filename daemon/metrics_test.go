package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestInFlightLimit_dropped: each request the limit refuses, and only
// those, reaches dropped (the API's RecordDroppedRequest, which counts
// it in the metrics).
func TestInFlightLimit_dropped(t *testing.T) {
	next := &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
	h := withMaxInFlight(next, 1, 1)
	var dropped []string
	h.(*inFlightLimit).dropped = func(r *http.Request) { dropped = append(dropped, r.Method+" "+r.URL.Path) }
	fillLimit(t, h, next, http.MethodGet, 1)
	const list = "/api/v1/namespaces/default/configmaps"
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		h.ServeHTTP(httptest.NewRecorder(), withUser(httptest.NewRequest(method, list, nil), alice))
	}
	close(next.release)
	if got, want := fmt.Sprint(dropped), "[GET "+list+"]"; got != want {
		t.Errorf("dropped: got %s, want %s", got, want)
	}
}
