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
	"strings"
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
	if p := filepath.Join(root, ".cache", "kube-ref", "bin", "etcd"); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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
	return newEtcd(t).url
}

// etcdProc is one etcd member that a test can stop and start again on the
// same ports and data.
type etcdProc struct {
	t        testing.TB
	bin, dir string
	url      string
	peer     string
	args     []string
	cmd      *exec.Cmd
	// log is etcd's log (errors only, and those it logs when stopped),
	// shown when the test fails.
	log bytes.Buffer
}

// newEtcd starts an etcdProc, stopped by the test's cleanup.
func newEtcd(t testing.TB) *etcdProc {
	t.Helper()
	return newEtcdArgs(t, "http")
}

// newEtcdTLS starts an etcdProc serving TLS with certFile and keyFile and
// requiring client certificates signed by caFile.
func newEtcdTLS(t testing.TB, caFile, certFile, keyFile string) *etcdProc {
	t.Helper()
	return newEtcdArgs(t, "https", "--cert-file", certFile, "--key-file", keyFile,
		"--trusted-ca-file", caFile, "--client-cert-auth")
}

// newEtcdArgs starts an etcdProc whose client URL has scheme, with extra
// arguments.
func newEtcdArgs(t testing.TB, scheme string, extra ...string) *etcdProc {
	t.Helper()
	bin := etcdBinary()
	if bin == "" {
		t.Skip("no etcd binary: run scripts/kube-ref-build or set EDGEAPI_ETCD")
	}
	e := &etcdProc{
		t:    t,
		bin:  bin,
		dir:  t.TempDir(),
		url:  fmt.Sprintf("%s://127.0.0.1:%d", scheme, freePort(t)),
		args: extra,
		peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
	}
	e.start()
	t.Cleanup(func() {
		e.stop()
		if t.Failed() && e.log.Len() > 0 {
			t.Logf("etcd log:\n%s", e.log.Bytes())
		}
	})
	return e
}

// start starts etcd and waits until it listens.
func (e *etcdProc) start() {
	e.t.Helper()
	e.cmd = exec.Command(e.bin,
		"--name", "test",
		"--data-dir", e.dir,
		"--listen-client-urls", e.url,
		"--advertise-client-urls", e.url,
		"--listen-peer-urls", e.peer,
		"--initial-advertise-peer-urls", e.peer,
		"--initial-cluster", "test="+e.peer,
		"--log-level", "error",
	)
	e.cmd.Args = append(e.cmd.Args, e.args...)
	e.cmd.Stdout, e.cmd.Stderr = &e.log, &e.log
	if err := e.cmd.Start(); err != nil {
		e.t.Fatalf("start etcd: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, hostPort, _ := strings.Cut(e.url, "://")
		c, err := net.Dial("tcp", hostPort)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("etcd did not listen on %s", e.url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops etcd (SIGTERM) and waits for it; stopping a stopped etcd
// does nothing.
func (e *etcdProc) stop() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	_ = e.cmd.Wait()
	e.cmd = nil
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
