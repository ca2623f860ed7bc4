package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/registry"
)

// TestServer_AdmitWatch: every watch asks Config.AdmitWatch before it
// starts; a refused watch gets what AdmitWatch wrote, and an admitted one
// calls release exactly once when it ends: at its timeout, after it owned
// its connection, and when it fails before streaming.
func TestServer_AdmitWatch(t *testing.T) {
	db := openTestStore(t)
	var asked, open atomic.Int64
	var refuse atomic.Bool
	s, err := New(Config{Store: db, Registry: registry.Builtin(), AdmitWatch: func(w http.ResponseWriter, r *http.Request) (func(), bool) {
		asked.Add(1)
		if refuse.Load() {
			w.WriteHeader(http.StatusTeapot)
			return nil, false
		}
		open.Add(1)
		var once atomic.Bool
		return func() {
			if !once.CompareAndSwap(false, true) {
				t.Error("release called twice")
			}
			open.Add(-1)
		}, true
	}})
	if err != nil {
		t.Fatal(err)
	}
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
	waitClosed := func(what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for open.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d watches still counted", what, open.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	const cms = "/api/v1/namespaces/default/configmaps"
	if code, body := get(cms + "?watch=1&timeoutSeconds=1"); code != http.StatusOK {
		t.Fatalf("watch: %d %s, want 200", code, body)
	}
	waitClosed("after a watch timed out")
	if code, _ := get(cms + "?watch=1&resourceVersion=abc"); code == http.StatusOK {
		t.Fatalf("watch from an invalid resourceVersion: 200, want an error")
	}
	waitClosed("after a watch failed before streaming")
	if code, _ := get(cms); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	if got := asked.Load(); got != 2 {
		t.Errorf("AdmitWatch asked %d times, want 2 (lists are not watches)", got)
	}
	refuse.Store(true)
	if code, _ := get("/api/v1/watch/namespaces/default/configmaps"); code != http.StatusTeapot {
		t.Errorf("refused watch: %d, want AdmitWatch's 418", code)
	}
	if got := open.Load(); got != 0 {
		t.Errorf("open = %d after a refused watch, want 0", got)
	}
}
