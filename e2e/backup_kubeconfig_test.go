package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// backupTokenKubeconfig writes a kubeconfig for d's HTTPS server that trusts
// d's CA from a file (named relative to the kubeconfig, as kubectl allows)
// and sends token, and returns its path.
func backupTokenKubeconfig(t *testing.T, d *Daemon, token string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), d.RESTConfig().CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority: ca.crt}
users:
- name: u
  user: {token: %q}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, d.URL, token)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBackup_kubeconfig fetches backups from a daemon serving HTTPS with
// RBAC, with `edgeapi backup --kubeconfig`: as the admin of the data dir's
// kubeconfig (client certificate) and with a system:masters token, the
// copy restores and checks clean and holds the objects created before;
// an ordinary user (a token, or a client certificate the daemon's CA
// issued) gets the daemon's 403 and no file.
func TestBackup_kubeconfig(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	d := startAuthDaemon(t)
	ctx := context.Background()
	cs := d.Clientset()
	createNamespace(t, cs, "bk")
	for i := range 20 {
		_, err := cs.CoreV1().ConfigMaps("bk").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()

	for _, c := range []struct{ name, kubeconfig string }{
		{"admin client certificate (the data dir's kubeconfig)", d.Kubeconfig},
		{"system:masters token", backupTokenKubeconfig(t, d, adminToken)},
	} {
		to := filepath.Join(dir, strings.Fields(c.name)[1]+".backup")
		out, errOut, code := edgeapiTool(t, "backup", "--kubeconfig", c.kubeconfig, "--to", to)
		if code != 0 {
			t.Errorf("%s: edgeapi backup --kubeconfig: exit %d: %s%s", c.name, code, out, errOut)
			continue
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(out))
		b, err := os.ReadFile(to)
		if err != nil || !bytes.HasPrefix(b, []byte("SQLite format 3\x00")) {
			t.Errorf("%s: backup file: %v, %d bytes; want an SQLite file", c.name, err, len(b))
			continue
		}
		restored := t.TempDir()
		out, errOut, code = edgeapiTool(t, "restore", "--from", to, "--data-dir", restored)
		if code != 0 {
			t.Errorf("%s: edgeapi restore: exit %d: %s%s", c.name, code, out, errOut)
			continue
		}
		d2 := StartDaemon(t, DaemonOptions{DataDir: restored})
		if got := listCMs(t, d2, "bk"); len(got.objects) != 20 {
			t.Errorf("%s: restored backup holds %d ConfigMaps, want 20", c.name, len(got.objects))
		}
		if err := d2.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	certKC := filepath.Join(dir, "dave.kubeconfig")
	if out, errOut, code := edgeapiTool(t, "kubeconfig", "--data-dir", d.DataDir, "--user", "dave", "--group", "devs", "-o", certKC); code != 0 {
		t.Fatalf("edgeapi kubeconfig: exit %d: %s%s", code, out, errOut)
	}
	for _, c := range []struct{ name, kubeconfig, user string }{
		{"token of alice", backupTokenKubeconfig(t, d, aliceToken), "alice"},
		{"client certificate of dave", certKC, "dave"},
	} {
		to := filepath.Join(dir, "refused.backup")
		out, errOut, code := edgeapiTool(t, "backup", "--kubeconfig", c.kubeconfig, "--to", to)
		want := `403 Forbidden: forbidden: User "` + c.user + `" cannot get path "/debug/edgeapi/backup"`
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: edgeapi backup --kubeconfig: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.name, code, out, errOut, want)
		}
		if _, err := os.Stat(to); !os.IsNotExist(err) {
			t.Errorf("%s: refused backup left %s (%v)", c.name, to, err)
		}
		if _, err := os.Stat(to + ".partial"); !os.IsNotExist(err) {
			t.Errorf("%s: refused backup left %s.partial (%v)", c.name, to, err)
		}
	}

	// A kubeconfig that needs what the client does not do is refused
	// before anything is sent.
	plugin := filepath.Join(dir, "exec.kubeconfig")
	if err := os.WriteFile(plugin, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+d.URL+`"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/false}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := edgeapiTool(t, "backup", "--kubeconfig", plugin, "--to", filepath.Join(dir, "x")); code != 1 || !strings.Contains(errOut, "exec and auth-provider plugins are not supported") {
		t.Errorf("backup with an exec plugin kubeconfig: exit %d, stderr %q", code, errOut)
	}
}
