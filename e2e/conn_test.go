package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These tests cover what happens to a client's connection: after a watch
// ends it serves the next request (as kube-apiserver's do), and a client
// that trickles a request body cannot hold it past --request-timeout.

// keepAliveConn is one client connection on which requests are sent one
// after another, as HTTP/1.1 clients that reuse connections send them.
type keepAliveConn struct {
	t    *testing.T
	d    *Daemon
	conn net.Conn
	br   *bufio.Reader
	// closing: the last response said "Connection: close".
	closing bool
}

func dialKeepAlive(t *testing.T, d *Daemon) *keepAliveConn {
	t.Helper()
	conn, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &keepAliveConn{t: t, d: d, conn: conn, br: bufio.NewReader(conn)}
}

// do sends one request on the connection and reads the whole response.
// what names the step for failure messages.
func (c *keepAliveConn) do(what, method, path, body string) httpResult {
	c.t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(requestTimeout))
	defer c.conn.SetDeadline(time.Time{})
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n", method, path, c.d.Addr)
	if body != "" {
		req += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(c.conn, req+"\r\n"+body); err != nil {
		c.t.Fatalf("%s: %s %s: write request: %v", what, method, path, err)
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("%s: %s %s on the same connection: read response: %v", what, method, path, err)
	}
	defer resp.Body.Close()
	c.closing = resp.Close
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s: %s %s: read body: %v", what, method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// wantListOK sends a GET of the default namespace's ConfigMaps and wants a
// 200 ConfigMapList.
func (c *keepAliveConn) wantListOK(what string) {
	c.t.Helper()
	r := c.do(what, http.MethodGet, "/api/v1/namespaces/default/configmaps", "")
	r.cmList(c.t, what)
}

// watchEvents decodes the JSON watch events of a finished watch body.
func watchEvents(t *testing.T, body []byte) []rawEvent {
	t.Helper()
	var evs []rawEvent
	dec := json.NewDecoder(strings.NewReader(string(body)))
	for dec.More() {
		var ev rawEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch body %q: %v", body, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestWatch_ConnectionReusedAfterTimeout: a watch that ends by
// timeoutSeconds leaves its connection serving the next request, three
// times in a row on one connection.
func TestWatch_ConnectionReusedAfterTimeout(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	c := dialKeepAlive(t, d)
	for i := range 3 {
		r := c.do(fmt.Sprintf("watch %d", i), http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", "")
		if r.Status != http.StatusOK {
			t.Fatalf("watch %d: status %d %s, want 200", i, r.Status, r.Body)
		}
		if c.closing {
			t.Errorf("watch %d: Connection: close, want the connection kept open", i)
		}
		c.wantListOK(fmt.Sprintf("GET after watch %d ended by timeoutSeconds", i))
	}
}

// TestWatch_ConnectionReusedAfterServerEnd: a watch the server ends (an
// ERROR 410 event for a compacted resourceVersion) leaves its connection
// serving the next request.
func TestWatch_ConnectionReusedAfterServerEnd(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{Args: []string{"--compaction-interval", "1s"}})
	cs := d.Clientset()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-compaction"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitCompactedPast(t, d, cs, "default", mustRV(t, cm.ResourceVersion))

	c := dialKeepAlive(t, d)
	path := "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + cm.ResourceVersion
	r := c.do("watch from a compacted resourceVersion", http.MethodGet, path, "")
	if r.Status != http.StatusOK {
		t.Fatalf("watch: status %d %s, want 200 with an ERROR event", r.Status, r.Body)
	}
	evs := watchEvents(t, r.Body)
	if len(evs) != 1 || evs[0].Type != "ERROR" || !strings.Contains(string(evs[0].Object), `"code":410`) {
		t.Fatalf("watch events = %v, want one ERROR 410", evs)
	}
	c.wantListOK("GET after a watch the server ended")
	// And a watch on the handed-back connection ends and hands it back
	// again.
	r = c.do("second watch", http.MethodGet, path, "")
	if evs := watchEvents(t, r.Body); len(evs) != 1 || evs[0].Type != "ERROR" {
		t.Fatalf("second watch events = %v, want one ERROR", evs)
	}
	c.wantListOK("GET after the second watch")
}

// TestWatch_ConnectionReusedPipelined: a request the client sent before
// the watch ended (pipelined) is answered after it.
func TestWatch_ConnectionReusedPipelined(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	c := dialKeepAlive(t, d)
	_ = c.conn.SetDeadline(time.Now().Add(requestTimeout))
	req := func(path string) string {
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", path, d.Addr)
	}
	// Both requests in one write: net/http reads the second with the
	// first, before the watch takes the connection over.
	if _, err := io.WriteString(c.conn, req("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")+req("/version")); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"watch", "pipelined GET /version"} {
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("%s: read response: %v", what, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, body %q, read error %v; want 200", what, resp.StatusCode, b, err)
		}
	}
}

// TestHead_ConnectionReused: a HEAD leaves the connection serving the
// next request, whatever it answers (what HEAD answers on each path is
// checked elsewhere); the HEAD of a list answers as its GET.
func TestHead_ConnectionReused(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	c := dialKeepAlive(t, d)
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/version", "/healthz"} {
		r := c.do("HEAD "+path, http.MethodHead, path, "")
		if len(r.Body) != 0 {
			t.Errorf("HEAD %s: %d-byte body, want none", path, len(r.Body))
		}
		// kube-apiserver's resource and version routes are GET-only
		// (go-restful): HEAD is 405; health answers every method.
		want := http.StatusMethodNotAllowed
		if path == "/healthz" {
			want = http.StatusOK
		}
		if r.Status != want {
			t.Fatalf("HEAD %s: status %d, want %d", path, r.Status, want)
		}
		c.wantListOK("GET after HEAD " + path)
	}
}

// TestWatch_ConnectionReusedPythonHTTPClient is the acceptance
// test: Python's http.client (as the Python kubernetes client's Watch loop
// uses it through urllib3) watches with timeoutSeconds, then writes on the
// same connection, 100 times, each of which must succeed. Ten threads of
// ten rounds keep it to about ten seconds.
func TestWatch_ConnectionReusedPythonHTTPClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("python3 not found (%v): skipping the http.client keep-alive test", err)
	}
	d := StartDaemon(t)
	script := filepath.Join(t.TempDir(), "watch_then_write.py")
	if err := os.WriteFile(script, []byte(pythonWatchThenWrite), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, script, d.Addr, "10", "10").CombinedOutput()
	t.Logf("python3 http.client:\n%s", out)
	if err != nil {
		t.Fatalf("python3 watch-then-write: %v", err)
	}
	if !strings.Contains(string(out), "ok 100 of 100") {
		t.Fatalf("python3 watch-then-write did not report 100 successes")
	}
}

const pythonWatchThenWrite = `
import http.client, json, sys, threading

host, port = sys.argv[1].rsplit(":", 1)
threads, rounds = int(sys.argv[2]), int(sys.argv[3])
ok, failures, lock = [0], [], threading.Lock()

def run(n):
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    for i in range(rounds):
        try:
            conn.request("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
                         headers={"Accept": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise Exception("watch: status %d" % r.status)
            body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "py-%d-%d" % (n, i)}})
            conn.request("POST", "/api/v1/namespaces/default/configmaps", body=body,
                         headers={"Content-Type": "application/json", "Accept": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status != 201:
                raise Exception("create: status %d" % r.status)
            with lock:
                ok[0] += 1
        except Exception as e:
            with lock:
                failures.append("thread %d round %d: %r" % (n, i, e))
            conn.close()
            conn = http.client.HTTPConnection(host, int(port), timeout=30)

ts = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
for f in failures[:20]:
    print("FAIL", f)
print("ok %d of %d" % (ok[0], threads * rounds))
sys.exit(0 if not failures else 1)
`

// TestServe_SlowRequestBodyTimesOut: clients that send a request body one
// byte every 500 ms are cut off at --request-timeout with kube-apiserver's
// 504 Timeout Status, and the daemon serves other requests meanwhile.
func TestServe_SlowRequestBodyTimesOut(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{Args: []string{"--request-timeout", "2s"}})
	const n = 50
	type answer struct {
		status int
		body   string
		closed bool
		err    error
	}
	answers := make(chan answer, n)
	conns := make([]net.Conn, n)
	for i := range conns {
		conn, err := net.Dial("tcp", d.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[i] = conn
		fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\n"+
			"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: 100000\r\n\r\n{", d.Addr)
		go func() {
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// After the answer the server closes the connection: what is
			// left of the body must not be read as a request.
			_, err = br.ReadByte()
			answers <- answer{status: resp.StatusCode, body: string(b), closed: err != nil}
		}()
	}
	// Trickle: one byte on every connection every 500 ms until all are
	// answered (the hang guard ends the test otherwise).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, c := range conns {
					_, _ = c.Write([]byte(" "))
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// Meanwhile other requests are served.
	if r := rawGet(t, d, "/api/v1/namespaces/default/configmaps"); r.Status != http.StatusOK {
		t.Fatalf("GET while slow bodies are open: status %d %s", r.Status, r.Body)
	}

	hangGuard := time.After(60 * time.Second)
	for i := range n {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Errorf("slow body %d: no answer, connection error %v; want a 504 Status", i, a.err)
				continue
			}
			if a.status != http.StatusGatewayTimeout || !strings.Contains(a.body, `"reason":"Timeout"`) ||
				!strings.Contains(a.body, "request did not complete within the allotted timeout") {
				t.Errorf("slow body %d: %d %s, want 504 with a Timeout Status", i, a.status, a.body)
			}
			if !a.closed {
				t.Errorf("slow body %d: connection still open after the answer", i)
			}
		case <-hangGuard:
			t.Fatalf("only %d of %d slow-body connections were answered or closed within 60s", i, n)
		}
	}
	// Nothing was created from the partial bodies, and the daemon still
	// answers.
	if l := rawGet(t, d, "/api/v1/namespaces/default/configmaps").cmList(t, "list after slow bodies"); len(l.Items) != 0 {
		t.Errorf("%d ConfigMaps created from partial bodies", len(l.Items))
	}
}

// TestWatch_HandedBackConnectionShutdown: a connection handed back after a
// watch and idle since does not hold up a graceful shutdown, which closes
// it.
func TestWatch_HandedBackConnectionShutdown(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	c := dialKeepAlive(t, d)
	r := c.do("watch", http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", "")
	if r.Status != http.StatusOK {
		t.Fatalf("watch: status %d %s", r.Status, r.Body)
	}
	start := time.Now()
	if err := d.Stop(); err != nil {
		t.Fatalf("stop with a handed-back connection open: %v", err)
	}
	t.Logf("stopped in %v", time.Since(start))
	_ = c.conn.SetReadDeadline(time.Now().Add(requestTimeout))
	if n, err := c.br.ReadByte(); err == nil {
		t.Fatalf("handed-back connection still open after shutdown (read %q)", n)
	}
}
