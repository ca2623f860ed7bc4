package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These tests drive the TLS daemon with the official clients other than
// kubectl and client-go: the Python client and @kubernetes/client-node.
// Each loads the kubeconfig the daemon wrote, unchanged, and runs a script
// in e2e/testdata/clients that creates, gets, lists, watches and deletes
// ConfigMaps, checking every answer; the test then checks with client-go
// what the script left behind. scripts/test-deps (run by scripts/test)
// installs the clients; a test whose client is missing skips and says why.

// clientScript is the outcome of one client script run.
type clientScript struct {
	out  string
	err  error
	code int
}

// runClientScript runs interpreter with args, bounded by twice the request
// timeout, and returns its combined output.
func runClientScript(t *testing.T, dir, interpreter string, args ...string) clientScript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, args...)
	cmd.Dir = dir
	// No proxy: the daemon is on loopback, and a proxy from the
	// environment would see the request instead of it.
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "https_proxy=", "HTTP_PROXY=", "http_proxy=", "NO_PROXY=", "no_proxy=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	res := clientScript{out: out.String(), err: err}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		res.code = exitErr.ExitCode()
	}
	return res
}

// checkClientScriptResult fails t unless the script ended with "done", the
// kubeconfig is byte for byte what the daemon wrote, and ns holds exactly
// the ConfigMaps prefix-b and prefix-kept (with data written-by: by)
// besides kube-root-ca.crt, if the daemon publishes it.
func checkClientScriptResult(t *testing.T, d *Daemon, res clientScript, kubeconfigBefore []byte, ns, prefix, by string) {
	t.Helper()
	t.Logf("client output:\n%s", res.out)
	if res.err != nil || !strings.HasSuffix(strings.TrimSpace(res.out), "done") {
		t.Fatalf("client script: %v (exit %d), want exit 0 ending in \"done\"", res.err, res.code)
	}
	after, err := os.ReadFile(d.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, kubeconfigBefore) {
		t.Error("the kubeconfig changed while the client used it")
	}
	list, err := d.Clientset().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		names = append(names, cm.Name)
		switch cm.Name {
		case prefix + "-b":
			if got, want := cm.Data["key"], "value of "+cm.Name; got != want {
				t.Errorf("%s data[key] = %q, want %q", cm.Name, got, want)
			}
		case prefix + "-kept":
			if got, want := cm.Data["written-by"], by; got != want {
				t.Errorf("%s data[written-by] = %q, want %q", cm.Name, got, want)
			}
		}
	}
	if got, want := strings.Join(names, ","), prefix+"-b,"+prefix+"-kept"; got != want {
		t.Errorf("ConfigMaps in %s after the client = %q, want %q", ns, got, want)
	}
}

// pythonForClients returns the interpreter that has Debian's
// python3-kubernetes (EDGEAPI_PYTHON, default /usr/bin/python3: python3 on
// PATH may be a pyenv shim without it), or skips t saying why.
func pythonForClients(t *testing.T) string {
	t.Helper()
	python := os.Getenv("EDGEAPI_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	if _, err := os.Stat(python); err != nil {
		t.Skipf("skipped: no Python interpreter at %s (set EDGEAPI_PYTHON): %v", python, err)
	}
	out, err := exec.Command(python, "-c", "import kubernetes; print(kubernetes.__version__)").CombinedOutput()
	if err != nil {
		t.Skipf("skipped: %s cannot import the kubernetes client (scripts/test-deps installs python3-kubernetes as root): %v\n%s", python, err, out)
	}
	t.Logf("%s, kubernetes client %s", python, strings.TrimSpace(string(out)))
	return python
}

// TestClients_Python: the Python client (python3-kubernetes) loads the
// written kubeconfig with config.load_kube_config and creates, gets,
// lists, watches and deletes ConfigMaps over TLS with the admin client
// certificate.
func TestClients_Python(t *testing.T) {
	t.Parallel()
	python := pythonForClients(t)
	d := StartDaemon(t, DaemonOptions{TLS: true})
	before, err := os.ReadFile(d.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "python-client"
	createNamespace(t, d.Clientset(), ns)
	script := filepath.Join(moduleRoot, "e2e", "testdata", "clients", "python_client.py")
	res := runClientScript(t, t.TempDir(), python, script, d.Kubeconfig, ns)
	checkClientScriptResult(t, d, res, before, ns, "py", "python")
}

// clientNodeModules returns the node_modules directory holding
// @kubernetes/client-node (EDGEAPI_NODE_MODULES, default .cache/node/
// node_modules, where scripts/test-deps installs it) and node, or skips t
// saying why.
func clientNodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("skipped: node not on PATH: %v", err)
	}
	modules = os.Getenv("EDGEAPI_NODE_MODULES")
	if modules == "" {
		modules = filepath.Join(moduleRoot, ".cache", "node", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(modules, "@kubernetes", "client-node", "package.json")); err != nil {
		t.Skipf("skipped: @kubernetes/client-node is not installed in %s (run scripts/test-deps, which needs npm and the network): %v", modules, err)
	}
	return node, modules
}

// TestClients_ClientNode: @kubernetes/client-node loads the written
// kubeconfig with KubeConfig.loadFromFile and creates, gets, lists,
// watches and deletes ConfigMaps over TLS with the admin client
// certificate.
func TestClients_ClientNode(t *testing.T) {
	t.Parallel()
	node, modules := clientNodeModules(t)
	d := StartDaemon(t, DaemonOptions{TLS: true})
	before, err := os.ReadFile(d.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "node-client"
	createNamespace(t, d.Clientset(), ns)

	// An ES module resolves packages from node_modules beside it: put the
	// script next to a link to the installed tree.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(moduleRoot, "e2e", "testdata", "clients", "client_node.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client_node.mjs"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	res := runClientScript(t, dir, node, "client_node.mjs", d.Kubeconfig, ns)
	checkClientScriptResult(t, d, res, before, ns, "js", "node")
}
