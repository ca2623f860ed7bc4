package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTLS_WatchBacklog: when many events are queued for watch streams
// over TLS (HTTP/1.1, and HTTP/2 with the streams sharing one connection)
// because their client does not read, every event still arrives, once,
// in commit order, when the client reads again. The events are large
// enough that the unread streams fill HTTP/2's 4 MiB stream window, so
// the server writes them in drains of many events each.
func TestTLS_WatchBacklog(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	const (
		events  = 600
		watches = 2
	)
	big := strings.Repeat("x", 12<<10)

	for _, tc := range tlsWatchClients(t, d.RESTConfig()) {
		t.Run(tc.name, func(t *testing.T) {
			ns := "backlog-" + strings.ToLower(strings.NewReplacer("/", "", ".", "").Replace(tc.name))
			createNamespace(t, d.Clientset(), ns)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			var bodies []*bufio.Reader
			for range watches {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet,
					d.URL+"/api/v1/namespaces/"+ns+"/configmaps?watch=1&timeoutSeconds=3600", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Accept", "application/json")
				resp, err := tc.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.ProtoMajor != tc.protoMajor {
					t.Fatalf("watch: status %d over %s, want 200 over HTTP/%d", resp.StatusCode, resp.Proto, tc.protoMajor)
				}
				bodies = append(bodies, bufio.NewReaderSize(resp.Body, 64<<10))
			}

			// Nothing reads the watches while the events are written:
			// every other one carries 12 KiB, the rest nothing.
			var want []string
			for i := range events {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}
				if i%2 == 0 {
					cm.Data = map[string]string{"big": big}
				}
				if _, err := d.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create %s: %v", cm.Name, err)
				}
				want = append(want, cm.Name)
			}

			for w, body := range bodies {
				var got []string
				last := int64(0)
				for len(got) < events {
					line, err := body.ReadBytes('\n')
					if err != nil {
						t.Fatalf("watch %d: ended after %d of %d events: %v", w, len(got), events, err)
					}
					var ev struct {
						Type   string
						Object struct {
							Metadata struct{ Name, ResourceVersion string }
							Data     map[string]string
						}
					}
					if err := json.Unmarshal(line, &ev); err != nil {
						t.Fatalf("watch %d: event %d: %v in %.200q", w, len(got), err, line)
					}
					if ev.Type != "ADDED" {
						t.Fatalf("watch %d: event %d is %s, want ADDED", w, len(got), ev.Type)
					}
					rv, err := strconv.ParseInt(ev.Object.Metadata.ResourceVersion, 10, 64)
					if err != nil || rv <= last {
						t.Fatalf("watch %d: event %d (%s) has resourceVersion %q after %d, want increasing",
							w, len(got), ev.Object.Metadata.Name, ev.Object.Metadata.ResourceVersion, last)
					}
					last = rv
					i := len(got)
					if gotBig, wantBig := len(ev.Object.Data["big"]), len(big)*(1-i%2); gotBig != wantBig {
						t.Fatalf("watch %d: event %d (%s) carries %d bytes, want %d", w, i, ev.Object.Metadata.Name, gotBig, wantBig)
					}
					got = append(got, ev.Object.Metadata.Name)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("watch %d: events for %v, want %v", w, got, want)
				}
			}
		})
	}
}

// TestTLS_WatchStalledClient: a TLS watch whose client stops reading
// (HTTP/1.1, and an HTTP/2 stream whose window is full) is ended by the
// server once a write has been blocked for the watch write timeout
// (30 s), without the client reading anything: the server forgets the
// watch, and what the client then reads is an in-order prefix of the
// events, ended by the server.
func TestTLS_WatchStalledClient(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	// More than HTTP/2's 4 MiB stream window and loopback's socket
	// buffers, in fewer events than a watcher may fall behind (1,024),
	// so that only the blocked write can end the stream.
	const events = 900
	big := strings.Repeat("x", 24<<10)

	for _, tc := range tlsWatchClients(t, d.RESTConfig()) {
		// One at a time: a watcher falls behind by events of any
		// resource, and both together would write more than 1,024.
		t.Run(tc.name, func(t *testing.T) {
			ns := "stalled-" + strings.ToLower(strings.NewReplacer("/", "", ".", "").Replace(tc.name))
			createNamespace(t, d.Clientset(), ns)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := watcherCount(t, d)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet,
				d.URL+"/api/v1/namespaces/"+ns+"/configmaps?watch=1&timeoutSeconds=3600", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "application/json")
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != tc.protoMajor {
				t.Fatalf("watch: status %d over %s, want 200 over HTTP/%d", resp.StatusCode, resp.Proto, tc.protoMajor)
			}
			for i := range events {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)},
					Data: map[string]string{"big": big}}
				if _, err := d.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create %s: %v", cm.Name, err)
				}
			}

			deadline := time.Now().Add(2 * time.Minute)
			for watcherCount(t, d) != before {
				if time.Now().After(deadline) {
					t.Fatalf("the server still holds the stalled watch 2 min after the writes, want it ended after its write timeout")
				}
				time.Sleep(500 * time.Millisecond)
			}

			body := bufio.NewReaderSize(resp.Body, 64<<10)
			n, last := 0, int64(0)
			for {
				line, err := body.ReadBytes('\n')
				if err != nil {
					break
				}
				var ev struct {
					Object struct {
						Metadata struct{ Name, ResourceVersion string }
					}
				}
				if json.Unmarshal(line, &ev) != nil {
					break // the connection was cut inside a line
				}
				rv, _ := strconv.ParseInt(ev.Object.Metadata.ResourceVersion, 10, 64)
				if want := fmt.Sprintf("cm-%04d", n); ev.Object.Metadata.Name != want || rv <= last {
					t.Fatalf("event %d is %s at %d (after %d), want %s at a later resourceVersion", n, ev.Object.Metadata.Name, rv, last, want)
				}
				n, last = n+1, rv
			}
			if n >= events {
				t.Fatalf("the stalled client got all %d events, want the stream ended before (the test did not stall it)", n)
			}
			t.Logf("the client got %d of %d events before the server ended the stream", n, events)
		})
	}
}
