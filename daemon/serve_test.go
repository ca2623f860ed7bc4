package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// notifySocket is a fake systemd notification socket: a unixgram socket
// whose datagrams are split into lines ("READY=1", "STATUS=...").
type notifySocket struct {
	path  string
	lines chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	// A short directory: unix socket paths are limited to ~108 bytes.
	dir, err := os.MkdirTemp("", "sdnotify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen on notify socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &notifySocket{path: path, lines: make(chan string, 1024)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(s.lines)
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line != "" {
					s.lines <- line
				}
			}
		}
	}()
	return s
}

// waitFor reads notifications until want arrives, failing the test after
// timeout. It returns the lines read before want.
func (s *notifySocket) waitFor(t *testing.T, want string, timeout time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("notify socket closed before %q; saw %q", want, seen)
			}
			if line == want {
				return seen
			}
			seen = append(seen, line)
		case <-deadline:
			t.Fatalf("no %q from the daemon within %v; saw %q", want, timeout, seen)
		}
	}
}

// serverFromKubeconfig returns the server URL of the kubeconfig the daemon
// wrote into dataDir, and an HTTP client with its CA and credentials.
func serverFromKubeconfig(t *testing.T, dataDir string) (string, *http.Client) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatalf("load generated kubeconfig: %v", err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatalf("client config from generated kubeconfig: %v", err)
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatalf("http client from generated kubeconfig: %v", err)
	}
	return rc.Host, client
}

// checkHealthz checks that the daemon answers HTTP at server.
func checkHealthz(t *testing.T, server string, client *http.Client) {
	t.Helper()
	resp, err := client.Get(server + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: status %d, want 200", resp.StatusCode)
	}
}

// checkStats checks that the debug stats endpoint reports the store.
func checkStats(t *testing.T, server string, client *http.Client) {
	t.Helper()
	resp, err := client.Get(server + statsPath)
	if err != nil {
		t.Fatalf("GET %s: %v", statsPath, err)
	}
	defer resp.Body.Close()
	var got struct {
		Store *struct{ Rev int64 } `json:"store"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || got.Store == nil {
		t.Errorf("GET %s: status %d, decode error %v, store %v; want 200 with store stats", statsPath, resp.StatusCode, err, got.Store)
	}
}

// TestServe_Notify runs the real serve path in-process with a fake
// NOTIFY_SOCKET and watchdog, and checks READY=1 comes once the store is
// open and the listener answers, WATCHDOG=1 comes from the main loop, and
// cancelling the context (the first signal) sends STOPPING=1 and returns
// nil.
func TestServe_Notify(t *testing.T) {
	sock := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", sock.path)
	t.Setenv("WATCHDOG_USEC", "150000") // 150ms: pings every 50ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-format", "json"})
	}()

	var before []string
	select {
	case err := <-done:
		t.Fatalf("Run returned before READY: %v", err)
	default:
		before = sock.waitFor(t, "READY=1", 20*time.Second)
	}
	if len(before) != 0 {
		t.Errorf("notifications before READY=1: %q", before)
	}

	// Ready means: data dir 0700, store open, kubeconfig written,
	// listener bound and answering.
	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o700); got != want {
		t.Errorf("data dir mode = %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "edgeapi.db")); err != nil {
		t.Errorf("database not created: %v", err)
	}
	server, client := serverFromKubeconfig(t, dataDir)
	checkHealthz(t, server, client)
	checkStats(t, server, client)

	sock.waitFor(t, "WATCHDOG=1", 5*time.Second)

	cancel()
	sock.waitFor(t, "STOPPING=1", 10*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of cancel")
	}

	// A second daemon on the same data dir starts and stops cleanly: the
	// lock was released and the store reopens.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		done <- Run(ctx2, []string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-format", "json"})
	}()
	sock.waitFor(t, "READY=1", 20*time.Second)
	cancel2()
	if err := <-done; err != nil {
		t.Fatalf("second Run: %v", err)
	}
}

// TestServe_DataDirLocked checks that a second daemon refuses a data dir
// that one is already serving from.
func TestServe_DataDirLocked(t *testing.T) {
	sock := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", sock.path)
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-format", "json"})
	}()
	sock.waitFor(t, "READY=1", 20*time.Second)

	err := Run(context.Background(), []string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-format", "json"})
	if err == nil || !strings.Contains(err.Error(), "in use by another edgeapi") {
		t.Errorf("second daemon on the same data dir: err = %v, want 'in use by another edgeapi'", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// edgeapiBinary returns the daemon binary: $EDGEAPI_BIN (set by
// scripts/test) or one built from this package into a temporary directory.
func edgeapiBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("EDGEAPI_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edgeapi-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "edgeapi")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// daemonProcess is `edgeapi serve` running as a child process.
type daemonProcess struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error // Wait's result, set before done is closed
}

func startDaemonProcess(t *testing.T, dataDir string, sock *notifySocket) *daemonProcess {
	t.Helper()
	cmd := exec.Command(edgeapiBinary(t), "serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock.path)
	p := &daemonProcess{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", p.stderr.String())
		}
	})
	sock.waitFor(t, "READY=1", 20*time.Second)
	return p
}

// wait waits up to timeout for the process to exit and returns its exit
// code.
func (p *daemonProcess) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("daemon did not exit within %v", timeout)
	}
	var exitErr *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exitErr):
		return exitErr.ExitCode()
	default:
		t.Fatalf("wait for daemon: %v", p.err)
		return -1
	}
}

// TestServe_Signals runs the binary and checks that SIGTERM shuts it down
// cleanly with exit code 0, and that a second signal during a slow
// shutdown exits at once with code 1.
func TestServe_Signals(t *testing.T) {
	t.Run("first signal shuts down gracefully", func(t *testing.T) {
		sock := listenNotify(t)
		dataDir := t.TempDir()
		p := startDaemonProcess(t, dataDir, sock)
		server, client := serverFromKubeconfig(t, dataDir)
		checkHealthz(t, server, client)

		p.cmd.Process.Signal(syscall.SIGTERM)
		sock.waitFor(t, "STOPPING=1", 10*time.Second)
		if code := p.wait(t, 20*time.Second); code != 0 {
			t.Errorf("exit code after SIGTERM = %d, want 0", code)
		}
		if !strings.Contains(p.stderr.String(), "edgeapi stopped") {
			t.Errorf("no 'edgeapi stopped' in the log")
		}
	})

	t.Run("second signal exits at once", func(t *testing.T) {
		sock := listenNotify(t)
		dataDir := t.TempDir()
		p := startDaemonProcess(t, dataDir, sock)

		// A connection that has sent half a request header keeps the
		// graceful HTTP shutdown waiting for several seconds.
		server, _ := serverFromKubeconfig(t, dataDir)
		addr := strings.TrimPrefix(server, "https://")
		// The test checks shutdown, not the certificate.
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let the server accept it

		p.cmd.Process.Signal(syscall.SIGTERM)
		sock.waitFor(t, "STOPPING=1", 10*time.Second)
		select {
		case <-p.done:
			t.Fatalf("daemon exited during graceful shutdown despite the open request: %v", p.err)
		case <-time.After(300 * time.Millisecond):
		}

		start := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.wait(t, 2*time.Second); code != 1 {
			t.Errorf("exit code after second SIGTERM = %d, want 1", code)
		}
		t.Logf("exited %v after the second signal", time.Since(start))
		if !strings.Contains(p.stderr.String(), "received second") {
			t.Errorf("no 'received second' message on stderr")
		}
	})
}

// syncBuffer is a bytes.Buffer safe for a writing child process and a
// reading test.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
