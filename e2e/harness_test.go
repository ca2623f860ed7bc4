package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
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

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Hang guards. They bound how long the harness waits for something that
// should happen quickly, so that a broken daemon fails a test instead of
// hanging it until `go test -timeout`. They are not performance assertions.
const (
	// readyTimeout bounds the wait for /readyz and the kubeconfig.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds the wait for exit after SIGTERM; then SIGKILL.
	stopTimeout = 30 * time.Second
	// requestTimeout is the client-go timeout of every request.
	requestTimeout = 60 * time.Second
	// eventually is the deadline for polling asynchronous outcomes
	// (namespace finalization, leader takeover).
	eventually = 60 * time.Second
	// maxLogBytes is how much daemon output is kept for the test log.
	maxLogBytes = 256 << 10
)

var (
	moduleRoot string // the directory holding go.mod, found in TestMain

	buildDirOnce sync.Once
	buildDir     string // temporary directory for binaries built by the tests
	buildDirErr  error

	edgeapiBin = &binary{env: "EDGEAPI_BIN", pkg: "./daemon", name: "edgeapi"}
	// emulatedDaemon: EDGEAPI_E2E_EMULATED=1 says that EDGEAPI_BIN runs
	// the daemon under qemu user-mode emulation (scripts/test-arch runs
	// the API tests against the arm64 and armv7 builds so). The process
	// is then qemu's: its RSS holds the emulator and its translated code
	// too, so the peak-RSS ceilings, which are about the daemon's own
	// memory, are not checked (checkPeakRSSUnder says so in the log).
	emulatedDaemon = os.Getenv("EDGEAPI_E2E_EMULATED") == "1"
	kubectlBin     = &binary{env: "KUBECTL_BIN", pkg: "./scripts/kubectl", name: "kubectl"}
)

func TestMain(m *testing.M) {
	if os.Getenv(envLeaderCandidate) != "" {
		os.Exit(runLeaderCandidate())
	}
	root, err := findModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	moduleRoot = root
	if onEtcd() {
		if e2eEtcd, err = startEtcd(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if e2eEtcd != nil {
		e2eEtcd.stop()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// binary is a program the tests run: the path in env, or else pkg built once
// per test run into buildDir.
type binary struct {
	env, pkg, name string

	once sync.Once
	path string
	err  error
}

// Path returns the binary's path, building it on first use if its
// environment variable is unset. A failed build fails t.
func (b *binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if p := os.Getenv(b.env); p != "" {
			b.path, b.err = p, nil
			if _, err := os.Stat(p); err != nil {
				b.err = fmt.Errorf("%s=%s: %w", b.env, p, err)
			}
			return
		}
		buildDirOnce.Do(func() { buildDir, buildDirErr = os.MkdirTemp("", "edgeapi-e2e-bin-") })
		if buildDirErr != nil {
			b.err = buildDirErr
			return
		}
		out := filepath.Join(buildDir, b.name)
		cmd := exec.Command("go", "build", "-o", out, b.pkg)
		cmd.Dir = moduleRoot
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s is unset and `go build -o %s %s` failed: %v\n%s", b.env, out, b.pkg, err, msg)
			return
		}
		b.path = out
	})
	if b.err != nil {
		t.Fatalf("%s: %v", b.name, b.err)
	}
	return b.path
}

// Daemon is one running edgeapi process on a loopback port.
type Daemon struct {
	t testing.TB

	DataDir string
	// Addr is the address tests talk to: the plain-HTTP --insecure-listen
	// address, or with DaemonOptions.TLS the HTTPS --listen address.
	Addr string // 127.0.0.1:PORT
	URL  string // http://127.0.0.1:PORT, or https:// with TLS
	// Kubeconfig is the kubeconfig the daemon wrote for Addr:
	// DataDir/kubeconfig-insecure, or DataDir/kubeconfig with TLS.
	Kubeconfig string
	// TLS: the daemon was started with DaemonOptions.TLS.
	TLS bool

	home string // HOME for kubectl, so its discovery cache is per daemon

	clientOnce sync.Once
	client     *http.Client // see HTTPClient

	cmd     *exec.Cmd
	output  *logBuffer
	exited  chan struct{} // closed when the process has been reaped
	exitErr error         // cmd.Wait's result, valid after exited is closed
}

// DaemonOptions configures StartDaemon.
type DaemonOptions struct {
	// DataDir is reused when set (restart after a crash); otherwise a fresh
	// t.TempDir().
	DataDir string
	// Args are extra `edgeapi serve` flags, after --data-dir and --listen.
	Args []string
	// Env is added to the daemon's environment.
	Env []string
	// TLS makes the tests talk HTTPS to --listen, with the generated
	// kubeconfig (CA and admin client certificate). Without it the daemon
	// also serves plain HTTP on a loopback --insecure-listen address,
	// which Addr, URL and Kubeconfig name: tests that are not about
	// security use that, as issue 11 allows.
	TLS bool
	// ListenHost, with TLS, is the host of --listen (127.0.0.1 when
	// empty); Addr stays on loopback. "0.0.0.0" lets a test reach the
	// daemon from this machine's other addresses, as a remote client.
	ListenHost string
	// SQLite keeps the daemon on the SQLite backend in an etcd run too
	// (EDGEAPI_E2E_BACKEND=etcd), for a test about the SQLite data dir
	// itself, such as a migration from it.
	SQLite bool
	// SysProcAttr, when set, is the daemon process's (for example a user
	// namespace of its own).
	SysProcAttr *syscall.SysProcAttr
}

// StartDaemon starts edgeapi, waits until /readyz answers 200 and the
// kubeconfig exists, and stops it with SIGTERM when the test ends. If the
// test fails, the daemon's output is written to the test log.
func StartDaemon(t testing.TB, opts ...DaemonOptions) *Daemon {
	t.Helper()
	var o DaemonOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	d, err := TryStartDaemon(t, o)
	if err != nil {
		t.Fatalf("start edgeapi: %v", err)
	}
	return d
}

// TryStartDaemon is StartDaemon for a test that expects the daemon may not
// start: it returns the error (with the daemon's output) instead of
// failing t.
func TryStartDaemon(t testing.TB, o DaemonOptions) (*Daemon, error) {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	bin := edgeapiBin.Path(t)

	// A free port can be taken by someone else between our probe and the
	// daemon's bind, so retry a few times when the daemon exits early.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		d, err := startDaemonOnce(t, bin, o)
		if err == nil {
			return d, nil
		}
		lastErr = err
		if !strings.Contains(d.output.String(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startDaemonOnce(t testing.TB, bin string, o DaemonOptions) (*Daemon, error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return &Daemon{output: &logBuffer{}}, err
	}
	d := &Daemon{
		t:       t,
		DataDir: o.DataDir,
		Addr:    fmt.Sprintf("127.0.0.1:%d", port),
		TLS:     o.TLS,
		home:    t.TempDir(),
		output:  &logBuffer{},
		exited:  make(chan struct{}),
	}
	args := []string{"serve", "--data-dir", o.DataDir}
	if !o.SQLite {
		args = append(args, backendArgs(o.DataDir)...)
	}
	if o.TLS {
		d.URL = "https://" + d.Addr
		d.Kubeconfig = filepath.Join(o.DataDir, "kubeconfig")
		args = append(args, "--listen", net.JoinHostPort(cmp.Or(o.ListenHost, "127.0.0.1"), strconv.Itoa(port)))
	} else {
		d.URL = "http://" + d.Addr
		d.Kubeconfig = filepath.Join(o.DataDir, "kubeconfig-insecure")
		args = append(args, "--listen", "127.0.0.1:0", "--insecure-listen", d.Addr)
	}
	// A stale kubeconfig from an earlier run on this data dir names the old
	// port; wait for the new one.
	os.Remove(d.Kubeconfig)

	d.cmd = exec.Command(bin, append(args, o.Args...)...)
	if len(o.Env) > 0 {
		d.cmd.Env = append(os.Environ(), o.Env...)
	}
	d.cmd.SysProcAttr = o.SysProcAttr
	d.cmd.Stdout = d.output
	d.cmd.Stderr = d.output
	if err := d.cmd.Start(); err != nil {
		return d, fmt.Errorf("exec %s: %w", bin, err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Logf("edgeapi on %s: stop: %v", d.Addr, err)
		}
		if t.Failed() {
			t.Logf("edgeapi on %s (data dir %s) output:\n%s", d.Addr, d.DataDir, d.output.String())
		}
	})
	if err := d.waitReady(); err != nil {
		return d, err
	}
	return d, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /readyz until 200 and then waits for the kubeconfig.
func (d *Daemon) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	client := &http.Client{Timeout: 2 * time.Second}
	if d.TLS {
		// Before the kubeconfig is written there is no CA to check the
		// certificate against; readiness is all this asks.
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	}
	var last string
	for {
		select {
		case <-d.exited:
			return fmt.Errorf("edgeapi exited before it was ready (%v); output:\n%s", d.exitErr, d.output.String())
		default:
		}
		resp, err := client.Get(d.URL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("GET /readyz: %d %q", resp.StatusCode, body)
			if resp.StatusCode == http.StatusUnauthorized && d.TLS {
				// --anonymous-auth=false: ask as the admin of the
				// kubeconfig, once it is written.
				if cfg, err := clientcmd.BuildConfigFromFlags("", d.Kubeconfig); err == nil {
					if c, err := rest.HTTPClientFor(cfg); err == nil {
						c.Timeout = 2 * time.Second
						client = c
					}
				}
			}
			if resp.StatusCode == http.StatusOK {
				if _, err := os.Stat(d.Kubeconfig); err == nil {
					return nil
				}
				last = "readyz is 200 but " + d.Kubeconfig + " does not exist"
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("edgeapi on %s not ready after %v: %s", d.Addr, readyTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after
// stopTimeout). It returns the process's exit error; nil means exit status 0.
// Calling Stop again returns the first result.
func (d *Daemon) Stop() error {
	select {
	case <-d.exited:
		return d.exitErr
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return d.exitErr
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("did not exit within %v of SIGTERM; killed", stopTimeout)
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (d *Daemon) Kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// HTTPClient returns the client for raw requests to d.URL: with TLS, one
// with the kubeconfig's CA and admin client certificate (made once);
// otherwise http.DefaultClient.
func (d *Daemon) HTTPClient() *http.Client {
	if !d.TLS {
		return http.DefaultClient
	}
	d.clientOnce.Do(func() {
		c, err := rest.HTTPClientFor(d.RESTConfig())
		if err != nil {
			d.t.Fatalf("http client for %s: %v", d.Kubeconfig, err)
		}
		d.client = c
	})
	return d.client
}

// RESTConfig returns a client config read from the daemon's kubeconfig,
// without client-side rate limiting.
func (d *Daemon) RESTConfig() *rest.Config {
	d.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", d.Kubeconfig)
	if err != nil {
		d.t.Fatalf("load %s: %v", d.Kubeconfig, err)
	}
	cfg.QPS = -1 // no client-side rate limiting
	cfg.Burst = 0
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "edgeapi-e2e"
	return cfg
}

// Clientset returns a typed client-go clientset for the daemon.
func (d *Daemon) Clientset() kubernetes.Interface {
	d.t.Helper()
	cs, err := kubernetes.NewForConfig(d.RESTConfig())
	if err != nil {
		d.t.Fatalf("new clientset: %v", err)
	}
	return cs
}

// Dynamic returns a dynamic client for the daemon.
func (d *Daemon) Dynamic() dynamic.Interface {
	d.t.Helper()
	dc, err := dynamic.NewForConfig(d.RESTConfig())
	if err != nil {
		d.t.Fatalf("new dynamic client: %v", err)
	}
	return dc
}

// KubectlResult is the outcome of one kubectl run.
type KubectlResult struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
}

func (r KubectlResult) String() string {
	return fmt.Sprintf("kubectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.ExitCode, r.Stdout, r.Stderr)
}

// Kubectl runs kubectl against the daemon with --kubeconfig.
func (d *Daemon) Kubectl(args ...string) KubectlResult {
	d.t.Helper()
	return d.KubectlStdin("", args...)
}

// KubectlStdin runs kubectl with stdin (for `-f -`).
func (d *Daemon) KubectlStdin(stdin string, args ...string) KubectlResult {
	d.t.Helper()
	return d.KubectlEnv(nil, stdin, args...)
}

// KubectlEnv runs kubectl with stdin and extra environment variables
// (KUBE_EDITOR for `kubectl edit`).
func (d *Daemon) KubectlEnv(env []string, stdin string, args ...string) KubectlResult {
	d.t.Helper()
	full := append([]string{"--kubeconfig", d.Kubeconfig}, args...)
	stdout, stderr, code := runTool(d.t, kubectlBin.Path(d.t), full, append([]string{"HOME=" + d.home, "KUBECONFIG="}, env...), stdin)
	return KubectlResult{Args: args, Stdout: stdout, Stderr: stderr, ExitCode: code}
}

// runTool runs a client binary (kubectl, helm) with args, env added to the
// test's environment and stdin, bounded by twice the request timeout. It
// returns its output and exit code, and fails the test when it cannot run.
func runTool(t testing.TB, bin string, args, env []string, stdin string) (stdout, stderr string, exitCode int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
	default:
		t.Fatalf("run %s %v: %v", filepath.Base(bin), args, err)
	}
	return out.String(), errOut.String(), exitCode
}

// MustKubectl runs kubectl and fails the test unless it exits 0.
func (d *Daemon) MustKubectl(args ...string) KubectlResult {
	d.t.Helper()
	res := d.Kubectl(args...)
	if res.ExitCode != 0 {
		d.t.Fatalf("%s", res)
	}
	return res
}

// logBuffer is an io.Writer safe for concurrent use that keeps the last
// maxLogBytes of output.
type logBuffer struct {
	mu      sync.Mutex // guards buf, dropped and panics
	buf     []byte
	dropped int
	// panics counts the handler panics net/http logged, even those
	// dropped from buf.
	panics int
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.panics += bytes.Count(p, []byte("http: panic serving"))
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - maxLogBytes; over > 0 {
		b.dropped += over
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// Panics returns how many handler panics net/http has logged (it recovers
// them and closes the connection).
func (b *logBuffer) Panics() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.panics
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("[... %d bytes dropped ...]\n%s", b.dropped, b.buf)
	}
	return string(b.buf)
}
