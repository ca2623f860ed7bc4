package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/registry"
)

// newConnTestServer runs a Server over real SQLite behind an http.Server
// that also serves its HandoffListener, as the daemon does.
func newConnTestServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	db := openTestStore(t)
	cfg.Store, cfg.Registry = db, registry.Builtin()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Start()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ts.Config.Serve(s.HandoffListener())
	}()
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
		<-done
		_ = db.Close()
	})
	return ts
}

// TestHandoff_ConnectionServesNextRequest: on each of several connections
// at once, watches that end by timeoutSeconds are followed by a pipelined
// and a later request on the same connection (run with -race).
func TestHandoff_ConnectionServesNextRequest(t *testing.T) {
	ts := newConnTestServer(t, Config{})
	addr := strings.TrimPrefix(ts.URL, "http://")
	watch := "GET /api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n\r\n"
	get := "GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(conn)
			// Round 0 pipelines the GET behind the watch; round 1 sends it
			// after the watch ended.
			for round := range 2 {
				req := watch
				if round == 0 {
					req += get
				}
				if _, err := io.WriteString(conn, req); err != nil {
					t.Errorf("conn %d round %d: write: %v", i, round, err)
					return
				}
				for j, want := range []string{"watch", "GET"} {
					if j == 1 && round == 1 {
						if _, err := io.WriteString(conn, get); err != nil {
							t.Errorf("conn %d round %d: write: %v", i, round, err)
							return
						}
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Errorf("conn %d round %d: %s: read response: %v", i, round, want, err)
						return
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
						t.Errorf("conn %d round %d: %s: status %d, close %v, body error %v; want 200 kept open",
							i, round, want, resp.StatusCode, resp.Close, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestHandoff_ConnectionCloseWhenAsked: a watch whose client sent
// "Connection: close" says so and closes the connection.
func TestHandoff_ConnectionCloseWhenAsked(t *testing.T) {
	ts := newConnTestServer(t, Config{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(conn, "GET /api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if !resp.Close {
		t.Errorf("watch response without Connection: close (header %v)", resp.Header)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Errorf("connection still open after the watch")
	}
}

// TestServer_BodyDeadline: a body that does not arrive within
// RequestTimeout fails with 504 Timeout and the connection closes.
func TestServer_BodyDeadline(t *testing.T) {
	ts := newConnTestServer(t, Config{RequestTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), `"reason":"Timeout"`) {
		t.Errorf("slow body: %d %s, want 504 Timeout", resp.StatusCode, b)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Errorf("connection still open after the timeout")
	}
}
