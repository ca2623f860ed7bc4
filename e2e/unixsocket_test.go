package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// unixSocketDaemon is a daemon serving --unix-socket, and where.
type unixSocketDaemon struct {
	*Daemon
	Socket string
}

// startUnixSocketDaemon starts edgeapi with TLS and --unix-socket, and no
// --insecure-listen: nothing on it is served without authentication. The
// socket is in a directory every user may enter, as /run/edgeapi is.
func startUnixSocketDaemon(t *testing.T, o DaemonOptions) *unixSocketDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "edgeapi-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "edgeapi.sock")
	o.TLS = true
	o.Args = append(o.Args, "--unix-socket", socket)
	return &unixSocketDaemon{Daemon: StartDaemon(t, o), Socket: socket}
}

// unixRESTConfig is client-go's way to the socket: a plain-HTTP host whose
// connections are dialled on the socket (client-go does not read a
// unix:// server).
func unixRESTConfig(socket string) *rest.Config {
	return &rest.Config{
		Host: "http://localhost",
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		QPS:       -1,
		Timeout:   requestTimeout,
		UserAgent: "edgeapi-e2e",
	}
}

func unixClientset(t *testing.T, socket string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(unixRESTConfig(socket))
	if err != nil {
		t.Fatalf("new clientset: %v", err)
	}
	return cs
}

// TestUnixSocket_ClientGo: client-go with a Dial to the socket, as root:
// root is in system:masters, so with RBAC on and no binding it may read
// every Secret; an informer lists, watches and sees a new object.
func TestUnixSocket_ClientGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("the test expects uid 0 (system:masters on the socket); running as uid %d", os.Geteuid())
	}
	d := startUnixSocketDaemon(t, DaemonOptions{})
	cs := unixClientset(t, d.Socket)
	ctx := context.Background()
	createNamespace(t, cs, "unix")
	if _, err := cs.CoreV1().Secrets("unix").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret as root: %v", err)
	}
	if _, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list secrets in every namespace as root: %v", err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("unix"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	added := make(chan string, 16)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		added <- obj.(*corev1.ConfigMap).Name
	}})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync over the unix socket")
	}
	if _, err := cs.CoreV1().ConfigMaps("unix").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-sync"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case name := <-added:
			if name == "after-sync" {
				return
			}
		case <-time.After(eventually):
			t.Fatal("the informer did not see the configmap created after it synced")
		}
	}
}

// TestUnixSocket_File: the socket is mode 0666, a stale one left by a
// killed daemon is replaced at the next start, and a clean stop removes it.
func TestUnixSocket_File(t *testing.T) {
	d := startUnixSocketDaemon(t, DaemonOptions{})
	fi, err := os.Lstat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode(), os.ModeSocket|0o666; got != want {
		t.Errorf("socket mode: got %v, want %v", got, want)
	}
	d.Kill()
	if _, err := os.Lstat(d.Socket); err != nil {
		t.Fatalf("after SIGKILL the socket should still be there (stale): %v", err)
	}
	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir, TLS: true, Args: []string{"--unix-socket", d.Socket}})
	if _, err := unixClientset(t, d.Socket).Discovery().ServerVersion(); err != nil {
		t.Fatalf("the restarted daemon does not serve the socket: %v", err)
	}
	if err := d2.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Lstat(d.Socket); !os.IsNotExist(err) {
		t.Errorf("after a clean stop: Lstat got %v, want the socket removed", err)
	}
}

// unixUser is a Unix user a test created, with a supplementary group of
// its own.
type unixUser struct {
	Name, Group string
	UID, GID    uint32 // GID is the user's primary group
	GroupGID    uint32 // the supplementary group's
	Home        string // HOME for its clients, owned by it
}

// createUnixUser creates a Unix user and a group it is a member of, and
// deletes both when the test ends. It skips the test, saying why, when it
// cannot (not root, no useradd).
func createUnixUser(t *testing.T) *unixUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: creating a second Unix user with useradd needs root; running as uid %d", os.Geteuid())
	}
	for _, tool := range []string{"useradd", "userdel", "groupadd", "groupdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s not found (%v); it creates the second Unix user", tool, err)
		}
	}
	suffix := strings.ToLower(rand.Text()[:8])
	u := &unixUser{Name: "edgeapi-e2e-" + suffix, Group: "edgeapi-e2e-g-" + suffix}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("groupadd", u.Group)
	t.Cleanup(func() { exec.Command("groupdel", u.Group).Run() })
	run("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", u.Group, u.Name)
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", u.Name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v\n%s", u.Name, err, out)
		}
	})
	pu, err := user.Lookup(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(u.Group)
	if err != nil {
		t.Fatal(err)
	}
	u.UID, u.GID, u.GroupGID = parseID(t, pu.Uid), parseID(t, pu.Gid), parseID(t, g.Gid)
	home, err := os.MkdirTemp("", "edgeapi-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chown(home, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	u.Home = home
	return u
}

func parseID(t *testing.T, s string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatalf("id %q: %v", s, err)
	}
	return uint32(n)
}

// command returns bin with args, to run as u with its primary and
// supplementary groups (as a login would set them).
func (u *unixUser) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{u.GID, u.GroupGID}}}
	cmd.Env = []string{"HOME=" + u.Home, "PATH=/usr/bin:/bin", "KUBECONFIG="}
	cmd.Dir = u.Home
	return cmd
}

// sharedBinaries puts the unixclient helper, edgeapi and kubectl in a
// directory every user may run them from (the test's build directory is
// root's alone).
type sharedBinaries struct{ UnixClient, Edgeapi, Kubectl string }

func shareBinaries(t *testing.T) sharedBinaries {
	t.Helper()
	dir, err := os.MkdirTemp("", "edgeapi-e2e-unixbin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := sharedBinaries{
		UnixClient: filepath.Join(dir, "unixclient"),
		Edgeapi:    filepath.Join(dir, "edgeapi"),
		Kubectl:    filepath.Join(dir, "kubectl"),
	}
	cmd := exec.Command("go", "build", "-o", b.UnixClient, "./e2e/internal/unixclient")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build unixclient: %v\n%s", err, out)
	}
	for src, dst := range map[string]string{edgeapiBin.Path(t): b.Edgeapi, kubectlBin.Path(t): b.Kubectl} {
		if err := os.Link(src, dst); err != nil {
			copyFile(t, src, dst)
		}
		if err := os.Chmod(dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// unixResponse is one response printed by unixclient.
type unixResponse struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// unixClientRun is what unixclient printed: its responses and how many
// connections it opened.
type unixClientRun struct {
	Responses []unixResponse
	Dials     int
}

// runUnixClient runs unixclient (as u, or as the test's user when u is
// nil) with the requests reqs ("METHOD PATH [BODY]") on one connection.
func runUnixClient(t *testing.T, bins sharedBinaries, u *unixUser, socket string, reqs ...string) unixClientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	args := append([]string{socket}, reqs...)
	var cmd *exec.Cmd
	if u != nil {
		cmd = u.command(ctx, bins.UnixClient, args...)
	} else {
		cmd = exec.CommandContext(ctx, bins.UnixClient, args...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unixclient %q: %v\n%s", reqs, err, stderr.String())
	}
	var run unixClientRun
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var line struct {
			unixResponse
			Dials *int `json:"dials"`
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("unixclient output %q: %v", out, err)
		}
		if line.Dials != nil {
			run.Dials = *line.Dials
			continue
		}
		run.Responses = append(run.Responses, line.unixResponse)
	}
	if len(run.Responses) != len(reqs) {
		t.Fatalf("unixclient: %d responses for %d requests:\n%s", len(run.Responses), len(reqs), out)
	}
	return run
}

// forbiddenMessage is kube-apiserver's 403 message for a namespaced
// request on a core resource.
func forbiddenMessage(userName, verb, resource, ns string) string {
	return fmt.Sprintf(`%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"\" in the namespace \"%s\"`, resource, userName, verb, resource, ns)
}

// bindRole binds ClusterRole role in ns to subject, and waits until the
// RBAC index has it: until probe, run as the subject, answers 200.
func bindRole(t *testing.T, cs kubernetes.Interface, ns, name, role string, subject rbacv1.Subject, probe func() int) {
	t.Helper()
	_, err := cs.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create rolebinding %s: %v", name, err)
	}
	deadline := time.Now().Add(eventually)
	for {
		got := probe()
		if got/100 == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rolebinding %s to %s %s: the subject still gets %d after %v", name, subject.Kind, subject.Name, got, eventually)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnixSocket_SecondUser: another Unix user on the socket is that user
// to RBAC, with its groups: denied (403 naming it) until a RoleBinding
// names it or one of its groups; root is system:masters. Then the same
// through `edgeapi proxy` and kubectl, which only forwards its own user's
// connections.
func TestUnixSocket_SecondUser(t *testing.T) {
	u := createUnixUser(t)
	bins := shareBinaries(t)
	d := startUnixSocketDaemon(t, DaemonOptions{})
	admin := unixClientset(t, d.Socket)
	const ns = "unix-users"
	createNamespace(t, admin, ns)
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list := "GET /api/v1/namespaces/" + ns + "/configmaps"
	create := "POST /api/v1/namespaces/" + ns + `/configmaps {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-group"}}`
	secrets := "GET /api/v1/namespaces/" + ns + "/secrets"

	t.Run("root is system:masters", func(t *testing.T) {
		run := runUnixClient(t, bins, nil, d.Socket, "GET /api/v1/secrets")
		if got := run.Responses[0]; got.Status != 200 {
			t.Errorf("root lists every Secret: got %d %s, want 200", got.Status, got.Body)
		}
	})

	t.Run("denied without a binding", func(t *testing.T) {
		run := runUnixClient(t, bins, u, d.Socket, list, create)
		for i, verb := range []string{"list", "create"} {
			got := run.Responses[i]
			if want := forbiddenMessage(u.Name, verb, "configmaps", ns); got.Status != 403 || !strings.Contains(got.Body, want) {
				t.Errorf("%s: got %d %s, want 403 with %s", verb, got.Status, got.Body, want)
			}
		}
	})

	t.Run("allowed once a RoleBinding names the user", func(t *testing.T) {
		bindRole(t, admin, ns, "user-view", "view", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.Name}, func() int {
			return runUnixClient(t, bins, u, d.Socket, list).Responses[0].Status
		})
		run := runUnixClient(t, bins, u, d.Socket, list, secrets)
		if got := run.Responses[0]; got.Status != 200 || !strings.Contains(got.Body, `"name":"seen"`) {
			t.Errorf("list: got %d %s, want 200 with the configmap", got.Status, got.Body)
		}
		// view does not read Secrets.
		if got, want := run.Responses[1], forbiddenMessage(u.Name, "list", "secrets", ns); got.Status != 403 || !strings.Contains(got.Body, want) {
			t.Errorf("secrets: got %d %s, want 403 with %s", got.Status, got.Body, want)
		}
	})

	t.Run("allowed once a RoleBinding names one of its groups", func(t *testing.T) {
		bindRole(t, admin, ns, "group-edit", "edit", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: u.Group}, func() int {
			return runUnixClient(t, bins, u, d.Socket, create).Responses[0].Status
		})
		if _, err := admin.CoreV1().ConfigMaps(ns).Get(context.Background(), "by-group", metav1.GetOptions{}); err != nil {
			t.Errorf("the configmap the user created through its group: %v", err)
		}
	})

	t.Run("whoami", func(t *testing.T) {
		run := runUnixClient(t, bins, u, d.Socket, `POST /apis/authentication.k8s.io/v1/selfsubjectreviews {"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
		got := run.Responses[0]
		var review struct {
			Status struct {
				UserInfo struct {
					Username string   `json:"username"`
					UID      string   `json:"uid"`
					Groups   []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(got.Body), &review); err != nil || got.Status != 201 {
			t.Fatalf("SelfSubjectReview: got %d %s (%v), want 201", got.Status, got.Body, err)
		}
		ui := review.Status.UserInfo
		primary, err := user.LookupGroupId(strconv.Itoa(int(u.GID)))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{primary.Name, u.Group, "system:authenticated"}
		if ui.Username != u.Name || ui.UID != strconv.Itoa(int(u.UID)) || strings.Join(ui.Groups, ",") != strings.Join(want, ",") {
			t.Errorf("got %q uid %q groups %q, want %q uid %d groups %q", ui.Username, ui.UID, ui.Groups, u.Name, u.UID, want)
		}
	})

	t.Run("kubectl through edgeapi proxy", func(t *testing.T) {
		// The user's own proxy: kubectl is the user, as on the socket.
		userProxy := startProxy(t, u, bins, d.Socket)
		res := runKubectlAs(t, u, bins, "--server", "http://"+userProxy, "get", "configmaps", "-n", ns, "-o", "name")
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, "configmap/seen") {
			t.Errorf("as %s: %s", u.Name, res)
		}
		// edit and view grant nothing on RBAC objects.
		res = runKubectlAs(t, u, bins, "--server", "http://"+userProxy, "get", "rolebindings", "-n", ns)
		if want := `User "` + u.Name + `" cannot list resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "` + ns + `"`; res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("as %s, rolebindings: want a failure with %s; %s", u.Name, want, res)
		}
		// root's proxy does not lend root's identity to the user.
		rootProxy := startProxy(t, nil, bins, d.Socket)
		res = runKubectlAs(t, u, bins, "--server", "http://"+rootProxy, "get", "secrets", "-n", ns)
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Forbidden") {
			t.Errorf("as %s through root's proxy: want Forbidden; %s", u.Name, res)
		}
		res = runKubectlAs(t, nil, bins, "--server", "http://"+rootProxy, "get", "secrets", "-n", ns)
		if res.ExitCode != 0 {
			t.Errorf("as root through root's proxy: %s", res)
		}
	})
}

// startProxy starts `edgeapi proxy --port 0` as u (nil: the test's user)
// and returns the address it serves.
func startProxy(t *testing.T, u *unixUser, bins sharedBinaries, socket string) string {
	t.Helper()
	args := []string{"proxy", "--unix-socket", socket, "--port", "0"}
	var cmd *exec.Cmd
	if u != nil {
		cmd = u.command(context.Background(), bins.Edgeapi, args...)
	} else {
		cmd = exec.Command(bins.Edgeapi, args...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr logBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start edgeapi proxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("edgeapi proxy stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "Starting to serve on ")
	if err != nil || !ok {
		t.Fatalf("edgeapi proxy printed %q (%v), want its address", line, err)
	}
	return addr
}

// runKubectlAs runs kubectl as u (nil: the test's user).
func runKubectlAs(t *testing.T, u *unixUser, bins sharedBinaries, args ...string) KubectlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if u != nil {
		cmd = u.command(ctx, bins.Kubectl, args...)
	} else {
		cmd = exec.CommandContext(ctx, bins.Kubectl, args...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := KubectlResult{Args: args, Stdout: out.String(), Stderr: errOut.String()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		res.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("run kubectl %v: %v", args, err)
	}
	return res
}

// TestUnixSocket_WatchThenRequest: an HTTP/1.1 watch takes its connection
// over and hands it back to the server when it ends; the next request on
// that connection is still the peer's, not anyone else's.
func TestUnixSocket_WatchThenRequest(t *testing.T) {
	u := createUnixUser(t)
	bins := shareBinaries(t)
	d := startUnixSocketDaemon(t, DaemonOptions{})
	admin := unixClientset(t, d.Socket)
	const ns = "unix-watch"
	createNamespace(t, admin, ns)
	list := "GET /api/v1/namespaces/" + ns + "/configmaps"
	bindRole(t, admin, ns, "user-view", "view", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.Name}, func() int {
		return runUnixClient(t, bins, u, d.Socket, list).Responses[0].Status
	})
	watch := "GET /api/v1/namespaces/" + ns + "/configmaps?watch=1&timeoutSeconds=1"

	t.Run("user", func(t *testing.T) {
		run := runUnixClient(t, bins, u, d.Socket, watch, "GET /api/v1/namespaces/"+ns+"/secrets", watch, list)
		if run.Dials != 1 {
			t.Fatalf("unixclient opened %d connections, want 1 (the watch's connection handed back)", run.Dials)
		}
		for i, want := range []int{200, 403, 200, 200} {
			if got := run.Responses[i]; got.Status != want {
				t.Errorf("request %d: got %d %s, want %d", i, got.Status, got.Body, want)
			}
		}
		if got, want := run.Responses[1].Body, forbiddenMessage(u.Name, "list", "secrets", ns); !strings.Contains(got, want) {
			t.Errorf("after the watch: got %s, want the 403 naming %s: %s", got, u.Name, want)
		}
	})
	t.Run("root", func(t *testing.T) {
		run := runUnixClient(t, bins, nil, d.Socket, watch, "GET /api/v1/secrets")
		if run.Dials != 1 {
			t.Fatalf("unixclient opened %d connections, want 1", run.Dials)
		}
		if got := run.Responses[1]; got.Status != 200 {
			t.Errorf("root after the watch: got %d %s, want 200 (system:masters)", got.Status, got.Body)
		}
	})
}

// TestUnixSocket_BadInput: garbage, and requests cut off mid-way, on the
// socket get no 5xx, create nothing, and leave the daemon serving.
func TestUnixSocket_BadInput(t *testing.T) {
	d := startUnixSocketDaemon(t, DaemonOptions{})
	admin := unixClientset(t, d.Socket)
	const ns = "unix-bad"
	createNamespace(t, admin, ns)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cut"},"data":{"k":"v"}}`
	cases := []struct {
		name  string
		send  string
		close bool // close right after sending instead of reading an answer
	}{
		{name: "TLS handshake", send: "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03garbage"},
		{name: "binary garbage", send: "\x00\xff\xfe\r\n\r\n\x00"},
		{name: "bad request line", send: "GARBAGE\r\n\r\n"},
		{name: "HTTP/2 preface", send: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"},
		{name: "huge header", send: "GET /api HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"},
		{name: "closed mid-header", send: "POST /api/v1/namespaces/" + ns + "/configmaps HTTP/1.1\r\nHost: x\r\nContent-Ty", close: true},
		{name: "closed mid-body", send: "POST /api/v1/namespaces/" + ns + "/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body[:len(body)/2], close: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", d.Socket)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(requestTimeout))
			c.Write([]byte(tc.send)) // the server may close before it has read all
			if tc.close {
				return
			}
			c.(*net.UnixConn).CloseWrite()
			answer, _ := io.ReadAll(c)
			if len(answer) == 0 {
				return // closed without an answer: fine
			}
			var code int
			if _, err := fmt.Sscanf(string(answer), "HTTP/1.1 %d", &code); err != nil || code/100 != 4 {
				t.Errorf("answer %.200q: want a 4xx or none", answer)
			}
		})
	}
	// The daemon still serves, created nothing, and nothing panicked.
	cms, err := admin.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after bad input: %v", err)
	}
	for _, cm := range cms.Items {
		if cm.Name == "cut" {
			t.Errorf("a request cut off mid-body created configmap %s", cm.Name)
		}
	}
	if n := d.output.Panics(); n != 0 {
		t.Errorf("the daemon logged %d handler panics", n)
	}
}

// TestUnixSocket_UserNamespace: in a user namespace that maps only root
// (as systemd's PrivateUsers=yes maps only root and the service's user),
// the kernel reports every other user on the socket as the same overflow
// uid; they get 401 instead of sharing that identity, and root is still
// system:masters.
func TestUnixSocket_UserNamespace(t *testing.T) {
	u := createUnixUser(t)
	bins := shareBinaries(t)
	d := startUnixSocketDaemon(t, DaemonOptions{SysProcAttr: &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
	}})
	if got := runUnixClient(t, bins, u, d.Socket, "GET /api").Responses[0]; got.Status != 401 {
		t.Errorf("%s, outside the daemon's user namespace: got %d %s, want 401", u.Name, got.Status, got.Body)
	}
	if got := runUnixClient(t, bins, nil, d.Socket, "GET /api/v1/secrets").Responses[0]; got.Status != 200 {
		t.Errorf("root: got %d %s, want 200", got.Status, got.Body)
	}
}
