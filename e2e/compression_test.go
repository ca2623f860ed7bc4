package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// remoteIP returns an address of this machine that is not loopback, the
// address a client on another machine would see the daemon's peer come
// from when it connects to it; the test is skipped without one.
func remoteIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			return ipn.IP.String()
		}
	}
	t.Skip("skipped: this machine has no IPv4 address but loopback to act as a remote client from")
	return ""
}

// TestResponseCompression: a client on another address that asks for gzip
// (client-go and kubectl do, through Go's transport) gets a large LIST
// compressed, as from kube-apiserver, and client-go, kubectl and a raw
// reader all see the same objects; a client on loopback gets it as is
// (--response-compression remote, the default), and with
// --response-compression all it is compressed for loopback too.
func TestResponseCompression(t *testing.T) {
	t.Parallel()
	ip := remoteIP(t)
	d := StartDaemon(t, DaemonOptions{TLS: true, ListenHost: "0.0.0.0"})
	ctx := context.Background()
	local := d.RESTConfig()
	cs := d.Clientset()
	ns := "zip"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("edge gateway ", 400) // 5 KiB
	const n = 60
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm", i)}, Data: map[string]string{"pad": pad}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, port, _ := net.SplitHostPort(d.Addr)
	remote := rest.CopyConfig(local)
	remote.Host = "https://" + net.JoinHostPort(ip, port)

	// get lists the ConfigMaps through cfg's TLS as Go's transport would
	// ask, but without decompressing, and returns the Content-Encoding
	// and the body as sent.
	get := func(cfg *rest.Config, accept string) (string, []byte) {
		t.Helper()
		tlsCfg, err := rest.TLSConfigFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{TLSClientConfig: tlsCfg, DisableCompression: true, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", cfg.Host+"/api/v1/namespaces/"+ns+"/configmaps", nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list: status %d, %v: %.200s", resp.StatusCode, err, body)
		}
		return resp.Header.Get("Content-Encoding"), body
	}
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		enc, plain := get(local, accept)
		if enc != "" {
			t.Errorf("%s from loopback: Content-Encoding %q, want none (--response-compression remote)", accept, enc)
		}
		enc, zipped := get(remote, accept)
		if enc != "gzip" {
			t.Fatalf("%s from %s: Content-Encoding %q, want gzip", accept, ip, enc)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("gunzip: %v", err)
		}
		// No write in between: the same list at the same resourceVersion.
		if !bytes.Equal(got, plain) {
			t.Errorf("%s: the gzipped list (%d bytes, %d unzipped) differs from the plain one (%d bytes)", accept, len(zipped), len(got), len(plain))
		}
		t.Logf("%s: %d bytes sent gzipped for a %d-byte list", accept, len(zipped), len(plain))
	}

	// Real clients from the remote address decompress on their own.
	rcs, err := kubernetes.NewForConfig(remote)
	if err != nil {
		t.Fatal(err)
	}
	list, err := rcs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(list.Items); got != n || list.Items[0].Data["pad"] != pad {
		t.Errorf("client-go from %s: %d ConfigMaps, want %d with their data", ip, got, n)
	}
	r := d.Kubectl("--server", remote.Host, "get", "configmaps", "-n", ns, "-o", "name")
	if r.ExitCode != 0 || strings.Count(r.Stdout, "configmap/") != n {
		t.Errorf("kubectl from %s: %s", ip, r)
	}

	// --response-compression all: loopback too, as kube-apiserver.
	all := StartDaemon(t, DaemonOptions{TLS: true, Args: []string{"--response-compression", "all"}})
	acs := all.Clientset()
	if _, err := acs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm", i)}, Data: map[string]string{"pad": pad}}
		if _, err := acs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if enc, _ := get(all.RESTConfig(), "application/json"); enc != "gzip" {
		t.Errorf("--response-compression all, from loopback: Content-Encoding %q, want gzip", enc)
	}
}
