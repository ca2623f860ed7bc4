package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These tests cover watch streams that own their connection: an idle watch
// has no goroutine, a closed client is noticed by a periodic peek, slow
// clients are moved off the shared stream workers, and shutdown ends every
// stream.

var watchersRE = regexp.MustCompile(`watchcache events=\d+ bytes=\d+ watchers=(\d+)`)

// watcherCount reads the number of registered watchers from /readyz?verbose.
func watcherCount(t *testing.T, d *Daemon) int {
	t.Helper()
	r := rawGet(t, d, "/readyz?verbose")
	m := watchersRE.FindSubmatch(r.Body)
	if m == nil {
		t.Fatalf("/readyz?verbose has no watcher count: %s", r.Body)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// dialWatch sends a watch request on a new connection and reads the
// response header; the caller reads the body from the returned reader.
func dialWatch(t *testing.T, d *Daemon, path string) (net.Conn, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", path, d.Addr)
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		t.Fatalf("watch %s: read response header: %v", path, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		t.Fatalf("watch %s: status %d, want 200", path, resp.StatusCode)
	}
	return conn, resp
}

// TestWatch_ClosedClientsAreForgotten: watches whose clients close their
// connections, without any event to write to them, are ended and
// unregistered by the server.
func TestWatch_ClosedClientsAreForgotten(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	base := watcherCount(t, d)
	const n = 20
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i], _ = dialWatch(t, d, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0")
	}
	if got, want := watcherCount(t, d), base+n; got != want {
		t.Fatalf("watchers with %d watches open = %d, want %d", n, got, want)
	}
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(eventually)
	for {
		got := watcherCount(t, d)
		if got == base {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watchers %s after their clients closed = %d, want %d", eventually, got, base)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWatch_ChunkedResponse: a watch answers like kube-apiserver over
// HTTP/1.1: 200, JSON, chunked, and a watch that times out ends with the
// last chunk, so clients see a clean end of stream.
func TestWatch_ChunkedResponse(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	conn, resp := dialWatch(t, d, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
	defer conn.Close()
	if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if got, want := resp.TransferEncoding, []string{"chunked"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Transfer-Encoding = %v, want %v", got, want)
	}
	_ = conn.SetReadDeadline(time.Now().Add(eventually))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
	}
	if err := sc.Err(); err != nil {
		t.Errorf("watch body after the timeout: %v, want a clean end of stream", err)
	}
}

// TestWatch_StalledClientDoesNotDelayOthers: while one client has stopped
// reading a watch that receives megabytes, other watches of the same
// objects still get every event, in order.
func TestWatch_StalledClientDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "stalled"
	createNamespace(t, cs, ns)
	start := rawGet(t, d, "/api/v1/namespaces/"+ns+"/configmaps").cmList(t, "list").ResourceVersion
	path := "/api/v1/namespaces/" + ns + "/configmaps?watch=1&resourceVersion=" + start

	const writes = 200
	// Several stalled clients, so that every stream worker meets one.
	for range 4 {
		conn, _ := dialWatch(t, d, path)
		defer conn.Close()
	}
	fast := openRawWatch(t, d, path)
	defer fast.Close()
	got := make(chan []string, 1)
	go func() {
		var rvs []string
		for len(rvs) < writes {
			ev, err := fast.Next()
			if err != nil || ev.Type != "ADDED" {
				break
			}
			var cm corev1.ConfigMap
			if json.Unmarshal(ev.Object, &cm) != nil {
				break
			}
			rvs = append(rvs, cm.ResourceVersion)
		}
		got <- rvs
	}()

	blob := make([]byte, 64<<10)
	for i := range blob {
		blob[i] = 'a' + byte(i%26)
	}
	var want []string
	for i := range writes {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
			Data:       map[string]string{"blob": string(blob)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %d while clients are stalled: %v", i, err)
		}
		want = append(want, cm.ResourceVersion)
	}
	rvs := <-got
	if len(rvs) != len(want) {
		t.Fatalf("reading watch got %d ADDED events, want %d", len(rvs), len(want))
	}
	for i := range want {
		if rvs[i] != want[i] {
			t.Fatalf("reading watch event %d: resourceVersion %s, want %s", i, rvs[i], want[i])
		}
	}
}

// TestWatch_ShutdownEndsWatches: SIGTERM ends open watches (idle ones
// included) and the daemon exits cleanly.
func TestWatch_ShutdownEndsWatches(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	var bodies []*bufio.Reader
	for range 5 {
		conn, resp := dialWatch(t, d, "/api/v1/configmaps?watch=1&resourceVersion=0")
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(eventually))
		bodies = append(bodies, bufio.NewReader(resp.Body))
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("stop with open watches: %v, want exit status 0", err)
	}
	for i, b := range bodies {
		for {
			if _, err := b.ReadString('\n'); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("watch %d still open after the daemon exited", i)
				}
				break
			}
		}
	}
}
