package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeapi/edgeapi/registry"
)

// TestServer_ReadyCheck checks that a ready check keeps /readyz and
// /healthz failing with kube-apiserver's listing of the failing check,
// leaves /livez alone, and lets them pass once it is ready.
func TestServer_ReadyCheck(t *testing.T) {
	db := openTestStore(t)
	s, err := New(Config{Store: db, Registry: registry.Builtin()})
	if err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	s.AddReadyCheck("poststarthook/crd-informer-synced", ready.Load)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
	})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	notReady := "[+]ping ok\n[+]store ok\n[-]poststarthook/crd-informer-synced failed: reason withheld\n"
	for _, tc := range []struct {
		path     string
		ready    bool
		code     int
		wantBody string
	}{
		{"/readyz", false, 500, notReady + "readyz check failed\n"},
		{"/readyz?verbose", false, 500, notReady + "readyz check failed\n"},
		{"/healthz", false, 500, notReady + "healthz check failed\n"},
		{"/readyz/poststarthook/crd-informer-synced", false, 500, notReady + "readyz check failed\n"},
		{"/livez", false, 200, "ok"},
		{"/readyz", true, 200, "ok"},
		{"/healthz", true, 200, "ok"},
		{"/readyz/poststarthook/crd-informer-synced", true, 200, "ok"},
	} {
		ready.Store(tc.ready)
		code, body := get(tc.path)
		if code != tc.code || body != tc.wantBody {
			t.Errorf("GET %s (ready %v) = %d %q, want %d %q", tc.path, tc.ready, code, body, tc.code, tc.wantBody)
		}
	}
	ready.Store(true)
	if code, body := get("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]poststarthook/crd-informer-synced ok\n") || !strings.Contains(body, "readyz check passed\n") {
		t.Errorf("GET /readyz?verbose when ready = %d %q", code, body)
	}
}
