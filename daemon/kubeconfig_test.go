package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/edgeapi/edgeapi/pki"
)

func TestClientAddress(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}, "127.0.0.1:6443"},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 80}, "192.0.2.7:80"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 6443}, "127.0.0.1:6443"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 6443}, "[::1]:6443"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1}, "[::1]:1"},
		{&net.TCPAddr{Port: 6443}, "127.0.0.1:6443"},
	}
	for _, tt := range tests {
		if got := clientAddress(tt.addr); got != tt.want {
			t.Errorf("clientAddress(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestKubeconfig(t *testing.T) {
	creds := kubeconfigCredentials{CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("key")}
	b, err := kubeconfig("https://127.0.0.1:6443", creds)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := pki.WriteFileAtomic(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("kubeconfig mode = %v, want %v", got, want)
	}

	// Load it the way kubectl does.
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if got, want := cfg.CurrentContext, "edgeapi"; got != want {
		t.Errorf("current-context = %q, want %q", got, want)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatalf("client config: %v", err)
	}
	if got, want := rc.Host, "https://127.0.0.1:6443"; got != want {
		t.Errorf("host = %q, want %q", got, want)
	}
	if got, want := string(rc.CAData), "ca"; got != want {
		t.Errorf("CA data = %q, want %q", got, want)
	}
	if got, want := string(rc.CertData)+"/"+string(rc.KeyData), "cert/key"; got != want {
		t.Errorf("client cert/key data = %q, want %q", got, want)
	}
}
