//go:build etcd

package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// etcdBinary is the etcd that tests start: $EDGEAPI_ETCD, else the one
// scripts/kube-ref-build builds.
func etcdBinary() string {
	if p := os.Getenv("EDGEAPI_ETCD"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	candidates := []string{
		filepath.Join(root, ".cache", "kube-ref", "bin", "etcd"),
		"/work/main/.cache/kube-ref/bin/etcd",
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts a single-member etcd on loopback with a temporary data
// directory and returns its client URL; the test's cleanup stops it. The
// test is skipped when no etcd binary is found.
func startEtcd(t testing.TB) string {
	t.Helper()
	bin := etcdBinary()
	if bin == "" {
		t.Skip("no etcd binary: run scripts/kube-ref-build or set EDGEAPI_ETCD")
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin,
		"--name", "test",
		"--data-dir", t.TempDir(),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer,
		"--log-level", "error",
	)
	// etcd's log (errors only, and those it logs when stopped) is shown
	// when the test fails.
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() && log.Len() > 0 {
			t.Logf("etcd log:\n%s", log.Bytes())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", client[len("http://"):])
		if err == nil {
			c.Close()
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not listen on %s", client)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openStore starts an etcd and opens a Store on it.
func openStore(t testing.TB) *Store {
	t.Helper()
	return openAt(t, startEtcd(t), "")
}

// openAt opens a Store on the etcd at url under prefix; the test's cleanup
// closes it.
func openAt(t testing.TB, url, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: []string{url}, Prefix: prefix})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
