package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// passedSocket is a listening socket the test opens and passes to the
// daemon as systemd would (socket activation), under name in
// LISTEN_FDNAMES ("" for none).
type passedSocket struct {
	name string
	ln   net.Listener
}

// listenPassed opens a listening socket on network/address, closed when
// the test ends (the daemon holds its own duplicate).
func listenPassed(t *testing.T, name, network, address string) passedSocket {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { ln.Close() })
	return passedSocket{name: name, ln: ln}
}

// launchActivated starts `edgeapi serve` with socks passed as fds 3, 4, …
// with LISTEN_FDS, LISTEN_FDNAMES (when any is named) and LISTEN_PID set
// to the daemon's own pid, which only the daemon knows before it runs: a
// shell sets it and execs the daemon. url is where the test reaches the
// daemon, tls whether that is HTTPS with the generated kubeconfig.
func launchActivated(t *testing.T, dataDir string, socks []passedSocket, url string, tls bool, args ...string) *Daemon {
	t.Helper()
	bin := edgeapiBin.Path(t)
	d := &Daemon{
		t:       t,
		DataDir: dataDir,
		Addr:    strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"),
		URL:     url,
		TLS:     tls,
		home:    t.TempDir(),
		output:  &logBuffer{},
		exited:  make(chan struct{}),
	}
	d.Kubeconfig = filepath.Join(dataDir, "kubeconfig-insecure")
	if tls {
		d.Kubeconfig = filepath.Join(dataDir, "kubeconfig")
	}
	os.Remove(d.Kubeconfig)

	var names []string
	named := false
	files := make([]*os.File, 0, len(socks))
	for _, s := range socks {
		f, err := s.ln.(interface{ File() (*os.File, error) }).File()
		if err != nil {
			t.Fatalf("file of %s: %v", s.ln.Addr(), err)
		}
		defer f.Close() // the child has its own copy once started
		files = append(files, f)
		names = append(names, s.name)
		named = named || s.name != ""
	}
	env := append(os.Environ(), fmt.Sprintf("LISTEN_FDS=%d", len(socks)))
	if named {
		env = append(env, "LISTEN_FDNAMES="+strings.Join(names, ":"))
	}
	shArgs := append([]string{"-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`, bin, "serve", "--data-dir", dataDir}, args...)
	d.cmd = exec.Command("/bin/sh", shArgs...)
	d.cmd.Env = env
	d.cmd.ExtraFiles = files
	d.cmd.Stdout = d.output
	d.cmd.Stderr = d.output
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start edgeapi: %v", err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Logf("edgeapi: stop: %v", err)
		}
		if t.Failed() {
			t.Logf("edgeapi (data dir %s) output:\n%s", dataDir, d.output.String())
		}
	})
	return d
}

// startActivated is launchActivated, then waits until the daemon is
// ready.
func startActivated(t *testing.T, dataDir string, socks []passedSocket, url string, tls bool, args ...string) *Daemon {
	t.Helper()
	d := launchActivated(t, dataDir, socks, url, tls, args...)
	if err := d.waitReady(); err != nil {
		t.Fatal(err)
	}
	return d
}

// occupiedAddr returns a loopback address something else listens on, for
// flags the daemon must not bind when it is given a socket instead: if it
// tried, it would fail with "address already in use".
func occupiedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestSocketActivation_Serve: the daemon serves the sockets systemd
// passes instead of binding the flags' addresses, which are taken.
func TestSocketActivation_Serve(t *testing.T) {
	t.Run("unnamed sockets go by type: TCP to --listen, Unix to --unix-socket", func(t *testing.T) {
		https := listenPassed(t, "", "tcp", "127.0.0.1:0")
		dir, err := os.MkdirTemp("", "edgeapi-act-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		socket := filepath.Join(dir, "edgeapi.sock")
		unix := listenPassed(t, "", "unix", socket)

		d := startActivated(t, t.TempDir(), []passedSocket{https, unix}, "https://"+https.ln.Addr().String(), true,
			"--listen", occupiedAddr(t), "--unix-socket", filepath.Join(dir, "not-this.sock"))

		// kubectl through the kubeconfig the daemon wrote, which names
		// the passed socket's address.
		res := d.MustKubectl("get", "namespace", "default", "-o", "name")
		if got, want := strings.TrimSpace(res.Stdout), "namespace/default"; got != want {
			t.Errorf("kubectl get namespace default over the passed HTTPS socket = %q, want %q", got, want)
		}
		kc, err := os.ReadFile(d.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if want := "server: https://" + https.ln.Addr().String(); !strings.Contains(string(kc), want) {
			t.Errorf("kubeconfig does not contain %q:\n%s", want, kc)
		}

		// The Unix socket: root is system:masters there.
		ns, err := unixClientset(t, socket).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get namespace over the passed unix socket: %v", err)
		}
		if got, want := ns.Name, "default"; got != want {
			t.Errorf("namespace over the passed unix socket = %q, want %q", got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "not-this.sock")); !os.IsNotExist(err) {
			t.Errorf("the daemon created the --unix-socket path although it was given a socket: stat error %v", err)
		}
	})

	t.Run("named sockets go to the flag they name", func(t *testing.T) {
		// Two TCP sockets: only their names tell them apart.
		https := listenPassed(t, "listen", "tcp", "127.0.0.1:0")
		plain := listenPassed(t, "insecure-listen", "tcp", "127.0.0.1:0")
		d := startActivated(t, t.TempDir(), []passedSocket{https, plain}, "http://"+plain.ln.Addr().String(), false,
			"--listen", occupiedAddr(t), "--insecure-listen", occupiedAddr(t))

		res := d.MustKubectl("get", "namespace", "default", "-o", "name")
		if got, want := strings.TrimSpace(res.Stdout), "namespace/default"; got != want {
			t.Errorf("kubectl over the passed insecure socket = %q, want %q", got, want)
		}
		// The socket named listen serves TLS.
		resp, err := (&http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Get("https://" + https.ln.Addr().String() + "/livez")
		if err != nil {
			t.Fatalf("GET /livez over the passed HTTPS socket: %v", err)
		}
		resp.Body.Close()
		if resp.TLS == nil {
			t.Errorf("the socket named listen answered without TLS")
		}
	})

	t.Run("a connection made while the daemon is down is served by the next one", func(t *testing.T) {
		// systemd keeps the socket open across restarts; here the test
		// does. A client that connects between two daemons waits in
		// the socket's backlog instead of being refused.
		plain := listenPassed(t, "insecure-listen", "tcp", "127.0.0.1:0")
		https := listenPassed(t, "listen", "tcp", "127.0.0.1:0")
		socks := []passedSocket{https, plain}
		url := "http://" + plain.ln.Addr().String()
		dataDir := t.TempDir()
		d := startActivated(t, dataDir, socks, url, false)
		d.MustKubectl("create", "namespace", "before-restart")
		if err := d.Stop(); err != nil {
			t.Fatalf("stop the first daemon: %v", err)
		}

		conn, err := net.DialTimeout("tcp", plain.ln.Addr().String(), 10*time.Second)
		if err != nil {
			t.Fatalf("connect while no daemon runs: %v (the passed socket should still accept)", err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "GET /api/v1/namespaces/before-restart HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatalf("send request while no daemon runs: %v", err)
		}

		startActivated(t, dataDir, socks, url, false)
		conn.SetReadDeadline(time.Now().Add(requestTimeout))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read the answer from the second daemon: %v", err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusOK; got != want {
			t.Errorf("GET namespace before-restart on the connection made between daemons: status %d, want %d", got, want)
		}
	})
	t.Run("two sockets for one flag are refused", func(t *testing.T) {
		// Unnamed, both TCP: both would be --listen.
		a := listenPassed(t, "", "tcp", "127.0.0.1:0")
		b := listenPassed(t, "", "tcp", "127.0.0.1:0")
		d := launchActivated(t, t.TempDir(), []passedSocket{a, b}, "https://"+a.ln.Addr().String(), true)
		select {
		case <-d.exited:
		case <-time.After(readyTimeout):
			t.Fatalf("the daemon did not exit with two sockets for --listen; output:\n%s", d.output.String())
		}
		if d.exitErr == nil {
			t.Errorf("the daemon exited 0 with two sockets for --listen")
		}
		if want := "a second socket for --listen"; !strings.Contains(d.output.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, d.output.String())
		}
	})
}
