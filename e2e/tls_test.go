package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/edgeapi/edgeapi/pki"
)

// These tests cover `edgeapi serve` over TLS: the generated PKI and
// kubeconfig, certificate rotation, the TLS version floor, the loopback-only
// plain-HTTP listener, and watches over TLS with HTTP/1.1 and HTTP/2.

// TestTLS_Kubeconfig: the kubeconfig a first start writes reaches the
// daemon over https with nothing else (kubectl and client-go), it and the
// keys are 0600, and a restart keeps the CA, so the kubeconfig stays good.
func TestTLS_Kubeconfig(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	if r := d.Kubectl("get", "ns", "default", "-o", "name"); r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "namespace/default" {
		t.Fatalf("%s", r)
	}
	cfg := d.RESTConfig()
	if got, want := cfg.Host, "https://"+d.Addr; got != want {
		t.Errorf("kubeconfig server = %q, want %q", got, want)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		t.Errorf("kubeconfig: insecure %v, CA %d bytes, client cert %d bytes, key %d bytes; want the CA and a client certificate",
			cfg.Insecure, len(cfg.CAData), len(cfg.CertData), len(cfg.KeyData))
	}
	for _, path := range []string{
		d.Kubeconfig,
		filepath.Join(d.DataDir, "pki", pki.CAKeyFile),
		filepath.Join(d.DataDir, "pki", pki.ServingKeyFile),
		filepath.Join(d.DataDir, "pki", pki.AdminKeyFile),
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
			t.Errorf("%s mode = %v, want %v", path, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(d.DataDir, "kubeconfig-insecure")); err == nil {
		t.Error("kubeconfig-insecure exists without --insecure-listen")
	}

	// Plain HTTP to the TLS port is refused.
	resp, err := http.Get("http://" + d.Addr + "/api/v1/namespaces")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the HTTPS port: status %d, want 400", resp.StatusCode)
		}
	}

	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	d2 := StartDaemon(t, DaemonOptions{TLS: true, DataDir: d.DataDir})
	if got, want := string(d2.RESTConfig().CAData), string(cfg.CAData); got != want {
		t.Error("the CA changed across a restart")
	}
	// The old kubeconfig's credentials still work against the new process.
	cfg.Host = "https://" + d2.Addr
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = c.Get(cfg.Host + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatalf("old kubeconfig after restart: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("old kubeconfig after restart: status %d, want 200", resp.StatusCode)
	}
}

// TestTLS_CertificateRotation: a serving certificate replaced on disk is
// served to new connections without a restart.
func TestTLS_CertificateRotation(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	const newIP = "192.0.2.9"
	// Issue the serving certificate again, for one more address, the way
	// an operator's tool would replace the files.
	if _, err := pki.Ensure(filepath.Join(d.DataDir, "pki"), []string{"localhost", "127.0.0.1", newIP}, time.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for {
		conn, err := tls.Dial("tcp", d.Addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if leaf.VerifyHostname(newIP) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("served certificate %s after the files changed still lacks %s (SANs %v %v)", eventually, newIP, leaf.DNSNames, leaf.IPAddresses)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Clients of the generated kubeconfig keep working: same CA.
	if r := d.Kubectl("get", "ns", "default", "-o", "name"); r.ExitCode != 0 {
		t.Fatalf("%s", r)
	}
}

// TestTLS_MinVersion: clients below --tls-min-version (TLS 1.2 by
// default) fail the handshake.
func TestTLS_MinVersion(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		d := StartDaemon(t, DaemonOptions{TLS: true})
		if conn, err := tls.Dial("tcp", d.Addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
			conn.Close()
			t.Error("TLS 1.1 handshake succeeded, want an error")
		}
		conn, err := tls.Dial("tcp", d.Addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("TLS 1.2 handshake: %v", err)
		}
		conn.Close()
	})
	t.Run("VersionTLS13", func(t *testing.T) {
		d := StartDaemon(t, DaemonOptions{TLS: true, Args: []string{"--tls-min-version", "VersionTLS13"}})
		if conn, err := tls.Dial("tcp", d.Addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}); err == nil {
			conn.Close()
			t.Error("TLS 1.2 handshake succeeded with --tls-min-version VersionTLS13, want an error")
		}
	})
}

// TestTLS_InsecureListenOnlyOnLoopback: plain HTTP is refused on an
// address other than loopback.
func TestTLS_InsecureListenOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	_, err := TryStartDaemon(t, DaemonOptions{TLS: true, Args: []string{"--insecure-listen", "0.0.0.0:0"}})
	if err == nil {
		t.Fatal("daemon started with --insecure-listen 0.0.0.0:0, want a refusal")
	}
	if want := "plain HTTP is served only on a loopback address"; !strings.Contains(err.Error(), want) {
		t.Errorf("error does not say %q:\n%v", want, err)
	}
}

// tlsWatchClient is an HTTPS client that speaks one HTTP version.
type tlsWatchClient struct {
	name       string
	protoMajor int
	client     *http.Client
}

// tlsWatchClients returns clients of cfg's TLS settings without a request
// timeout (watches outlive it): one that speaks only HTTP/1.1, and
// client-go's own, which negotiates HTTP/2.
func tlsWatchClients(t *testing.T, cfg *rest.Config) []tlsWatchClient {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h1 := &http.Client{Transport: &http.Transport{
		TLSClientConfig: tlsCfg,
		// A non-nil empty TLSNextProto turns HTTP/2 off.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	h2, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return []tlsWatchClient{{"HTTP/1.1", 1, h1}, {"HTTP/2", 2, h2}}
}

// TestTLS_ShutdownEndsWatches: shutdown ends TLS watches over HTTP/1.1
// and HTTP/2 cleanly, and the daemon exits with status 0.
func TestTLS_ShutdownEndsWatches(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	ended := make(chan string, 4)
	for _, c := range tlsWatchClients(t, d.RESTConfig()) {
		for range 2 {
			req, err := http.NewRequest(http.MethodGet, d.URL+"/api/v1/configmaps?watch=1&resourceVersion=0", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != c.protoMajor {
				t.Fatalf("watch: status %d over %s, want 200 over HTTP/%d", resp.StatusCode, resp.Proto, c.protoMajor)
			}
			go func() {
				_, _ = io.Copy(io.Discard, resp.Body)
				ended <- c.name
			}()
		}
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("stop with open TLS watches: %v, want exit status 0", err)
	}
	for range 4 {
		select {
		case <-ended:
		case <-time.After(eventually):
			t.Fatal("a TLS watch is still open after the daemon exited")
		}
	}
}

// watchLine is one line of a JSON watch stream, or its end (err).
type watchLine struct {
	typ, name string
	err       error
}

// waitAdded creates ConfigMap ns/name and waits for its ADDED event on
// lines, skipping bookmarks.
func waitAdded(t *testing.T, d *Daemon, ns, name string, lines <-chan watchLine) {
	t.Helper()
	_, err := d.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(requestTimeout)
	for {
		select {
		case l := <-lines:
			if l.err != nil {
				t.Fatalf("watch ended before the ADDED event of %s: %v", name, l.err)
			}
			if l.typ == "ADDED" && l.name == name {
				return
			}
		case <-timeout:
			t.Fatalf("no ADDED event within %v of creating %s", requestTimeout, name)
		}
	}
}

// tlsWatchHold is how long TestTLS_Watch keeps its watches idle after an
// event: by default longer than the server's watch write timeout (30 s,
// which over HTTP/2 reset idle streams while it was left set) and many
// peer-check intervals (2 s); EDGEAPI_E2E_TLS_WATCH_HOLD (a duration,
// e.g. 3m) runs it across several bookmark intervals (1 min).
func tlsWatchHold(t *testing.T) time.Duration {
	if v := os.Getenv("EDGEAPI_E2E_TLS_WATCH_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("EDGEAPI_E2E_TLS_WATCH_HOLD: %v", err)
		}
		return d
	}
	return 40 * time.Second
}

// TestTLS_Watch: a watch over TLS, with HTTP/1.1 and with HTTP/2, stays
// open while its client is there (no end of stream, and it still delivers
// events after the hold), and the server forgets it once the client leaves
// (HTTP/1.1: the connection is closed; HTTP/2: the stream is reset, the
// connection stays).
func TestTLS_Watch(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	hold := tlsWatchHold(t)
	base := d.RESTConfig()

	for _, tc := range tlsWatchClients(t, base) {
		t.Run(tc.name, func(t *testing.T) {
			ns := "tls-watch-" + strings.ToLower(strings.NewReplacer("/", "", ".", "").Replace(tc.name))
			createNamespace(t, d.Clientset(), ns)
			client := tc.client
			before := watcherCount(t, d)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet,
				d.URL+"/api/v1/namespaces/"+ns+"/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != tc.protoMajor {
				t.Fatalf("watch: status %d over %s, want 200 over HTTP/%d", resp.StatusCode, resp.Proto, tc.protoMajor)
			}
			lines := make(chan watchLine, 16)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					var ev struct {
						Type   string
						Object struct{ Metadata struct{ Name string } }
					}
					err := json.Unmarshal(sc.Bytes(), &ev)
					lines <- watchLine{ev.Type, ev.Object.Metadata.Name, err}
				}
				err := sc.Err()
				if err == nil {
					err = io.EOF
				}
				lines <- watchLine{err: err}
			}()
			if got, want := watcherCount(t, d), before+1; got != want {
				t.Fatalf("watchers with the watch open = %d, want %d", got, want)
			}

			// An event first, so that the server has written to the stream
			// before it idles.
			waitAdded(t, d, ns, "before-hold", lines)

			// Hold: only bookmarks may arrive, and the stream must not end.
			timer := time.NewTimer(hold)
		holding:
			for {
				select {
				case l := <-lines:
					if l.err != nil || l.typ != "BOOKMARK" {
						t.Fatalf("during the %v hold the watch got %q (err %v), want it open with at most bookmarks", hold, l.typ, l.err)
					}
					t.Logf("bookmark")
				case <-timer.C:
					break holding
				}
			}
			if got, want := watcherCount(t, d), before+1; got != want {
				t.Fatalf("watchers after the %v hold = %d, want %d", hold, got, want)
			}
			waitAdded(t, d, ns, "after-hold", lines)

			// The client leaves.
			left := time.Now()
			cancel()
			resp.Body.Close()
			deadline := time.Now().Add(eventually)
			for {
				got := watcherCount(t, d)
				if got == before {
					t.Logf("the server forgot the watch %v after the client left", time.Since(left).Round(10*time.Millisecond))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("watchers %v after the client left = %d, want %d", eventually, got, before)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// TestTLS_SessionResumption: a client that keeps a session cache (as
// kubectl's and client-go's transports can) resumes its TLS session on a
// new connection instead of paying a full handshake, and the resumed
// connection is still the same client-certificate user: the certificate
// travels in the session ticket and is verified against the client CA on
// every request.
func TestTLS_SessionResumption(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	cfg := d.RESTConfig()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			c := tlsCfg.Clone()
			c.NextProtos = []string{proto}
			c.ClientSessionCache = tls.NewLRUClientSessionCache(8)
			tr := &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: proto == "h2"}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: requestTimeout}

			// whoami posts a SelfSubjectReview and returns who the daemon
			// says the client is, and whether the connection resumed.
			whoami := func() (user string, resumed bool) {
				t.Helper()
				body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
				resp, err := client.Post(cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("SelfSubjectReview: status %d: %s", resp.StatusCode, raw)
				}
				if got := resp.Proto; (proto == "h2") != (got == "HTTP/2.0") {
					t.Fatalf("asked for %s, got %s", proto, got)
				}
				var review struct {
					Status struct {
						UserInfo struct {
							Username string `json:"username"`
						} `json:"userInfo"`
					} `json:"status"`
				}
				if err := json.Unmarshal(raw, &review); err != nil {
					t.Fatalf("decode %s: %v", raw, err)
				}
				return review.Status.UserInfo.Username, resp.TLS.DidResume
			}

			first, resumed := whoami()
			if first == "" || first == "system:anonymous" {
				t.Fatalf("first connection: user %q, want the kubeconfig's certificate user", first)
			}
			if resumed {
				t.Fatal("first connection resumed a session that was never made")
			}
			// A new connection: the first one is closed once idle.
			tr.CloseIdleConnections()
			second, resumed := whoami()
			if !resumed {
				t.Error("second connection did a full handshake, want a resumed session")
			}
			if second != first {
				t.Errorf("resumed connection: user %q, want %q", second, first)
			}
		})
	}
}
