package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These tests send the TLS listener what a TLS client should not: old
// protocol versions, weak cipher suites only, bytes that are not a TLS
// handshake, plain HTTP. Each must fail at the handshake (or get the
// connection closed) without anything being served, and afterwards the
// daemon must serve as before with its objects unchanged and its log
// bounded: one short line per bad connection at most.

// badTLSMarker is in every garbage payload; the daemon must never log it
// (nothing a peer sends before the handshake belongs in the log).
const badTLSMarker = "EDGEAPI-BAD-TLS-MARKER"

// badTLSRepeats is how many times each bad exchange runs, so that a log
// line or a goroutine per bad connection would show.
const badTLSRepeats = 20

// tlsVictim is a ConfigMap a bad-input test creates first and checks last.
type tlsVictim struct {
	d  *Daemon
	cm *corev1.ConfigMap
}

func newTLSVictim(t *testing.T, d *Daemon) *tlsVictim {
	t.Helper()
	cm, err := d.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tls-victim"},
		Data:       map[string]string{"key": "value"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &tlsVictim{d: d, cm: cm}
}

// check fails t unless a new client-go connection still reads the ConfigMap
// as it was created, and the namespace holds no other object than before.
func (v *tlsVictim) check(t *testing.T) {
	t.Helper()
	cs := v.d.Clientset() // a new transport: a new TLS connection
	got, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), v.cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after the bad input: %v", err)
	}
	if got.ResourceVersion != v.cm.ResourceVersion || got.Data["key"] != "value" {
		t.Errorf("after the bad input: resourceVersion %s data %v, want %s map[key:value]", got.ResourceVersion, got.Data, v.cm.ResourceVersion)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			names = append(names, cm.Name)
		}
	}
	if got, want := strings.Join(names, ","), v.cm.Name; got != want {
		t.Errorf("ConfigMaps in default after the bad input = %q, want %q", got, want)
	}
}

// checkLogBounded fails t if the daemon's output since mark (a length of
// d.output) has more than maxLines lines, a line longer than 1 KiB, the
// garbage marker, or a panic.
func checkLogBounded(t *testing.T, d *Daemon, mark, maxLines int) {
	t.Helper()
	out := d.output.String()
	if len(out) < mark || strings.HasPrefix(out, "[...") {
		t.Fatalf("daemon output was truncated (more than %d bytes): unbounded logging", maxLogBytes)
	}
	added := strings.TrimSpace(out[mark:])
	var lines []string
	if added != "" {
		lines = strings.Split(added, "\n")
	}
	t.Logf("the daemon logged %d lines for %d bad connections; the first: %.300s", len(lines), maxLines, strings.Join(lines[:min(len(lines), 1)], ""))
	if len(lines) > maxLines {
		t.Errorf("the daemon logged %d lines for the bad input, want at most %d:\n%s", len(lines), maxLines, strings.Join(lines[:min(len(lines), 10)], "\n"))
	}
	for _, l := range lines {
		if len(l) > 1024 {
			t.Errorf("the daemon logged a %d-byte line for the bad input: %.200s...", len(l), l)
		}
	}
	if strings.Contains(added, badTLSMarker) {
		t.Error("the daemon logged bytes the peer sent before any handshake")
	}
	if n := d.output.Panics(); n > 0 {
		t.Errorf("the daemon logged %d handler panics", n)
	}
}

// daemonGoroutines returns the daemon's goroutine count from
// /debug/edgeapi/stats.
func daemonGoroutines(t *testing.T, d *Daemon) int {
	t.Helper()
	r := rawGet(t, d, "/debug/edgeapi/stats")
	var stats struct {
		Goroutines *int `json:"goroutines"`
	}
	if err := json.Unmarshal(r.Body, &stats); err != nil || r.Status != http.StatusOK || stats.Goroutines == nil {
		t.Fatalf("GET /debug/edgeapi/stats: %d %.300s (%v), want a goroutine count", r.Status, r.Body, err)
	}
	return *stats.Goroutines
}

// checkNothingHeld fails t unless the daemon's goroutines come back to at
// most before (plus a little slack for its own timers) once the bad
// connections are gone: no goroutine or connection is kept for them.
func checkNothingHeld(t *testing.T, d *Daemon, before int) {
	t.Helper()
	const slack = 2
	deadline := time.Now().Add(eventually)
	for {
		n := daemonGoroutines(t, d)
		if n <= before+slack {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the daemon has %d goroutines %v after the bad connections, %d before", n, eventually, before)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// handshake dials d over TCP and runs a TLS handshake with cfg (its
// verification off: these tests are about what the server accepts). It
// returns the handshake error, and for a failed handshake what a read of
// the connection then returns.
func handshake(t *testing.T, d *Daemon, cfg *tls.Config) (hsErr, readErr error) {
	t.Helper()
	raw, err := net.DialTimeout("tcp", d.Addr, requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(requestTimeout))
	cfg = cfg.Clone()
	cfg.InsecureSkipVerify = true
	conn := tls.Client(raw, cfg)
	hsErr = conn.Handshake()
	if hsErr == nil {
		return nil, nil
	}
	// The server closes the connection: nothing more comes, in the clear
	// or not.
	_, readErr = io.ReadAll(raw)
	return hsErr, readErr
}

// TestTLSBadInput_Handshakes: clients the TLS listener must refuse at the
// handshake get the alert that says why, the connection is closed and
// nothing is served; the daemon serves normally afterwards.
func TestTLSBadInput_Handshakes(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	victim := newTLSVictim(t, d)
	before := daemonGoroutines(t, d)
	mark := len(d.output.String())

	cases := []struct {
		name string
		cfg  *tls.Config
		// alert is the text of the alert the client must get.
		alert string
	}{
		{"TLS 1.0 only", &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10}, "protocol version not supported"},
		{"TLS 1.1 only", &tls.Config{MinVersion: tls.VersionTLS11, MaxVersion: tls.VersionTLS11}, "protocol version not supported"},
		{"TLS 1.2 with RC4 and 3DES suites only", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA,
			tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA,
			tls.TLS_RSA_WITH_RC4_128_SHA,
			tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
			tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
		}}, "handshake failure"},
		{"TLS 1.2 with CBC-SHA256 suites only", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
			tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
		}}, "handshake failure"},
		{"TLS 1.2 with RSA key exchange only", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
			tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_RSA_WITH_AES_128_CBC_SHA,
		}}, "handshake failure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range badTLSRepeats {
				hsErr, readErr := handshake(t, d, tc.cfg)
				if hsErr == nil {
					t.Fatal("handshake succeeded, want a refusal")
				}
				want := "remote error: tls: " + tc.alert
				if !strings.Contains(hsErr.Error(), want) {
					t.Fatalf("handshake error %q, want %q", hsErr, want)
				}
				if readErr != nil && !errors.Is(readErr, net.ErrClosed) && !isConnReset(readErr) {
					t.Fatalf("after the failed handshake the connection was not closed: read: %v", readErr)
				}
			}
		})
	}

	// A good client is still served.
	if hsErr, _ := handshake(t, d, &tls.Config{MaxVersion: tls.VersionTLS12}); hsErr != nil {
		t.Errorf("TLS 1.2 handshake after the bad ones: %v", hsErr)
	}
	checkNothingHeld(t, d, before)
	victim.check(t)
	// Failed handshakes are counted in one warning a minute (the run
	// takes less than two).
	checkLogBounded(t, d, mark, 2)
}

// isConnReset reports whether err is a connection reset by the peer.
func isConnReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset by peer")
}

// TestTLSBadInput_MinVersionTLS13: with --tls-min-version VersionTLS13 a
// TLS 1.2 client gets the protocol version alert, and a TLS 1.3 client is
// served.
func TestTLSBadInput_MinVersionTLS13(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true, Args: []string{"--tls-min-version", "VersionTLS13"}})
	victim := newTLSVictim(t, d)
	hsErr, _ := handshake(t, d, &tls.Config{MaxVersion: tls.VersionTLS12})
	if want := "remote error: tls: protocol version not supported"; hsErr == nil || !strings.Contains(hsErr.Error(), want) {
		t.Fatalf("TLS 1.2 handshake with --tls-min-version VersionTLS13: %v, want %q", hsErr, want)
	}
	// client-go (the victim check) negotiates TLS 1.3.
	victim.check(t)
}

// rawExchange dials addr, writes payload (then closes its writing side if
// halfClose), and reads what comes back until the server closes the
// connection (or the hang guard passes). closed reports whether the
// server did close it.
func rawExchange(t *testing.T, addr string, payload []byte, halfClose bool) (reply []byte, closed bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := conn.Write(payload); err != nil && !isConnReset(err) {
		t.Fatalf("write: %v", err)
	}
	if halfClose {
		conn.(*net.TCPConn).CloseWrite()
	}
	reply, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return reply, false
	}
	return reply, true
}

// garbage returns n pseudo-random bytes with badTLSMarker in the middle,
// starting with first.
func garbage(seed uint64, first []byte, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := append([]byte{}, first...)
	for len(b) < n/2 {
		b = append(b, byte(rng.Uint32()))
	}
	b = append(b, badTLSMarker...)
	for len(b) < n {
		b = append(b, byte(rng.Uint32()))
	}
	return b
}

// tlsAlert is the record a TLS 1.0+ server sends for a fatal alert with
// description desc, in record version ver.
func tlsAlert(ver uint16, desc byte) []byte {
	return []byte{0x15, byte(ver >> 8), byte(ver), 0x00, 0x02, 0x02, desc}
}

// TestTLSBadInput_NotAHandshake: bytes that are not a TLS handshake on the
// TLS port get the connection closed (with a TLS alert where the bytes
// were a TLS record, and Go's 400 for plain HTTP), and the daemon keeps
// serving normally afterwards.
func TestTLSBadInput_NotAHandshake(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{TLS: true})
	victim := newTLSVictim(t, d)
	before := daemonGoroutines(t, d)
	mark := len(d.output.String())

	// The start of a real ClientHello, for the truncated cases.
	var hello bytes.Buffer
	func() {
		c1, c2 := net.Pipe()
		defer c1.Close()
		go func() {
			buf := make([]byte, 4096)
			n, _ := c2.Read(buf)
			hello.Write(buf[:n])
			c2.Close()
		}()
		tls.Client(c1, &tls.Config{ServerName: "localhost"}).Handshake()
	}()
	if hello.Len() < 100 || hello.Bytes()[0] != 0x16 {
		t.Fatalf("captured ClientHello: %d bytes %x, want a handshake record", hello.Len(), hello.Bytes()[:min(hello.Len(), 8)])
	}

	const plainHTTP400 = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
	cut := append(hello.Bytes()[:hello.Len()/2:hello.Len()/2], badTLSMarker...)
	// A ClientHello record of the right length whose message is garbage.
	badHello := garbage(2, []byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0xfc}, 256+5)
	cases := []struct {
		name    string
		payload []byte
		// halfClose: the client closes its side after the payload;
		// otherwise it waits for the server to close.
		halfClose bool
		// repeats is how many times the exchange runs (0: badTLSRepeats).
		repeats int
		// want is the whole reply before the server closes.
		want []byte
	}{
		{name: "random bytes", payload: garbage(1, nil, 4096)},
		{name: "zeros", payload: append(make([]byte, 1024), badTLSMarker...)},
		{name: "a ClientHello of garbage", payload: badHello, want: tlsAlert(tls.VersionTLS10, 50 /* decode_error */)},
		{name: "a handshake message over 64 KiB", payload: garbage(3, []byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0xff, 0xff, 0xff}, 256+5),
			want: tlsAlert(tls.VersionTLS10, 80 /* internal_error */)},
		{name: "a record over the size limit", payload: garbage(4, []byte{0x16, 0x03, 0x01, 0xff, 0xff}, 4096),
			want: tlsAlert(tls.VersionTLS10, 22 /* record_overflow */)},
		{name: "an SSLv2 ClientHello", payload: garbage(5, []byte{0x80, 0x2e, 0x01, 0x00, 0x02}, 48),
			want: tlsAlert(tls.VersionTLS10, 70 /* protocol_version */)},
		{name: "a ClientHello cut short, then EOF", payload: cut, halfClose: true},
		// The server gives up on the handshake after its read-header
		// timeout; the hang guard is far longer.
		{name: "a ClientHello cut short, then silence", payload: cut, repeats: 1},
		// Go's server answers what looks like plain HTTP (GET, HEAD,
		// POST, PUT, OPTIONS) with a 400 in the clear and closes; other
		// methods are garbage to it.
		{name: "plain HTTP GET", payload: []byte("GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: " + d.Addr + "\r\nX-Marker: " + badTLSMarker + "\r\n\r\n"),
			want: []byte(plainHTTP400)},
		{name: "plain HTTP POST", payload: []byte("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: " + d.Addr +
			"\r\nContent-Type: application/json\r\nContent-Length: 49\r\n\r\n" + `{"metadata":{"name":"tls-victim-2"},"data":{}}   `),
			want: []byte(plainHTTP400)},
		{name: "plain HTTP DELETE", payload: []byte("DELETE /api/v1/namespaces/default/configmaps/tls-victim HTTP/1.1\r\nHost: " + d.Addr + "\r\n\r\n")},
	}
	for _, tc := range cases {
		repeats := cmp.Or(tc.repeats, badTLSRepeats)
		t.Run(tc.name, func(t *testing.T) {
			for i := range repeats {
				reply, closed := rawExchange(t, d.Addr, tc.payload, tc.halfClose)
				if !closed {
					t.Fatalf("the server kept the connection open %v after %d bytes (reply %s)", requestTimeout, len(tc.payload), fmtReply(reply))
				}
				if !bytes.Equal(reply, tc.want) {
					t.Fatalf("exchange %d: reply %s, want %s", i, fmtReply(reply), fmtReply(tc.want))
				}
			}
		})
	}

	checkNothingHeld(t, d, before)
	victim.check(t)
	checkLogBounded(t, d, mark, 2)
}

// fmtReply shows a reply as text when it is HTTP, else as hex.
func fmtReply(b []byte) string {
	if b == nil {
		return "nothing"
	}
	if bytes.HasPrefix(b, []byte("HTTP/")) {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%x", b)
}
