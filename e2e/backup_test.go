package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "modernc.org/sqlite"
)

// edgeapiTool runs the edgeapi binary with args (a subcommand) and returns
// its output and exit code.
func edgeapiTool(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runTool(t, edgeapiBin.Path(t), args, nil, "")
}

// TestBackupRestore backs up a running daemon's data dir while a client
// writes, restores the backup into the stopped data dir and starts the
// daemon again: every object acknowledged before the backup began is
// there, the data dir checks clean before and after, new writes get
// revisions above every one handed out before, and a watch from an old
// resourceVersion gets 410 Gone.
func TestBackupRestore(t *testing.T) {
	requireSQLite(t)
	t.Run("edgeapi backup --data-dir", func(t *testing.T) { testBackupRestore(t, "data-dir") })
	t.Run("edgeapi backup --data-dir --direct", func(t *testing.T) { testBackupRestore(t, "direct") })
	t.Run("edgeapi backup --unix-socket", func(t *testing.T) { testBackupRestore(t, "unix-socket") })
	t.Run("GET /debug/edgeapi/backup", func(t *testing.T) { testBackupRestore(t, "http") })
}

// backupOverHTTP saves the running daemon's backup endpoint's answer to
// the file to.
func backupOverHTTP(t *testing.T, d *Daemon, to string) (string, error) {
	resp, err := d.HTTPClient().Get(d.URL + "/debug/edgeapi/backup")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fmt.Sprintf("%d bytes at revision %s", n, resp.Header.Get("X-Edgeapi-Revision")), err
}

// testBackupRestore is TestBackupRestore with the backup made by how:
// "data-dir" (edgeapi backup --data-dir, which asks the running daemon
// with the data dir's kubeconfig), "direct" (edgeapi backup --data-dir
// --direct, reading the database file beside it), "unix-socket" (edgeapi
// backup asking the daemon at its socket) or "http" (a GET of the
// endpoint).
func testBackupRestore(t *testing.T, how string) {
	ctx := context.Background()
	socket := filepath.Join(t.TempDir(), "edgeapi.sock")
	d := StartDaemon(t, DaemonOptions{Args: []string{"--unix-socket", socket}})
	cs := d.Clientset()
	createNamespace(t, cs, "bk")
	cms := cs.CoreV1().ConfigMaps("bk")
	create := func(name string) (string, error) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return cm.ResourceVersion, nil
	}
	var before []string
	for i := range 100 {
		name := fmt.Sprintf("before-%03d", i)
		if _, err := create(name); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		before = append(before, name)
	}

	// A writer runs through the backup.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var during int
	// acked holds the creates beside the backup, with the revision each
	// was acknowledged at.
	acked := map[string]int64{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("during-%05d", i)
			rv, err := create(name)
			if err != nil {
				t.Errorf("create during backup: %v", err)
				return
			}
			n, err := strconv.ParseInt(rv, 10, 64)
			if err != nil {
				t.Errorf("create %s: resourceVersion %q: %v", name, rv, err)
				return
			}
			acked[name] = n
			during++
		}
	}()
	backup := filepath.Join(t.TempDir(), "edgeapi.backup")
	var out, errOut string
	var code int
	switch how {
	case "http":
		var err error
		out, err = backupOverHTTP(t, d, backup)
		if err != nil {
			code, errOut = 1, err.Error()
		}
	case "unix-socket":
		// A bound on the rate far above what this copy needs: the
		// flag is taken and the copy is whole.
		out, errOut, code = edgeapiTool(t, "backup", "--unix-socket", socket, "--max-rate", "64", "--to", backup)
	case "direct":
		out, errOut, code = edgeapiTool(t, "backup", "--data-dir", d.DataDir, "--direct", "--max-rate", "64", "--to", backup)
		if strings.Contains(out, "from the daemon") {
			t.Errorf("edgeapi backup --direct asked the daemon: %s", out)
		}
	default:
		// With the daemon running, the copy is asked of it with the
		// data dir's kubeconfig.
		out, errOut, code = edgeapiTool(t, "backup", "--data-dir", d.DataDir, "--to", backup)
		if !strings.Contains(out, "from the daemon at https://") || errOut != "" {
			t.Errorf("edgeapi backup --data-dir beside a running daemon: stdout %q, stderr %q; want the copy asked of the daemon over HTTPS", out, errOut)
		}
	}
	close(stop)
	wg.Wait()
	if code != 0 {
		t.Fatalf("backup failed (exit %d): %s%s", code, out, errOut)
	}
	t.Logf("backup: %s (%d creates ran beside it)", strings.TrimSpace(out), during)
	m := regexp.MustCompile(`revision (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("backup output %q names no revision", out)
	}
	backupRev := mustRV(t, m[1])

	// The newest revision the old daemon handed out.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRV := mustRV(t, list.ResourceVersion)
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 10})
	if err != nil || page.Continue == "" {
		t.Fatalf("list a first page: %v (continue %q)", err, page.Continue)
	}

	// check refuses a running daemon's data dir.
	if _, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir); code == 0 || !strings.Contains(errOut, "in use by another edgeapi") {
		t.Errorf("edgeapi check beside the daemon: exit %d, stderr %q; want a failure naming the lock", code, errOut)
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir); code != 0 {
		t.Errorf("edgeapi check before restore: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = edgeapiTool(t, "restore", "--from", backup, "--data-dir", d.DataDir)
	if code != 0 {
		t.Fatalf("edgeapi restore exit %d: %s%s", code, out, errOut)
	}
	t.Logf("edgeapi restore: %s", strings.TrimSpace(out))
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir); code != 0 {
		t.Errorf("edgeapi check after restore: exit %d: %s%s", code, out, errOut)
	}

	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	cms = d2.Clientset().CoreV1().ConfigMaps("bk")
	list, err = cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, cm := range list.Items {
		got[cm.Name] = true
	}
	for _, name := range before {
		if !got[name] {
			t.Errorf("after restore: %s (created before the backup) is missing", name)
		}
	}
	if n := len(list.Items); n < len(before) || n > len(before)+during {
		t.Errorf("after restore: %d objects, want %d to %d", n, len(before), len(before)+during)
	}
	// Exactly the creates acknowledged at or before the backup's revision.
	var kept, dropped int
	for name, rv := range acked {
		switch {
		case rv <= backupRev && !got[name]:
			t.Errorf("after restore: %s (acknowledged at %d, the backup is at %d) is missing", name, rv, backupRev)
		case rv > backupRev && got[name]:
			t.Errorf("after restore: %s (acknowledged at %d, after the backup's %d) is present", name, rv, backupRev)
		case rv <= backupRev:
			kept++
		default:
			dropped++
		}
	}
	t.Logf("creates beside the backup: %d at or before its revision, %d after", kept, dropped)
	if rv := mustRV(t, list.ResourceVersion); rv <= lastRV {
		t.Errorf("after restore: list resourceVersion %d, want above the old daemon's %d", rv, lastRV)
	}
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := mustRV(t, created.ResourceVersion); rv <= lastRV {
		t.Errorf("after restore: a create got resourceVersion %d, want above the old daemon's %d", rv, lastRV)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: page.Continue}); !apierrors.IsResourceExpired(err) {
		t.Errorf("after restore: a continue token from before: error %v, want 410 Expired", err)
	}
	for _, old := range []int64{lastRV, lastRV - 1} {
		if _, expired := watchUntilTimeout(t, d2, "/api/v1/namespaces/bk/configmaps", old); expired == "" {
			t.Errorf("after restore: a watch from the old resourceVersion %d did not get 410 Gone", old)
		}
	}
}

// TestCheck_findsDamage runs edgeapi check on a data dir whose database
// has been damaged and expects exit 1 with the problem named.
func TestCheck_findsDamage(t *testing.T) {
	requireSQLite(t)
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "ck")
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(d.DataDir, "edgeapi.db")
	// Roll the revision counter back below the newest write, as a
	// restore by file copy of a stale meta page would.
	sqliteExec(t, db, "UPDATE meta SET value = 1 WHERE key = 'rev'")
	sqliteExec(t, db, "DELETE FROM changelog")
	out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir)
	if code != 1 || !strings.Contains(out, "is above the current revision 1") {
		t.Errorf("edgeapi check of a damaged data dir: exit %d, stdout %q, stderr %q; want exit 1 naming a revision above the counter", code, out, errOut)
	}
}

// sqliteExec runs stmt on the stopped daemon's database file.
func sqliteExec(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// TestCheck_encryption checks a data dir whose ConfigMaps are encrypted
// at rest: clean with the daemon's encryption config, and exit 1 naming
// values that do not decode without it; then backs it up and restores it,
// without and with the config.
func TestCheck_encryption(t *testing.T) {
	requireSQLite(t)
	enc := writeCrashEncConfig(t)
	d := StartDaemon(t, DaemonOptions{Args: []string{"--encryption-provider-config", enc}})
	cs := d.Clientset()
	createNamespace(t, cs, "ck")
	if _, err := cs.CoreV1().ConfigMaps("ck").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "secret-ish"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir, "--encryption-provider-config", enc); code != 0 {
		t.Errorf("edgeapi check with the encryption config: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir)
	if code != 1 || !strings.Contains(out, "object /registry/configmaps/ck/secret-ish: value does not decode: identity transformer tried to read encrypted data") {
		t.Errorf("edgeapi check without the encryption config: exit %d, stdout %q, stderr %q; want exit 1 naming the encrypted ConfigMap", code, out, errOut)
	}

	// A backup of encrypted values restores without the keys (unchecked)
	// and checks clean with them afterwards.
	backup := filepath.Join(t.TempDir(), "edgeapi.backup")
	if out, errOut, code := edgeapiTool(t, "backup", "--data-dir", d.DataDir, "--to", backup); code != 0 {
		t.Fatalf("edgeapi backup: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = edgeapiTool(t, "restore", "--from", backup, "--data-dir", d.DataDir)
	if code != 0 || !strings.Contains(out, "encrypted values were restored unchecked") {
		t.Errorf("edgeapi restore of an encrypted backup without the config: exit %d: %s%s; want success saying values were unchecked", code, out, errOut)
	}
	if out, errOut, code := edgeapiTool(t, "restore", "--from", backup, "--data-dir", d.DataDir, "--encryption-provider-config", enc); code != 0 {
		t.Errorf("edgeapi restore with the config: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir, "--encryption-provider-config", enc); code != 0 {
		t.Errorf("edgeapi check after restore: exit %d: %s%s", code, out, errOut)
	}
}

// TestBackup_endpointNeedsAdmin checks that the backup endpoint, whose
// answer holds every stored Secret, is refused to anonymous and ordinary
// users and served to system:masters.
func TestBackup_endpointNeedsAdmin(t *testing.T) {
	requireSQLite(t)
	d := startAuthDaemon(t)
	c := tlsClient(t, d)
	for _, who := range []struct {
		name   string
		header http.Header
		user   string
	}{{"anonymous", nil, "system:anonymous"}, {"alice", bearer(aliceToken), "alice"}} {
		wantAuthStatus(t, who.name+" GET /debug/edgeapi/backup", authReq(t, c, d, "GET", "/debug/edgeapi/backup", who.header, nil),
			403, metav1.StatusReasonForbidden, `forbidden: User "`+who.user+`" cannot get path "/debug/edgeapi/backup"`)
	}
	r := authReq(t, c, d, "GET", "/debug/edgeapi/backup", bearer(adminToken), nil)
	if r.Status != http.StatusOK || !bytes.HasPrefix(r.Body, []byte("SQLite format 3\x00")) {
		t.Errorf("admin GET /debug/edgeapi/backup: status %d, %d bytes; want 200 and an SQLite file", r.Status, len(r.Body))
	}
}

// TestBackup_endpointLeavesNothing checks that the endpoint leaves no
// file in the data dir (it streams the copy from its snapshot), and that
// a copy left in backups.tmp by an older daemon killed while sending one
// is removed at the next start.
func TestBackup_endpointLeavesNothing(t *testing.T) {
	requireSQLite(t)
	dataDir := t.TempDir()
	left := filepath.Join(dataDir, "backups.tmp", "backup-1", "edgeapi.backup")
	if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte("left by a killed daemon"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := StartDaemon(t, DaemonOptions{DataDir: dataDir})
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("after start: %s: %v, want it removed", left, err)
	}
	names := func() []string {
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	before := names()
	if _, err := backupOverHTTP(t, d, filepath.Join(t.TempDir(), "b")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dataDir, "backups.tmp"))
	if (err != nil && !os.IsNotExist(err)) || len(entries) != 0 {
		t.Errorf("after a backup: backups.tmp holds %v (%v), want nothing", entries, err)
	}
	if got := names(); !slices.Equal(got, before) {
		t.Errorf("data dir after a backup = %v, want %v as before it", got, before)
	}
}
